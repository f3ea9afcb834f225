"""The memory manager's Static policy in pinscope's port (collectors/fit/memory.py) and its merge with the CPU
manager's hints (kubelet.py): hand-computed cases. test_fit_differential.py checks the same code against
kubelet's own on generated cases."""

from __future__ import annotations

import asyncio
import itertools
import json
import random

import pytest

from pinscope.collectors.fit.kubelet import Hint, Kubelet, TopologyManager, _compare, _merged_permutations, decide
from pinscope.collectors.fit.memory import MemNode, MemoryPolicy

GI = 2**30
# 8 CPUs, no SMT: CPUs 0-3 on NUMA 0, 4-7 on NUMA 1; kubelet reserves CPU 0
CPUS = [[i, 0, i // 4, i, -1] for i in range(8)]


def table(free: int, alloc: int = 8 * GI) -> dict:
    return {"total": alloc + GI, "systemReserved": GI, "allocatable": alloc, "reserved": alloc - free, "free": free}


def node(free: int, n: int = 0, cells=None, alloc: int = 8 * GI, hp: int | None = None) -> dict:
    m = {"memory": table(free, alloc)}
    if hp is not None:
        m["hugepages-2Mi"] = table(hp, 4 * GI)
    return {"numberOfAssignments": n, "memoryMap": m, "cells": cells}


def case(policy: str, free0: int, free1: int, cpus: list[int], mem: list[int], scope: str = "container") -> dict:
    """CPUs 4-6 taken: NUMA 0 has 1-3 free, NUMA 1 only 7."""
    return {"cpus": CPUS, "num_reserved": 1, "reserved": "", "tm_policy": policy, "tm_scope": scope,
            "assignments": {"p": {"c": "4-6"}}, "containers": cpus,
            "memory": {"machine_state": {"0": node(free0, cells=[0]), "1": node(free1, cells=[1])},
                       "containers": [{"memory": m} for m in mem]}}


def test_memory_not_where_the_cpus_prefer():
    """2 CPUs prefer NUMA 0 (3 free there, 1 on NUMA 1); 4Gi fits only NUMA 1 (2Gi free on 0, 8Gi on 1).
    CPU hints: {0} preferred, {0,1}. Memory hints: {1} preferred, {0,1} (allocatable 8Gi on one node: the
    fewest is one node). The cross product has no preferred merge ({0}&{1} is empty): single-numa-node and
    restricted refuse; best-effort keeps the narrowest of the unpreferred ({0}: count 1 = the narrowest any
    provider gives, lower than {1}): CPUs from NUMA 0, the memory extended from {0} to {0,1}."""
    for policy in ("single-numa-node", "restricted"):
        d = decide(case(policy, 2 * GI, 8 * GI, [2], [4 * GI])).as_json()
        assert d == {"cpus": None, "error": {"kind": "TopologyAffinityError",
                                             "message": "Resources cannot be allocated with Topology locality"}}
    d = decide(case("best-effort", 2 * GI, 8 * GI, [2], [4 * GI]))
    assert d.best == Hint(0b01, False)
    assert d.as_json() == {"cpus": ["1-2"], "error": None, "memory": [[0, 1]]}


def test_memory_and_cpus_agree_on_one_node():
    """1Gi fits both nodes: memory {0} and {1} preferred; with the CPUs' {0} the merge is {0}, preferred."""
    for policy in ("single-numa-node", "restricted", "best-effort"):
        assert decide(case(policy, 2 * GI, 8 * GI, [2], [GI])).as_json() == {"cpus": ["1-2"], "error": None, "memory": [[0]]}


def test_policy_none_takes_the_narrowest_preferred_memory_hint():
    """The topology manager's none policy gives no hint: the memory manager's default hint is its narrowest
    preferred one ({1}: the only node with 4Gi free), whatever the CPUs got."""
    assert decide(case("none", 2 * GI, 8 * GI, [2], [4 * GI])).as_json()["memory"] == [[1]]


def test_no_node_with_enough_memory_is_kubelets_unexpected_admission_error():
    """10Gi: more than one node's allocatable (8Gi) and than both nodes' free (2+3): no hint at all, which the
    topology manager takes as no preference; Allocate then fails with the memory manager's words."""
    d = decide(case("none", 2 * GI, 3 * GI, [2], [10 * GI])).as_json()
    assert d["error"] == {"kind": "UnexpectedAdmissionError", "message": "Allocate failed due to [memorymanager] failed to get "
                          "the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected"}
    d = decide(case("best-effort", 2 * GI, 3 * GI, [2], [10 * GI])).as_json()
    assert d["error"]["message"] == ("Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the current "
                                     "topology hint, which is unexpected")


def test_pod_scope_places_every_container_under_the_pods_hint():
    """Pod scope: 6Gi + 3Gi = 9Gi > one node's allocatable: the pod's memory hint is {0,1} (preferred: the
    fewest nodes that can hold 9Gi is two); the CPUs' {0} ∧ {0,1} = {0} unpreferred, kept by best-effort;
    each container's memory then extends {0} to the group {0,1}."""
    d = decide(case("best-effort", 8 * GI, 8 * GI, [2, 1], [6 * GI, 3 * GI], scope="pod")).as_json()
    assert d["memory"] == [[0, 1], [0, 1]]


def test_group_rules():
    """A node in a two-node group is never a single-node hint; a node used alone never joins a group."""
    p = MemoryPolicy({0: MemNode(1, [0, 1], {"memory": 4 * GI}, {"memory": 8 * GI}, {}),
                      1: MemNode(1, [0, 1], {"memory": 4 * GI}, {"memory": 8 * GI}, {}),
                      2: MemNode(1, [2], {"memory": 4 * GI}, {"memory": 8 * GI}, {}),
                      3: MemNode(0, [3], {"memory": 8 * GI}, {"memory": 8 * GI}, {})})
    masks = [h.mask for h in p.hints({"memory": GI})["memory"]]
    # singles: 2 and 3 (0 and 1 are grouped); pairs: only the group itself {0,1}; {2,3}: 2 is used alone
    assert masks == [0b0100, 0b1000, 0b0011]
    prefs = [h.preferred for h in p.hints({"memory": GI})["memory"]]
    assert prefs == [True, True, False]
    with pytest.raises(Exception, match="violates NUMA node allocation"):
        p.copy().allocate(Hint(0b1100, False), {"memory": 6 * GI})


def test_allocate_fills_the_nodes_in_order_and_counts_each_resource():
    p = MemoryPolicy({0: MemNode(0, [0], {"memory": 2 * GI, "hugepages-2Mi": GI}, {"memory": 8 * GI, "hugepages-2Mi": GI}, {}),
                      1: MemNode(0, [1], {"memory": 8 * GI, "hugepages-2Mi": GI}, {"memory": 8 * GI, "hugepages-2Mi": GI}, {})})
    assert p.allocate(Hint(0b11, True), {"memory": 3 * GI, "hugepages-2Mi": GI}) == [0, 1]
    assert p.machine[0].free == {"memory": 0, "hugepages-2Mi": 0}
    assert p.machine[1].free == {"memory": 7 * GI, "hugepages-2Mi": GI}
    assert p.machine[0].assignments == p.machine[1].assignments == 2  # one per resource, as kubelet counts
    assert p.machine[0].cells == [0, 1]


def test_hugepages_hints_are_the_memory_hints():
    """Every resource of the request gets the same masks; a resource's own shortage removes the mask for all."""
    ms = {"0": node(8 * GI, cells=[0], hp=0), "1": node(8 * GI, cells=[1], hp=2 * GI)}
    c = dict(case("single-numa-node", 0, 0, [1], []), memory={"machine_state": ms, "containers": [{"memory": GI, "hugepages-2Mi": GI}]})
    assert decide(c).as_json() == {"cpus": ["7"], "error": None, "memory": [[1]]}


def test_a_missing_hugepages_table_is_kubelets_nil_dereference():
    ms = {"0": node(8 * GI, cells=[0]), "1": node(8 * GI, cells=[1])}
    c = dict(case("best-effort", 0, 0, [1], []), memory={"machine_state": ms, "containers": [{"memory": GI, "hugepages-1Gi": GI}]})
    err = decide(c).as_json()["error"]
    assert err == {"kind": "Panic", "message": "runtime error: invalid memory address or nil pointer dereference"}
    from pinscope.collectors.fit.summary import reason

    assert "no table for an asked hugepages size" in reason(err, 1, 7)


def test_inactive_pods_memory_is_released_first():
    """A pod kubelet no longer counts active gives its memory back before the next pod (removeStaleState)."""
    c = case("single-numa-node", 0, 0, [1], [4 * GI])
    c["memory"]["machine_state"] = {"0": node(0, n=1, cells=[0]), "1": node(8 * GI, cells=[1])}
    c["memory"]["assignments"] = {"gone": {"app": [{"numaAffinity": [0], "type": "memory", "size": 8 * GI}]}}
    assert decide(c).as_json()["memory"] == [[1]]
    c["inactive"] = ["gone"]
    k = Kubelet(c)
    assert k.memory.machine[0].free == {"memory": 8 * GI} and k.memory.machine[0].assignments == 0


def test_inactive_pod_level_pod_releases_its_pod_blocks_once():
    """A 1.37 pod with pod-level memory: 4Gi for the pod, two containers each listing the pod's shared 4Gi
    block. kubelet releases the pod's blocks once (RemoveContainer with PodLevelResourceManagers), not each
    container's: NUMA 0 gets 4Gi back, not 8."""
    c = case("single-numa-node", 0, 0, [1], [GI])
    c["memory"]["machine_state"] = {"0": node(4 * GI, n=1, cells=[0]), "1": node(8 * GI, cells=[1])}
    shared = [{"numaAffinity": [0], "type": "memory", "size": 4 * GI}]
    c["memory"]["assignments"] = {"plr": {"a": shared, "b": shared}}
    c["memory"]["pod_assignments"] = {"plr": shared}
    c["inactive"] = ["plr"]
    k = Kubelet(c)
    assert k.memory.machine[0].free == {"memory": 8 * GI} and k.memory.machine[0].assignments == 0


def test_no_memory_asked_is_the_cpus_alone():
    """Without a memory request the memory manager is not asked: the same answer as before this port."""
    c = case("single-numa-node", 2 * GI, 8 * GI, [2], [4 * GI])
    assert Kubelet(c).admit([2]).as_json() == {"cpus": ["1-2"], "error": None}


@pytest.mark.parametrize("seed", range(200))
def test_distinct_merges_keep_what_the_product_keeps(seed):
    """_merged_permutations: folding HintMerger.compare over the distinct merged hints keeps what folding it
    over every permutation of the cross product (kubelet's loop) keeps, with and without prefer-closest."""
    rng = random.Random(seed)
    n = rng.randint(1, 4)
    nodes = list(range(n))
    dist = {a: [10 if a == b else rng.choice([11, 12, 20, 21]) for b in nodes] for a in nodes}
    tm = TopologyManager(rng.choice(["best-effort", "restricted"]), "container", nodes, rng.random() < 0.5, dist)
    default = tm.default_mask()
    lists = []
    for _ in range(rng.randint(2, 3)):
        k = rng.randint(0, 4)
        lists.append([Hint(rng.choice([None] + list(range(1, 1 << n))), rng.random() < 0.5) for _ in range(k)] or
                     [Hint(None, rng.random() < 0.5)])
    best_np = 0
    for r in lists:
        masks = [h.mask for h in r if h.mask is not None]
        if masks:
            best_np = max(best_np, min(masks, key=lambda m: (m.bit_count(), m)).bit_count())

    def cmp(cur, cand):
        cm, dm = cur.mask or 0, cand.mask or 0
        if dm == cm:
            return cur
        b = tm._closest(cm, dm) if tm.prefer_closest else (cm if (cm.bit_count(), cm) < (dm.bit_count(), dm) else dm)
        return cur if b == cm else cand

    brute = None
    for perm in itertools.product(*lists):
        first, merged, pref = None, default, True
        for h in perm:
            if h.mask is not None:
                first = h.mask if first is None else first
                pref = pref and h.mask == first
                merged &= h.mask
            pref = pref and h.preferred
        brute = _compare(brute, Hint(merged, pref), best_np, cmp)
    fast = None
    for h in reversed(_merged_permutations(lists, default)):
        fast = _compare(fast, h, best_np, cmp)
    assert fast == brute
    assert tm._merge(lists, False) == (brute if brute is not None else Hint(default, False))


# --- `pinscope fit --memory` on a --root tree --------------------------------------------------------


@pytest.fixture(scope="module")
def static_tree(tmp_path_factory):
    """A demo node's tree (2 NUMA nodes, single-numa-node, full-pcpus-only), copied, its kubelet told
    memoryManagerPolicy: Static, with a memory_manager_state (v1, checksum 0, which kubelet accepts): NUMA 0
    has 1Gi free of 30Gi (29Gi are a running pod's), NUMA 1 all its 30Gi."""
    import shutil

    from pinscope.collectors.sim.demo import DemoCluster

    d = DemoCluster()
    try:
        sim = next(s for s in d.sims if s.root.name == "trade-xeon-96")
        root = tmp_path_factory.mktemp("mm") / "node"
        shutil.copytree(sim.root, root, symlinks=True)
    finally:
        d.close()
    kube = root / "var/lib/kubelet"
    (kube / "config.yaml").write_text((kube / "config.yaml").read_text() + "memoryManagerPolicy: Static\n")
    ms = {"0": node(GI, n=1, cells=[0], alloc=30 * GI), "1": node(30 * GI, cells=[1], alloc=30 * GI)}
    running = sorted(json.loads((kube / "cpu_manager_state").read_text())["entries"])[0]  # a pod of the node's
    entries = {running: {"db": [{"numaAffinity": [0], "type": "memory", "size": 29 * GI}]}}
    (kube / "memory_manager_state").write_text(json.dumps({"policyName": "Static", "machineState": ms, "entries": entries,
                                                           "checksum": 0}))
    return root


def _fit(argv) -> tuple[int, dict | str]:
    import contextlib
    import io

    from pinscope.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    text = out.getvalue()
    return rc, json.loads(text) if "--json" in argv else text


def _numa_of(root) -> dict[int, int]:
    import asyncio

    from pinscope.collectors.collect import Options, snapshot

    snap = asyncio.run(snapshot("local", Options(root=str(root)), samples=1, interval=1.0, timeout=60)).snapshot
    return {c.id: c.numa_node for c in snap.topology.cpus}


def test_fit_memory_json_on_a_root_tree(static_tree):
    """4Gi fits only NUMA 1: under single-numa-node the memory's hint {1} is the only one, so the CPUs go
    there too (the CPU manager alone would have preferred NUMA 0, the lower node)."""
    rc, o = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert rc == 0, o
    assert o["memory"]["numa_nodes"] == [1] and o["memory"]["request"] == {"memory": 4 * GI}
    numa = _numa_of(static_tree)
    assert {numa[c] for c in o["cpus"]} == {1}
    assert [p["free"]["memory"] for p in o["memory"]["per_numa"]] == [GI, 30 * GI]
    assert {"node", "kubelet_version", "assumed", "cpus", "error", "per_numa"} <= set(o)  # issue 36's keys stay
    rc, alone = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--json"])
    assert {numa[c] for c in alone["cpus"]} == {0} and "memory" not in alone
    assert any("--memory" in u for u in alone["unknown"])  # the memory manager's say is unknown without it


def test_fit_memory_too_large_for_one_node_is_refused(static_tree):
    """40Gi: more than one node's allocatable (30Gi), so only {0,1} could hold it, and NUMA 0 is used alone: no
    memory hint at all, which the topology manager takes as no preference; the CPUs get {0}, and the memory
    manager's Allocate cannot extend {0} to a group that holds 40Gi: kubelet's words, and why in pinscope's."""
    rc, o = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", "40Gi", "--json"])
    assert rc == 1
    assert o["error"]["kind"] == "UnexpectedAdmissionError" and "[memorymanager]" in o["error"]["message"]
    rc, text = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", "40Gi"])
    assert rc == 1 and "rejected: UnexpectedAdmissionError" in text and "NUMA 1 memory: memory 30Gi free of 30Gi" in text
    assert "why: kubelet's memory manager: the memory does not fit on the NUMA node(s) chosen" in text


def test_fit_memory_policy_none_is_said(tmp_path, static_tree):
    import shutil

    root = tmp_path / "none"
    shutil.copytree(static_tree, root, symlinks=True)
    cfg = root / "var/lib/kubelet/config.yaml"
    cfg.write_text(cfg.read_text().replace("memoryManagerPolicy: Static", "memoryManagerPolicy: None"))
    rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert rc == 0 and o["memory"]["numa_nodes"] is None and "does not pin memory" in o["memory"]["note"]


def test_fit_memory_unread_or_no_decision_is_said(tmp_path, static_tree):
    """The memory checkpoint unreadable (here: gone), then the CPU manager's policy none: the JSON's memory says
    why no placement is predicted, never a guess."""
    import shutil

    root = tmp_path / "unread"
    shutil.copytree(static_tree, root, symlinks=True)
    (root / "var/lib/kubelet/memory_manager_state").unlink()
    rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert rc == 0 and o["memory"]["numa_nodes"] is None and "memory_manager_state was not read" in o["memory"]["note"]
    assert "run with --sudo, or as root" in o["memory"]["note"]
    cfg = root / "var/lib/kubelet/config.yaml"
    cfg.write_text(cfg.read_text().replace("cpuManagerPolicy: static", "cpuManagerPolicy: none"))
    rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert o["memory"]["numa_nodes"] is None and "cpuManagerPolicy is 'none'" in o["memory"]["note"], o


def test_fit_bad_sizes_are_one_line():
    for argv in (["--memory", "4G1"], ["--memory", "0"], ["--hugepages-2Mi", "2Mi"], ["--memory", "\u0663Gi"],
                 ["--memory", "4Gi", "--hugepages-1Gi", "\uff11Gi"]):
        rc, text = _fit(["fit", "--root", "/nonexistent", "--cpus", "1", *argv])
        assert rc == 2


@pytest.mark.timeout(30)
def test_fit_memory_machine_state_not_the_nodes_is_said(tmp_path, static_tree):
    """A memory_manager_state whose NUMA nodes are not the node's (2 here): 40 of them (2^40 masks: pinscope hung),
    a negative key (a negative shift crashed it), one beyond the bitmask's 63. kubelet refuses such a checkpoint at
    start, so no placement is predicted, the note says why, and the CPUs are still predicted."""
    import shutil

    for name, keys in (("forty", range(40)), ("negative", (-1, 0)), ("beyond", (0, 100000000))):
        root = tmp_path / name
        shutil.copytree(static_tree, root, symlinks=True)
        ms = {str(k): node(GI, cells=[k]) for k in keys}
        (root / "var/lib/kubelet/memory_manager_state").write_text(json.dumps(
            {"policyName": "Static", "machineState": ms, "entries": {}, "checksum": 0}))
        rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
        assert rc == 0 and o["cpus"] and o["memory"]["numa_nodes"] is None, (name, o)
        assert "kubelet refuses such a checkpoint at start" in o["memory"]["note"], (name, o)


def test_fit_memory_of_a_gone_pod_is_free_only_on_evidence(tmp_path, static_tree):
    """The 29Gi on NUMA 0 held by a pod only memory_manager_state names (no cgroup, no CPU entry, as for a
    Guaranteed pod of fractional CPUs). On the node's files alone that is as likely a pod admitted this very
    moment as a gone one: held, NUMA 1. The API's pod list read after the checkpoint, which has no such pod,
    settles it: kubelet's memory manager runs its own removeStaleState before the hints, so NUMA 0 has 30Gi free
    and the 4Gi go with the CPUs there (before the fix pinscope kept them held and said NUMA 1)."""
    import shutil

    from pinscope.collectors.collect import Options, snapshot
    from pinscope.collectors.fit.active import inactive_pods
    from pinscope.collectors.fit.predict import predict
    from pinscope.collectors.kube import ApiPod

    root = tmp_path / "gone"
    shutil.copytree(static_tree, root, symlinks=True)
    f = root / "var/lib/kubelet/memory_manager_state"
    doc = json.loads(f.read_text())
    uid = "0f0e0d0c-0b0a-4909-8807-060504030201"
    doc["entries"] = {uid: next(iter(doc["entries"].values()))}
    f.write_text(json.dumps(doc))
    rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert rc == 0 and o["memory"]["numa_nodes"] == [1], o
    snap = asyncio.run(snapshot("local", Options(root=str(root)), samples=1, interval=1.0, timeout=60)).snapshot
    listed = {p.uid: ApiPod(p.uid, p.namespace, p.name, "Guaranteed", None) for p in snap.pods}  # every other pod
    gone = inactive_pods(snap, listed, api_after=True)
    assert list(gone) == [uid], gone
    ans = predict(snap, 2, memory={"memory": 4 * GI}, inactive=gone)
    assert ans.memory["numa_nodes"] == [0], ans.memory
    assert [p["free"]["memory"] for p in ans.memory["per_numa"]] == [30 * GI, 30 * GI]
    assert any("kubelet frees its memory" in a for a in ans.assumed), ans.assumed


def test_fit_memory_state_of_another_policy_is_said(tmp_path, static_tree):
    """memoryManagerPolicy: Static, but the checkpoint kept from policy None (its machineState as the Static
    one's): kubelet refuses to start on it, so no placement is predicted (pinscope predicted NUMA 1)."""
    import shutil

    root = tmp_path / "other"
    shutil.copytree(static_tree, root, symlinks=True)
    f = root / "var/lib/kubelet/memory_manager_state"
    f.write_text(f.read_text().replace('"policyName": "Static"', '"policyName": "None"'))
    rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert rc == 0 and o["memory"]["numa_nodes"] is None, o
    assert "says policy 'None' while the configuration says Static" in o["memory"]["note"], o


def test_memory_on_more_numa_nodes_than_predicted_is_said():
    """20 NUMA nodes, machineState the same: 2^20 masks per hint is beyond what pinscope predicts; said, not hung."""
    from pinscope.collectors.fit.memory import MAX_NUMA, _machine_not_the_nodes
    from pinscope.collectors.model import Cpu, NumaNode, Topology

    nodes = range(MAX_NUMA + 4)
    topo = Topology(tuple(Cpu(n, True, 0, 0, n, numa_node=n) for n in nodes), tuple(NumaNode(n, (n,), ()) for n in nodes),
                    frozenset(nodes), frozenset(nodes))
    assert "does not predict above 16 nodes" in (_machine_not_the_nodes(topo, set(nodes)) or "")
    assert _machine_not_the_nodes(topo, set(range(MAX_NUMA))) is not None  # not the node's: refused by kubelet
    small = Topology(topo.cpus[:2], topo.numa_nodes[:2], frozenset({0, 1}), frozenset({0, 1}))
    assert _machine_not_the_nodes(small, {0, 1}) is None


def test_sizes_are_kubernetes_quantities():
    """parse_size reads what resource.ParseQuantity reads (apimachinery quantity.go, suffix.go) and gives
    Quantity.Value(): binary Ki..Ei, decimal n u m "" k M G T P E (no upper-case K), exponents, fractions,
    a fraction of a byte rounded up."""
    from pinscope.cli.fit import parse_size

    good = {"1.5Gi": 3 * 2**29, "500k": 500_000, "1Pi": 2**50, "1Ei": 2**60, "1P": 10**15, "1E": 10**18,
            "1e9": 10**9, "1E9": 10**9, "1e+3": 1000, "512Mi": 2**29, "256m": 1, "1e-3": 1, "0.5": 1, "+1Gi": 2**30,
            ".5Ki": 512, "1.": 1, "8Ei": 2**63 - 1, "0": 0}
    assert {t: parse_size(t) for t in good} == good
    for bad in ("500K", "1KiB", "4G1", "1e", "", " 1Gi", "1.5.5", "1Mi3", "\u0663Gi", "\uff11Gi"):
        with pytest.raises(ValueError, match="not a memory size"):
            parse_size(bad)


def test_fit_json_memory_keys_are_each_documented(static_tree):
    """The user trial: `memory` had a `hints` key docs/fit.md did not list. A script reads what the doc says:
    every key of `memory` (and of its `per_numa` entries) is named in the doc's "Memory and hugepages"."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "fit.md").read_text()
    section = " ".join(doc[doc.index("## Memory and hugepages"):doc.index("## Devices")].split())
    rc, o = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", "256m", "--json"])
    assert rc == 0 and o["memory"]["hints"], o["memory"]
    keys = set(o["memory"]) | {k for p in o["memory"]["per_numa"] for k in p}
    assert {k for k in keys if f"`{k}`" not in section} == set(), section


def test_fit_sizes_as_kubernetes_takes_them(static_tree):
    """1.5Gi, 500k, 1e9 are taken; 500K and garbage are one line and exit 2; 256m is taken (1 byte, as
    kubelet counts it) with a note; hugepages not a whole number of pages are refused in the API's words."""
    import contextlib
    import io

    rc, o = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", "1.5Gi", "--json"])
    assert rc == 0 and o["memory"]["request"] == {"memory": 3 * 2**29}
    for size in ("500k", "1e9", "1E9"):
        assert _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", size, "--json"])[0] == 0
    rc, text = _fit(["fit", "--root", str(static_tree), "--cpus", "2", "--memory", "256m"])
    assert rc == 0 and "256m is 0.256 bytes (kubelet counts 1): did you mean 256Mi?" in text
    for argv, said in ((["--memory", "500K"], "not a memory size: '500K'"),
                       (["--memory", "1Gi", "--hugepages-2Mi", "3Mi"], "3Mi is not positive integer multiple of hugepages-2Mi"),
                       (["--memory", "1Gi", "--hugepages-1Gi", "1.5Gi"], "is not positive integer multiple of hugepages-1Gi"),
                       (["--memory=-1Gi"], "not above zero")):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc, text = _fit(["fit", "--root", str(static_tree), "--cpus", "2", *argv])
        assert rc == 2 and said in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1, err.getvalue()


@pytest.mark.timeout(60)
def test_fit_memory_on_16_numa_nodes_predicts_and_does_not_count(tmp_path):
    """16 NUMA nodes, topology manager none (kubelet then accepts more than 8), memory manager Static: the
    placement is predicted (under a second), the count of containers one after another is not (it took 40 s:
    2^16 masks per admission) and `unknown` says so."""
    import asyncio
    import dataclasses
    import time

    from pinscope.collectors.collect import Options, snapshot
    from pinscope.collectors.fit.predict import predict
    from pinscope.collectors.model import MemoryManagerState, MemoryTable
    from pinscope.collectors.sim.node import NodeSpec, SimNode

    spec = NodeSpec(hostname="big", sockets=2, cores=32, threads=2, numa_per_socket=8, reserved="0")
    sim = SimNode(spec, tmp_path / "r").write()
    s = asyncio.run(snapshot("local", Options(root=str(sim.root)), samples=1, interval=1.0, timeout=60)).snapshot
    n = len(s.topology.numa_nodes)
    assert n == 16
    machine = {i: {"memory": MemoryTable(9 * GI, GI, 8 * GI, 0, 8 * GI)} for i in range(n)}
    ms = MemoryManagerState("Static", {}, {}, 1, None, None, "", machine, {i: (0, (i,)) for i in range(n)})
    snap = dataclasses.replace(s, kubelet=dataclasses.replace(s.kubelet, memory_manager_policy="Static"), memory_state=ms)
    t0 = time.monotonic()
    a = predict(snap, 2, memory={"memory": GI})
    assert time.monotonic() - t0 < 20
    assert a.memory["numa_nodes"] == [0] and a.cpus and a.how_many is None
    assert any("not counted with memory on 16 NUMA nodes" in u for u in a.unknown), a.unknown


def test_fit_memory_text_shows_what_is_assigned_and_what_is_short(tmp_path, static_tree):
    """A rounded size hides 64Mi assigned out of 23Gi: the assigned amount is said. Hugepages-2Mi asked on a
    node with none (kubelet's tables there, 0 allocatable): the 0 is shown and the short resource named."""
    import shutil

    root = tmp_path / "hp0"
    shutil.copytree(static_tree, root, symlinks=True)
    state = root / "var/lib/kubelet/memory_manager_state"
    st = json.loads(state.read_text())
    st["machineState"]["1"]["memoryMap"]["memory"] = table(23 * GI - 64 * 2**20, 23 * GI)
    for n in st["machineState"].values():
        n["memoryMap"]["hugepages-2Mi"] = table(0, 0)
    state.write_text(json.dumps(st))
    rc, text = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "1Gi"])
    assert rc == 0 and "NUMA 1 memory: memory 23488Mi free of 23Gi (64Mi assigned)" in text, text
    assert "hugepages-2Mi" not in text  # neither asked nor on the node
    rc, text = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "1Gi", "--hugepages-2Mi", "64Mi"])
    assert rc == 1, text
    assert "NUMA 0 memory: hugepages-2Mi 0 free of 0" in text, text
    assert "short: hugepages-2Mi: 64Mi asked, the most free on one NUMA node is 0" in text, text
    assert "short: memory" not in text


