"""The probe as a local subprocess (`pinscope snapshot local`, fixture trees with --root).

`prestart()` starts the probe and asks for the first frame before the TUI imports Textual (cli/__init__.py), so
the probe reads the node while the interpreter loads the UI (issue 25: first grid); the first transport that
connects with the same root and sudo takes that process over, its frame already on the way."""
from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess

from ..aio import within
from ..errors import Unreachable
from ..exitsignals import last_resort
from ..frames import MAX_FRAME_BYTES, Frame
from .base import FrameStream, probe_command


class _Prestarted:
    """A probe started with subprocess before an event loop ran, with its first request written."""

    def __init__(self, root: str | None, sudo: bool, request: str) -> None:
        self.key = (root, sudo)
        self.request = request
        self.popen = subprocess.Popen(
            ["sh", "-c", probe_command(root, sudo)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, bufsize=0, start_new_session=True)
        assert self.popen.stdin is not None
        self.popen.stdin.write(request.encode() + b"\n")

    def kill(self) -> None:
        """Never taken over (pinscope ended or failed before connecting): the probe's group ends here."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.popen.wait(2)


_prestarted: _Prestarted | None = None
_GROUPS: set[int] = set()  # the process groups of the probes this process started and has not closed yet


def _kill_groups() -> None:
    """The last resort (collectors.exitsignals): every probe this process started ends with it."""
    for pgid in list(_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    _kill_unclaimed()


last_resort(_kill_groups)


def prestart(root: str | None, sudo: bool, request: str) -> bool:
    """Start the local probe now and ask it for `request` (what the first tick will ask); False if it could
    not start (connect() then starts one and says why), or one is waiting already."""
    global _prestarted
    if _prestarted is not None or (root and not os.path.isdir(root)):
        return False
    try:
        _prestarted = _Prestarted(root, sudo, request)
    except (OSError, ValueError):
        _prestarted = None
        return False
    atexit.register(_kill_unclaimed)
    return True


def _kill_unclaimed() -> None:
    if _prestarted is not None:
        _prestarted.kill()


def _claim(root: str | None, sudo: bool) -> _Prestarted | None:
    global _prestarted
    pre = _prestarted
    if pre is None or pre.key != (root, sudo):
        return None
    _prestarted = None
    if pre.popen.poll() is not None:  # it ended already (no sh?): start one the usual way
        return None
    return pre


class _Adopted:
    """A prestarted probe seen as connect() sees its own: pid, stdin (a StreamWriter) and wait()."""

    def __init__(self, pre: _Prestarted, stdin: asyncio.StreamWriter, read_transport: asyncio.BaseTransport) -> None:
        self.popen, self.stdin, self.read_transport = pre.popen, stdin, read_transport
        self.pid = pre.popen.pid
        self.returncode: int | None = None

    async def wait(self) -> int:
        while (rc := self.popen.poll()) is None:
            await asyncio.sleep(0.02)
        self.returncode = rc
        self.read_transport.close()
        return rc


class LocalTransport(FrameStream):
    name = "local"

    def __init__(self, root: str | None = None, sudo: bool = False) -> None:
        self.root = root
        self.sudo = sudo
        self.proc: asyncio.subprocess.Process | _Adopted | None = None
        self._prestart_request: str | None = None  # the request a prestarted probe was given before connect()

    async def connect(self, timeout: float = 10.0) -> None:
        if self.root and not os.path.isdir(self.root):
            raise Unreachable(f"--root {self.root}: no such directory")
        if (pre := _claim(self.root, self.sudo)) is not None:
            await self._adopt(pre)
            return
        try:
            # a session (and process group) of its own: the probe's forwarder ends the whole group when
            # its stdin ends, and close() kills the group whatever is left
            self.proc = await asyncio.create_subprocess_exec(
                "sh", "-c", probe_command(self.root, self.sudo),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, limit=MAX_FRAME_BYTES, start_new_session=True)
        except OSError as err:
            raise Unreachable(f"cannot start sh: {err}") from err
        _GROUPS.add(self.proc.pid)  # a session of its own: its pid is its process group's id
        self.reader, self.writer = self.proc.stdout, self.proc.stdin

    async def _adopt(self, pre: _Prestarted) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                                                         pre.popen.stdout)
        wt, wp = await loop.connect_write_pipe(lambda: asyncio.streams.FlowControlMixin(loop=loop), pre.popen.stdin)
        writer = asyncio.StreamWriter(wt, wp, reader, loop)
        self.proc = _Adopted(pre, writer, read_transport)
        _GROUPS.add(pre.popen.pid)
        self.reader, self.writer = reader, writer
        self._prestart_request, self.idle = pre.request, False

    async def _request(self, req: str) -> Frame:
        sent, self._prestart_request = self._prestart_request, None
        if sent is not None:  # a prestarted probe: its first frame is asked for already
            self.idle, self.partial, self.pending = False, b"", sent
            if sent == req:
                return await self._read_frame()
            await self._read_frame()  # another first request than foreseen: that frame is dropped
        return await super()._request(req)

    async def podresources(self, path: str, timeout: float):
        """kubelet's socket at node path `path`, found inside --root (podresources.read_live_in_root)."""
        from ..podresources import read_live_in_root

        return await asyncio.to_thread(read_live_in_root, self.root or "/", path, timeout)

    async def close(self) -> None:
        """An idle probe is asked to quit; one in the middle of a frame (a deadline passed) only loses its
        stdin, and its forwarder kills its process group. Then the group is killed here whatever is left
        (its id stays taken while any member lives, so this never reaches another process)."""
        proc = self.proc  # this close's own: a second close() while this one waits must not see it vanish
        if proc is None:
            return
        self._prestart_request = None
        stdin = proc.stdin
        with contextlib.suppress(Exception):
            if stdin is not None:
                if self.idle:
                    stdin.write(b"q\n")
                stdin.close()
        try:
            await within(proc.wait(), 2)
        except (asyncio.TimeoutError, ProcessLookupError):
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()
        _GROUPS.discard(proc.pid)
        if self.proc is proc:
            self.proc = None
