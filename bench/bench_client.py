"""Benchmark: the client's cost per node-tick (parse + assemble + rates + findings), incremental vs naive.

Frames are recorded from a simulated node whose counters move every tick (every container's cpu.stat,
every CPU's /proc/stat line, softirqs), read through the real probe with --root, at grid depth ("g"
every tick) and at the live cadence (collectors.collect.live_depth: cgroup detail, tasks, IRQs at their
own cadence, carried between ticks). The same frames are then fed, in this one process, to:
  - the pipeline as pinscope runs it (the Assembler keeps each stage between ticks), and
  - the naive way: a fresh Assembler every tick (everything re-parsed, as before the frame store).
CPU time of this process only (the probe's is the node's). Targets (issue 10): <= 1 ms per node-tick at
96 CPUs / 100 containers at grid depth, <= 3 ms at live depth.
Run: python3 bench/bench_client.py [--quick]
"""
from __future__ import annotations

import asyncio
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from bigspec import big_node  # noqa: E402

from pinscope.collectors.assemble import Assembler  # noqa: E402
from pinscope.collectors.collect import NodeCollector, Options, live_depth  # noqa: E402
from pinscope.collectors.frames import parse_frame  # noqa: E402
from pinscope.collectors.pipeline import Pipeline  # noqa: E402
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode  # noqa: E402
from pinscope.collectors.transport.local import LocalTransport  # noqa: E402

QUICK = "--quick" in sys.argv
WARM, N = (10, 20) if QUICK else (30, 60)


def node256() -> NodeSpec:
    """256 CPUs, 120 containers (60 pods: 20 pinned, 40 shared), as bench_tui's node."""
    pods = []
    for i in range(60):
        if i < 20:
            ctrs = [CtrSpec("app", cpus=f"{2 + i},{130 + i}", tasks=4, busy=0.6), CtrSpec("sidecar", tasks=2)]
            pods.append(PodSpec(f"pinned-{i}", "rt", containers=ctrs))
        else:
            pods.append(PodSpec(f"svc-{i}", "web", qos="Burstable",
                                containers=[CtrSpec("app", tasks=3), CtrSpec("proxy", tasks=2)]))
    return NodeSpec(hostname="bench-256", sockets=2, cores=64, threads=2, reserved="0,128", pods=pods, seed=3)


def record(spec: NodeSpec, depth_for_tick) -> list[bytes]:
    """WARM + N frames of a ticking simulated node, through the real probe."""
    root = tempfile.mkdtemp(prefix="pinscope-bench-client-")
    sim = SimNode(spec, root).write()

    async def go():
        col = NodeCollector("local", Options(root=root), LocalTransport(root))
        await col.connect()
        raws = []
        try:
            for _ in range(WARM + N):
                sim.tick(1.0)
                await col.tick(depth_for_tick(col.ticks))
                raws.append(col.transport.last_raw)
        finally:
            await col.close()
        return raws

    try:
        return asyncio.run(go())
    finally:
        shutil.rmtree(root, ignore_errors=True)


def cost(raws: list[bytes], naive: bool) -> float:
    """CPU seconds per node-tick over the last N frames: parse_frame + Pipeline.feed."""
    pl = Pipeline("bench")
    total = 0.0
    for i, raw in enumerate(raws):
        if naive:
            pl.assembler = Assembler("bench")
        t0 = time.process_time()
        pl.feed(parse_frame(raw))
        if i >= WARM:
            total += time.process_time() - t0
    return total / N


def ms(x: float) -> str:
    return f"{x * 1000:6.2f} ms"


def main() -> None:
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}"
          f", load average {os.getloadavg()[0]:.1f}")
    print("client per node-tick: parse + assemble + rates + findings (this process's CPU)")
    for label, spec, target in (("96 CPUs / 100 containers", big_node(), (1.0, 3.0)),
                                ("256 CPUs / 120 containers", node256(), None)):
        for depth, fn in (("grid", lambda t: "g"), ("live", live_depth)):
            raws = record(spec, fn)
            inc = min(cost(raws, False) for _ in range(3))
            nai = min(cost(raws, True) for _ in range(3))
            goal = f"  (target <= {target[0 if depth == 'grid' else 1]:g} ms)" if target else ""
            print(f"  {label}, {depth:4} depth: pinscope {ms(inc)}, naive (fresh assembly every tick) {ms(nai)}"
                  f"  -> {nai / inc:.1f}x{goal}")


if __name__ == "__main__":
    main()
