"""Benchmark: what pinscope costs a node, and what the client costs per node-tick.

Node: a generated 96-CPU tree (2 sockets x 24 cores x 2 threads), 100 containers (+50 pause), 550
tasks, read through the real probe with --root. Prints, side by side in one run:
  - probe CPU per request kind and the live cadence's average; forks per tick (strace)
  - client parse + assembly per node-tick
  - (a) one ssh run() per tick vs one persistent channel (real sshd on 127.0.0.1)
  - (b) one process per file read, as shell guides do it (`cat` per file)
  - (c) Prometheus node_exporter (cpu, stat, schedstat, pressure collectors) on this machine's real
        /proc and /sys, against pinscope's probe reading the same machine
Run: python3 bench/bench_probe.py [--quick]
"""
from __future__ import annotations

import asyncio
import os
import platform
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

from bigspec import big_node  # noqa: E402

from pinscope.collectors.collect import live_depth  # noqa: E402
from pinscope.collectors.frames import parse_frame  # noqa: E402
from pinscope.collectors.assemble import assemble  # noqa: E402
from pinscope.collectors.sim.node import SimNode  # noqa: E402
from pinscope.collectors.transport.base import probe_command  # noqa: E402

QUICK = "--quick" in sys.argv
N = 20 if QUICK else 60


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def probe_run(root: str | None, reqs: list[str]) -> tuple[float, bytes]:
    c0 = child_cpu()
    p = subprocess.run(["sh", "-c", probe_command(root)], input=("".join(r + "\n" for r in reqs) + "q\n").encode(),
                       capture_output=True, check=True)
    return child_cpu() - c0, p.stdout


def probe_cost(root: str | None, req: str, n: int = N) -> tuple[float, bytes]:
    """CPU seconds per request of kind `req` (start-up and the static read subtracted)."""
    base = min(probe_run(root, ["sn"])[0] for _ in range(3))
    tot, out = probe_run(root, ["sn"] + [req] * n)
    return max(0.0, (tot - base) / n), out


def frames_of(out: bytes) -> list[bytes]:
    return [b"B" + f for f in out.split(b"\nB")[1:]] if out.startswith(b"B") else []


def forks_per_tick(root: str, req: str, n: int = 20) -> float | None:
    if not shutil.which("strace"):
        return None

    def count(k):
        r = subprocess.run(["strace", "-f", "-c", "-e", "trace=fork,vfork,clone,clone3", "sh", "-c", probe_command(root)],
                           input=("".join(["sn\n"] + [req + "\n"] * k) + "q\n").encode(), capture_output=True)
        total = 0
        for line in r.stderr.decode().splitlines():
            parts = line.split()
            if parts and parts[-1] in ("clone", "clone3", "fork", "vfork"):
                total += int(parts[3]) if len(parts) >= 5 and parts[3].isdigit() else int(parts[-2])
        return total

    return (count(n) - count(0)) / n


def client_cost(frames: list[bytes], static: bytes, reps: int = 30) -> float:
    st = parse_frame(static)
    t0 = time.process_time()
    for _ in range(reps):
        for f in frames:
            assemble(st, parse_frame(f), "bench", st)
    return (time.process_time() - t0) / (reps * len(frames))


async def client_live(root: str, n: int) -> tuple[float, float]:
    """The client as the TUI runs it: the real collector at the live cadence (deeper frames carried
    between ticks), CPU of this process only (the probe's is the node's). -> (per tick, grid-only tick)."""
    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.transport.local import LocalTransport

    col = NodeCollector("local", Options(root=root), LocalTransport(root))
    await col.connect()
    try:
        for i in range(3):
            await col.tick(live_depth(i))
        t0 = time.process_time()
        for i in range(3, 3 + n):
            await col.tick(live_depth(i))
        avg = (time.process_time() - t0) / n
        t0 = time.process_time()
        for i in range(n):
            await col.tick("g")
        grid = (time.process_time() - t0) / n
        return avg, grid
    finally:
        await col.close()


def per_file_shell(root: str, frame: bytes) -> float:
    """(b): the same files, one `cat` process per file (what a hand-written check script does)."""
    fr = parse_frame(frame)
    paths = [root + p for p in fr.files]
    script = "for f in \"$@\"; do cat \"$f\"; done >/dev/null 2>&1"
    c0 = child_cpu()
    reps = 3
    for _ in range(reps):
        subprocess.run(["sh", "-c", script, "x", *paths], check=False)
    return (child_cpu() - c0) / reps, len(paths)


