"""Benchmark: the probe's cost per tick before and after the latency-readiness reads (issue 37), one run.

The probe of a given revision (default: the commit before readiness_static came in) and the probe of the
working tree, each given the same requests, alternately, round after round (so load on the machine
hits both alike): a static request, then the live cadence's grid ticks. Reports the CPU of the probe's
processes per request kind (median of the rounds) on this machine's real /proc and /sys and on the
generated 96-CPU tree (bench/bigspec.py) with readiness files added, and the bytes a frame carries.
Run: python3 bench/bench_readiness.py [--quick] [--before REV]
"""
from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "tests")]

from bigspec import big_node  # noqa: E402

from pinscope.collectors.collect import live_depth  # noqa: E402
from pinscope.collectors.sim.node import SimNode  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 15
TICKS = 20 if QUICK else 60
BEFORE = sys.argv[sys.argv.index("--before") + 1] if "--before" in sys.argv else "5025cca~1"


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(probe: str, root: str | None, reqs: list[str]) -> tuple[float, int]:
    args = ["sh", "-c", probe, "pinscope-probe"] + (["--root", root] if root else [])
    c0 = child_cpu()
    p = subprocess.run(args, input=("".join(r + "\n" for r in reqs) + "q\n").encode(), capture_output=True,
                       timeout=300, check=False)
    return child_cpu() - c0, len(p.stdout)


def readiness_files(root: Path, cpus: int) -> None:
    """What a tuned node has: cpufreq and 4 idle states per CPU, the sysctls, irqbalance and tuned files."""
    def w(rel: str, text: str) -> None:
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    for c in range(cpus):
        d = f"sys/devices/system/cpu/cpu{c}"
        for k, v in (("scaling_driver", "intel_pstate"), ("scaling_governor", "performance"), ("scaling_min_freq", "800000"),
                     ("scaling_max_freq", "3500000"), ("cpuinfo_min_freq", "800000"), ("cpuinfo_max_freq", "3500000")):
            w(f"{d}/cpufreq/{k}", v + "\n")
        for i, (n, lat) in enumerate((("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 133))):
            w(f"{d}/cpuidle/state{i}/name", n + "\n")
            w(f"{d}/cpuidle/state{i}/latency", f"{lat}\n")
            w(f"{d}/cpuidle/state{i}/disable", "0\n")
        w(f"{d}/power/pm_qos_resume_latency_us", "0\n")
    for f, v in (("proc/irq/default_smp_affinity", "1,00000001"), ("proc/sys/kernel/sched_rt_runtime_us", "-1"),
                 ("proc/sys/kernel/timer_migration", "0"), ("sys/devices/virtual/workqueue/cpumask", "1,00000001"),
                 ("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never"),
                 ("etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=1-47,49-95"),
                 ("etc/tuned/active_profile", "cpu-partitioning"),
                 ("etc/tuned/cpu-partitioning-variables.conf", "isolated_cores=1-47,49-95")):
        w(f, v + "\n")


def compare(name: str, before: str, after: str, root: str | None) -> None:
    ticks = [live_depth(i) for i in range(1, TICKS + 1)]
    grid_only = [r for r in ticks if r == "g"] or ticks[:1]
    kinds = {"static (s)": ["s"], f"live cadence, {TICKS} ticks (per tick)": ["s"] + ticks,
             f"grid only, {len(grid_only)} ticks (per tick)": ["s"] + grid_only}
    base = {"b": [], "a": []}
    for _ in range(ROUNDS):  # the probe's start and one static frame: subtracted from the runs below
        for k, probe in (("b", before), ("a", after)):
            base[k].append(run(probe, root, ["s"])[0])
    print(f"\n{name}")
    print(f"  {'request':<40} {'before ms':>10} {'after ms':>10} {'after/before':>13} {'bytes b/a':>16}")
    for label, reqs in kinds.items():
        got: dict[str, list[float]] = {"b": [], "a": []}
        size = {}
        for _ in range(ROUNDS):
            for k, probe in (("b", before), ("a", after)):
                cpu, n = run(probe, root, reqs)
                got[k].append(cpu)
                size[k] = n
        if len(reqs) > 1:  # per tick: minus the start and the static frame
            b = (statistics.median(got["b"]) - statistics.median(base["b"])) / (len(reqs) - 1)
            a = (statistics.median(got["a"]) - statistics.median(base["a"])) / (len(reqs) - 1)
        else:
            b, a = statistics.median(got["b"]), statistics.median(got["a"])
        print(f"  {label:<40} {b * 1000:>10.2f} {a * 1000:>10.2f} {a / b if b else float('nan'):>13.2f} "
              f"{size['b']:>8}/{size['a']:<8}")


def main() -> None:
    before = subprocess.run(["git", "-C", str(HERE.parent), "show", f"{BEFORE}:collectors/probe.sh"],
                            capture_output=True, text=True, check=True).stdout
    after = (HERE.parent / "collectors" / "probe.sh").read_text()
    print(f"probe before: {BEFORE} ({len(before)} bytes); after: working tree ({len(after)} bytes); "
          f"{ROUNDS} rounds, medians, CPU of the probe's processes (getrusage of children)")
    compare("this machine's /proc and /sys (no --root)", before, after, None)
    with tempfile.TemporaryDirectory() as d:
        SimNode(big_node(), Path(d)).write()
        readiness_files(Path(d), 96)
        compare("96-CPU tree, 100 containers, readiness files (--root)", before, after, d)


if __name__ == "__main__":
    main()
