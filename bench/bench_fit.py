"""Benchmark: pinscope's prediction of kubelet's next CPU decision (collectors/fit) on a 512-CPU node
(2 sockets, 8 NUMA nodes, SMT 2, 8 CPUs per uncore cache), half of it pinned in a fragmented way,
with every CPU manager option kubelet accepts together, the topology manager at restricted (pod
scope, prefer-closest-numa-nodes):
  - a prediction: kubelet started on the case (topology, options, reserved set, state) and one
    Guaranteed container of N CPUs admitted: the CPUs or the error. Target <= 5 ms.
  - how many containers of N fit one after another (on a copy of the state). Target <= 50 ms.
Two option sets (distribute-cpus-across-numa and prefer-align-cpus-by-uncorecache exclude each
other in kubelet). Printed: median and p95 wall ms, and CPU ms (process time: steadier on a loaded
machine) per N.
Run: python3 bench/bench_fit.py [--runs N]
"""
from __future__ import annotations

import platform
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]

from pinscope.collectors.fit.kubelet import Kubelet, cpuset_str  # noqa: E402
from pinscope.collectors.fit.predict import how_many_fit  # noqa: E402

RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 40
OPTION_SETS = {
    "distribute-numa": {"full-pcpus-only": "true", "distribute-cpus-across-numa": "true", "align-by-socket": "true",
                        "strict-cpu-reservation": "true"},
    "uncore": {"full-pcpus-only": "true", "prefer-align-cpus-by-uncorecache": "true", "align-by-socket": "true",
               "strict-cpu-reservation": "true"},
}


def node512(options: dict) -> dict:
    """2 sockets x 4 NUMA x 32 cores x 2 threads (siblings 256 apart); 4 cores per uncore cache."""
    rows = []
    for core in range(256):
        numa, socket = core // 32, core // 128
        for t in range(2):
            rows.append([t * 256 + core, socket, numa, core, core // 4])
    rng = random.Random(36)
    pool = [c for c in range(256) if c not in (0, 1)]  # reserved: cores 0 and 1
    rng.shuffle(pool)
    assignments = {}
    for i in range(32):  # 32 pods of 2 whole cores each, and 32 of 2 single threads: fragmented
        cores = pool[i * 4:i * 4 + 2]
        assignments[f"whole{i}"] = {"app": cpuset_str([c for k in cores for c in (k, k + 256)])}
        singles = pool[i * 4 + 2:i * 4 + 4]
        assignments[f"half{i}"] = {"app": cpuset_str(singles)}
    distances = {str(a): [10 if a == b else (12 if a // 4 == b // 4 else 32) for b in range(8)] for a in range(8)}
    return {"cpus": rows, "cpu_options": options, "tm_policy": "restricted", "tm_scope": "pod",
            "tm_options": {"prefer-closest-numa-nodes": "true"}, "reserved": "0-1,256-257", "num_reserved": 4,
            "assignments": assignments, "distances": distances, "containers": []}


def timed(f) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = f()
    return (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000, out


def report(name: str, samples: list[tuple[float, float]], target: float) -> None:
    wall = sorted(s[0] for s in samples)
    cpu = sorted(s[1] for s in samples)
    p95 = wall[int(len(wall) * 0.95) - 1]
    ok = "ok" if statistics.median(cpu) <= target else "MISSED"
    print(f"  {name:<42} wall median {statistics.median(wall):6.2f} ms  p95 {p95:6.2f} ms  "
          f"cpu median {statistics.median(cpu):6.2f} ms  (target <= {target:g} ms: {ok})")


def main() -> None:
    print(f"bench_fit: {platform.python_implementation()} {platform.python_version()}, {RUNS} runs each")
    for name, opts in OPTION_SETS.items():
        case = node512(opts)
        print(f"options {name}: {', '.join(sorted(opts))}")
        for n in (4, 16, 64):
            pred = []
            answer = None
            for _ in range(RUNS):
                w, c, d = timed(lambda n=n, case=case: Kubelet(case).admit([n]))
                pred.append((w, c))
                answer = d
            what = f"CPUs {answer.cpus[0]}" if answer.cpus else f"{answer.error['kind']}"
            report(f"prediction, N={n}", pred, 5)
            print(f"      ({what[:90]})")
            k = Kubelet(case)
            many = []
            count = 0
            for _ in range(max(5, RUNS // 4)):
                w, c, count = timed(lambda n=n, k=k: how_many_fit(k, n))
                many.append((w, c))
            report(f"how many of N={n} fit ({count})", many, 50)


if __name__ == "__main__":
    main()
