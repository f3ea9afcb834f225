"""Soak: 50 SSH nodes (one real sshd each, on loopback) in the real app for minutes, while a chaos loop
kills sshds (and every session: the node dropped off the network), freezes them (SIGSTOP: a hung node)
and brings them back, and tasks come and go in the nodes' containers. Not in CI: minutes long.

Printed: how long each node took to deliver a fresh frame after its sshd came back (goal: within two
intervals), whether every node came back, and the client's file descriptors, asyncio tasks, threads and
RSS over the run (goal: flat), and each sshd's sessions at the end (one probe per node: nothing leaked).
Run: python3 bench/bench_soak.py [--minutes 5] [--nodes 50] [--seed 1]
"""
from __future__ import annotations

import asyncio
import os
import platform
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

import psutil  # noqa: E402
import sshd as sshd_mod  # noqa: E402

from pinscope.collectors.collect import Options  # noqa: E402
from pinscope.collectors.fleet import NodeTarget  # noqa: E402
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode  # noqa: E402
from pinscope.tui.app import PinscopeApp  # noqa: E402


def arg(name: str, default: float) -> float:
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


MINUTES, NODES, SEED = arg("--minutes", 5), int(arg("--nodes", 50)), int(arg("--seed", 1))
INTERVAL = 1.0


def spec(i: int) -> NodeSpec:
    """A 16-CPU worker, 2 pinned pods and 3 burstable ones."""
    pods = [PodSpec(f"rt-{k}", "rt", containers=[CtrSpec("app", cpus=f"{1 + k},{9 + k}")]) for k in range(2)]
    pods += [PodSpec(f"web-{k}", "web", qos="Burstable", containers=[CtrSpec("app")]) for k in range(3)]
    return NodeSpec(hostname=f"s-{i:02d}", cores=8, reserved="0,8", pods=pods, seed=i + 1)


class Churn:
    """Tasks that come and go in a node's containers: a copy of a container's task under a new pid,
    listed in its cgroup.procs, later removed."""

    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root, self.rng, self.added = root, rng, []
        self.procs = [p for p in root.rglob("cgroup.procs") if p.read_text().strip() and "pod" in str(p)]
        self.next_pid = 70000

    def step(self) -> None:
        if self.added and (len(self.added) > 6 or self.rng.random() < 0.5):
            procs, pid = self.added.pop(self.rng.randrange(len(self.added)))
            procs.write_text("".join(f"{x}\n" for x in procs.read_text().split() if x != str(pid)))
            shutil.rmtree(self.root / f"proc/{pid}", ignore_errors=True)
            return
        if not self.procs:
            return
        procs = self.rng.choice(self.procs)
        src = procs.read_text().split()[0]
        self.next_pid += 1
        pid = self.next_pid
        d = self.root / f"proc/{pid}"
        shutil.copytree(self.root / f"proc/{src}", d, symlinks=True)
        for t in list((d / "task").iterdir()):
            t.rename(d / "task" / str(pid))
            break
        procs.write_text(procs.read_text() + f"{pid}\n")
        self.added.append((procs, pid))


def usage(proc: psutil.Process) -> dict:
    return {"fds": proc.num_fds(), "threads": proc.num_threads(), "rss_mb": proc.memory_info().rss / 2**20,
            "tasks": len(asyncio.all_tasks())}


