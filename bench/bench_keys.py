"""Benchmark: a keypress (→) on the node screen until the cursor's `cpuN:` detail line is drawn, against a bare
Textual app updating one line on the same key; both through the same path (Pilot.press, then Pilot.pause: the
key handled, every message it caused handled, the screen laid out and rendered), in one run.

Printed: median and p95 wall ms, and CPU ms (this process's user+system: steadier than wall on a loaded
machine), per key, and the ratios pinscope / bare. The node is bench_tui's 256-CPU node (frozen samples read
through the real probe).
Run: python3 bench/bench_keys.py [--keys N]
"""
from __future__ import annotations

import asyncio
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests"), str(HERE.parent / "tests" / "tui")]

from textual.app import App, ComposeResult  # noqa: E402
from textual.widgets import Static  # noqa: E402

from bench_tui import SIZE, cpu_now, node256  # noqa: E402
from frozen import FrozenApp, frozen_samples  # noqa: E402
from pinscope.tui.widgets.coregrid import CoreGrid  # noqa: E402

KEYS = int(sys.argv[sys.argv.index("--keys") + 1]) if "--keys" in sys.argv else 60


class Bare(App):
    """One line that says which cell the cursor is on, updated on →."""

    BINDINGS = [("right", "move", "move")]

    def __init__(self) -> None:
        super().__init__()
        self.n = 0

    def compose(self) -> ComposeResult:
        yield Static("cpu0: exclusive", id="line")

    def action_move(self) -> None:
        self.n += 1
        self.query_one("#line", Static).update(f"cpu{self.n}: exclusive  load 42%  socket 0 NUMA 0 core {self.n}")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


async def _keys(app, shown, n: int) -> tuple[list[float], list[float]]:
    """Press → n times; after each, the detail line must say the new place (`shown()`)."""
    wall, cpu = [], []
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(5):
            await pilot.pause()
        for _ in range(5):  # warm: the first moves build caches
            await pilot.press("right")
            await pilot.pause()
        for _ in range(n):
            t0, c0 = time.perf_counter(), cpu_now()
            await pilot.press("right")
            await pilot.pause()
            wall.append(time.perf_counter() - t0)
            cpu.append(cpu_now() - c0)
            assert shown(app), "the detail line does not show the cursor's CPU"
    return wall, cpu


def _pinscope_shown(app) -> bool:
    g = app.screen.query_one(CoreGrid)
    legend = str(app.screen.query_one("#legend", Static).render())
    return f"cpu{g.cursor}:" in legend


def _bare_shown(app) -> bool:
    return f"cpu{app.n}:" in str(app.query_one("#line", Static).render())


async def measure(frozen) -> dict:
    runs: dict = {"bare": ([], []), "pinscope": ([], [])}
    for _ in range(2):  # interleaved: a machine that gets busier later hurts both sides alike
        for name in ("bare", "pinscope"):
            app = Bare() if name == "bare" else FrozenApp(frozen, start="big-256")
            w, c = await _keys(app, _bare_shown if name == "bare" else _pinscope_shown, KEYS)
            runs[name][0].extend(w)
            runs[name][1].extend(c)
    return runs


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        frozen = {"big-256": frozen_samples(node256(), Path(d))}  # read before the loop runs (it runs its own)
        runs = asyncio.run(measure(frozen))
    print(f"# bench_keys: {KEYS * 2} presses of → each side, {platform.node()} {platform.machine()} "
          f"python {platform.python_version()}, 256-CPU node, {SIZE[0]}x{SIZE[1]}")
    for name, (w, c) in runs.items():
        print(f"{name:9s} wall median {statistics.median(w) * 1e3:6.1f} ms  p95 {_pct(w, 0.95) * 1e3:6.1f} ms   "
              f"CPU median {statistics.median(c) * 1e3:6.1f} ms")
    (bw, bc), (pw, pc) = runs["bare"], runs["pinscope"]
    print(f"ratio pinscope/bare: wall median {statistics.median(pw) / statistics.median(bw):.2f}x   "
          f"CPU median {statistics.median(pc) / max(statistics.median(bc), 1e-9):.2f}x   "
          f"(goal: wall median <= 2x, p95 <= 50 ms)")


if __name__ == "__main__":
    main()
