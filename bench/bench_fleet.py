"""Benchmark: the war room. Many SSH nodes on loopback (one sshd, one persistent channel per node, each
node reading a fixture root), the real app on the fleet overview.

  - the connect storm: N nodes (100, then 300) opened at once; the time until every node is up (its
    first frame in), against the floor measured in the same run: the CPU the node side spent on those
    set-ups (sshd's handshakes, logins, the sessions and the probes' first frames) divided by the cores.
    Also: the node on screen's time to its first frame, and the longest gap between two frames of a
    node that was already up while the others connected (handshakes must not starve ticks).
    `--unpaced` runs the same storm through a plain 64-wide semaphore first, for comparison.
  - 100 nodes at 1 Hz: the client's CPU (collect, parse, findings, render), per node-tick and in % of a core
  - against a naive client: one conn.run() per node per tick
Run: python3 bench/bench_fleet.py [--quick] [--unpaced] [--nodes 100,300] [--cost-only] [--marginal]
  (--cost-only: only the 100 nodes at 1 Hz, no connect storms; --marginal: the same with 50 nodes too, so
  what one node more costs is told from what the overview costs whatever the count)
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

from pinscope.collectors.collect import NodeCollector, Options  # noqa: E402
from pinscope.collectors.fleet import NodeTarget  # noqa: E402
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode  # noqa: E402
from pinscope.collectors.transport.base import probe_command  # noqa: E402
from pinscope.tui.app import PinscopeApp  # noqa: E402

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
        entries.append(NodeTarget(f"w-{i:03d}", srv.target, options=o))
    app = PinscopeApp(entries, interval=1.0)
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
        r0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        await asyncio.sleep(seconds)
        r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - w0
        user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
        cpu = user + system
        if prof is not None:
            import pstats

            prof.disable()
            pstats.Stats(prof).sort_stats(os.environ.get("PSORT", "tottime")).print_stats(int(os.environ.get("PN", "30")))
            if os.environ.get("PDUMP"):
                prof.dump_stats(os.environ["PDUMP"])
        ticks = sum(v.ticks for v in app.views.values()) - ticks0
        up = sum(1 for v in app.views.values() if v.state == "up")
        await pilot.press("q")
    return {"pct": cpu / wall * 100, "per_tick": cpu / max(1, ticks), "ticks": ticks, "up": up, "ready": ready,
            "user_per_tick": user / max(1, ticks), "sys_per_tick": system / max(1, ticks)}


def node_cpu(srv) -> float:
    """CPU seconds of the node side so far: sshd, its per-connection children, the sessions and probes
    (every process marked as this sshd's, tests/sshd.py), plus what exited children left in their
    parents' counters."""
    import psutil

    tot = 0.0
    for pid in srv.pids():
        try:
            t = psutil.Process(pid).cpu_times()
            tot += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return tot


async def setup_cost(srv, roots, k: int = 24) -> float:
    """Node-side CPU seconds of ONE set-up (TCP, SSH handshake, login, session, the probe's first frame
    at the overview's first depth), measured alone: k set-ups, two at a time, nothing else ticking."""
    from pinscope.collectors.collect import overview_depth

    cols = [NodeCollector(srv.target, Options(root=roots[i % len(roots)], identity=str(srv.userkey),
                                              known_hosts=str(srv.known_hosts), ssh_config=str(srv.ssh_config),
                                              connect_timeout=60, frame_timeout=60)) for i in range(k)]
    sem = asyncio.Semaphore(2)

    async def one(c):
        async with sem:
            await c.connect()
            await c.tick(overview_depth(0))

    s0 = node_cpu(srv)
    await asyncio.gather(*(one(c) for c in cols))
    per = (node_cpu(srv) - s0) / k
    await asyncio.gather(*(c.close() for c in cols), return_exceptions=True)
    return per


def machine_busy() -> float:
    """CPU seconds every process on the machine has used (from /proc/stat, all CPUs, not idle/iowait)."""
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


async def storm(srv, roots, n: int, per_setup: float, paced: bool = True, limit: float = 300,
                interval: float = 1.0) -> dict:
    """Open n nodes at once in the real app (fleet overview, one node focused); -> timings."""
    entries = []
    for i in range(n):
        o = Options(root=roots[i % len(roots)], identity=str(srv.userkey), known_hosts=str(srv.known_hosts),
                    ssh_config=str(srv.ssh_config), connect_timeout=10, frame_timeout=10)
        entries.append(NodeTarget(f"w-{i:03d}", srv.target, options=o))
    focus = f"w-{n - 1:03d}"  # the last in the file: it must still come up first
    app = PinscopeApp(entries, interval=interval)
    if not paced:
        app.fleet.gate = asyncio.Semaphore(64)
    app.focus_node = focus  # as if the user had it on screen (the overview stays, so all nodes render)
    up_at: dict[str, float] = {}
    last_tick: dict[str, tuple[int, float]] = {}
    worst_gap = 0.0
    async with app.run_test(size=(200, 60)) as pilot:
        t0, c0, s0, m0 = time.perf_counter(), cpu_now(), node_cpu(srv), machine_busy()
        while time.perf_counter() - t0 < limit:
            now = time.perf_counter()
            for name, v in app.views.items():
                if v.ticks >= 1 and name not in up_at:
                    up_at[name] = now - t0
                if name in up_at:
                    k, at = last_tick.get(name, (0, now))
                    if v.ticks != k:
                        last_tick[name] = (v.ticks, now)
                    else:
                        worst_gap = max(worst_gap, now - at)
            if len(up_at) == n:
                break
            await asyncio.sleep(0.05)
        took = time.perf_counter() - t0
        ccpu, scpu, mcpu = cpu_now() - c0, node_cpu(srv) - s0, machine_busy() - m0
        downs = sum(1 for v in app.views.values() if v.state == "down")
        await pilot.press("q")
    cores = os.cpu_count() or 1
    others = max(0.0, mcpu - scpu - ccpu)  # what the rest of the machine (other work) used meanwhile
    setups = per_setup * n  # the node-side CPU the set-ups alone need
    return {"n": n, "up": len(up_at), "took": took, "node_cpu": scpu, "client_cpu": ccpu, "others": others,
            "per_setup": per_setup, "interval": interval,
            "floor": setups / cores, "floor_left": setups / max(0.1, cores - others / took), "focus_first": up_at.get(focus), "median_up": sorted(up_at.values())[len(up_at) // 2]
            if up_at else None, "worst_gap": worst_gap, "down": downs, "paced": paced}


def say_storm(r: dict) -> None:
    how = "paced (collectors/pacing.py)" if r["paced"] else "unpaced (a 64-wide semaphore)"
    print(f"\n{r['n']} SSH nodes opened at once, {how}, ticking every {r['interval']:g} s once up:"
          f" {r['up']} up after {r['took']:.1f} s"
          + ("" if r["up"] == r["n"] else f"  ({r['n'] - r['up']} never came up; {r['down']} down at the end)"))
    print(f"  floor: {r['n']} set-ups x {r['per_setup'] * 1000:.0f} ms node-side CPU each (measured alone) /"
          f" {os.cpu_count()} cores = {r['floor']:.1f} s  -> {r['took'] / r['floor']:.2f}x the floor  (goal <= 1.5x)")
    print(f"  node side used {r['node_cpu']:.1f} CPU-s in all meanwhile (set-ups, and the ticks of the nodes already up)")
    print(f"  other work on this machine used {r['others']:.1f} CPU-s meanwhile; with the cores it left us the floor is"
          f" {r['floor_left']:.1f} s -> {r['took'] / r['floor_left']:.2f}x")
    print(f"  client CPU meanwhile {r['client_cpu']:.1f} s; the node on screen up after {r['focus_first'] or float('nan'):.2f} s"
          f" (median node {r['median_up'] or float('nan'):.1f} s); longest gap between two frames of a node already up:"
          f" {r['worst_gap']:.1f} s")


async def naive(srv, roots, ticks: int) -> float:
    """One conn.run() per node per tick (a fresh session, shell and probe each time): client CPU per node-tick."""
    import pinscope.collectors.transport.ssh  # noqa: F401  (before asyncssh: quiets cryptography's DSA warning)
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
    sizes = [100, 300]
    if "--nodes" in sys.argv:
        sizes = [int(x) for x in sys.argv[sys.argv.index("--nodes") + 1].split(",")]
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other work on this machine"
          " slows both sides of each ratio alike)")
    d = Path(tempfile.mkdtemp(prefix="pinscope-fleet-"))
    roots = []
    for i in range(100):
        r = d / f"n{i}"
        SimNode(small_node(i), r).write()
        roots.append(str(r))
    srv = sshd_mod.Sshd(d / "sshd")
    srv.cfg.write_text(srv.cfg.read_text().replace("MaxStartups 200", "MaxStartups 1000:30:1000"))
    srv.start()
    try:
        _raise_nofile()
        per = asyncio.run(setup_cost(srv, roots))
        print(f"one set-up alone (TCP, SSH, login, session, first frame): {per * 1000:.0f} ms node-side CPU")
        if "--unpaced" in sys.argv:
            say_storm(asyncio.run(storm(srv, roots, sizes[0], per, paced=False, limit=150)))
            srv.kill()
            srv.start()
        for n in ([] if "--cost-only" in sys.argv else sizes):
            for interval in (1.0, 30.0):  # at 1 Hz the nodes already up tick on the same 2 cores; at 30 s, barely
                say_storm(asyncio.run(storm(srv, roots, n, per, interval=interval)))
                srv.kill()  # every session gone before the next run
                srv.start()
        fc = asyncio.run(fleet_cost(srv, roots, 15 if QUICK else 40))
        print(f"\n{len(roots)} nodes (32 CPUs, 8 pods each) over SSH at 1 Hz, fleet overview on screen: {fc['up']} up,"
              f" all delivering after {fc['ready']:.1f} s")
        print(f"  client: {fc['pct']:.1f} % of one core  (target <= 25 %), {fc['per_tick'] * 1000:.2f} ms per node-tick"
              f" over {fc['ticks']} node-ticks  (target <= 1 ms)")
        print(f"    of which user {fc['user_per_tick'] * 1000:.2f} ms, kernel {fc['sys_per_tick'] * 1000:.2f} ms")
        if "--marginal" in sys.argv:  # the same at half the nodes: what one more node costs, what the screen does
            srv.kill()
            srv.start()
            half = asyncio.run(fleet_cost(srv, roots[:len(roots) // 2], 15 if QUICK else 40))
            per_s = (fc["pct"] - half["pct"]) / 100 / (len(roots) - len(roots) // 2)  # core-s a node adds a second
            fixed = half["pct"] / 100 - per_s * (len(roots) // 2)
            print(f"  {len(roots) // 2} nodes: {half['pct']:.1f} % of one core; so one node more costs"
                  f" {per_s * 1000:.2f} ms a second (its tick, at 1 Hz), and the rest (the overview's repaints, timers)"
                  f" {fixed * 100:.1f} % of a core: ~{(1 - fixed) / per_s:.0f} nodes per core"
                  " (issue 25: 1,000)" if per_s > 0 else "  (no cost per node measured: too noisy)")
        if not QUICK:
            nv = asyncio.run(naive(srv, roots[:20], 3))
            print(f"  naive client (one conn.run() per node per tick): {nv * 1000:.2f} ms client CPU per node-tick"
                  f" -> {nv / fc['per_tick']:.1f}x the persistent channel")
    finally:
        srv.kill()


def _raise_nofile() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))


if __name__ == "__main__":
    main()
