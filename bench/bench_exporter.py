"""Benchmark: `pinscope exporter` CPU per scrape against Debian's node_exporter on the same node tree.

Node: the generated 96-CPU tree of bench_probe (2 sockets x 24 cores x 2 threads, 100 containers, 550
tasks), plus the files node_exporter's collectors read that the simulation does not write (/proc/meminfo,
/proc/schedstat, /proc/pressure/*). node_exporter runs with --path.procfs/--path.sysfs on that tree and
only its cpu, stat, schedstat, pressure and meminfo collectors. Printed side by side, in one run:
  (a) scrape only: each server's own CPU (process + children) per scrape, back to back. pinscope's reads
      are paused (--interval 3600 after the first), so this is the cost of a scrape alone: the custom
      collector handing over the latest samples and prometheus_client formatting them.
  (b) a read per scrape: scraped once a second for a window, pinscope reading once a second too (its
      probe and its parsing included), node_exporter reading at scrape time as it always does.
Run: python3 bench/bench_exporter.py [--quick]
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

from bigspec import big_node  # noqa: E402

from pinscope.collectors.sim.node import SimNode  # noqa: E402
from promserver import _kill_group, _readline, free_port  # noqa: E402

QUICK = "--quick" in sys.argv
N_BACK_TO_BACK = 100 if QUICK else 300
WINDOW = 10 if QUICK else 60


def node_exporter_files(root: Path, ncpus: int) -> None:
    """What node_exporter's cpu/stat/schedstat/pressure/meminfo collectors read beyond the simulation."""
    (root / "proc/meminfo").write_text("".join(f"{k}: {v} kB\n" for k, v in (
        ("MemTotal", 394000000), ("MemFree", 120000000), ("MemAvailable", 300000000), ("Buffers", 100000),
        ("Cached", 9000000), ("SwapCached", 0), ("Active", 50000000), ("Inactive", 20000000), ("SwapTotal", 0),
        ("SwapFree", 0), ("Dirty", 100), ("AnonPages", 60000000), ("Mapped", 2000000), ("Shmem", 100000),
        ("Slab", 3000000), ("PageTables", 400000), ("CommitLimit", 197000000), ("Committed_AS", 90000000),
        ("HugePages_Total", 0), ("Hugepagesize", 2048))))
    lines = ["version 15", "timestamp 4295000000"]
    for c in range(ncpus):
        lines.append(f"cpu{c} 0 0 0 0 0 0 {1000000 + c} {2000 + c} {300 + c}")
        lines.append(f"domain0 {'f' * (ncpus // 4)} " + " ".join(["0"] * 45))
    (root / "proc/schedstat").write_text("\n".join(lines) + "\n")
    (root / "proc/pressure").mkdir(exist_ok=True)
    for res in ("cpu", "memory", "io"):
        (root / f"proc/pressure/{res}").write_text(
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def cpu_of(pid: int) -> float:
    """User + system seconds of a process and its live children (the exporter's probe)."""
    p = psutil.Process(pid)
    total = sum(p.cpu_times()[:2])
    for c in p.children(recursive=True):
        try:
            total += sum(c.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return total


def get(url: str) -> bytes:
    return urllib.request.urlopen(url, timeout=10).read()


def wait_metrics(url: str, pattern: str, deadline: float = 60) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            if re.search(pattern, get(url).decode()):
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url}: {pattern} not within {deadline} s")


def start_pinscope(root: str, interval: float) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "exporter", "--listen", "127.0.0.1:0", "--root", root,
                          "--node-name", "bench-96", "--interval", str(interval), "local"],
                         cwd=HERE.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    line = _readline(p, 60)
    m = re.search(r"http://(\S+)/metrics", line)
    if not m:
        _kill_group(p)
        raise RuntimeError(f"exporter did not start: {line!r}")
    url = f"http://{m.group(1)}/metrics"
    wait_metrics(url, r'pinscope_read_success\{node="bench-96"\} 1')
    return p, url


def start_node_exporter(root: str) -> tuple[subprocess.Popen, str]:
    exe = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
    port = free_port()
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", f"--path.procfs={root}/proc",
                          f"--path.sysfs={root}/sys", "--collector.disable-defaults", "--collector.cpu",
                          "--collector.stat", "--collector.schedstat", "--collector.pressure", "--collector.meminfo"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/metrics"
    wait_metrics(url, r"node_cpu_seconds_total")
    return p, url


def back_to_back(pid: int, url: str, n: int) -> tuple[float, int, int]:
    for _ in range(5):
        get(url)
    c0 = cpu_of(pid)
    body = b""
    for _ in range(n):
        body = get(url)
    series = sum(1 for ln in body.decode().splitlines() if ln and not ln.startswith("#"))
    return (cpu_of(pid) - c0) / n, len(body), series


def paced(pid: int, url: str, seconds: float) -> float:
    get(url)
    c0 = cpu_of(pid)
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        get(url)
        n += 1
        time.sleep(1.0)
    return (cpu_of(pid) - c0) / n


def ms(x: float) -> str:
    return f"{x * 1000:7.2f} ms"


def main() -> int:
    if not (shutil.which("prometheus-node-exporter") or os.path.exists("/usr/bin/prometheus-node-exporter")):
        print("prometheus-node-exporter is not installed (tests/system-packages.sh installs it)")
        return 1
    tmp = tempfile.mkdtemp(prefix="pinscope-bench-exp-")
    root = os.path.join(tmp, "node")
    spec = big_node()
    SimNode(spec, root).write()
    node_exporter_files(Path(root), spec.ncpus)
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    print("node: generated 96 CPUs, 100 containers (+50 pause), 550 tasks; the same tree for both exporters\n")
    procs = []
    try:
        ne, ne_url = start_node_exporter(root)
        procs.append(ne)
        ps, ps_url = start_pinscope(root, 3600)
        procs.append(ps)
        ne_a, ne_bytes, ne_series = back_to_back(ne.pid, ne_url, N_BACK_TO_BACK)
        ps_a, ps_bytes, ps_series = back_to_back(ps.pid, ps_url, N_BACK_TO_BACK)
        print(f"(a) scrape only, {N_BACK_TO_BACK} scrapes back to back (CPU per scrape, the server's process and children):")
        print(f"    node_exporter cpu,stat,schedstat,pressure,meminfo {ms(ne_a)}   {ne_series:>5} series {ne_bytes:>7} bytes")
        print(f"    pinscope exporter (latest report)              {ms(ps_a)}   {ps_series:>5} series {ps_bytes:>7} bytes")
        print(f"    pinscope / node_exporter: {ps_a / ne_a:.2f}x")
        _kill_group(ps)
        procs.remove(ps)
        ps, ps_url = start_pinscope(root, 1.0)
        procs.append(ps)
        ne_b = paced(ne.pid, ne_url, WINDOW)
        ps_b = paced(ps.pid, ps_url, WINDOW)
        print(f"\n(b) a read per scrape: scraped every 1 s for {WINDOW} s, pinscope reading every 1 s at the live cadence (grid")
        print("    every read, cgroup detail every 5th, task and IRQ scans every 10th); CPU per scrape, process and children:")
        print(f"    node_exporter (reads at scrape time)            {ms(ne_b)}")
        print(f"    pinscope exporter (probe + parse + scrape)     {ms(ps_b)}")
        print(f"    pinscope / node_exporter: {ps_b / ne_b:.2f}x")
    finally:
        for p in procs:
            _kill_group(p)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
