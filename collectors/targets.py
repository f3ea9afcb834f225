"""What a TARGET word on the command line may be, checked before anything connects.

`local`; `node/NAME` (or `nodes/NAME`, as kubectl spells a node: through the Kubernetes API);
`[user@]host[:port]` with host a name (an SSH config alias too: letters, digits, '.', '-', '_'), an IPv4
address or an IPv6 one in brackets ([::1]:22; bare without a port); a port is 1-65535. A word that is
none of these, or that reads like a mistyped pinscope command (`snapshto`), is refused with the reason:
it would otherwise become an SSH host, and a typo a long wait for a connection that cannot work.
"""
from __future__ import annotations

import difflib
import ipaddress
import re

# a Kubernetes node's name is a DNS subdomain (k8s.io/apimachinery validation.IsDNS1123Subdomain); the same
# rule as transport/kube.py, here without its imports (aiohttp) so that checking a word stays cheap
_NODE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9._-]*[A-Za-z0-9_])?")
_USER = re.compile(r"[^\s@:/]+")


def target_problem(word: str, commands: tuple[str, ...] = ()) -> str | None:
    """None when `word` is a valid target, else why not (one line, for the user)."""
    if word == "local":
        return None
    if word.startswith(("node/", "nodes/")):
        name = word.partition("/")[2]
        if len(name) > 253 or not _NODE.fullmatch(name):
            return f"{name!r} is not a node name: a Kubernetes node name is lowercase letters, digits, '-' and '.'"
        return None
    if word in commands:  # `pinscope local check`: the command word after a target
        return (f"{word!r} is a command: it comes before the targets (pinscope {word} [OPTIONS] TARGET...); "
                f"a host of that name: write user@{word} or {word}:22")
    # a bare word without digits, '.', '@' or ':' that is one or two letters off a command: a typo, not
    # a host (a host of that name can still be reached as user@NAME or NAME:22)
    near = difflib.get_close_matches(word, [*commands, "local"], n=1, cutoff=0.75)
    if near and not any(c.isdecimal() or c in "@:." for c in word):
        what = "the target" if near[0] == "local" else "the command"
        return (f"{word!r} is not a command or a target; did you mean {what} {near[0]!r}? "
                f"(a host of that name: write user@{word} or {word}:22)")
    user, at, rest = word.rpartition("@")
    if at and not _USER.fullmatch(user):
        return f"{word!r}: the user before '@' is empty or holds spaces, '@', ':' or '/'"
    host, port = rest, None
    if rest.startswith("["):
        host, close, tail = rest[1:].partition("]")
        if not close or (tail and not tail.startswith(":")):
            return f"{word!r}: an IPv6 address with a port is written [ADDRESS]:PORT"
        port = tail[1:] if tail else None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"{word!r}: {host!r} is not an IPv6 address"
    elif rest.count(":") == 1:
        host, _, port = rest.partition(":")
    elif rest.count(":") > 1:
        try:
            ipaddress.IPv6Address(rest)
            return None
        except ValueError:
            return f"{word!r}: not a host name, an address or [IPv6]:PORT"
    if port is not None:
        if not port.isdecimal() or not 1 <= int(port) <= 65535:
            return f"{word!r}: the port must be a number from 1 to 65535"
    if not host:
        return f"{word!r}: no host name"
    if not rest.startswith("[") and (len(host) > 253 or not _NAME.fullmatch(host)):
        return f"{word!r}: a host name is letters, digits, '.', '-' and '_' ('local', [user@]host[:port] or node/NAME)"
    if not rest.startswith("[") and any(not 1 <= len(label) <= 63 for label in host.split(".")):
        # the resolver refuses these (idna: "label empty or too long"); say so before anything connects
        return f"{word!r}: a host name's parts between dots are 1 to 63 characters"
    return None
