"""Benchmark: the war room. Many SSH nodes on loopback (one sshd, one persistent channel per node, each
node reading its own fixture root), the real app on the fleet overview.

  - 100 nodes at 1 Hz: the client's CPU (collect, parse, findings, render), per node-tick and in % of a core
  - 500 connections cold: time until every node has delivered its first frame (connect cap 64)
  - against a naive client: one conn.run() per node per tick
Run: python3 bench/bench_fleet.py [--quick]
"""
from __future__ import annotations

import asyncio
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

import sshd as sshd_mod  # noqa: E402

from collectors.collect import NodeCollector, Options  # noqa: E402
from collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode  # noqa: E402
from collectors.transport.base import probe_command  # noqa: E402
from tui.app import PinscopeApp  # noqa: E402

QUICK = "--quick" in sys.argv


def cpu_now() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def small_node(i: int) -> NodeSpec:
    """A typical worker: 32 CPUs (1 socket, 16 cores x 2), 8 pods of which 3 pinned."""
    pods = [PodSpec(f"rt-{k}", "rt", containers=[CtrSpec("app", cpus=f"{2 + k},{18 + k}")]) for k in range(3)]
    pods += [PodSpec(f"web-{k}", "web", qos="Burstable", containers=[CtrSpec("app")]) for k in range(5)]
    return NodeSpec(hostname=f"w-{i:03d}", cores=16, reserved="0,16", pods=pods, seed=i + 1)


async def fleet_cost(srv, roots, seconds: float) -> dict:
    entries = []
    for i, root in enumerate(roots):
        o = Options(root=root, identity=str(srv.userkey), known_hosts=str(srv.known_hosts),
                    ssh_config=str(srv.ssh_config), connect_timeout=20, frame_timeout=10)
        entries.append((f"w-{i:03d}", None, o, _T(f"w-{i:03d}", srv.target)))
    app = PinscopeApp(entries, interval=1.0, connect_concurrency=64)
    async with app.run_test(size=(200, 60)) as pilot:
        t0 = time.perf_counter()
        while sum(1 for v in app.views.values() if v.ticks >= 2) < len(roots) and time.perf_counter() - t0 < 120:
            await asyncio.sleep(0.2)
        ready = time.perf_counter() - t0
        ticks0 = sum(v.ticks for v in app.views.values())
        prof = None
        if os.environ.get("PINSCOPE_PROFILE"):
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        c0, w0 = cpu_now(), time.perf_counter()
        await asyncio.sleep(seconds)
        cpu, wall = cpu_now() - c0, time.perf_counter() - w0
        if prof is not None:
            import pstats

            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        ticks = sum(v.ticks for v in app.views.values()) - ticks0
        up = sum(1 for v in app.views.values() if v.state == "up")
        await pilot.press("q")
    return {"pct": cpu / wall * 100, "per_tick": cpu / max(1, ticks), "ticks": ticks, "up": up, "ready": ready}


class _T:
    def __init__(self, name, address):
        self.name, self.address, self.labels, self.groups = name, address, {}, ()

    def matches(self, q):
        return q in self.name


async def cold(srv, root: str, n: int, cap: int = 64) -> tuple[float, float]:
    """-> (wall seconds until every node delivered its first frame, client CPU seconds spent)."""
    sem = asyncio.Semaphore(cap)
    cols = [NodeCollector(srv.target, Options(root=root, identity=str(srv.userkey), known_hosts=str(srv.known_hosts),
                                              ssh_config=str(srv.ssh_config), connect_timeout=120, frame_timeout=120))
            for _ in range(n)]

    async def one(c):
        async with sem:
            await c.connect()
        await c.tick("g")

    t0, c0 = time.perf_counter(), cpu_now()
    res = await asyncio.gather(*(one(c) for c in cols), return_exceptions=True)
    took, ccpu = time.perf_counter() - t0, cpu_now() - c0
    bad = [r for r in res if isinstance(r, Exception)]
    await asyncio.gather(*(c.close() for c in cols), return_exceptions=True)
    if bad:
        print(f"  {len(bad)} of {n} failed: {bad[0]}")
    return took, ccpu


async def naive(srv, roots, ticks: int) -> float:
    """One conn.run() per node per tick (a fresh session, shell and probe each time): client CPU per node-tick."""
    import asyncssh

    conn = await asyncssh.connect("127.0.0.1", port=srv.port, username="root", client_keys=[str(srv.userkey)],
                                  known_hosts=str(srv.known_hosts), config=[str(srv.ssh_config)])
    c0 = cpu_now()
    for _ in range(ticks):
        await asyncio.gather(*(conn.run(probe_command(r), input="g\nq\n") for r in roots))
    per = (cpu_now() - c0) / (ticks * len(roots))
    conn.close()
    return per


def main() -> None:
    ok, why = sshd_mod.available()
    if not ok:
        print("skipped:", why)
        return
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    d = Path(tempfile.mkdtemp(prefix="pinscope-fleet-"))
    n = 100
    roots = []
    for i in range(n):
        r = d / f"n{i}"
        SimNode(small_node(i), r).write()
        roots.append(str(r))
    srv = sshd_mod.Sshd(d / "sshd")
    srv.cfg.write_text(srv.cfg.read_text().replace("MaxStartups 200", "MaxStartups 1000:30:1000"))
    srv.start()
    try:
        fc = asyncio.run(fleet_cost(srv, roots, 15 if QUICK else 40))
        print(f"\n{n} nodes (32 CPUs, 8 pods each) over SSH at 1 Hz, fleet overview on screen: {fc['up']} up,"
              f" all delivering after {fc['ready']:.1f} s")
        print(f"  client: {fc['pct']:.1f} % of one core  (target <= 25 %), {fc['per_tick'] * 1000:.2f} ms per node-tick"
              f" over {fc['ticks']} node-ticks  (target <= 1 ms)")
        nv = asyncio.run(naive(srv, roots[:20], 3))
        print(f"  naive client (one conn.run() per node per tick): {nv * 1000:.2f} ms client CPU per node-tick"
              f" -> {nv / fc['per_tick']:.1f}x the persistent channel")
        m = 150 if QUICK else 500
        import psutil

        sp = psutil.Process(srv.proc.pid)
        s0 = sum(sp.cpu_times()[:4])
        took, ccpu = asyncio.run(cold(srv, roots[0], m))
        scpu = sum(sp.cpu_times()[:4]) - s0
        print(f"\n{m} connections cold (connect, start the probe, first frame; at most 64 in flight): {took:.1f} s wall"
              "  (target: 500 in <= 10 s)")
        print(f"  client CPU {ccpu / m * 1000:.1f} ms per connection ({ccpu:.1f} s in all); the {m} sshd sessions and probes,"
              f" on the same 2 cores here, {scpu / m * 1000:.0f} ms each ({scpu:.1f} s)")
    finally:
        srv.kill()


if __name__ == "__main__":
    main()
