"""Benchmark: the TUI's cost.

  - full repaint of a 256-CPU grid (CoreGrid, Line API): CPU ms, against the same data drawn as a
    widget per CPU (256 Static widgets) and as a DataTable (one row per CPU)
  - the line cache: hits when nothing changed
  - the whole node screen on a new report of a 256-CPU node whose counters move
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

from textual.app import App  # noqa: E402
from textual.containers import Grid  # noqa: E402
from textual.widgets import DataTable, Static  # noqa: E402

from pinscope.collectors.collect import Options  # noqa: E402
from pinscope.collectors.fleet import NodeTarget  # noqa: E402
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec  # noqa: E402
from pinscope.collectors.transport.local import LocalTransport  # noqa: E402
from frozen import FrozenApp, frozen_samples  # noqa: E402
from pinscope.tui.app import PinscopeApp  # noqa: E402
from pinscope.tui.widgets.coregrid import CoreGrid  # noqa: E402

QUICK = "--quick" in sys.argv
SIZE = (200, 60)
BUMP = 0.15  # each update moves every CPU's load by 15 points: every cell changes shade (1/7 steps)


def cpu_now() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def node256() -> NodeSpec:
    pods = [PodSpec(f"rt-{i}", "rt", containers=[CtrSpec("app", cpus=f"{2 + i},{130 + i}")]) for i in range(40)]
    return NodeSpec(hostname="big-256", sockets=2, cores=64, threads=2, reserved="0,128", pods=pods)


def _bumped(view, bump: float):
    """A copy of a NodeView whose every CPU's load is bumped by `bump` (as the naive sides do)."""
    from dataclasses import replace

    from pinscope.tui.state import NodeView

    rep = view.report
    util = {c: (u + bump) % 1.0 for c, u in rep.rates.util.items()}
    v = NodeView(view.target, tags=dict(view.tags), generation=view.generation)
    v.apply(replace(rep, rates=replace(rep.rates, util=util)))
    return v


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
        # sides below (set the data, then let Textual lay out, render and write the screen: pilot.pause),
        # with the same data: every CPU's load bumped by BUMP more each time (views built before the clock starts)
        views = [_bumped(g.view, (i + 1) * BUMP) for i in range(n)]
        t0 = cpu_now()
        for v in views:
            g.set_view(v, g.highlight)
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
                app.query_one(f"#c{c.id}", Static).update(app.text(c.id, (i + 1) * BUMP))
            await pilot.pause()
        out["widgets"] = (cpu_now() - t0) / n
    app = TablePerCpu(snap, util)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t = app.query_one(DataTable)
        t0 = cpu_now()
        for i in range(n):
            for c in snap.topology.cpus:
                t.update_cell(str(c.id), t.ordered_columns[2].key, f"{((util.get(c.id, 0) + (i + 1) * BUMP) * 100) % 100:.0f}%")
            await pilot.pause()
        out["table"] = (cpu_now() - t0) / n
    return out


def live_reports(spec, n: int) -> list:
    """n reports of a simulated node whose counters move every tick, read through the real probe at the
    live cadence (the reports a node screen gets, one a second): bench_client's frames through a Pipeline."""
    import bench_client

    from pinscope.collectors.collect import live_depth
    from pinscope.collectors.frames import parse_frame
    from pinscope.collectors.pipeline import Pipeline

    pl = Pipeline("bench")
    return [pl.feed(parse_frame(raw)) for raw in bench_client.record(spec, live_depth)][-n:]


async def screen_refresh(reports: list) -> dict:
    """The node screen as the app runs it: each new report posted (NodeUpdate: the view applies it, the
    screen refreshes grid, status, legend, pods and findings) and Textual's cycle run (pilot.pause: layout,
    render, write). CPU per report, and the same cycle with no report (the floor)."""
    from pinscope.tui.app import NodeUpdate

    app = FrozenApp({"bench": reports[0]})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        warm = reports[1:6]
        for r in warm:
            app.post_message(NodeUpdate("bench", r))
            await pilot.pause()
        rest = reports[6:]
        t0 = cpu_now()
        for _ in rest:
            await pilot.pause()
        floor = (cpu_now() - t0) / len(rest)
        t0 = cpu_now()
        for r in rest:
            app.post_message(NodeUpdate("bench", r))
            await pilot.pause()
        per = (cpu_now() - t0) / len(rest)
        await pilot.press("q")
    return {"per": per, "floor": floor, "n": len(rest)}


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
from pinscope.collectors.sim.node import SimNode
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
        app = PinscopeApp([NodeTarget(name, transport=LocalTransport(root))], Options(root=root), 1.0)
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
    from bench_client import node256 as busy256

    sr = asyncio.run(screen_refresh(live_reports(busy256(), 26 if QUICK else 66)))
    print(f"\nnode screen, 256 CPUs / 120 containers, a new report (counters moving) through the real Textual cycle:"
          f" {ms(sr['per'])} CPU per report over {sr['n']} reports (target <= 3 ms); the cycle with no report:"
          f" {ms(sr['floor'])}")
    print("first complete grid from process start: python3 bench/bench_start.py")
    lc = asyncio.run(live_cost(10 if QUICK else 30))
    print(f"\nTUI at 1 Hz on one 96-CPU node, 100 containers: {lc['pct']:.1f} % of one core over {lc['ticks']} ticks "
          "(collect, parse, findings, render; the probe's own CPU is the node's, see bench_probe.py)  (target <= 5 %)")
    lc = asyncio.run(live_cost(10 if QUICK else 30, "bench_client.node256", "bench-256"))
    print(f"TUI at 1 Hz on one 256-CPU node, 120 containers: TUI process {ms(lc['tui_tick'])} CPU per tick, probe"
          f" {ms(lc['probe_tick'])} per tick over {lc['ticks']} ticks -> {lc['tui_tick'] / max(lc['probe_tick'], 1e-9):.2f}x"
          "  (target <= 0.5x)")


if __name__ == "__main__":
    main()
