"""Benchmark: `pinscope --prometheus` over 5,000 nodes, refreshing every 5 s, within 10 % of one core.

A real Prometheus (Debian's package) holds 5,000 simulated nodes (tests/promfleet.py, ~150,000
CPUs: ~350,000 series) backfilled with `promtool tsdb create-blocks-from openmetrics`. The overview runs
as a user runs it, in a real terminal (tmux, 200x50), and is measured from outside (psutil), side by side
with the Prometheus answering it, over the same windows:
  idle      the overview on screen, refreshing every 5 s (aggregates of every node, per-CPU series of
            the ~45 nodes on screen)
  scrolling PageDown every 2 s as well (new nodes on screen: their per-CPU series are fetched)
Run: python3 bench/bench_prom_overview.py [--quick]
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

from promfleet import make_fleet  # noqa: E402
from promserver import Prometheus, backfill, have_prometheus  # noqa: E402

QUICK = "--quick" in sys.argv
N = 5000
WINDOW = 30 if QUICK else 60


def tmux(*args: str, check: bool = True) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=20, check=check).stdout


def queries(prom_url: str) -> int:
    text = urllib.request.urlopen(prom_url + "/metrics", timeout=10).read().decode()
    m = re.search(r'prometheus_http_requests_total\{code="200",handler="/api/v1/query"\} (\d+)', text)
    return int(m.group(1)) if m else 0


def measure(procs: dict, seconds: float, prom_url: str, action=None) -> dict:
    c0 = {k: sum(p.cpu_times()[:2]) for k, p in procs.items()}
    q0 = queries(prom_url)
    t0 = time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end:
        if action:
            action()
        time.sleep(2)
    dt = time.monotonic() - t0
    out = {k: (sum(p.cpu_times()[:2]) - c0[k]) / dt for k, p in procs.items()}
    out["queries"] = queries(prom_url) - q0
    out["seconds"] = dt
    return out


def main() -> int:
    if not have_prometheus() or not shutil.which("tmux"):
        print("needs prometheus, promtool and tmux (tests/system-packages.sh installs them)")
        return 1
    tmp = tempfile.mkdtemp(prefix="pinscope-bench-prom-")
    session = f"pinscope-bench-{os.getpid()}"
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    fleet = make_fleet(N)
    t0 = time.monotonic()
    backfill(fleet, os.path.join(tmp, "data"))
    series = 2 * sum(n.ncpus for n in fleet if n.read_ok) + 12 * N
    print(f"fleet: {N:,} simulated nodes, {sum(n.ncpus for n in fleet):,} CPUs, ~{series:,} series, "
          f"backfilled in {time.monotonic() - t0:.0f} s\n")
    prom = Prometheus(storage=os.path.join(tmp, "data"), lookback="1h").start()
    try:
        cmd = f"exec {sys.executable} -m pinscope.cli --prometheus {prom.url}"
        tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "50", "-c", str(HERE.parent), cmd)
        pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
        end = time.monotonic() + 120
        while "5,000 nodes" not in tmux("capture-pane", "-p", "-t", session) or "Prometheus ok" not in tmux("capture-pane", "-p", "-t", session):
            if time.monotonic() > end:
                print(tmux("capture-pane", "-p", "-t", session))
                raise RuntimeError("the overview did not show 5,000 nodes within 120 s")
            time.sleep(0.5)
        time.sleep(10)  # past the first refreshes and the first per-CPU fetch
        procs = {"pinscope": psutil.Process(pid), "prometheus": psutil.Process(prom.proc.pid)}
        idle = measure(procs, WINDOW, prom.url)
        scroll = measure(procs, WINDOW, prom.url, action=lambda: tmux("send-keys", "-t", session, "PageDown"))
        print(tmux("capture-pane", "-p", "-t", session).splitlines()[0].strip())
        print(f"\n{'':<44}{'pinscope':>10}{'Prometheus':>12}{'queries':>9}")
        for name, r in (("idle: refresh every 5 s", idle), ("scrolling: PageDown every 2 s, refresh 5 s", scroll)):
            print(f"{name:<44}{r['pinscope'] * 100:>8.1f} %{r['prometheus'] * 100:>10.1f} %{r['queries']:>9}")
        print(f"\n(% of one core over {WINDOW} s windows; target: pinscope within 10 % of one core)")
        ok = idle["pinscope"] <= 0.10
        print(f"idle overview: {'MET' if ok else 'NOT MET'} ({idle['pinscope'] * 100:.1f} % of a core)")
    finally:
        tmux("kill-session", "-t", session, check=False)
        prom.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
