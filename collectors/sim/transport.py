"""The demo transport: a LocalTransport over a simulated node (sim/node.py) that advances the simulation
before every frame, so the load changes live. It lives with the simulator, not in transport/: the simulator
is a leaf no core module imports (pyproject.toml's import contracts), and this arrow runs down, sim ->
transport.local."""
from __future__ import annotations

import asyncio
import math
import time

from ..parse.cpuset import parse_cpuset
from ..podresources import Device, LiveContainer, LivePod, LiveView
from ..transport.local import LocalTransport
from .node import NodeSpec, SimNode


class DemoTransport(LocalTransport):
    """A LocalTransport over a simulated node, which advances the simulation before every frame. `memory`:
    (pod, container) -> the CPUs (a cpulist) the node's kubelet holds in memory for it where that differs from
    its checkpoint (a planted fault of the demo: PODRESOURCES_DISAGREES)."""

    def __init__(self, sim: SimNode, written: bool = True, memory: dict[tuple[str, str], str] | None = None) -> None:
        super().__init__(str(sim.root))
        self.sim = sim
        self.memory = dict(memory or {})
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

    async def podresources(self, path: str, timeout: float):
        """kubelet's PodResources answer, as the demo node's kubelet would give it (live_view): the demo has no
        kubelet and no gRPC server; the reading of a real socket is tested against kubelet's stand-in and the
        real kubelet (tests/collectors/test_podresources_live.py, tests/cluster/test_podresources_real.py)."""
        return live_view(self.sim.spec, path, self.memory)


def live_view(spec: NodeSpec, path: str, memory: dict[tuple[str, str], str]) -> LiveView:
    """What kubelet holds in memory for the simulated node: the checkpoint's exclusive CPUs per running container
    (`memory` overriding some), its devices with their NUMA node, the CPUs and devices it may hand out."""
    static = spec.policy == "static"
    pods = []
    for p in spec.pods:
        ctrs = []
        for c in p.containers:
            if c.init:  # List names app containers (and restartable init ones: none in the demo)
                continue
            cpus = memory.get((p.name, c.name), c.cpus) if static else None
            devs = tuple(Device(res, (dev,), (numa,) if numa >= 0 else ()) for res, dev, numa in c.devices)
            ctrs.append(LiveContainer(c.name, parse_cpuset(cpus) if cpus else frozenset(), devs))
        pods.append(LivePod(p.namespace, p.name, tuple(ctrs)))
    alloc = frozenset(range(spec.ncpus)) - parse_cpuset(spec.offline) - parse_cpuset(spec.reserved) if static else frozenset()
    held = [d for p in pods for c in p.containers for d in c.devices]
    gpus = [Device("nvidia.com/gpu", (uuid,), (n,) if (n := spec.pci_numa.get(pci, -1)) >= 0 else ())
            for uuid, pci in spec.nvidia_gpus.items()]
    seen = {(d.resource, i) for d in held for i in d.ids}
    free = [d for d in gpus if (d.resource, d.ids[0]) not in seen]
    seen |= {(d.resource, d.ids[0]) for d in free}  # a free GPU is listed once, with its NUMA node
    free += [Device(res, (dev,), ()) for res, dev in spec.free_devices if (res, dev) not in seen]
    return LiveView(path, tuple(pods), alloc, tuple(held + free))