async def ssh_costs(root: str, n: int) -> dict | None:
    import sshd as sshd_mod

    ok, why = sshd_mod.available()
    if not ok:
        return {"skipped": why}
    import pinscope.collectors.transport.ssh  # noqa: F401  (before asyncssh: quiets cryptography's DSA warning)
    import asyncssh
    import psutil

    d = Path(tempfile.mkdtemp())
    srv = sshd_mod.Sshd(d).start()
    try:
        def server_cpu():
            # own + reaped children of every process in sshd's tree (a finished session's shell and
            # probe are accounted to the sshd process that reaped them)
            p = psutil.Process(srv.proc.pid)
            tot = sum(p.cpu_times()[:4])
            for c in p.children(recursive=True):
                try:
                    tot += sum(c.cpu_times()[:4])
                except psutil.NoSuchProcess:
                    pass
            return tot

        kw = dict(port=srv.port, username="root", client_keys=[str(srv.userkey)], known_hosts=str(srv.known_hosts),
                  config=[str(srv.ssh_config)])
        async with asyncssh.connect("127.0.0.1", **kw) as conn:
            # (a) a fresh run() per tick: a new session, a login shell, a new probe each time
            cmd_one = probe_command(root)
            s0, w0 = server_cpu(), time.perf_counter()
            for _ in range(n):
                await conn.run(cmd_one, input="g\nq\n", check=True)
            run_wall = (time.perf_counter() - w0) / n
            run_node = (server_cpu() - s0) / n
            # persistent channel: one probe, one frame per request
            proc = await conn.create_process(probe_command(root), encoding=None)
            from pinscope.collectors.transport.base import FrameStream

            fs = FrameStream()
            fs.reader, fs.writer = proc.stdout, proc.stdin
            await fs.request("sn")
            s0, w0 = server_cpu(), time.perf_counter()
            for _ in range(n):
                await fs.request("g")
            pers_wall = (time.perf_counter() - w0) / n
            pers_node = (server_cpu() - s0) / n
            proc.stdin.write_eof()
        return {"run_wall": run_wall, "run_node": run_node, "pers_wall": pers_wall, "pers_node": pers_node}
    finally:
        srv.kill()


