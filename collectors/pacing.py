"""Connection set-up for a fleet: paced, prioritised, and unable to starve the nodes already up.

When the SRE opens a whole pool at once, every node wants an SSH handshake at the same moment. Each one
costs the client a key exchange and the parse of a first full frame, and costs its sshd a fork, a
re-exec, the key exchange and a login shell. Started all at once they share the CPU and the network,
each takes longer than the connect timeout, every one of them fails, and the retries repeat the storm
(measured: 44 of 100 loopback nodes up after 122 s). So set-up goes through one gate:

  - at most `slots` handshakes (TCP connect, SSH, the session, the first frame) run at once; the deadline
    of a handshake starts when it gets its slot, not while it queues;
  - the node on screen goes first (`first()` names it; one slot is kept for it), then the others in the
    order they asked;
  - a handshake that has run far longer than the recent ones (a stopped sshd, a black-holed host) gives
    its slot back and goes on waiting on its own deadline: a few dead nodes cannot hold up the rest;
  - when the client's own event loop falls behind (the ticks of the connected nodes are late), new
    handshakes wait until it catches up; the node on screen is never held back.
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import statistics
import time
from collections.abc import Callable


class ConnectGate:
    def __init__(self, slots: int = 16, first: Callable[[], str | None] | None = None,
                 max_lag: float = 0.1) -> None:
        """slots: handshakes at once; first: () -> the name that goes before every other."""
        self.slots = max(1, slots)
        self.first = first or (lambda: None)  # -> the name of the node the user looks at
        self.max_lag = max_lag  # s of event-loop lateness above which new handshakes wait
        self.min_slots = min(2, self.slots)  # handshakes that proceed however late the loop is
        self.active = 0  # slots held
        self.holding: set[str] = set()  # the names that hold them
        self.stalled = 0  # handshakes that gave their slot back and still run
        self.waiting: collections.OrderedDict[str, asyncio.Future] = collections.OrderedDict()
        self.recent: collections.deque[float] = collections.deque(maxlen=64)  # s per finished handshake
        self.lag = 0.0  # the loop's lateness, measured by a 50 ms heartbeat while anyone waits
        self._heart: asyncio.Task | None = None
        self.granted = 0

    # ------------------------------------------------------------------ public
    def stall_after(self) -> float:
        """A handshake taking this long is treated as stuck for pacing (it keeps its own deadline)."""
        if len(self.recent) < 4:
            return 5.0
        return max(2.0, 4 * statistics.median(self.recent))

    @contextlib.asynccontextmanager
    async def slot(self, name: str):
        await self._acquire(name)
        t0 = time.monotonic()
        held = True
        self.holding.add(name)

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                self.stalled += 1
                self.holding.discard(name)
                self._release()

        timer = asyncio.get_running_loop().call_later(self.stall_after(), give_back)
        ok = False
        try:
            yield
            ok = True
        finally:
            timer.cancel()
            self.holding.discard(name)
            if held:
                held = False
                if ok:
                    self.recent.append(time.monotonic() - t0)
                self._release()
            else:
                self.stalled -= 1

    # ------------------------------------------------------------------ inside
    async def _acquire(self, name: str) -> None:
        focus = name == self.first()
        if self._free(focus) and (focus or not self.waiting and (self.lag <= self.max_lag
                                                                  or self.active < self.min_slots)):
            self.active += 1
            self.granted += 1
            return
        fut = asyncio.get_running_loop().create_future()
        self.waiting[name] = fut
        self._start_heart()
        try:
            await fut
        except asyncio.CancelledError:
            if self.waiting.get(name) is fut:
                del self.waiting[name]
            elif fut.done() and not fut.cancelled():
                self._release()  # granted in the same moment we were cancelled: give it back
            raise

    def _free(self, focus: bool = False) -> bool:
        """One slot is kept for the node on screen: it never queues behind the others; and while it sets
        up, the others start no more than `min_slots` handshakes beside it."""
        if focus or self.slots == 1:
            cap = self.slots
        elif self.first() in self.holding:
            cap = min(self.slots - 1, self.min_slots + 1)  # its own slot and min_slots beside it
        else:
            cap = self.slots - 1
        return self.active < cap and self.active + self.stalled < 4 * self.slots

    def _release(self) -> None:
        self.active -= 1
        self._grant()

    def _grant(self) -> None:
        while self.waiting and self._free(True):
            first = self.first()
            if first is not None and first in self.waiting:
                name = first
            elif not self._free():
                return  # the last slot is the focus's
            elif self.lag > self.max_lag and self.active >= self.min_slots:
                return  # the loop is late: the connected nodes' ticks go first (a few still proceed)
            else:
                name = next(iter(self.waiting))
            fut = self.waiting.pop(name)
            if fut.done():
                continue
            self.active += 1
            self.granted += 1
            fut.set_result(None)

    def _start_heart(self) -> None:
        if self._heart is None or self._heart.done():
            self._heart = asyncio.get_running_loop().create_task(self._heartbeat())

    async def _heartbeat(self) -> None:
        """Measures how late the loop runs a 50 ms sleep, while anyone waits; grants when it is on time."""
        while self.waiting:
            t0 = time.monotonic()
            await asyncio.sleep(0.05)
            late = time.monotonic() - t0 - 0.05
            self.lag = late if late > self.lag else 0.7 * self.lag + 0.3 * late
            self._grant()
        self.lag = 0.0
