"""Benchmark: what the jitter counters (issue 14) add to the probe's cost, side by side in one run.

The grid tick ("g") now also reads /proc/softirqs. Both probes run interleaved, round after round, so load
from the rest of the machine touches both alike; the result is the ratio of the medians. Nodes: the
generated 96-CPU tree (bench/bigspec.py; its /proc/softirqs has 96 columns) and this machine's real /proc.
For information, the deeper views: the container in focus (its threads' schedstat every tick) and the CPU
in focus (the every-task scan plus schedstat for its tasks, and /proc/interrupts), against what those views
read without the jitter counters.
Run: python3 bench/bench_noise.py [--quick]
"""
from __future__ import annotations

import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

from bench_probe import child_cpu  # noqa: E402
from bigspec import big_node  # noqa: E402

from pinscope.collectors.sim.node import SimNode  # noqa: E402
from pinscope.collectors.transport.base import probe_text  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 15
N = 20 if QUICK else 40  # requests per probe run

WITH = probe_text()
WITHOUT = WITH.replace(' "$R/proc/softirqs"', "", 1)  # the grid tick as it was before issue 14
assert WITHOUT != WITH, "the probe no longer reads /proc/softirqs on the grid tick: update this benchmark"


def run(text: str, root: str | None, reqs: list[str]) -> float:
    c0 = child_cpu()
    args = f" pinscope-probe --root {shlex.quote(root)}" if root else " pinscope-probe"
    subprocess.run(["sh", "-c", f"exec sh -c {shlex.quote(text)}{args}"],
                   input=("".join(r + "\n" for r in reqs) + "q\n").encode(), capture_output=True, check=True)
    return child_cpu() - c0


def per_request(text: str, root: str | None, req: str, n: int = N) -> float:
    """CPU seconds per request (start-up and the static read subtracted)."""
    base = run(text, root, ["sn"])
    return max(0.0, (run(text, root, ["sn"] + [req] * n) - base) / n)


def side_by_side(root: str | None, a: tuple[str, str], b: tuple[str, str], n: int = N) -> tuple[float, float, float, float]:
    """(text, request) pairs, interleaved round by round. -> the fastest round of each (ms per request:
    the least disturbed by the rest of the machine), their ratio, and the median of the rounds' ratios."""
    xs, ys = [], []
    for _ in range(ROUNDS):
        xs.append(per_request(a[0], root, a[1], n))
        ys.append(per_request(b[0], root, b[1], n))
    x, y = min(xs), min(ys)
    paired = statistics.median(v / u for u, v in zip(xs, ys) if u > 0)
    return x * 1e3, y * 1e3, (y / x if x else float("nan")), paired


def main() -> None:
    print(f"# {platform.machine()}, {platform.release()}, Python {platform.python_version()}, "
          f"{ROUNDS} rounds x {N} requests")
    with tempfile.TemporaryDirectory() as d:
        sim = SimNode(big_node(), d).write()
        eng = next(c.id for p in sim.spec.pods for c in p.containers if c.cpus)
        rows = [
            ("96-CPU tree: grid tick (g)", d, (WITHOUT, "g"), (WITH, "g")),
            ("this machine: grid tick (g)", None, (WITHOUT, "g"), (WITH, "g"), N * 25),  # 0.1 ms a tick
            ("96-CPU tree: container in focus (g <id>)", d, (WITHOUT, f"g {eng}"), (WITH, f"g {eng}")),
            ("96-CPU tree: CPU in focus (ga @2 vs ga)", d, (WITHOUT, "ga"), (WITH, "ga @2")),
            ("this machine: CPU in focus (ga @1 vs ga)", None, (WITHOUT, "ga"), (WITH, "ga @1")),
        ]
        print(f"{'CPU per request (fastest round)':44s} {'before':>9s} {'after':>9s} {'ratio':>7s} {'median of round ratios':>24s}")
        for name, root, a, b, *n in rows:
            x, y, r, paired = side_by_side(root, a, b, *n)
            print(f"{name:44s} {x:7.3f}ms {y:7.3f}ms {r:6.3f}x {paired:23.3f}x")


if __name__ == "__main__":
    main()
