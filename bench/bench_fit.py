"""Benchmark: pinscope's prediction of kubelet's next CPU decision (collectors/fit) on a 512-CPU node
(2 sockets, 8 NUMA nodes, SMT 2, 8 CPUs per uncore cache), half of it pinned in a fragmented way,
with every CPU manager option kubelet accepts together, the topology manager at restricted (pod
scope, prefer-closest-numa-nodes):
  - a prediction: kubelet started on the case (topology, options, reserved set, state) and one
    Guaranteed container of N CPUs admitted: the CPUs or the error. Target <= 5 ms.
  - how many containers of N fit one after another (on a copy of the state). Target <= 50 ms.
  - what the "what fits" pane and the exporter ask every tick (collectors/fit/summary.py): the node
    read from a 512-CPU tree by the real collector, per NUMA node the largest container kubelet could
    give there, computed on the first ask (a miss) and then taken from the cache while the files stay
    as they were (a hit: the case rebuilt from the snapshot and compared, nothing decided again).
  - the same with the memory manager (Static) asked too: 12Gi of memory and 1Gi of 1Gi hugepages per
    container, every NUMA node with memory and both hugepages sizes, some of it used alone and in a group
    of two (its hints merged with the CPUs': the cross product of 255-mask lists). Targets as above.
Three option sets cover every option: kubelet refuses distribute-cpus-across-numa with
prefer-align-cpus-by-uncorecache, and distribute-cpus-across-cores with full-pcpus-only, either of
those two. Printed: median and p95 wall ms, and CPU ms (process time: steadier on a loaded machine)
per N; the verdict is on the CPU median.
Run: python3 bench/bench_fit.py [--runs N]
"""
from __future__ import annotations

import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from functools import partial
from pathlib import Path
from typing import Callable, TypeVar

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests")]

from pinscope.collectors.fit import summary  # noqa: E402
from pinscope.collectors.fit.kubelet import Decision, Kubelet, cpuset_parse, cpuset_str  # noqa: E402
from pinscope.collectors.parse.kubelet import checksum_v2  # noqa: E402
from pinscope.collectors.fit.predict import how_many_fit  # noqa: E402
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec  # noqa: E402

T = TypeVar("T")

RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 40
OPTION_SETS = {
    "distribute-numa": {"full-pcpus-only": "true", "distribute-cpus-across-numa": "true", "align-by-socket": "true",
                        "strict-cpu-reservation": "true"},
    "uncore": {"full-pcpus-only": "true", "prefer-align-cpus-by-uncorecache": "true", "align-by-socket": "true",
               "strict-cpu-reservation": "true"},
    "distribute-cores": {"distribute-cpus-across-cores": "true", "align-by-socket": "true",
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


def timed(f: Callable[[], T]) -> tuple[float, float, T]:
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


def _state(case: dict, uids: dict[str, str]) -> str:
    """cpu_manager_state as kubelet writes it for the case: with strict-cpu-reservation the reserved CPUs
    are out of the shared pool too (the simulator's own state keeps them in: kubelet would refuse it)."""
    default = set(range(512)) - {c for ctrs in case["assignments"].values() for c in cpuset_parse(ctrs["app"])}
    if case["cpu_options"].get("strict-cpu-reservation") == "true":
        default -= cpuset_parse(case["reserved"])
    entries = {uids[name]: dict(ctrs) for name, ctrs in case["assignments"].items()}
    text = cpuset_str(default)
    return json.dumps({"policyName": "static", "defaultCpuSet": text, "entries": entries,
                       "checksum": checksum_v2("static", text, entries)})


def node512_spec(case: dict) -> NodeSpec:
    """node512's machine, pods, configuration and state as a simulated node's tree (read by the real collector)."""
    uids = {name: str(uuid.UUID(int=i + 1)) for i, name in enumerate(case["assignments"])}
    pods = [PodSpec(name, "bench", uid=uids[name], containers=[CtrSpec("app", cpus=ctrs["app"])])
            for name, ctrs in case["assignments"].items()]
    opts = "".join(f'  {k}: "{v}"\n' for k, v in case["cpu_options"].items())
    cfg = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\n"
           f"cpuManagerPolicy: static\ncpuManagerPolicyOptions:\n{opts}reservedSystemCPUs: \"{case['reserved']}\"\n"
           f"topologyManagerPolicy: {case['tm_policy']}\ntopologyManagerScope: {case['tm_scope']}\n"
           'topologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: "true"\n')
    return NodeSpec(hostname="bench-512", sockets=2, cores=128, threads=2, numa_per_socket=4, l3_per_numa=8,
                    numbering="intel", policy="static", reserved=case["reserved"], config_text=cfg, pods=pods,
                    state_text=_state(case, uids))


def _predict(case: dict, n: int) -> Decision:
    return Kubelet(case).admit([n])


def bench_prediction(case: dict) -> None:
    for n in (4, 16, 64):
        pred = []
        answer: Decision | None = None
        for _ in range(RUNS):
            w, c, answer = timed(partial(_predict, case, n))
            pred.append((w, c))
        assert answer is not None
        what = f"CPUs {answer.cpus[0]}" if answer.cpus else f"{(answer.error or {}).get('kind')}"
        report(f"prediction, N={n}", pred, 5)
        print(f"      ({what[:90]})")
        k = Kubelet(case)
        many = []
        count = 0
        for _ in range(max(5, RUNS // 4)):
            w, c, count = timed(partial(how_many_fit, k, n))
            many.append((w, c))
        report(f"how many of N={n} fit ({count})", many, 50)


GI = 2**30


def with_memory(case: dict) -> dict:
    """The case with a machineState on its 8 NUMA nodes: 64Gi each, 8Gi of each hugepages size; NUMA 0 used
    alone (40Gi), NUMA 2 and 3 as a group (30Gi over both)."""
    def table(total: int, free: int) -> dict:
        return {"total": total, "systemReserved": 0, "allocatable": total, "reserved": total - free, "free": free}

    ms = {}
    for n in range(8):
        free = 24 * GI if n == 0 else 49 * GI if n in (2, 3) else 64 * GI
        ms[str(n)] = {"numberOfAssignments": 1 if n in (0, 2, 3) else 0, "cells": [2, 3] if n in (2, 3) else [n],
                      "memoryMap": {"memory": table(64 * GI, free), "hugepages-2Mi": table(8 * GI, 8 * GI),
                                    "hugepages-1Gi": table(8 * GI, 8 * GI)}}
    return dict(case, memory={"machine_state": ms})


def _predict_memory(case: dict, n: int, req: list[dict]) -> Decision:
    return Kubelet(with_memory(case)).admit([n], memory=req)


def bench_memory(case: dict) -> None:
    k = Kubelet(with_memory(case))
    req = [{"memory": 12 * GI, "hugepages-1Gi": GI}]
    for n in (4, 16, 64):
        pred = []
        answer: Decision | None = None
        for _ in range(RUNS):
            w, c, answer = timed(partial(_predict_memory, case, n, req))
            pred.append((w, c))
        assert answer is not None
        what = f"memory on NUMA {answer.memory[0]}" if answer.memory else f"{(answer.error or {}).get('kind')}"
        report(f"prediction with memory, N={n}", pred, 5)
        print(f"      ({what})")
        many = []
        count = 0
        for _ in range(max(5, RUNS // 4)):
            w, c, count = timed(partial(how_many_fit, k, n, memory=req))
            many.append((w, c))
        report(f"how many of N={n} with memory fit ({count})", many, 50)


def bench_pane(case: dict) -> None:
    """The pane's and the exporter's ask, on the node read from its tree: a miss, then hits."""
    from helpers import read_sim  # type: ignore[import-not-found]

    with tempfile.TemporaryDirectory(prefix="bench-fit-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        snap = read_sim(node512_spec(case), d, samples=1).snapshot
    summary._CACHE.clear()
    w, c, ans = timed(lambda: summary.node_fit(snap))
    assert ans.readable and not ans.note and ans.per_numa, (ans.note, ans.error)
    largest = ", ".join(str(p["largest_fit"]["cpus"]) for p in ans.per_numa)
    print(f"  {'what fits per NUMA node, first ask (computed)':<42} wall {w:6.2f} ms  cpu {c:6.2f} ms  "
          f"(largest per NUMA node: {largest})")
    before = summary.computed
    hits = [timed(lambda: summary.node_fit(snap))[:2] for _ in range(RUNS)]
    assert summary.computed == before, "a hit computed again"
    report("the same files asked again (cache hit)", hits, 50)


def main() -> None:
    print(f"bench_fit: {platform.python_implementation()} {platform.python_version()}, {RUNS} runs each, "
          f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    for name, opts in OPTION_SETS.items():
        case = node512(opts)
        print(f"options {name}: {', '.join(sorted(opts))}")
        bench_prediction(case)
        bench_memory(case)
        bench_pane(case)


if __name__ == "__main__":
    main()
