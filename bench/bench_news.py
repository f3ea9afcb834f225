"""Benchmark: the probe sends news, not the world (issue 25): a file it sent whole and that did not change
is said unchanged (a U line) and the client takes its own copy.

Both sides in one run, on one simulated 256-CPU / 120-container node whose counters move every tick
(every running container's cpu.stat, every CPU's /proc/stat line, softirqs) and whose kubelet state file
keeps its inode, read through the real probe with --root at the live cadence (collectors.collect.live_depth):
  - before: the probe as it was at BASE (a git commit; protocol 2: every file sent whole every tick),
  - after:  this checkout's probe,
  - the floor: `cat` of the very files a grid tick reads, in one process (no shell, no framing).
Each side is its own long-lived probe process driven tick by tick, alternating ticks between the sides so a
change of load touches both alike. Printed per tick: the frame's bytes, the probe's own CPU (what it says
of itself at the end of each frame: shell + awk, schedstat), and the client's CPU to parse the frame and
feed it to a Pipeline (this process, this checkout's client for both: a protocol-2 frame holds no U line).
Run: python3 bench/bench_news.py [--quick] [--base COMMIT]   (needs git: the before side is BASE's probe.sh)
"""
from __future__ import annotations

import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from bench_client import node256  # noqa: E402

from pinscope.collectors import probe_text  # noqa: E402
from pinscope.collectors.collect import live_depth  # noqa: E402
from pinscope.collectors.frames import PROTOCOL, parse_frame  # noqa: E402
from pinscope.collectors.pipeline import Pipeline  # noqa: E402
from pinscope.collectors.sim.node import SimNode  # noqa: E402

QUICK = "--quick" in sys.argv
BASE = sys.argv[sys.argv.index("--base") + 1] if "--base" in sys.argv else "cc6b6df"
WARM, N = (10, 30) if QUICK else (20, 120)


class Probe:
    """One long-lived probe process on `root`, asked for one frame at a time."""

    def __init__(self, text: str, root: str, protocol: str) -> None:
        self.p = subprocess.Popen(["sh", "-c", text, "pinscope-probe", "--root", root, "--protocol", protocol],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  start_new_session=True)

    def frame(self, req: str) -> bytes:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.write(req.encode() + b"\n")
        self.p.stdin.flush()
        lines = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("the probe ended")
            if line[:1] == b"P":
                continue  # mawk's padding
            lines.append(line)
            if line[:1] == b"Z":
                return b"".join(lines)

    def close(self) -> None:
        assert self.p.stdin is not None
        self.p.stdin.write(b"q\n")
        self.p.stdin.close()
        self.p.wait(10)


def probe_cpu(fr) -> float | None:
    v = fr.info.get("probe_cpu", "").partition(" ")[0]
    try:
        return float(v)
    except ValueError:
        return None


def grid_files(fr, root: str) -> list[str]:
    """The files a grid frame read whole (F) or said unchanged (U), as paths under root."""
    return [root + p for p in [*fr.files, *fr.unchanged]]


def cat_cost(files: list[str], reps: int = 20) -> float:
    """CPU seconds per reading of `files` by one `cat` process (start-up spread over `reps` readings)."""
    def run(k: int) -> float:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["cat", *(files * k)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    return max(0.0, min(run(reps) for _ in range(3)) - min(run(0) for _ in range(3))) / reps


def main() -> None:
    if not shutil.which("git"):
        sys.exit("bench_news needs git (the before side is BASE's probe.sh)")
    old = subprocess.run(["git", "-C", str(HERE.parent), "show", f"{BASE}:collectors/probe.sh"],
                         capture_output=True, text=True)
    if old.returncode != 0:
        sys.exit(f"bench_news: no collectors/probe.sh at {BASE}: {old.stderr.strip()}")
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    root = tempfile.mkdtemp(prefix="pinscope-bench-news-")
    sim = SimNode(node256(), root).write()
    sides = {"before": Probe(old.stdout, root, "2"), "after": Probe(probe_text(), root, PROTOCOL)}
    pipes = {k: Pipeline("bench") for k in sides}
    stats: dict[str, dict[str, list[float]]] = {k: {"bytes": [], "probe": [], "client": [], "gbytes": [],
                                                    "gprobe": []} for k in sides}
    last_cpu: dict[str, float | None] = dict.fromkeys(sides)
    gridfiles: list[str] = []
    try:
        for tick in range(WARM + N):
            sim.tick(1.0)
            req = ("s" if tick == 0 else "") + live_depth(tick) + ("n" if tick == 0 else "")
            for k, pr in sides.items():
                raw = pr.frame(req)
                t0 = time.process_time()
                fr = parse_frame(raw)
                pipes[k].feed(fr)
                took = time.process_time() - t0
                cpu = probe_cpu(fr)
                prev, last_cpu[k] = last_cpu[k], cpu
                if tick >= WARM and cpu is not None and prev is not None:
                    s = stats[k]
                    s["bytes"].append(len(raw))
                    s["probe"].append(cpu - prev)
                    s["client"].append(took)
                    if req == "g":
                        s["gbytes"].append(len(raw))
                        s["gprobe"].append(cpu - prev)
                        if k == "after" and not gridfiles:
                            gridfiles = grid_files(fr, root)
    finally:
        for pr in sides.values():
            pr.close()
    floor = cat_cost(gridfiles) if gridfiles else None
    shutil.rmtree(root, ignore_errors=True)

    def avg(v: list[float]) -> float:
        return sum(v) / len(v) if v else float("nan")

    b, a = stats["before"], stats["after"]
    print(f"256 CPUs / 120 containers, live cadence, {N} ticks after {WARM} (before = probe.sh at {BASE}):")
    rows = [("frame bytes per tick, live cadence", "bytes", 1, "B"), ("frame bytes per grid tick", "gbytes", 1, "B"),
            ("probe CPU per tick, live cadence", "probe", 1000, "ms"), ("probe CPU per grid tick", "gprobe", 1000, "ms"),
            ("client parse + feed per tick", "client", 1000, "ms")]
    for label, key, scale, unit in rows:
        x, y = avg(b[key]) * scale, avg(a[key]) * scale
        print(f"  {label:36} before {x:9.2f} {unit:2}  after {y:9.2f} {unit:2}  -> {y / x:.2f}x")
    if floor is not None:
        print(f"  floor: `cat` of the {len(gridfiles)} files a grid tick reads, one process: {floor * 1000:.2f} ms"
              f"  -> grid tick before {avg(b['gprobe']) / floor:.2f}x, after {avg(a['gprobe']) / floor:.2f}x the floor"
              " (goal <= 1.3x)")


if __name__ == "__main__":
    main()
