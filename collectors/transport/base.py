"""What every transport shares: the probe command line, and reading one frame off a byte stream.

A transport owns a running probe and a pair of streams. `request("g")` writes one line and reads until
the frame's Z line, with a deadline. Nothing remote is ever put into the command: the probe text is
constant and the only arguments (root prefix) come from the user, quoted with shlex.quote.
"""
from __future__ import annotations

import asyncio
import re
import shlex
from typing import Protocol

from .. import probe_text
from ..errors import ProbeFailed
from ..frames import MAX_FRAME_BYTES, Frame, parse_frame

_PAD = re.compile(rb"(?:P[^\n]*\n)*")
SUDO_REFUSED = "Wsudo -n was refused: root-only files (cpu_manager_state) stay unreadable"


def probe_command(root: str | None = None, sudo: bool = False) -> str:
    """The one command line a node runs: constant probe text, user-given arguments quoted."""
    p = shlex.quote(probe_text())
    args = "pinscope-probe"
    if root:
        args += " --root " + shlex.quote(root)
    if not sudo:
        return f"exec sh -c {p} {args}"
    return (f"if [ \"$(id -u)\" = 0 ]; then exec sh -c {p} {args}; "
            f"elif sudo -n true 2>/dev/null; then exec sudo -n sh -c {p} {args}; "
            f"else echo {shlex.quote(SUDO_REFUSED)}; exec sh -c {p} {args}; fi")


PROBE_END = "#pinscope-probe-end"


def stdin_probe_command(root: str | None = None) -> str:
    """For exec streams (the Kubernetes API): a short constant command that reads the probe's text from
    stdin up to PROBE_END, then runs it; the requests follow on the same stdin. The probe never travels in
    the URL (API servers and proxies log and bound URLs). `read` takes one byte at a time from a pipe
    (POSIX), so nothing after the marker is consumed. Send `probe_text()` + PROBE_END + newline first."""
    args = "pinscope-probe"
    if root:
        args += " --root " + shlex.quote(root)
    return (f'P=; while IFS= read -r l; do [ "$l" = {shlex.quote(PROBE_END)} ] && break; P="$P$l\n"; done; '
            f'exec sh -c "$P" {args}')


class ProbeWriter(Protocol):
    """The probe's stdin: asyncio's StreamWriter, asyncssh's SSHWriter, the exec stream's _StdinWriter."""

    def write(self, data: bytes) -> None: ...
    async def drain(self) -> None: ...


class ProbeReader(Protocol):
    """The probe's stdout: asyncio's StreamReader, asyncssh's SSHReader."""

    async def readuntil(self, separator: bytes) -> bytes: ...
    async def readline(self) -> bytes: ...


class FrameStream:
    """Request/response over a probe's stdin/stdout. Subclasses provide the streams."""

    writer: ProbeWriter | None = None  # set by the subclass's connect()
    last_raw = b""  # the bytes of the last frame (for --record)
    reader: ProbeReader | None = None

    def _streams(self) -> tuple[ProbeReader, ProbeWriter]:
        if self.reader is None or self.writer is None:
            raise ProbeFailed("not connected")
        return self.reader, self.writer

    async def _write(self, data: bytes) -> None:
        writer = self._streams()[1]
        writer.write(data)
        await writer.drain()

    async def request(self, req: str, timeout: float = 10.0) -> Frame:
        """Ask for one frame ('s', 'g', 'gt', 'gta', 'gi', ...) and wait for it, at most `timeout` s."""
        try:
            return await asyncio.wait_for(self._request(req), timeout)
        except asyncio.TimeoutError as err:
            raise ProbeFailed(f"no frame within {timeout:g} s") from err

    async def _request(self, req: str) -> Frame:
        await self._write(req.encode() + b"\n")
        reader = self._streams()[0]
        # one C-level scan for the frame's end ("Z" can only start a line as the Z tag: content lines
        # start with "L"), then the rest of that line; not a Python readline per line
        try:
            data = await reader.readuntil(b"\nZ")
        except asyncio.IncompleteReadError as err:
            raise ProbeFailed("the probe's output ended (connection lost or probe exited)") from err
        except asyncio.LimitOverrunError as err:
            raise ProbeFailed(f"frame larger than {MAX_FRAME_BYTES} bytes") from err
        tail = await reader.readline()
        if not tail.endswith(b"\n"):
            raise ProbeFailed("the probe's output ended inside a frame")
        # the padding mawk needs (probe.sh) arrives after the previous frame's Z: drop it here
        pad = _PAD.match(data)  # always matches (it may match nothing)
        self.last_raw = data[pad.end() if pad else 0:] + tail
        return parse_frame(self.last_raw)
