"""Benchmark: the TUI's cost.

  - full repaint of a 256-CPU grid (CoreGrid, Line API): CPU ms, against the same data drawn as a
    widget per CPU (256 Static widgets) and as a DataTable (one row per CPU)
  - the line cache: hits when nothing changed
  - first frame after start, before any node answers
  - the TUI at 1 Hz on one 96-CPU node (real probe on a fixture tree): % of one core, probe excluded
Run: python3 bench/bench_tui.py [--quick]
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
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests"), str(HERE.parent / "tests" / "tui")]

from bigspec import big_node  # noqa: E402
from textual.app import App  # noqa: E402
from textual.containers import Grid  # noqa: E402
from textual.widgets import DataTable, Static  # noqa: E402

from collectors.collect import Options  # noqa: E402
from collectors.sim.node import CtrSpec, NodeSpec, PodSpec  # noqa: E402
from collectors.transport.local import LocalTransport  # noqa: E402
from frozen import FrozenApp, frozen_samples  # noqa: E402
from tui.app import PinscopeApp  # noqa: E402
from tui.widgets.coregrid import CoreGrid  # noqa: E402

QUICK = "--quick" in sys.argv
SIZE = (200, 60)


def cpu_now() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def node256() -> NodeSpec:
    pods = [PodSpec(f"rt-{i}", "rt", containers=[CtrSpec("app", cpus=f"{2 + i},{130 + i}")]) for i in range(40)]
    return NodeSpec(hostname="big-256", sockets=2, cores=64, threads=2, reserved="0,128", pods=pods)


async def grid_repaint(frozen) -> dict:
    app = FrozenApp(frozen)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        h = g.size.height
        n = 50
        t0 = cpu_now()
        for i in range(n):
            g._cache.clear()
            for y in range(h):
                g.render_line(y)
        full = (cpu_now() - t0) / n
        g.cache_hits = g.cache_misses = 0
        for y in range(h):
            g.render_line(y)
        hits = g.cache_hits
        # a whole update as the app does it on a new snapshot, through the same Textual cycle as the naive
        # sides below (set the data, then let Textual lay out, render and write the screen: pilot.pause)
        t0 = cpu_now()
        for i in range(n):
            g.set_view(g.view, g.highlight)
            await pilot.pause()
        update = (cpu_now() - t0) / n
        density = g.density
    return {"full": full, "update": update, "hits": hits, "lines": h, "density": density}


class WidgetPerCpu(App):
    CSS = "Grid { grid-size: 16; } Static { height: 1; }"

    def __init__(self, snap, util):
        super().__init__()
        self.snap, self.util = snap, util

    def compose(self):
        with Grid():
            for c in self.snap.topology.cpus:
                yield Static(self.text(c.id), id=f"c{c.id}")

    def text(self, cid, bump=0.0):
        r = self.snap.role_of(cid)
        return f"{cid:>3} {r.role[:1]} {int((self.util.get(cid, 0) + bump) * 100) % 100:>2}%"


class TablePerCpu(App):
    def __init__(self, snap, util):
        super().__init__()
        self.snap, self.util = snap, util

    def compose(self):
        yield DataTable()

    def on_mount(self):
        t = self.query_one(DataTable)
        t.add_columns("cpu", "role", "load", "owner")
        for c in self.snap.topology.cpus:
            r = self.snap.role_of(c.id)
            t.add_row(str(c.id), r.role, f"{self.util.get(c.id, 0) * 100:.0f}%",
                      r.owners[0].pod if r.owners else "", key=str(c.id))


async def naive_repaints(snap, util) -> dict:
    out = {}
    n = 10
    app = WidgetPerCpu(snap, util)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t0 = cpu_now()
        for i in range(n):
            for c in snap.topology.cpus:
                app.query_one(f"#c{c.id}", Static).update(app.text(c.id, i / 100))
            await pilot.pause()
        out["widgets"] = (cpu_now() - t0) / n
    app = TablePerCpu(snap, util)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t = app.query_one(DataTable)
        t0 = cpu_now()
        for i in range(n):
            for c in snap.topology.cpus:
                t.update_cell(str(c.id), t.ordered_columns[2].key, f"{(util.get(c.id, 0) * 100 + i) % 100:.0f}%")
            await pilot.pause()
        out["table"] = (cpu_now() - t0) / n
    return out


async def first_frame() -> float:
    # a node that never answers: a probe whose stdin we never get to (connect stalls on a blackhole port)
    from collectors.collect import Options as O

    app = PinscopeApp([("root@127.0.0.1:9", None)], O(connect_timeout=30), 1.0)
    t0 = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        shown = time.perf_counter() - t0
        first = "".join(s.text for s in app.screen.query_one(CoreGrid).render_line(0))
        assert "127.0.0.1" in first, f"the grid's first line does not name the node: {first!r}"
        await pilot.press("q")
    return shown


def probe_cpu(skip: int) -> float:
    """CPU of this process's children still running (the probe: sh + awk under LocalTransport), but
    not the simulation ticker (`skip`: its pid)."""
    import psutil

    tot = 0.0
    for c in psutil.Process().children(recursive=True):
        if c.pid == skip:
            continue
        try:
            tot += sum(c.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return tot


TICKER = """
import sys, time
sys.path[:0] = {paths!r}
import bigspec, bench_client
from collectors.sim.node import SimNode
sim = SimNode(getattr({mod}, {fn!r})(), {root!r}).write()
print("ready", flush=True)
while True:
    time.sleep(0.5)
    sim.tick(0.5)
