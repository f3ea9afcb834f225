"""The demo transport: a LocalTransport over a simulated node (sim/node.py) that advances the simulation
before every frame, so the load changes live. It lives with the simulator, not in transport/: the simulator
is a leaf no core module imports (pyproject.toml's import contracts), and this arrow runs down, sim ->
transport.local."""
from __future__ import annotations

import asyncio
import math
import time

from ..transport.local import LocalTransport
from .node import SimNode


class DemoTransport(LocalTransport):
    """A LocalTransport over a simulated node, which advances the simulation before every frame."""

    def __init__(self, sim: SimNode, written: bool = True) -> None:
        super().__init__(str(sim.root))
        self.sim = sim
        self.name = f"demo/{sim.spec.hostname}"
        self._last = time.monotonic()
        self._written = written

    async def connect(self, timeout: float = 10.0) -> None:
        if not self._written:  # the tree is written off the event loop's thread, once
            await asyncio.to_thread(self.sim.write)
            self._written = True
        await super().connect(timeout)

    async def _request(self, req: str):
        now = time.monotonic()
        dt = max(0.01, now - self._last)
        self._last = now
        # a slow wave of load, different per node, so the grid visibly changes
        phase = math.sin(now / 7.0 + hash(self.sim.spec.hostname) % 7)
        self.sim.tick(dt, load={key: phase for key in self._keys()})
        return await super()._request(req)

    def _keys(self):
        return {t[5] for t in self.sim.tasks if t[5] is not None}
