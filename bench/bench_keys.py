"""Benchmark: a keypress (→) on the node screen until the cursor's `cpuN:` detail line is drawn, against a bare
Textual app updating one line on the same key; both through the same paths, in one run:
  - as a terminal delivers it: the key handed to the app as its driver hands a key read from the terminal
    (driver.send_message), timed until the compositor's update that holds the new line is handed to the
    display (App._display: what a terminal would be sent). Nothing else runs: no Pilot, no test waits.
  - through Pilot (Pilot.press, then Pilot.pause: the key handled, every message it caused handled, the
    screen laid out and rendered). Pilot's own waits visit every widget of the screen: they cost more on a
    screen of many widgets than on the bare app's one, and a terminal user has no Pilot.

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


async def _direct(app, shown, n: int) -> tuple[list[float], list[float]]:
    """n keys as a terminal delivers them; each timed until the display is handed the update that shows
    the new line (`shown()` true when App._display is called with an update)."""
    from textual import events

    wall, cpu = [], []
    done: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        real = app._display
        for _ in range(3):
            await pilot.pause()
        check = shown(app, True)  # the widgets looked up once: the check inside the timed window is cheap

        def display(screen, renderable):
            if renderable is not None and done.get("armed") and "t" not in done and check():
                done["t"], done["c"] = time.perf_counter(), cpu_now()
                done["ev"].set()
            return real(screen, renderable)

        app._display = display
        for i in range(n + 5):
            for _ in range(3):
                await pilot.pause()
            done.clear()
            done["ev"] = asyncio.Event()
            done["armed"] = True
            t0, c0 = time.perf_counter(), cpu_now()
            key = events.Key("right", None)
            key.set_sender(app)
            app._driver.send_message(key)
            await asyncio.wait_for(done["ev"].wait(), 10)
            if i >= 5:  # warm: the first moves build caches
                wall.append(done["t"] - t0)
                cpu.append(done["c"] - c0)
        app._display = real
    return wall, cpu


def _pinscope_shown(app, fast: bool = False):
    g = app.screen.query_one(CoreGrid)
    legend = app.screen.query_one("#legend-cursor", Static)
    check = lambda: f"cpu{g.cursor}:" in str(legend.render())  # noqa: E731
    return check if fast else check()


def _bare_shown(app, fast: bool = False):
    line = app.query_one("#line", Static)
    check = lambda: f"cpu{app.n}:" in str(line.render())  # noqa: E731
    return check if fast else check()


async def measure(frozen) -> dict:
    runs: dict = {(how, name): ([], []) for how in ("terminal", "pilot") for name in ("bare", "pinscope")}
    for _ in range(2):  # interleaved: a machine that gets busier later hurts both sides alike
        for how, fn in (("terminal", _direct), ("pilot", _keys)):
            for name in ("bare", "pinscope"):
                app = Bare() if name == "bare" else FrozenApp(frozen, start="big-256")
                w, c = await fn(app, _bare_shown if name == "bare" else _pinscope_shown, KEYS)
                runs[how, name][0].extend(w)
                runs[how, name][1].extend(c)
    return runs


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        frozen = {"big-256": frozen_samples(node256(), Path(d))}  # read before the loop runs (it runs its own)
        runs = asyncio.run(measure(frozen))
    print(f"# bench_keys: {KEYS * 2} presses of → each side, {platform.node()} {platform.machine()} "
          f"python {platform.python_version()}, 256-CPU node, {SIZE[0]}x{SIZE[1]}")
    for how, label in (("terminal", "as a terminal delivers the key, until the display gets the line"),
                       ("pilot", "through Pilot.press + Pilot.pause")):
        print(f"{label}:")
        for name in ("bare", "pinscope"):
            w, c = runs[how, name]
            print(f"  {name:9s} wall median {statistics.median(w) * 1e3:6.1f} ms  p95 {_pct(w, 0.95) * 1e3:6.1f} ms   "
                  f"CPU median {statistics.median(c) * 1e3:6.1f} ms")
        (bw, bc), (pw, pc) = runs[how, "bare"], runs[how, "pinscope"]
        print(f"  ratio pinscope/bare: wall median {statistics.median(pw) / statistics.median(bw):.2f}x   "
              f"CPU median {statistics.median(pc) / max(statistics.median(bc), 1e-9):.2f}x"
              + ("   (goal: wall median <= 2x, p95 <= 50 ms)" if how == "terminal" else ""))


if __name__ == "__main__":
    main()