def node_exporter_cost(n: int) -> dict:
    exe = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"
    if not os.path.exists(exe):
        return {"skipped": "prometheus-node-exporter not installed (apt-get install prometheus-node-exporter)"}
    import psutil

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([exe, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
                          "--collector.cpu", "--collector.stat", "--collector.schedstat", "--collector.pressure"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        for _ in range(50):
            try:
                urllib.request.urlopen(url, timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        for _ in range(5):
            urllib.request.urlopen(url, timeout=5).read()
        pp = psutil.Process(p.pid)
        c0 = sum(pp.cpu_times()[:2])
        size = 0
        for _ in range(n):
            size = len(urllib.request.urlopen(url, timeout=5).read())
            time.sleep(0.05)
        return {"per_scrape": (sum(pp.cpu_times()[:2]) - c0) / n, "bytes": size}
    finally:
        p.kill()
        p.wait()


def ms(x):
    return f"{x * 1000:7.2f} ms"


def main() -> None:
    root = tempfile.mkdtemp(prefix="pinscope-bench-")
    SimNode(big_node(), root).write()
    print(f"machine: {platform.machine()} {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}")
    print("node: generated 96 CPUs, 100 containers (+50 pause), 550 tasks, cgroup v2 systemd\n")
    print("probe CPU per request (sh + awk, start-up subtracted):")
    costs, outs = {}, {}
    for req in ("g", "gc", "gt", "gT", "ga", "gi", "n"):
        costs[req], outs[req] = probe_cost(root, req)
        fr = frames_of(outs[req])
        print(f"  {req:<3} {ms(costs[req])}   {len(fr[-1]) if fr else 0:>7} bytes/frame")
    extra = {k: max(0.0, costs[k] - costs["g"]) for k in ("gc", "gt", "gT", "ga", "gi")}
    cadence = [live_depth(i) for i in range(30)]
    avg = 0.0
    for d in cadence:
        c = costs["g"]
        c += extra["gc"] if "c" in d else 0
        c += extra["gT"] if "T" in d else (extra["gt"] if "t" in d else 0)
        c += extra["ga"] if "a" in d else 0
        c += extra["gi"] if "i" in d else 0
        avg += c / len(cadence)
    print(f"  live cadence average (g every tick, c every 5th, t/a/i every 10th, T every 30th): {ms(avg)}  (target <= 5 ms)")
    f = forks_per_tick(root, "g")
    ft = forks_per_tick(root, "gcTai")
    print(f"  forks per tick: grid {f if f is not None else 'n/a (no strace)'}, deepest request {ft if ft is not None else 'n/a'}"
          "  (3 at start: forwarder | loop | awk; 1 more with mawk: asking its version; on a tree that is not"
          " the kernel's, as this one, 1 more per frame: the find that checks it)")

    static = frames_of(outs["g"])[0]
    cl = client_cost(frames_of(outs["g"])[1:6], static)
    cd = client_cost(frames_of(outs["gT"])[1:3], static, reps=10)
    live_avg, live_grid = asyncio.run(client_live(root, 30 if QUICK else 90))
    print(f"\nclient per node-tick (this process's CPU): parse + assembly of a grid frame {ms(cl)}, of a frame with"
          f" every task {ms(cd)};\n  the live collector at its cadence (read, parse, assemble) {ms(live_avg)},"
          f" grid ticks only {ms(live_grid)}  (target <= 1 ms)")

    shell, nfiles = per_file_shell(root, frames_of(outs["g"])[1])
    print(f"\n(b) one process per file ({nfiles} files of a grid tick, `cat` each): {ms(shell)} per tick"
          f"  -> pinscope is {shell / costs['g']:.0f}x cheaper")

    s = asyncio.run(ssh_costs(root, 10 if QUICK else 30))
    if "skipped" in s:
        print(f"\n(a) ssh: skipped: {s['skipped']}")
    else:
        print(f"\n(a) ssh over loopback, grid tick: one run() per tick {ms(s['run_wall'])} wall, {ms(s['run_node'])} node CPU;"
              f" persistent channel {ms(s['pers_wall'])} wall, {ms(s['pers_node'])} node CPU (sshd + probe)"
              f"  -> {s['run_wall'] / s['pers_wall']:.0f}x faster, {s['run_node'] / max(s['pers_node'], 1e-9):.1f}x less node CPU")

    ne = node_exporter_cost(40 if QUICK else 100)
    real, _ = probe_cost(None, "g")
    real_deep, _ = probe_cost(None, "gcTai", 20)
    if "skipped" in ne:
        print(f"\n(c) node_exporter: skipped: {ne['skipped']}")
        print(f"    pinscope probe on this machine: grid {ms(real)}, everything {ms(real_deep)}")
    else:
        print(f"\n(c) this machine's real /proc and /sys: node_exporter (cpu, stat, schedstat, pressure) {ms(ne['per_scrape'])} CPU per scrape"
              f" ({ne['bytes']} bytes); pinscope probe grid tick {ms(real)} ({real / ne['per_scrape']:.2f}x),"
              f" everything incl. every task {ms(real_deep)} ({real_deep / ne['per_scrape']:.2f}x)")
    same_tree_node_exporter(root, avg)
    shutil.rmtree(root, ignore_errors=True)


def same_tree_node_exporter(root: str, probe_avg: float) -> None:
    """(d) node_exporter pointed at the same 96-CPU tree (--path.procfs/--path.sysfs; its cpu, stat, schedstat,
    pressure and meminfo collectors, with the files those read that the simulation does not write), CPU per
    scrape at 1 s, against the probe's live-cadence average above."""
    if not (shutil.which("prometheus-node-exporter") or os.path.exists("/usr/bin/prometheus-node-exporter")):
        print("\n(d) node_exporter on the same tree: skipped: prometheus-node-exporter not installed")
        return
    from bench_exporter import node_exporter_files, paced, start_node_exporter

    node_exporter_files(Path(root), 96)
    p, url = start_node_exporter(root)
    try:
        per = paced(p.pid, url, 10 if QUICK else 30)
    finally:
        p.kill()
        p.wait()
    print(f"\n(d) the same 96-CPU tree: node_exporter (cpu, stat, schedstat, pressure, meminfo) {ms(per)} CPU per scrape"
          f" at 1 s; pinscope's probe at the live cadence {ms(probe_avg)} per tick -> {probe_avg / per:.2f}x"
          "  (target <= 0.25x)")


if __name__ == "__main__":
    main()
