"""The probe as a local subprocess (`pinscope snapshot local`, fixture trees with --root)."""
from __future__ import annotations

import asyncio
import contextlib
import os

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
            self.proc = await asyncio.create_subprocess_exec(
                "sh", "-c", probe_command(self.root, self.sudo),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, limit=MAX_FRAME_BYTES)
        except OSError as err:
            raise Unreachable(f"cannot start sh: {err}") from err
        self.reader, self.writer = self.proc.stdout, self.proc.stdin

    async def close(self) -> None:
        if self.proc is None:
            return
        stdin = self.proc.stdin
        with contextlib.suppress(Exception):
            if stdin is not None:
                stdin.write(b"q\n")
                stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 2)
        except (asyncio.TimeoutError, ProcessLookupError):
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        self.proc = None
