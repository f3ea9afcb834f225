"""pinscope's port of kubelet's CPU decisions (collectors/fit/kubelet.py) against kubelet's own
code (tests/kubeletsim, built from k8s.io/kubernetes at each pinned release): the same cases,
the same CPUs or the same admission error, kind and message, on 100 % of them.

Every run (CI): a fixed-seed set per release (PINSCOPE_FIT_CASES, default 1500, plus 500 focused on
where the releases differ), kubelet's test topologies (400) and the hand-made cases (13): this file and
test_fit_tables.py took 39 s for both releases on this 2-core machine (2026-12-06, oracles built).
The full set (10,000 per release, plus 3,333 focused) runs with PINSCOPE_FIT_FULL=1 (or
PINSCOPE_FIT_CASES=N): 2 min 37 s per release at a load of ~10. Its last run (2026-12-06, on a
fresh machine's first oracle builds): 0 disagreements on 1.37 (10,000 + 3,333 + 400 + 13) and on 1.35
(the same counts). Any disagreement fails with the case as JSON, both answers, and the release.

The memory manager (Static) beside the CPU manager, test_generated_memory_cases_agree: every run 300 drawn
cases per release (PINSCOPE_FIT_MEMORY_CASES), which add 8 s for both releases (the whole file: 51 s at a
load of ~2); the full set 10,000 per release (PINSCOPE_FIT_FULL=1), 2 min 51 s for both at a load of ~3.
Its last run (2026-12-07): 0 disagreements on 1.37 and on 1.35, each of 10,000 cases (3,367 admitted with
their memory's NUMA nodes, 1,032 of them over several nodes; 7,790 decided with the memory manager's say:
placed, refused by its Allocate, or by the merged hints; the rest refused by the CPU manager before it, or
kubelet's nil dereference on a hugepages size a node lacks, 127). A quarter of them (drawn at 25 %) have
pods kubelet no longer counts active, which kubelet's own RemoveContainer (CPU and memory) frees first.

The device manager as the first hint provider, test_generated_device_cases_agree: every run 300 drawn cases
per release (PINSCOPE_FIT_DEVICE_CASES), which add ~10 s for both releases; the oracle runs kubelet's own
devicemanager package (its files from the module cache, plus the constructor in tests/kubeletsim/devicesim/).
Devices kubelet picks among equals in Go's map order: the test checks as many came from each pool as pinscope
says, and, where two resources are refused, that kubelet's message is one of pinscope's. Its last large run
(2026-12-07, PINSCOPE_FIT_DEVICE_CASES=2500): 0 disagreements on 1.37 and on 1.35, each of 2,500 cases (762
admitted with devices, 475 refused by the device manager's Allocate). Before the drawn cases kept kubelet's
hint product under 10^6, 15 of 3,000 on 1.35 (8 NUMA nodes, two device resources: 255^3 combinations, as 1.35
walks every NUMA node for device hints) outran the oracle's 5 s; 1.37 agreed on all 3,000. The two releases
decide 56 of 1,500 drawn device cases differently (1.37's deviceNUMANodes), each as its own kubelet does.

Needs Go to build the oracle (first build: minutes; then cached outside the checkout, see
tests/kubeletsim/build.py). Without Go the test skips on a laptop and fails with CI=true.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from fit_cases import cases, device_cases, memory_cases
from helpers import need
from hypothesis import HealthCheck, given, settings

from kubeletsim.oracle import Oracle, go_available
from pinscope.collectors.fit.kubelet import RELEASES, decide

FULL = os.environ.get("PINSCOPE_FIT_FULL") == "1"
CASES = Path(__file__).resolve().parents[1] / "kubeletsim" / "cases"
N = int(os.environ.get("PINSCOPE_FIT_CASES") or (10_000 if FULL else 1500))
N_MEMORY = int(os.environ.get("PINSCOPE_FIT_MEMORY_CASES") or (10_000 if FULL else 300))
N_DEVICES = int(os.environ.get("PINSCOPE_FIT_DEVICE_CASES") or (10_000 if FULL else 300))


def _oracle(release: str) -> Oracle:
    need(go_available(), "Go (to build kubelet's code for the differential test; tests/kubeletsim)")
    return Oracle(release)


def _same(py: dict, go: dict) -> bool:
    """The same CPUs, or the same error kind and message. A hang (kubelet's admission never returns)
    has no message of kubelet's: the oracle says it timed out, pinscope which loop never ends."""
    if py["error"] and go["error"] and py["error"]["kind"] == go["error"]["kind"] == "Hang":
        return py["cpus"] == go["cpus"]
    if py.get("memory") != go.get("memory"):  # the memory manager's NUMA nodes per container (memory cases)
        return False
    if not _same_devices(py.get("devices"), go.get("devices")):
        return False
    # kubelet's Allocate takes a container's device resources in Go's map order: with two refused, it says either
    said = {f"Allocate failed due to {m}, which is unexpected" for m in py.get("device_errors") or ()}
    return py["cpus"] == go["cpus"] and (py["error"] is None) == (go["error"] is None) and (
        py["error"] is None or (py["error"]["kind"], py["error"]["message"]) == (go["error"]["kind"], go["error"]["message"])
        or (py["error"]["kind"] == go["error"]["kind"] and go["error"]["message"] in said)
    )


def _same_devices(py: list | None, go: list | None) -> bool:
    """kubelet's devices per container against pinscope's tiers: from each pool exactly as many as pinscope
    says kubelet takes from it (which ones of a pool is Go's map order), and nothing else."""
    if go is None or py is None:
        return go is None and (py is None or not any(py))
    if len(py) != len(go):
        return False
    for tiers_of, got_of in zip(py, go):
        for res in set(tiers_of) | set(got_of):
            got, tiers = set(got_of.get(res) or ()), tiers_of.get(res) or []
            if sum(t["take"] for t in tiers) != len(got) or any(len(got & set(t["pool"])) != t["take"] for t in tiers):
                return False
    return True


def _report(release: str, case: dict, py: dict, go: dict) -> str:
    return (f"kubelet {release}: pinscope and kubelet disagree\ncase: {json.dumps(case, sort_keys=True)}\n"
            f"pinscope: {json.dumps(py)}\nkubelet:  {json.dumps(go)}")


def _drawn_and_answered(oracle: Oracle, strategy, n: int) -> tuple[list[dict], list[dict], float, float]:
    """Hypothesis draws n cases of `strategy` (fixed seed: the same set every run); they go to kubelet's code
    in one batch -> (cases, kubelet's answers, seconds drawing, seconds in kubelet's code)."""
    drawn: list[dict] = []

    @settings(max_examples=n, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(case):
        drawn.append(case)

    t0 = time.monotonic()
    draw()
    t1 = time.monotonic()
    with oracle:
        answers = oracle.ask_many(drawn)
    assert len(answers) == len(drawn)
    return drawn, answers, t1 - t0, time.monotonic() - t1


@pytest.mark.timeout(3600 if FULL else 300)
@pytest.mark.parametrize("focus", ["", "distribute"])
@pytest.mark.parametrize("release", RELEASES)
def test_generated_cases_agree(release, focus):
    """Hypothesis draws the cases (fixed seed: the same set every run); they go to kubelet's code
    in one batch, then each is decided by pinscope and compared. focus "distribute": a third as
    many cases where 1.35 and 1.37 differ (distribute-cpus-across-numa with align-by-socket)."""
    drawn, answers, t_draw, t_kubelet = _drawn_and_answered(_oracle(release), cases(focus=focus),
                                                            N if not focus else max(200, N // 3))
    t2 = time.monotonic()
    bad = []
    kinds: dict[str, int] = {}
    for case, go in zip(drawn, answers):
        py = decide(case, release).as_json()
        kind = (go["error"] or {}).get("kind", "fits")
        kinds[kind] = kinds.get(kind, 0) + 1
        if not _same(py, go):
            bad.append(_report(release, case, py, go))
    t3 = time.monotonic()
    print(f"\nkubelet {release} {focus or 'all'}: {len(drawn)} cases, {len(bad)} disagreements; answers {kinds}; "
          f"drawn in {t_draw:.1f} s, kubelet {t_kubelet:.1f} s, pinscope {t3 - t2:.1f} s")
    assert not bad, f"{len(bad)} of {len(drawn)} disagree; the first:\n" + "\n\n".join(bad[:3])
    # the set must exercise kubelet's answers, not only its refusals
    assert kinds.get("fits", 0) > len(drawn) // 3
    if focus:  # and the code that differs between releases must decide some of them differently
        other = [r for r in RELEASES if r != release][0]
        differ = sum(1 for c in drawn if decide(c, release).as_json() != decide(c, other).as_json())
        print(f"kubelet {release} and {other} decide {differ} of these {len(drawn)} cases differently")
        assert differ > 0


@pytest.mark.timeout(3600 if FULL else 300)
@pytest.mark.parametrize("release", RELEASES)
def test_generated_memory_cases_agree(release):
    """The memory manager's Static policy beside the CPU manager (memory_cases: 1-8 NUMA nodes, memory and
    hugepages per node, existing single-node and group assignments, every topology manager policy and
    scope): the same CPUs, the same memory NUMA nodes per container, or the same error."""
    drawn, answers, t_draw, t_kubelet = _drawn_and_answered(_oracle(release), memory_cases(), N_MEMORY)
    t2 = time.monotonic()
    bad = []
    kinds: dict[str, int] = {}
    spans = by_memory = 0
    for case, go in zip(drawn, answers):
        py = decide(case, release).as_json()
        kind = (go["error"] or {}).get("kind", "fits")
        kinds[kind] = kinds.get(kind, 0) + 1
        spans += any(m and len(m) > 1 for m in go.get("memory") or ())
        # decided with the memory manager's say: placed, refused by its Allocate or by the merged hints
        by_memory += bool(go.get("memory")) or "[memorymanager]" in (go["error"] or {}).get("message", "") or kind == "TopologyAffinityError"
        if not _same(py, go):
            bad.append(_report(release, case, py, go))
    t3 = time.monotonic()
    print(f"\nkubelet {release} memory: {len(drawn)} cases, {len(bad)} disagreements; answers {kinds}; memory over "
          f"several NUMA nodes in {spans}; with the memory manager's say {by_memory}; drawn in {t_draw:.1f} s, kubelet {t_kubelet:.1f} s, pinscope {t3 - t2:.1f} s")
    assert not bad, f"{len(bad)} of {len(drawn)} disagree; the first:\n" + "\n\n".join(bad[:3])
    # kubelet's answers, its refusals of both kinds, and memory that spans nodes, not only one of them
    assert kinds.get("fits", 0) > len(drawn) // 4 and kinds.get("TopologyAffinityError") and kinds.get("UnexpectedAdmissionError")
    assert spans > 0
    assert "MemoryStateError" not in kinds, "the generator's machine state is one kubelet refuses"


@pytest.mark.timeout(3600 if FULL else 300)
@pytest.mark.parametrize("release", RELEASES)
def test_generated_device_cases_agree(release):
    """kubelet's device manager as the first hint provider (device_cases: 1-2 resources on 1-8 NUMA nodes,
    devices with and without topology, unhealthy and held ones, a quarter with the memory manager): the same
    CPUs, memory NUMA nodes, devices (as many from each pool pinscope names) or the same error."""
    drawn, answers, t_draw, t_kubelet = _drawn_and_answered(_oracle(release), device_cases(), N_DEVICES)
    t2 = time.monotonic()
    bad = []
    kinds: dict[str, int] = {}
    with_devices = by_devices = 0
    for case, go in zip(drawn, answers):
        py = decide(case, release).as_json()
        kind = (go["error"] or {}).get("kind", "fits")
        kinds[kind] = kinds.get(kind, 0) + 1
        with_devices += any(any(c.values()) for c in go.get("devices") or ())
        by_devices += "devices" in (go["error"] or {}).get("message", "")
        if not _same(py, go):
            bad.append(_report(release, case, py, go))
    t3 = time.monotonic()
    print(f"\nkubelet {release} devices: {len(drawn)} cases, {len(bad)} disagreements; answers {kinds}; admitted with "
          f"devices {with_devices}; refused by the device manager's Allocate {by_devices}; drawn in {t_draw:.1f} s, "
          f"kubelet {t_kubelet:.1f} s, pinscope {t3 - t2:.1f} s")
    assert not bad, f"{len(bad)} of {len(drawn)} disagree; the first:\n" + "\n\n".join(bad[:3])
    assert kinds.get("fits", 0) > len(drawn) // 4 and kinds.get("TopologyAffinityError") and with_devices and by_devices
    # 1.37 walks only the NUMA nodes holding a resource's devices, 1.35 every node: some cases must tell them apart
    other = [r for r in RELEASES if r != release][0]
    differ = sum(1 for c in drawn if decide(c, release).as_json() != decide(c, other).as_json())
    print(f"kubelet {release} and {other} decide {differ} of these {len(drawn)} device cases differently")
    assert differ > 0


@pytest.mark.parametrize("release", RELEASES)
def test_each_error_kind_is_exercised(release):
    """A few hand-made cases, one per kind of answer, so that a generator drifting towards one
    kind cannot hide a whole branch: each answer must match kubelet's."""
    two_numa_ht = [[i, 0, (i % 8) // 4, i % 4, -1] for i in range(16)]  # 8 cores, 2 NUMA, siblings 8 apart
    base = {"cpus": two_numa_ht, "num_reserved": 2, "reserved": "", "tm_policy": "none", "tm_scope": "container"}
    hand = [
        dict(base, containers=[4]),
        dict(base, containers=[3], cpu_options={"full-pcpus-only": "true"}),  # SMTAlignmentError
        dict(base, containers=[20]),  # not enough cpus
        dict(base, containers=[10], tm_policy="single-numa-node"),  # TopologyAffinityError
        dict(base, containers=[6], tm_policy="restricted", tm_scope="pod"),
        dict(base, containers=[2, 2, 2], tm_policy="best-effort", tm_scope="pod"),
        dict(base, containers=[6], cpu_options={"distribute-cpus-across-numa": "true"}),
        dict(base, containers=[5], cpu_options={"distribute-cpus-across-cores": "true"}),
        dict(base, containers=[4], cpu_options={"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"}),
        dict(base, containers=[4], cpu_options={"strict-cpu-reservation": "true"}, assignments={"p": {"c": "1,9"}}),
        dict(base, containers=[4], assignments={"p": {"c": "0"}}),  # reserved CPU assigned: state refused
        dict(base, containers=[4], tm_policy="best-effort", tm_options={"prefer-closest-numa-nodes": "true"}),
        # drawn by the full run: kubelet's admission never returns (distribute-cpus-across-numa with
        # full-pcpus-only: the remainder loop finds no NUMA node with a whole core left; fixed after 1.37)
        json.loads((CASES / "hang_distribute_full_pcpus.json").read_text()),
    ]
    with _oracle(release) as oracle:
        answers = oracle.ask_many(hand)
    kinds = set()
    for case, go in zip(hand, answers):
        py = decide(case, release).as_json()
        assert _same(py, go), _report(release, case, py, go)
        kinds.add((go["error"] or {}).get("kind", "fits"))
    assert {"fits", "SMTAlignmentError", "UnexpectedAdmissionError", "TopologyAffinityError", "PolicyError",
            "StateError", "TopologyManagerError", "Hang"} <= kinds, kinds


def _topology_cases(release: str, per_topology: int = 40) -> list[dict]:
    """Kubelet's own test topologies (policy_test.go, as tests/kubeletsim/tables holds them), given as
    CPUTopology literals (no Discover: the counts as kubelet's tests write them), with drawn states."""
    import random

    from pinscope.collectors.fit.kubelet import CPU_OPTIONS, cpuset_str

    data = json.loads((Path(__file__).resolve().parents[1] / "kubeletsim" / "tables" / f"v{release}.json").read_text())
    rng = random.Random(36)
    out = []
    for name, t in sorted(data["topologies"].items()):
        spec = {"num_cpus": t["NumCPUs"], "num_cores": t["NumCores"], "num_uncore_cache": t["NumUncoreCache"],
                "num_sockets": t["NumSockets"], "num_numa_nodes": t["NumNUMANodes"], "cpu_details": t["details"]}
        cpus = sorted(int(c) for c in t["details"])
        for _ in range(per_topology):
            opts = {o: "true" for o in CPU_OPTIONS if rng.random() < 0.25}
            n_res = rng.randint(1, max(1, min(4, len(cpus) // 4)))
            reserved = cpuset_str(rng.sample(cpus, n_res)) if rng.random() < 0.5 else ""
            res = set() if not reserved else {int(x) for x in reserved.replace("-", ",").split(",")}
            pool = [c for c in cpus if c not in res]
            rng.shuffle(pool)
            taken = pool[: rng.randint(0, len(pool) // 2)] if reserved else []
            case = {"topology": spec, "cpus": [], "cpu_options": opts,
                    "tm_policy": rng.choice(["none", "best-effort", "restricted", "single-numa-node"]),
                    "tm_scope": rng.choice(["container", "pod"]), "reserved": reserved, "num_reserved": n_res,
                    "assignments": {"p": {"c": cpuset_str(taken)}} if taken else {},
                    "containers": [rng.randint(1, max(1, len(cpus) // 2)) for _ in range(rng.choice([1, 1, 2]))],
                    "_source": f"policy_test.go {name}"}
            out.append(case)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_kubelet_test_topologies_agree(release):
    """The topologies of kubelet's own tests, as literals, under drawn options and states: the same
    decisions as kubelet's code."""
    cases_ = _topology_cases(release)
    with _oracle(release) as oracle:
        answers = oracle.ask_many([{k: v for k, v in c.items() if k != "_source"} for c in cases_])
    bad = [_report(release, c, decide(c, release).as_json(), go) for c, go in zip(cases_, answers)
           if not _same(decide(c, release).as_json(), go)]
    print(f"\nkubelet {release}: {len(cases_)} cases on kubelet's test topologies, {len(bad)} disagreements")
    assert not bad, f"{len(bad)} of {len(cases_)} disagree; the first:\n" + "\n\n".join(bad[:3])
