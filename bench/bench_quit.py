"""Benchmark: `q` in `pinscope demo` -> the process gone (the terminal and the shell back), in a real terminal.

The demo keeps its simulated nodes' trees (~6,000 files) in /dev/shm when it can (collectors/sim/demo.py
tree_dir); quitting removes them. Both sides in one run, interleaved, through the same command: the demo as
it starts, and the demo with /dev/shm taken away from it (demo.SHM pointed elsewhere) and TMPDIR=/var/tmp: the
trees on the disk, where they were before. `--load`: two busy loops run meanwhile (a loaded node or CI machine: where it mattered, 3-4 s).
Run: python3 bench/bench_quit.py [--runs N] [--load]   (needs tmux)
"""
from __future__ import annotations

import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOCK = f"pinscope-bench-quit-{os.getpid()}"
MARKERS = ("trade-xeon-96", "96/96 CPUs", "trading/md-feed-0")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCK, *args], capture_output=True, text=True, timeout=10).stdout


DISK = ("import sys; from pinscope.collectors.sim import demo; demo.SHM = '/nonexistent'; "
        "from pinscope.cli import main; sys.argv = ['pinscope', 'demo']; sys.exit(main())")


def one(env: str, settle: float = 3.0, timeout: float = 60.0) -> float:
    """Start the demo in a new tmux window, wait for its grid and `settle` s of ticks, press q; seconds from
    the key to the process's end (the window's shell writes a file when it does)."""
    fd, done = tempfile.mkstemp(prefix="pinscope-bench-quit-")
    os.close(fd)
    os.unlink(done)
    how = f"-c {shlex.quote(DISK)}" if "TMPDIR=/var/tmp" in env else "-m pinscope.cli demo"
    cmd = (f"cd {shlex.quote(str(REPO))} && {env} PYTHONPATH=. {shlex.quote(sys.executable)} {how}; "
           f"touch {shlex.quote(done)}; sleep 60")
    tmux("new-window", "-d", "-n", "q", cmd)
    try:
        end = time.monotonic() + timeout
        while not all(m in tmux("capture-pane", "-p", "-t", ":q") for m in MARKERS):
            if time.monotonic() > end:
                raise RuntimeError("the demo never showed its grid")
            time.sleep(0.05)
        time.sleep(settle)
        t0 = time.perf_counter()
        tmux("send-keys", "-t", ":q", "q")
        while not os.path.exists(done):
            if time.perf_counter() - t0 > timeout:
                raise RuntimeError("the demo never ended after q")
            time.sleep(0.005)
        return time.perf_counter() - t0
    finally:
        tmux("kill-window", "-t", ":q")
        _unlink(done)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def main() -> None:
    if not shutil.which("tmux"):
        sys.exit("bench_quit needs tmux (apt-get install tmux)")
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
    load = "--load" in sys.argv
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)] if load else []
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
          + (", two busy loops running" if load else ""))
    sides = [("pinscope demo (trees in /dev/shm when it can)", "env -u TMPDIR"),
             ("pinscope demo, no /dev/shm, TMPDIR=/var/tmp (on disk)", "env TMPDIR=/var/tmp")]
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "200", "-y", "60")
    try:
        times: dict[int, list[float]] = {i: [] for i in range(len(sides))}
        for _ in range(runs):  # interleaved
            for i, (_, env) in enumerate(sides):
                times[i].append(one(env))
    finally:
        tmux("kill-server")
        for b in busy:
            b.kill()
            b.wait()
    print(f"q -> the demo's process gone, tmux 200x60, median (min-max) of {runs} runs, interleaved:")
    med = [statistics.median(times[i]) for i in range(len(sides))]
    for i, (label, _) in enumerate(sides):
        print(f"  {label:52} {med[i] * 1000:6.0f} ms ({min(times[i]) * 1000:.0f}-{max(times[i]) * 1000:.0f})")
    print(f"trees on the disk / in memory: {med[1] / med[0]:.2f}x")


if __name__ == "__main__":
    main()
