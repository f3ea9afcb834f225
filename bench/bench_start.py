"""Benchmark: from process start to the first complete grid, in a real terminal (tmux).

Each side is a new process started in a tmux pane of a server already running; the screen is read with
`tmux capture-pane` every few milliseconds until it shows what a complete grid shows (the node's CPU count
read, its pinned pods labelled), and the time from `tmux new-window` to that screen is printed:
  - `pinscope --root TREE local` on a generated 96-CPU node (2 sockets x 24 cores x 2 threads,
    100 containers; the tree bench_client and bench_probe read), against the same with the Kubernetes
    client imported at start (the naive way: pinscope imports it only for `--kube` and `node/NAME`);
  - `pinscope demo` (its simulated nodes are written off the UI thread), against the same naive import;
  - the floor the same path measures: the interpreter printing the markers and nothing else;
  - a bare Textual app's first paint (one Static showing the same markers, bench/bare_app.py), and the same
    app after importing pinscope.collectors and reading one frame of the probe on the same tree: pinscope's
    first grid is printed as a ratio to both (issue 25: <= 1.5x the bare app's first paint).
pinscope's own sides run with PINSCOPE_TRACE_START=FILE (collectors/starttrace.py): the medians of its
phases (interpreter up, imports done, App constructed, the probe's first frame, the first report, the first
paint, the first grid painted) are printed, in ms from `tmux new-window`.
Targets (issue 10): <= 300 ms for the 96-CPU --root node, <= 500 ms for the demo.
Run: python3 bench/bench_start.py [--quick]   (needs tmux)
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

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

from bigspec import big_node  # noqa: E402

from pinscope.collectors.sim.node import SimNode  # noqa: E402

QUICK = "--quick" in sys.argv
RUNS = 5 if QUICK else 15
SOCK = f"pinscope-bench-start-{os.getpid()}"
PINSCOPE = 3  # the index of `pinscope --root TREE local` in main()'s sides
NAIVE = "import kubernetes, runpy, sys; sys.argv[0] = 'pinscope'; runpy.run_module('pinscope.cli', run_name='__main__')"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCK, *args], capture_output=True, text=True, timeout=10).stdout


def time_to_screen(argv: list[str], markers: tuple[str, ...], timeout: float = 20.0,
                   phases: dict[str, list[float]] | None = None) -> float:
    """Seconds from starting `argv` in a new 200x60 tmux window to a screen holding every marker.
    `phases`: trace pinscope's start (PINSCOPE_TRACE_START) and append each phase's seconds to it."""
    cmd = " ".join(shlex.quote(a) for a in argv)
    trace = ""
    env = ""
    if phases is not None:
        fd, trace = tempfile.mkstemp(prefix="pinscope-bench-trace-")
        os.close(fd)
        env = f"PINSCOPE_TRACE_START={shlex.quote(trace)} "
    t0 = time.perf_counter()
    w0 = time.time()
    tmux("new-window", "-d", "-n", "b", f"cd {shlex.quote(str(REPO))} && {env}PYTHONPATH=. exec {cmd}")
    try:
        while time.perf_counter() - t0 < timeout:
            screen = tmux("capture-pane", "-p", "-t", ":b")
            if all(m in screen for m in markers):
                took = time.perf_counter() - t0
                if phases is not None:
                    time.sleep(0.05)  # the last phase's line is written after the frame that showed it
                    for line in Path(trace).read_text().splitlines():
                        name, _, at = line.rpartition(" ")
                        phases.setdefault(name, []).append(float(at) - w0)
                return took
            time.sleep(0.003)
        raise RuntimeError(f"{argv[-2:]}: the screen never showed {markers}: {screen[-400:]!r}")
    finally:
        tmux("kill-window", "-t", ":b")
        if trace:
            os.unlink(trace)
        time.sleep(0.3)  # let the killed process go before the next start


def main() -> None:
    if not shutil.which("tmux"):
        sys.exit("bench_start needs tmux (apt-get install tmux)")
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python "
          f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    root = tempfile.mkdtemp(prefix="pinscope-bench-start-")
    SimNode(big_node(), root).write()
    py = sys.executable
    # every side runs from bytecode, as a start after the first does: with PYTHONDONTWRITEBYTECODE set (a
    # shell's or a CI image's habit) nothing is ever cached, and each start of pinscope compiled its ~70
    # modules from source (~90 ms), which the bare app (Textual in site-packages, compiled by pip) never paid
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([py, "-m", "compileall", "-q", str(REPO / "collectors"), str(REPO / "tui"), str(REPO / "themes"),
                    str(HERE)], check=False, capture_output=True)
    print("bytecode: compiled beforehand for every side (compileall), PYTHONDONTWRITEBYTECODE unset")
    root_markers = ("96/96 CPUs", "rt/pinned-19")  # every CPU read, the pinned pods in the legend
    demo_markers = ("trade-xeon-96", "96/96 CPUs", "trading/md-feed-0")
    sides = [
        ("floor: the interpreter printing the markers", [py, "-c", f"print({' '.join(root_markers)!r}); "
                                                         "import time; time.sleep(60)"], root_markers),
        ("a bare Textual app's first paint (same markers)", [py, str(HERE / "bare_app.py"), "bare", *root_markers],
         root_markers),
        ("  bare app + import collectors + one probe frame", [py, str(HERE / "bare_app.py"), "probe", root,
                                                               *root_markers], root_markers),
        ("pinscope --root TREE local (96 CPUs)", [py, "-m", "pinscope.cli", "--root", root, "local"], root_markers),
        ("  naive: the Kubernetes client imported at start", [py, "-c", NAIVE, "--root", root, "local"], root_markers),
        ("pinscope demo", [py, "-m", "pinscope.cli", "demo"], demo_markers),
        ("  naive: the Kubernetes client imported at start", [py, "-c", NAIVE, "demo"], demo_markers),
    ]
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "200", "-y", "60")
    tmux("set-option", "-g", "default-size", "200x60")
    try:
        times: dict[int, list[float]] = {i: [] for i in range(len(sides))}
        phases: dict[str, list[float]] = {}
        for _ in range(RUNS):  # interleaved: a change of load touches every side alike
            for i, (_, argv, markers) in enumerate(sides):
                traced = phases if i == PINSCOPE else None
                times[i].append(time_to_screen(argv, markers, phases=traced))
    finally:
        tmux("kill-server")
        shutil.rmtree(root, ignore_errors=True)
    print(f"process start -> complete first grid on screen, tmux 200x60, median (min-max) of {RUNS} runs, interleaved:")
    med = {i: statistics.median(v) for i, v in times.items()}
    for i, (label, _, _) in enumerate(sides):
        v = times[i]
        extra = ""
        if label.startswith("  naive"):
            extra = f"  -> {med[i] / med[i - 1]:.2f}x pinscope's"
        elif i == PINSCOPE:
            extra = "  (target <= 300 ms)"
        elif i == PINSCOPE + 2:
            extra = "  (target <= 500 ms)"
        print(f"  {label:52} {med[i] * 1000:6.0f} ms ({min(v) * 1000:.0f}-{max(v) * 1000:.0f}){extra}")
    bare, probed, ours = med[PINSCOPE - 2], med[PINSCOPE - 1], med[PINSCOPE]
    print(f"pinscope's first grid (--root, 96 CPUs) / a bare Textual app's first paint: {ours / bare:.2f}x "
          f"(goal <= 1.5x); / the bare app that imports the collectors and reads one frame: {ours / probed:.2f}x")
    print("pinscope --root TREE local, its phases (PINSCOPE_TRACE_START), median ms from tmux new-window:")
    for name, at in sorted(phases.items(), key=lambda kv: statistics.median(kv[1])):
        print(f"  {name:30} {statistics.median(at) * 1000:6.0f} ms ({min(at) * 1000:.0f}-{max(at) * 1000:.0f}, "
              f"{len(at)} runs)")


if __name__ == "__main__":
    main()
