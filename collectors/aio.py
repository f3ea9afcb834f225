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
And as wait_for did: once a cancel from outside is under way, a deadline entered before it stands down, so
the cleanup that cancel runs (a debug pod's delete) is not cut at a deadline meant for the work.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from types import TracebackType
from typing import TypeVar
from weakref import WeakKeyDictionary

T = TypeVar("T")
# per task: the cancels our deadlines requested and have not taken back yet (so a deadline can tell them
# from a cancel from outside: task.cancelling() counts both)
_OURS: WeakKeyDictionary[asyncio.Task, int] = WeakKeyDictionary()


class deadline:
    """`async with deadline(seconds):` cancels the block at `seconds` (None: never) and raises TimeoutError
    (asyncio's is the builtin since 3.11); a cancel from outside stays a CancelledError, however it lines up
    with the expiry or with the end of what the block awaits."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._task: asyncio.Task | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._entered = 0  # task.cancelling() when the block began
        self._outside = 0  # of those, the cancels from outside (not a deadline's)
        self.expired = False

    async def __aenter__(self) -> deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("deadline() is for a task")
        self._task, self._entered = task, task.cancelling()
        self._outside = self._entered - _OURS.get(task, 0)  # cancels from outside already under way
        if self.seconds is not None:
            self._handle = asyncio.get_running_loop().call_later(max(0.0, self.seconds), self._expire)
        return self

    def _expire(self) -> None:
        task = self._task
        assert task is not None
        if task.done():
            return
        if task.cancelling() - _OURS.get(task, 0) > self._outside:
            # a cancel from outside is under way: its cleanup runs without this deadline. Looked at again
            # shortly: a cancel that is taken back (aiohttp's own timeouts do) leaves this deadline in force
            self._handle = asyncio.get_running_loop().call_later(0.1, self._expire)
            return
        self.expired = True
        _OURS[task] = _OURS.get(task, 0) + 1
        task.cancel()

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._handle is not None:
            self._handle.cancel()
        task = self._task
        if self.expired and task is not None:
            _OURS[task] = _OURS.get(task, 1) - 1
            # ours is taken back; a cancel that came besides it (more requests than when we began) goes on
            if task.uncancel() <= self._entered and kind is asyncio.CancelledError:
                raise TimeoutError from exc


async def within(aw: Awaitable[T], seconds: float | None) -> T:
    """`await aw` with a deadline (wait_for's use, without its lost cancel): TimeoutError at `seconds`, `aw`
    cancelled; no task of its own."""
    async with deadline(seconds):
        return await aw