async def soak(servers, sims, roots) -> dict:
    rng = random.Random(SEED)
    entries = []
    for i, s in enumerate(servers):
        o = Options(root=str(roots[i]), identity=str(s.userkey), known_hosts=str(s.known_hosts),
                    ssh_config=str(s.ssh_config))  # the product's default timeouts
        entries.append(NodeTarget(f"s-{i:02d}", s.target, options=o))
    app = PinscopeApp(entries, interval=INTERVAL)
    me = psutil.Process()
    churns = [Churn(r, rng) for r in roots]
    events = {"kill": 0, "stop": 0, "churn": 0}
    recoveries: list[tuple[str, str, float, float]] = []  # (node, how, seconds down, seconds to a fresh frame)
    disturbed: dict[int, tuple[str, float]] = {}  # node index -> (how, when it was disturbed)
    pending: list[tuple[int, str, float, float, int]] = []  # restored, waiting for a fresh frame
    never: list[str] = []
    series = []
    async with app.run_test(size=(200, 60)) as pilot:
        views = [app.views[f"s-{i:02d}"] for i in range(len(servers))]
        t0 = time.monotonic()
        while not all(v.state == "up" and v.ticks >= 2 for v in views):
            await asyncio.sleep(0.2)
            if time.monotonic() - t0 > 180:
                raise SystemExit("not every node came up in 180 s")
        print(f"all {len(views)} nodes up after {time.monotonic() - t0:.1f} s; warming up 20 s")
        lags: list[float] = []

        async def heartbeat() -> None:  # how late the client's event loop runs a 100 ms sleep
            while True:
                t = time.monotonic()
                await asyncio.sleep(0.1)
                lags.append(time.monotonic() - t - 0.1)

        lag = asyncio.create_task(heartbeat())
        await asyncio.sleep(20)
        base = usage(me)
        series.append((0.0, base))
        start = time.monotonic()
        end = start + MINUTES * 60
        next_event = start
        next_sample = start + 30

        async def restore(i: int) -> None:
            how, since = disturbed.pop(i)
            s = servers[i]
            if how == "kill":
                await s.astart()
            else:
                s.signal_all(signal.SIGCONT)
            pending.append((i, how, time.monotonic() - since, time.monotonic(), views[i].ticks))

        restore_at: dict[int, float] = {}

        async def ticker() -> None:  # the nodes' counters move, every node every 2 s, off the loop
            while True:
                await asyncio.to_thread(lambda: [s.tick(2.0) for s in sims])
                await asyncio.sleep(2.0)

        async def watcher() -> None:  # the first fresh frame after each restore, to 50 ms
            while True:
                for p in list(pending):
                    i, how, down_for, since, ticks = p
                    v = views[i]
                    if v.state == "up" and v.ticks > ticks:
                        recoveries.append((v.target, how, down_for, time.monotonic() - since))
                        pending.remove(p)
                    elif time.monotonic() - since > 60:
                        never.append(f"{v.target} ({how}, {v.state}: {v.message})")
                        pending.remove(p)
                await asyncio.sleep(0.05)

        helpers = [asyncio.create_task(ticker()), asyncio.create_task(watcher())]
        while time.monotonic() < end or disturbed or pending:
            now = time.monotonic()
            if now >= next_event and now < end:
                next_event = now + rng.uniform(0.5, 2.0)
                r = rng.random()
                free = [i for i in range(len(servers)) if i not in disturbed and all(p[0] != i for p in pending)]
                if r < 0.6 and free and len(disturbed) < len(servers) // 4:
                    i = rng.choice(free)
                    how = "kill" if rng.random() < 0.5 else "stop"
                    events[how] += 1
                    disturbed[i] = (how, now)
                    restore_at[i] = now + rng.uniform(2, 25)  # some stops outlast the frame timeout (15 s)
                    if how == "kill":
                        await servers[i].akill()
                    else:
                        servers[i].signal_all(signal.SIGSTOP)
                else:
                    events["churn"] += 1
                    await asyncio.to_thread(rng.choice(churns).step)
            for i, at in list(restore_at.items()):
                if now >= at or now >= end:
                    del restore_at[i]
                    await restore(i)
            if now >= next_sample:
                next_sample = now + 30
                series.append((now - start, usage(me)))
            await asyncio.sleep(0.05)
        for h in helpers:
            h.cancel()
        await asyncio.sleep(2 * INTERVAL)
        final = usage(me)
        series.append((time.monotonic() - start, final))
        up = sum(1 for v in views if v.state == "up")
        probes = [len(s.probes()) for s in servers]
        lag.cancel()
        await pilot.press("q")
    return {"events": events, "recoveries": recoveries, "never": never, "series": series, "up": up,
            "n": len(servers), "base": base, "final": final, "probes": probes, "lags": lags}


def main() -> None:
    ok, why = sshd_mod.available()
    if not ok:
        print("skipped:", why)
        return
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    print(f"soak: {NODES} SSH nodes, {MINUTES:g} min of chaos, interval {INTERVAL:g} s, seed {SEED};"
          f" load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    d = Path(tempfile.mkdtemp(prefix="pinscope-soak-"))
    servers, sims, roots = [], [], []
    try:
        for i in range(NODES):
            root = d / f"n{i}"
            sims.append(SimNode(spec(i), root).write())
            roots.append(root)
            servers.append(sshd_mod.Sshd(d / f"s{i}").start())
        r = asyncio.run(soak(servers, sims, roots))
        rec = r["recoveries"]
        lat = sorted(x[3] for x in rec)
        within = sum(1 for x in lat if x <= 2 * INTERVAL)
        print(f"\nevents: {r['events']['kill']} sshds killed, {r['events']['stop']} stopped (SIGSTOP), "
              f"{r['events']['churn']} task churns; every disturbance lasted 2-25 s")
        if lat:
            print(f"back to a fresh frame after the sshd returned: median {statistics.median(lat):.2f} s, "
                  f"p90 {lat[int(0.9 * (len(lat) - 1))]:.2f} s, max {lat[-1]:.2f} s; "
                  f"{within} of {len(lat)} within two intervals ({2 * INTERVAL:g} s)")
            for how in ("kill", "stop"):
                xs = sorted(x[3] for x in rec if x[1] == how)
                if xs:
                    print(f"  after {how}: median {statistics.median(xs):.2f} s, max {xs[-1]:.2f} s over {len(xs)}")
        print(f"never came back: {r['never'] or 'none'}; up at the end: {r['up']} of {r['n']}")
        b, f = r["base"], r["final"]
        print(f"client after warm-up -> end: fds {b['fds']} -> {f['fds']}, asyncio tasks {b['tasks']} -> {f['tasks']},"
              f" threads {b['threads']} -> {f['threads']}, RSS {b['rss_mb']:.0f} -> {f['rss_mb']:.0f} MB")
        print("  every 30 s: " + "  ".join(f"{t:.0f}s fds={u['fds']} tasks={u['tasks']} rss={u['rss_mb']:.0f}"
                                           for t, u in r["series"]))
        probes = r["probes"]
        lags = sorted(r["lags"])
        print(f"client event loop lateness (100 ms heartbeat): median {statistics.median(lags) * 1000:.0f} ms,"
              f" p99 {lags[int(0.99 * (len(lags) - 1))] * 1000:.0f} ms; load average at the end"
              f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"node side at the end: probes per node {min(probes)}..{max(probes)} (1 = nothing leaked on the nodes)")
    finally:
        for s in servers:
            s.kill()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
