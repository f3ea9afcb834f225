"""The probe as a local subprocess (`pinscope snapshot local`, fixture trees with --root)."""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal

from ..errors import Unreachable
from ..frames import MAX_FRAME_BYTES
from .base import FrameStream, probe_command


class LocalTransport(FrameStream):
    name = "local"

    def __init__(self, root: str | None = None, sudo: bool = False) -> None:
        self.root = root
        self.sudo = sudo
        self.proc: asyncio.subprocess.Process | None = None

    async def connect(self, timeout: float = 10.0) -> None:
        if self.root and not os.path.isdir(self.root):
            raise Unreachable(f"--root {self.root}: no such directory")
        try:
            # a session (and process group) of its own: the probe's forwarder ends the whole group when
            # its stdin ends, and close() kills the group whatever is left
            self.proc = await asyncio.create_subprocess_exec(
                "sh", "-c", probe_command(self.root, self.sudo),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, limit=MAX_FRAME_BYTES, start_new_session=True)
        except OSError as err:
            raise Unreachable(f"cannot start sh: {err}") from err
        self.reader, self.writer = self.proc.stdout, self.proc.stdin

    async def close(self) -> None:
        """An idle probe is asked to quit; one in the middle of a frame (a deadline passed) only loses its
        stdin, and its forwarder kills its process group. Then the group is killed here whatever is left
        (its id stays taken while any member lives, so this never reaches another process)."""
        proc = self.proc  # this close's own: a second close() while this one waits must not see it vanish
        if proc is None:
            return
        stdin = proc.stdin
        with contextlib.suppress(Exception):
            if stdin is not None:
                if self.idle:
                    stdin.write(b"q\n")
                stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 2)
        except (asyncio.TimeoutError, ProcessLookupError):
            pass
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()
        if self.proc is proc:
            self.proc = None
