"""One small error taxonomy. OS and library errors are translated once, at the transport boundary.

Parsers never raise for bad node data: they return partial results plus `Problem`s. Exceptions are for
"the node could not be read at all" (a state the UI shows, and the CLI turns into one plain line).
"""
from __future__ import annotations

from dataclasses import dataclass


class PinscopeError(Exception):
    """Base of every error pinscope reports to a user as one plain line."""


class TransportError(PinscopeError):
    """The node could not be reached or the probe stream broke."""


class Unreachable(TransportError):
    """Connection refused, timed out, or name not resolved."""


class AuthFailed(TransportError):
    """The SSH server refused every credential we had."""


class HostKeyRejected(TransportError):
    """The host key is unknown or differs from known_hosts."""


class ProbeFailed(TransportError):
    """The probe started but the stream ended or was malformed."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Something pinscope could not read or understand: shown to the user, never fatal."""

    source: str
    message: str
    kind: str = ""  # "unread": this user may not read it (permissions): the node was read only in part

UNREAD = "unread"
