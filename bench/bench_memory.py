"""Memory over a long session: the real app (headless Textual, the node screen on) reading one simulated
node through the real probe while that node's tasks churn (a process started in a pod's cgroup and
another ended every 0.1 s: thousands of thread ids come and go), the node's counters moving every tick.
The simulated node lives in another process (its trees are written there), so the RSS is the client's.

Printed: the client's RSS after 1 minute and at the end (goal, issue 10: within 10 % after 30 minutes),
and the size of every per-node history the app keeps (per-thread histories must be pruned when the
threads go), at 1 minute and at the end.
Run: python3 bench/bench_memory.py [--minutes 30] [--interval 1]
  (--interval 0.1 --minutes 3 runs as many ticks as 30 minutes at 1 s, in a tenth of the time)
"""
from __future__ import annotations

import asyncio
import gc
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

import psutil  # noqa: E402

from pinscope.collectors.collect import Options  # noqa: E402
from pinscope.collectors.fleet import NodeTarget  # noqa: E402
from pinscope.tui.app import PinscopeApp  # noqa: E402


def arg(name: str, default: float) -> float:
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


MINUTES, INTERVAL = arg("--minutes", 30), arg("--interval", 1.0)

CHURNER = textwrap.dedent(f"""
    import random, sys, time
    from pathlib import Path
    sys.argv = ["bench_soak"]
    sys.path[:0] = [{str(HERE.parent)!r}, {str(HERE)!r}, {str(HERE.parent / "tests")!r}]
    from pinscope.collectors.sim.node import SimNode
    import bench_soak
    root = Path(sys.stdin.readline().strip())
    sim = SimNode(bench_soak.spec(0), root).write()
    churn = bench_soak.Churn(root, random.Random(1))
    print("ready", flush=True)
    last = time.monotonic()
    while True:
        churn.step()
        now = time.monotonic()
        sim.tick(now - last)
        last = now
        time.sleep(0.1)
""")


def histories(view) -> dict[str, int]:
    """Every dict, list, set or deque the node's view keeps, by name -> its length."""
    out = {}
    for name in sorted(getattr(type(view), "__slots__", ()) or vars(view)):
        v = getattr(view, name, None)
        if isinstance(v, (dict, list, set, tuple)) or type(v).__name__ == "deque":
            out[name] = len(v)
    return out


async def run(root: Path) -> dict:
    app = PinscopeApp([NodeTarget("local", options=Options(root=str(root)))], interval=INTERVAL)
    proc = psutil.Process()
    marks = []
    async with app.run_test(size=(160, 50)):
        t0 = time.monotonic()
        end = t0 + MINUTES * 60
        next_mark = t0 + 60
        while time.monotonic() < end:
            await asyncio.sleep(min(5.0, max(0.0, end - time.monotonic())))
            if time.monotonic() >= next_mark or time.monotonic() >= end:
                gc.collect()
                v = app.views["local"]
                marks.append((time.monotonic() - t0, v.ticks, proc.memory_info().rss / 2**20, histories(v)))
                next_mark += 60
                print(f"  {marks[-1][0]:5.0f} s  ticks {v.ticks:6d}  RSS {marks[-1][2]:6.1f} MB", flush=True)
        app.exit()
    return {"marks": marks}


def main() -> None:
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, "
          f"Python {platform.python_version()}; load average {os.getloadavg()[0]:.2f}")
    print(f"memory: one churning node, the app's node screen, interval {INTERVAL:g} s, {MINUTES:g} min")
    root = Path(tempfile.mkdtemp(prefix="pinscope-mem-")) / "node"
    ch = subprocess.Popen([sys.executable, "-c", CHURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ch.stdin.write(f"{root}\n")
        ch.stdin.flush()
        if ch.stdout.readline().strip() != "ready":
            raise SystemExit("the simulated node did not start")
        marks = asyncio.run(run(root))["marks"]
    finally:
        ch.kill()
        ch.wait(5)
    if len(marks) < 2:
        raise SystemExit("too short: give --minutes 2 or more")
    (t1, k1, r1, h1), (t2, k2, r2, h2) = marks[0], marks[-1]
    print(f"RSS after {t1 / 60:.0f} min ({k1} ticks): {r1:.1f} MB; after {t2 / 60:.0f} min ({k2} ticks): {r2:.1f} MB: "
          f"{r2 / r1:.3f}x (goal <= 1.10x)")
    grew = {n: (h1[n], h2[n]) for n in h2 if n in h1 and h2[n] > max(h1[n] * 1.1, h1[n] + 8)}
    print("histories kept per node (length at 1 min -> end): "
          + ", ".join(f"{n} {h1.get(n, 0)} -> {h2[n]}" for n in h2))
    print("grew: " + (", ".join(f"{n} {a} -> {b}" for n, (a, b) in grew.items()) or "none"))


if __name__ == "__main__":
    main()
