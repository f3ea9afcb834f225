"""Deadlines that never lose a cancel, on every Python 3.11.

An exit signal's end is one cancel of the work (exitsignals.py); the work's `finally` blocks then close every
node (a `node/NAME` debug pod is deleted). A cancel that is lost leaves the work running until the exit
watchdog kills the process, with the pod still on the node (a CI run: SIGTERM while the pod was Pending).
Python 3.11's own deadlines lose it or misread it:

- asyncio.wait_for returns the inner result when its task is cancelled in the instant the inner awaitable
  has finished but the task has not resumed (bpo-42130; 3.12 rebuilt wait_for on asyncio.timeout);
- asyncio.timeout before 3.11.3 (Debian 12's python3 is 3.11.2) turns its own expiry into a CancelledError,
  not TimeoutError, once the task has been cancelled before: a deadline in the cleanup that a cancel runs
  (the pod's delete) cut the cleanup short.

So every deadline here is `deadline`/`within` (tests/collectors/test_cancel.py: no wait_for, no
asyncio.timeout anywhere else), with 3.11.3's rule: our expiry is a TimeoutError unless another cancel came.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")


class deadline:
    """`async with deadline(seconds):` cancels the block at `seconds` (None: never) and raises TimeoutError
    (asyncio's is the builtin since 3.11); a cancel from outside stays a CancelledError, however it lines up
    with the expiry or with the end of what the block awaits."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._task: asyncio.Task | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._entered = 0
        self.expired = False

    async def __aenter__(self) -> deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("deadline() is for a task")
        self._task, self._entered = task, task.cancelling()
        if self.seconds is not None:
            self._handle = asyncio.get_running_loop().call_later(max(0.0, self.seconds), self._expire)
        return self

    def _expire(self) -> None:
        assert self._task is not None
        self.expired = True
        self._task.cancel()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self.expired and self._task is not None:
            # ours is taken back; a cancel that came besides it (more requests than when we began) goes on
            if self._task.uncancel() <= self._entered and kind is asyncio.CancelledError:
                raise TimeoutError from exc


async def within(aw: Awaitable[T], seconds: float | None) -> T:
    """`await aw` with a deadline (wait_for's use, without its lost cancel): TimeoutError at `seconds`, `aw`
    cancelled; no task of its own."""
    async with deadline(seconds):
        return await aw
