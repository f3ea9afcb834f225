"""What every transport shares: the probe command line, and reading one frame off a byte stream.

A transport owns a running probe and a pair of streams. `request("g")` writes one line and reads until
the frame's Z line, with a deadline. Nothing remote is ever put into the command: the probe text is
constant and the only arguments (root prefix) come from the user, quoted with shlex.quote.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
import re
import shlex
from typing import Protocol

from ..aio import deadline
from .. import probe_text
from ..errors import ProbeFailed
from ..frames import MAX_FRAME_BYTES, PROTOCOL, Frame, parse_frame, unescape

_PAD = re.compile(rb"(?:P[^\n]*\n)*")
SUDO_REFUSED = "Wsudo -n was refused: root-only files (cpu_manager_state) stay unreadable"


def probe_command(root: str | None = None, sudo: bool = False) -> str:
    """The one command line a node runs: constant probe text, user-given arguments quoted."""
    p = shlex.quote(probe_text())
    args = "pinscope-probe"
    if root:
        args += " --root " + shlex.quote(root)
    args += f" --protocol {PROTOCOL}"
    if not sudo:
        return f"exec sh -c {p} {args}"
    # the probe's text once, in a variable: the whole command is one argument of the login shell's -c, and
    # Linux refuses an argument longer than 128 KiB (MAX_ARG_STRLEN, E2BIG); three copies of a 44 KB probe
    # were 133 KB, and the probe never started
    return (f"p={p}; if [ \"$(id -u)\" = 0 ]; then exec sh -c \"$p\" {args}; "
            f"elif sudo -n true 2>/dev/null; then exec sudo -n sh -c \"$p\" {args}; "
            f"else echo {shlex.quote(SUDO_REFUSED)}; exec sh -c \"$p\" {args}; fi")


PROBE_END = "#pinscope-probe-end"


def stdin_probe_command(root: str | None = None) -> str:
    """For exec streams (the Kubernetes API): a short constant command that reads the probe's text from
    stdin up to PROBE_END, then runs it; the requests follow on the same stdin. The probe never travels in
    the URL (API servers and proxies log and bound URLs). `read` takes one byte at a time from a pipe
    (POSIX), so nothing after the marker is consumed. Send `probe_text()` + PROBE_END + newline first."""
    args = "pinscope-probe"
    if root:
        args += " --root " + shlex.quote(root)
    args += f" --protocol {PROTOCOL}"
    # no setsid here: a runtime ends an exec by its process group or cgroup, and a probe that left the
    # group would outlive it. The probe kills its group on the end of stdin only when it leads one.
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
    """Request/response over a probe's stdin/stdout. Subclasses provide the streams.

    `idle`: no request is in flight (the last one ended with its frame). Closing an idle probe sends "q"
    and it ends by itself; closing one that is not (a deadline passed, a read may be stuck on the node)
    only closes its stdin, and the probe's forwarder then kills the probe's whole process group (probe.sh).
    `partial`: what arrived of a frame that did not complete (to say what the probe was reading)."""

    writer: ProbeWriter | None = None  # set by the subclass's connect()
    last_raw = b""  # the bytes of the last frame (for --record)
    reader: ProbeReader | None = None
    idle = True
    partial = b""
    pending = ""  # the request in flight
    # what a slow connect is waiting for, said while it waits (node/NAME: its debug pod Pending, its image
    # being pulled): collect.live hands it on as the "connecting" state's message
    progress: Callable[[str], object] | None = None
    said = ""  # the last thing a connect said it waits for (an error at a deadline names it)

    def _streams(self) -> tuple[ProbeReader, ProbeWriter]:
        if self.reader is None or self.writer is None:
            raise ProbeFailed("not connected")
        return self.reader, self.writer

    async def _write(self, data: bytes) -> None:
        writer = self._streams()[1]
        try:
            writer.write(data)
            await writer.drain()
        except (OSError, EOFError) as err:  # a probe (or channel) that is gone: a state, not a crash
            raise ProbeFailed(f"the probe's input is closed ({type(err).__name__}: connection lost or probe "
                              "exited)") from err

    async def request(self, req: str, timeout: float = 10.0) -> Frame:
        """Ask for one frame ('s', 'g', 'gt', 'gta', 'gi', ...) and wait for it, at most `timeout` s."""
        try:
            async with deadline(timeout):
                return await self._request(req)
        except TimeoutError as err:
            where = self.stuck_on()
            raise ProbeFailed(f"no frame within {timeout:g} s" + (f"; the probe was reading at {where} (the last "
                                                                  "file it sent)" if where else "")) from err

    async def _request(self, req: str) -> Frame:
        self.idle = False
        self.partial = b""
        self.pending = req
        await self._write(req.encode() + b"\n")
        return await self._read_frame()

    async def _read_frame(self) -> Frame:
        """The frame of the request in flight (written by `_request`, or before: LocalTransport's prestart)."""
        reader = self._streams()[0]
        # one C-level scan for the frame's end ("Z" can only start a line as the Z tag: content lines
        # start with "L"), then the rest of that line; not a Python readline per line
        try:
            data = await reader.readuntil(b"\nZ")
        except asyncio.IncompleteReadError as err:
            self.partial = err.partial[-65536:]
            raise ProbeFailed("the probe's output ended (connection lost or probe exited)") from err
        except asyncio.LimitOverrunError as err:
            raise ProbeFailed(f"frame larger than {MAX_FRAME_BYTES} bytes") from err
        tail = await reader.readline()
        if not tail.endswith(b"\n"):
            raise ProbeFailed("the probe's output ended inside a frame")
        # the padding mawk needs (probe.sh) arrives after the previous frame's Z: drop it here
        pad = _PAD.match(data)  # always matches (it may match nothing)
        self.last_raw = data[pad.end() if pad else 0:] + tail
        self.idle = True
        frame = parse_frame(self.last_raw)
        refused = protocol_refused(frame)
        if refused:
            raise ProbeFailed(refused)
        return frame

    async def podresources(self, path: str, timeout: float):
        """kubelet's PodResources API on its socket at node path `path` (a podresources.LiveView); a transport
        that cannot reach a unix socket on the node says so in the view's `error`."""
        from ..podresources import LiveView

        return LiveView(path, error=f"{path}: kubelet's socket is not reached {self.podresources_not}",
                        why="not through this transport")

    podresources_not = "through this transport"

    def stuck_on(self) -> str | None:
        """The file the probe was at when a frame did not come: the last path that arrived of it (awk
        writes in blocks, so the probe may be a few files further), None when nothing arrived."""
        buf = self.partial
        reader = self.reader
        if isinstance(reader, asyncio.StreamReader):
            buf += bytes(getattr(reader, "_buffer", b""))  # what arrived and was not consumed yet
        return last_path(buf)


def protocol_refused(frame: Frame) -> str | None:
    """Why a frame of another wire format is refused (one line naming both versions), else None. Each side
    refuses the other: the probe states its protocol in every frame, and answers a client that told it
    another one (--protocol N) with frames that read nothing and say why."""
    theirs = frame.info.get("probe-protocol")
    said = next((w for w in frame.warnings if w.startswith(_PROBE_REFUSED)), None)
    if theirs == PROTOCOL and said is None:
        return None
    why = (f"the probe refused this client ({said[len('refused: '):]})" if said else
           f"the probe speaks protocol {theirs}, this client speaks {PROTOCOL}" if theirs else
           f"the probe does not say its protocol, this client speaks {PROTOCOL}")
    return f"probe/client version mismatch: {why}; run the same pinscope version on both sides"


_PROBE_REFUSED = "refused: the client speaks protocol"


def last_path(data: bytes) -> str | None:
    """The last file named in a piece of frame (its C and F/X/T/N lines), unescaped; None if none."""
    cdir, last = "", None
    for raw in data.decode("utf-8", "replace").split("\n"):
        tag, rest = raw[:1], raw[1:]
        if tag == "C":
            cdir = rest
        elif tag == "c" or tag == "p":
            cdir = f"{cdir if tag == 'c' else cdir.rpartition('/')[0]}/{rest}"
        elif tag in ("F", "X", "M", "U"):
            last = rest if rest.startswith("/") else f"{cdir}/{rest}"
        elif tag in ("T", "N"):
            _, _, name = rest.partition(" ")
            last = name if name.startswith("/") else f"{cdir}/{name}"
    return unescape(last) if last is not None else None
