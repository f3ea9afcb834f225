"""Memory over reconnects: a collector connects, reads three times at the live cadence and closes, again
and again, to a simulated node through a local probe and through a real sshd on loopback (tests/sshd.py,
throwaway keys). Printed: the RSS after the first rounds and at the end (goal: flat).
Run: python3 bench/bench_reconnect.py [--rounds 600]
"""
from __future__ import annotations

import asyncio
import gc
import os
import platform
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

import psutil  # noqa: E402
import sshd as sshd_mod  # noqa: E402

from pinscope.collectors.collect import NodeCollector, Options, live_depth  # noqa: E402
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode  # noqa: E402

ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 600


def spec() -> NodeSpec:
    pods = [PodSpec(f"p{k}", "bench", containers=[CtrSpec("c", cpus=str(1 + k), tasks=3)]) for k in range(4)]
    return NodeSpec(hostname="recon", cores=8, reserved="0,8", pods=pods, seed=1)


async def rounds(target: str, o: Options, n: int) -> list[tuple[int, float]]:
    p = psutil.Process()
    marks = []
    for i in range(1, n + 1):
        c = NodeCollector(target, o)
        await c.connect()
        for k in range(3):
            await c.tick(live_depth(k))
        await c.close()
        if i in (n // 10, n):
            gc.collect()
            marks.append((i, p.memory_info().rss / 2**20))
    return marks


def main() -> None:
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, "
          f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f}")
    d = Path(tempfile.mkdtemp(prefix="pinscope-recon-"))
    root = d / "node"
    SimNode(spec(), root).write()
    local = asyncio.run(rounds("local", Options(root=str(root)), ROUNDS))
    s = sshd_mod.Sshd(d / "sshd").start()
    try:
        o = Options(root=str(root), identity=str(s.userkey), known_hosts=str(s.known_hosts),
                    ssh_config=str(s.ssh_config))
        ssh = asyncio.run(rounds(s.target, o, ROUNDS // 2))
    finally:
        s.kill()
    for name, m in (("local probe", local), ("real sshd", ssh)):
        (i1, r1), (i2, r2) = m
        print(f"{name}: RSS after {i1} reconnects {r1:.1f} MB, after {i2}: {r2:.1f} MB ({r2 / r1:.3f}x; goal flat)")


if __name__ == "__main__":
    main()
