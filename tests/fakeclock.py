"""A fake clock for asyncio: an event loop whose time jumps to its next timer whenever nothing is ready.

`sleep`, `call_later` and `wait_for` then take exactly their virtual duration and no wall-clock time, so a
test can assert *when* something happened (`loop.time()`) on a loaded machine: nothing else runs on this
loop's clock, and a timer never fires early or late. Real I/O still works (the selector is polled); only
the waiting is skipped. Code that reads `time.monotonic()` itself still sees the real clock.

    @pytest.mark.virtual_clock           # tests/conftest.py: pytest-asyncio runs the test on this loop
    async def test_x(): ...              # it may call asyncio.get_running_loop().time()
"""
from __future__ import annotations

import asyncio
import selectors


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self, loop: VirtualClockLoop) -> None:
        super().__init__()
        self._virtual = loop

    def select(self, timeout: float | None = None):
        ready = super().select(0)
        if ready:
            return ready
        if timeout is None:  # no timer at all: only I/O (or another thread) can wake the loop
            return super().select(None)
        self._virtual.now += timeout  # nothing to do until the next timer: go straight to it
        return []


class VirtualClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(selector=_JumpingSelector(self))

    def time(self) -> float:
        return self.now