"""


async def live_cost(seconds: float, spec_fn: str = "bigspec.big_node", name: str = "bench-96") -> dict:
    """The TUI at 1 Hz on one simulated node whose counters move (a separate ticker process rewrites them
    twice a second): this process's CPU (collect, parse, assemble, rates, findings, render) and the
    probe's, per tick, over the same window."""
    import subprocess

    root = tempfile.mkdtemp(prefix="pinscope-tui-")
    mod, fn = spec_fn.split(".")
    ticker = subprocess.Popen([sys.executable, "-c", TICKER.format(paths=sys.path[:4], mod=mod, fn=fn, root=root)],
                              stdout=subprocess.PIPE, text=True)
    try:
        ticker.stdout.readline()
        app = PinscopeApp([(name, LocalTransport(root))], Options(root=root), 1.0)
        async with app.run_test(size=SIZE) as pilot:
            v = app.views[name]
            while v.ticks < 2:
                await asyncio.sleep(0.05)
            t0, p0, w0, k0 = cpu_now(), probe_cpu(ticker.pid), time.perf_counter(), v.ticks
            await asyncio.sleep(seconds)
            cpu, probe = cpu_now() - t0, probe_cpu(ticker.pid) - p0
            wall = time.perf_counter() - w0
            ticks = v.ticks - k0
            await pilot.press("q")
    finally:
        ticker.kill()
        ticker.wait()
    return {"pct": cpu / wall * 100, "ticks": ticks, "tui_tick": cpu / max(ticks, 1), "probe_tick": probe / max(ticks, 1)}


def ms(x):
    return f"{x * 1000:7.2f} ms"


def main() -> None:
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    d = tempfile.mkdtemp()
    frozen = {"big-256": frozen_samples(node256(), d)}
    r = asyncio.run(grid_repaint(frozen))
    print(f"\n256-CPU grid at {SIZE[0]}x{SIZE[1]} ({r['lines']} lines, density {r['density']}):")
    print(f"  render_line() of every visible line, cache cleared (the widget alone): {ms(r['full'])} CPU")
    print(f"  new snapshot through the Textual cycle (set_view + pilot.pause, as the sides below): {ms(r['update'])} CPU")
    print(f"  unchanged frame: {r['hits']}/{r['lines']} lines from the cache")
    rep = frozen["big-256"]
    snap, rates = rep.snapshot, rep.rates
    nv = asyncio.run(naive_repaints(snap, rates.util if rates else {}))
    print(f"  the same data as 256 Static widgets: {ms(nv['widgets'])} per update -> CoreGrid is {nv['widgets'] / r['update']:.0f}x cheaper")
    print(f"  the same data as a DataTable (row per CPU): {ms(nv['table'])} per update -> CoreGrid is {nv['table'] / r['update']:.0f}x cheaper")
    ff = asyncio.run(first_frame())
    print(f"\nfirst frame, no node answering yet: {ff * 1000:.0f} ms after start (target <= 300 ms)")
    lc = asyncio.run(live_cost(10 if QUICK else 30))
    print(f"\nTUI at 1 Hz on one 96-CPU node, 100 containers: {lc['pct']:.1f} % of one core over {lc['ticks']} ticks "
          "(collect, parse, findings, render; the probe's own CPU is the node's, see bench_probe.py)  (target <= 5 %)")
    lc = asyncio.run(live_cost(10 if QUICK else 30, "bench_client.node256", "bench-256"))
    print(f"TUI at 1 Hz on one 256-CPU node, 120 containers: TUI process {ms(lc['tui_tick'])} CPU per tick, probe"
          f" {ms(lc['probe_tick'])} per tick over {lc['ticks']} ticks -> {lc['tui_tick'] / max(lc['probe_tick'], 1e-9):.2f}x"
          "  (target <= 0.5x)")


if __name__ == "__main__":
    main()