def test_fit_memory_state_not_decoded_is_said_as_such(tmp_path, static_tree):
    """A memory_manager_state cut short (or not JSON): the note says why it cannot be used, not that it was missing
    or root's (which it said before)."""
    import shutil

    root = tmp_path / "cut"
    shutil.copytree(static_tree, root, symlinks=True)
    f = root / "var/lib/kubelet/memory_manager_state"
    f.write_text(f.read_text()[:40])
    rc, o = _fit(["fit", "--root", str(root), "--cpus", "2", "--memory", "4Gi", "--json"])
    assert o["memory"]["numa_nodes"] is None and o["memory"]["note"].startswith("memory_manager_state cannot be used"), o
    assert "mode 0600" not in o["memory"]["note"]


@pytest.mark.parametrize("seed", range(40))
def test_hints_at_once_are_the_loops_hints(seed):
    """MemoryPolicy.hints sums every mask at once where no table is missing: the same hints as kubelet's loop mask
    by mask (_masks_one_by_one), on random machine states with groups (some odd: duplicate cells, a cell of no node,
    an empty group), then again after allocations moved the free memory and the groups."""
    rng = random.Random(seed)
    for _ in range(50):
        ids = sorted(rng.sample(range(10), rng.randint(1, 8)))
        machine = {}
        for i in ids:
            tables = {r: table(free, alloc) for r in ("memory", "hugepages-1Gi")
                      for alloc in [rng.choice([0, 4, 8, 64]) * GI] for free in [rng.randint(0, alloc // GI) * GI]}
            odd = rng.random()
            cells = [i] if odd < 0.5 else rng.sample(ids, rng.randint(0, len(ids))) if odd < 0.9 else \
                [i, i] if odd < 0.95 else [i, 99]
            machine[str(i)] = {"numberOfAssignments": rng.choice([0, 0, 1, 2]), "cells": cells, "memoryMap": tables}
        policy = MemoryPolicy.from_case({"machine_state": machine})
        for _step in range(3):
            req = {r: rng.choice([1, 4, 8, 20, 100]) * GI for r in rng.sample(["memory", "hugepages-1Gi"], rng.randint(1, 2))}
            masks, min_size = policy._masks_one_by_one(req)
            want = {r: [Hint(m, m.bit_count() == min_size) for m in masks] for r in req} if masks else {}
            assert policy.hints(req) == want
            if want:
                policy.allocate(want["memory" if "memory" in want else "hugepages-1Gi"][0], req)
