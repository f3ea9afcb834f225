"""Kubelet's own test tables, dumped from kubelet's test code by tests/kubeletsim/tabledump.py into
tests/kubeletsim/tables/dump-v1.N.json (committed: no Go needed here), each case run through pinscope's
port as kubelet's test runs it; a failure names kubelet's test file, test function and case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinscope.collectors.fit.devices import DeviceManager
from pinscope.collectors.fit.kubelet import (
    Hint,
    KubeletError,
    StaticPolicy,
    TopologyManager,
    _compare,
    discover,
    parse_cpu_options,
    topology_of,
)
from pinscope.collectors.fit.memory import MemoryPolicy
from pinscope.collectors.fit.quantity import parse_quantity

TABLES = Path(__file__).resolve().parents[1] / "kubeletsim" / "tables"
RELEASES = ("1.35", "1.37")


def _load(release: str) -> dict:
    path = TABLES / f"dump-v{release}.json"
    return json.loads(path.read_text()) if path.exists() else {}  # test_dumped_tables_are_there says it is missing


def _mask(bits: list[int] | None) -> int | None:
    return None if bits is None else sum(1 << b for b in bits)


def _hint(h: dict) -> Hint:
    return Hint(_mask(h["mask"]), h["preferred"])


def _cases(key: str):
    """Every release's cases of one table (a "package.TestFunction" key: captured from that function)."""
    for release in RELEASES:
        for i, c in enumerate(_load(release).get(key, [])):
            yield pytest.param(release, c, id=f"{release}-{i}-{(c.get('description') or c.get('name') or '')[:60]}")


@pytest.mark.parametrize("release, case", list(_cases("merge_cases")))
def test_topology_manager_merge(release, case):
    """testPolicyMerge: every provider's hints, the policy's Merge, its best hint as kubelet's table expects."""
    distances = {int(n): row for n, row in case["distances"].items()}
    tm = TopologyManager(case["policy"], "container", case["nodes"], case["prefer_closest"], distances)
    providers = [None if p is None else {res: None if hs is None else [_hint(h) for h in hs] for res, hs in p.items()}
                 for p in case["providers"] or []]
    got, _admit = tm.merge(providers)
    want = _hint(case["expected"])
    assert (got.mask, got.preferred) == (want.mask, want.preferred), f"{case['source']}: {case['description']}"


def _distances(raw: dict | None) -> dict[int, list[int]]:
    return {int(n): row for n, row in (raw or {}).items()}


@pytest.mark.parametrize("release, case", list(_cases("topologymanager.TestCalculateAvgDistanceFor")))
def test_topology_manager_average_distance(release, case):
    """TestCalculateAvgDistanceFor: the mean NUMA distance over every pair of a mask's nodes."""
    tm = TopologyManager("best-effort", "container", case["bm"], True, _distances(case["distance"]))
    got = tm._avg_distance_of(_mask(case["bm"]) or 0)
    assert got == case["expectedAvg"], f"pkg/kubelet/cm/topologymanager/numa_info_test.go TestCalculateAvgDistanceFor: {case['name']}"


@pytest.mark.parametrize("release, case", list(_cases("topologymanager.TestClosest")))
def test_topology_manager_closest(release, case):
    """TestClosest: Closest(candidate, current), prefer-closest-numa-nodes' choice between two masks."""
    info = case["numaInfo"] or {}
    tm = TopologyManager("best-effort", "container", info.get("Nodes") or [], True, _distances(info.get("NUMADistances")))
    got = tm._closest(case["candidate"], case["current"])
    assert got == case[case["expected"]], f"pkg/kubelet/cm/topologymanager/numa_info_test.go TestClosest: {case['description']}"


@pytest.mark.parametrize("release, case", list(_cases("topologymanager.TestCompareHintsNarrowest")))
def test_topology_manager_compare(release, case):
    """TestCompareHintsNarrowest: HintMerger.compare (best-effort, no closest-NUMA option) between the current
    best hint and a candidate, given the best non-preferred affinity count; the masks of two hints of equal
    standing compared as kubelet's Narrowest does."""
    def narrowest(cur: Hint, cand: Hint) -> Hint:
        cm, dm = cur.mask or 0, cand.mask or 0
        if cm == dm:
            return cur
        return cur if (cm.bit_count(), cm) < (dm.bit_count(), dm) else cand

    cur = None if case["current"] is None else Hint(case["current"]["NUMANodeAffinity"], case["current"]["Preferred"])
    cand = Hint(case["candidate"]["NUMANodeAffinity"], case["candidate"]["Preferred"])
    got = _compare(cur, cand, case["bestNonPreferredAffinityCount"], narrowest)
    want = cur if case["expected"] == "current" else cand
    assert got is want, f"pkg/kubelet/cm/topologymanager/policy_test.go TestCompareHintsNarrowest: {case['description']}"


def _sorted(hints) -> list[tuple[int | None, bool]] | None:
    return None if hints is None else sorted(((h.mask, h.preferred) for h in hints), key=lambda x: (x[0] or 0, x[1]))


def _skip_cpu_hint_case(case: dict) -> str | None:
    """Why kubelet's case is not one pinscope's port answers (kubelet's test runs the CPU manager's
    GetTopologyHints; pinscope predicts the next container, one that holds nothing yet)."""
    if case["pod_level_resources"]:
        return "a pod with pod-level resources (not modelled by the hint port)"
    if case["container"] in case["assignments"].get(case["pod"], {}):
        return "the container already holds CPUs (kubelet regenerates its hints; pinscope predicts a new one)"
    return None


@pytest.mark.parametrize("release, case", list(_cases("cpu_hint_cases")))
def test_cpu_manager_hints(release, case):
    """TestGetTopologyHints: the static policy (no options, nothing reserved) on returnMachineInfo's
    machine, its hints for the case's container from the default CPU set."""
    why = _skip_cpu_hint_case(case)
    if why:
        pytest.skip(why)
    machine = _load(release)["cpu_hint_machine"]
    topo = discover([(t, core["socket_id"], node["node_id"], core["core_id"],
                      (core.get("uncore_caches") or [{"id": -1}])[0]["id"])
                     for node in machine["topology"] for core in node["cores"] for t in core["thread_ids"]])
    nodes = sorted(node["node_id"] for node in machine["topology"])
    policy = StaticPolicy(topo, 0, set(), TopologyManager("none", "container", nodes), parse_cpu_options({}), release)
    req, lim = case["cpu_request"], case["cpu_limit"]
    where = f"{case['source']}: {case['description']}"
    if req != lim or not req.isdigit():  # not an exclusive container: the CPU manager gives no hints
        assert not case["expected"], where
        return
    got = policy.hints(set(case["default"]), set(), int(req))
    assert _sorted(got) == _sorted([_hint(h) for h in case["expected"]]), where


def _device_request(case: dict) -> dict[str, int]:
    """The container's limits (container scope), or getPodDeviceRequest's: per resource the larger of the
    largest init container and the sum of the app containers (pod scope)."""
    if case["scope"] == "container":
        return dict(case["containers"][0])
    out: dict[str, int] = {}
    for c in case["containers"]:
        for res, n in c.items():
            out[res] = out.get(res, 0) + n
    for c in case["init_containers"]:
        for res, n in c.items():
            out[res] = max(out.get(res, 0), n)
    return out


@pytest.mark.parametrize("release, case", list(_cases("device_hint_cases")))
def test_device_manager_hints(release, case):
    """TestGetTopologyHints / TestGetPodTopologyHints: the device manager on NUMA nodes {0, 1} with the
    case's devices (all healthy) and allocations, its hints for the case's pod (its first container, or
    the whole pod); only the resources kubelet's case names are compared, as its test does."""
    allocated = case["allocated"] or {}
    if case["pod"] in allocated:
        pytest.skip("the pod already holds devices (kubelet regenerates its hints; pinscope predicts a new pod)")
    active = {case["pod"]} | ({"fakeOtherPod"} if case["scope"] == "pod" else set())
    gone = [p for p in allocated if p not in active]
    per_res: dict[str, int] = {}
    for ctrs in allocated.values():
        for by_res in ctrs.values():
            for res in by_res:
                per_res[res] = per_res.get(res, 0) + 1
    if not gone and any(n > 1 for n in per_res.values()):
        pytest.skip("kubelet's test keeps only one container's devices of a resource held twice (Go map order)")
    dev = {"resources": case["devices"], "allocated": allocated}
    dm = DeviceManager.from_case(dev, [0, 1], inactive=gone, release=release)
    got = dm.hints(_device_request(case))
    where = f"{case['source']}: {case['description']}"
    for res, want in case["expected"].items():
        have = got.get(res)
        assert _sorted(have) == _sorted(None if want is None else [_hint(h) for h in want]), f"{where} ({res})"


def _topology(topo: dict):
    """A captured *topology.CPUTopology (its exported fields, as encoding/json writes them)."""
    details = {c: [i["NUMANodeID"], i["SocketID"], i["CoreID"], i["UncoreCacheID"]] for c, i in topo["CPUDetails"].items()}
    return topology_of(details, topo["NumCPUs"], topo["NumSockets"], topo["NumCores"], topo.get("NumUncoreCache", 0),
                       topo.get("NumNUMANodes", 0))


def _cpu_request(pod: dict) -> int | None:
    """The first container's CPUs when it is an exclusive one (Guaranteed, a whole number), else None."""
    res = pod["spec"]["containers"][0].get("resources") or {}
    req, lim = (res.get("requests") or {}).get("cpu"), (res.get("limits") or {}).get("cpu")
    if req is None or lim is None or parse_quantity(req) != parse_quantity(lim) or parse_quantity(req).denominator != 1:
        return None
    return int(parse_quantity(req)) if _guaranteed(pod) else None


@pytest.mark.parametrize("release, case", list(_cases("cpumanager.TestGetPodTopologyHintsWithPolicyOptions")))
def test_cpu_manager_hints_with_options(release, case):
    """TestGetPodTopologyHintsWithPolicyOptions: the static policy with the case's options on its topology, the
    hints for its one-container pod from the default CPU set."""
    where = f"pkg/kubelet/cm/cpumanager/topology_hints_test.go TestGetPodTopologyHintsWithPolicyOptions: {case['description']}"
    if case["assignments"]:
        pytest.skip("CPUs already assigned in the case (kubelet regenerates; pinscope predicts a new container)")
    topo = _topology(case["topology"])
    nodes = sorted(topo.details.idx[0])
    policy = StaticPolicy(topo, 0, set(), TopologyManager("none", "container", nodes),
                          parse_cpu_options(case["policyOptions"] or {}), release)
    n = _cpu_request(case["pod"])
    assert n is not None, where
    got = policy.hints(set(case["defaultCPUSet"]), set(), n)
    want = [Hint(h["NUMANodeAffinity"], h["Preferred"]) for h in case["expectedHints"] or []]
    assert _sorted(got) == _sorted(want), where


def _resv_policy(case: dict, release: str, options: dict | None):
    topo = _topology(case["topo"])
    tm = TopologyManager("none", "container", sorted(topo.details.idx[0]))
    return StaticPolicy(topo, case["numReservedCPUs"], set(case.get("reserved") or ()), tm, parse_cpu_options(options or {}),
                        release)


@pytest.mark.parametrize("release, case", [*_cases("cpumanager.TestStaticPolicyStart"),
                                           *_cases("cpumanager.TestStaticPolicyStartWithResvList")])
def test_cpu_manager_start(release, case):
    """TestStaticPolicyStart(WithResvList): NewStaticPolicy (reserved CPUs given, or picked by kubelet's rule)
    and Start on the case's state: kubelet's error, or the default CPU set it runs with."""
    where = f"pkg/kubelet/cm/cpumanager/policy_static_test.go TestStaticPolicyStart*: {case['description']}"
    options = case.get("options") if "options" in case else case.get("cpuPolicyOptions")
    try:
        policy = _resv_policy(case, release, options)
    except KubeletError as e:
        assert e.message == case.get("expNewErr"), where
        return
    assert case.get("expNewErr") is None, where
    try:
        assignments = {p: {c: set(cs) for c, cs in ctrs.items()} for p, ctrs in (case["stAssignments"] or {}).items()}
        got, err = policy.start(set(case["stDefaultCPUSet"]), assignments), None
    except KubeletError as e:
        got, err = set(), e.message
    assert err == case["expErr"], where
    if err is None:
        assert sorted(got) == case["expCSet"], where


@pytest.mark.parametrize("release, case", list(_cases("cpumanager.TestStaticPolicyAddWithResvList")))
def test_cpu_manager_add_with_reserved_list(release, case):
    """TestStaticPolicyAddWithResvList: NewStaticPolicy with the reserved list, then Allocate for the pod's
    first container from the case's state (the fake topology manager: no NUMA preference)."""
    where = f"pkg/kubelet/cm/cpumanager/policy_static_test.go TestStaticPolicyAddWithResvList: {case['description']}"
    pod, ctr = case["pod"]["metadata"]["uid"], case["pod"]["spec"]["containers"][0]["name"]
    if ctr in (case["stAssignments"] or {}).get(pod, {}):
        pytest.skip("the container already holds CPUs (kubelet keeps them; pinscope predicts a new one)")
    n = _cpu_request(case["pod"])
    if n is None:
        pytest.skip("not an exclusive container (the shared pool: nothing to predict)")
    policy = _resv_policy(case, release, None)
    default = set(case["stDefaultCPUSet"])
    try:
        policy.smt_check(default, n)
        got, err = policy.allocate_cpus(default, n, None, set()), None
    except KubeletError as e:
        got, err = set(), e.message
    assert err == case["expErr"], where
    if case["expCPUAlloc"]:
        assert sorted(got) == case["expCSet"], where


@pytest.mark.parametrize("release, case", list(_cases("cpumanager.TestPolicyOptionsCompatibility")))
def test_cpu_manager_option_compatibility(release, case):
    """TestPolicyOptionsCompatibility: NewStaticPolicyOptions refuses the options that cannot be used together."""
    where = f"pkg/kubelet/cm/cpumanager/policy_options_test.go TestPolicyOptionsCompatibility: {case['description']}"
    if case["featureGate"] != "CPUManagerPolicyAlphaOptions":
        pytest.skip("kubelet's case runs with only its beta gate on; pinscope takes every option as available")
    try:
        parse_cpu_options(case["policyOptions"] or {})
        err = None
    except KubeletError as e:
        err = e.message
    assert (err is not None) == case["expectedErr"], f"{where}: {err}"


@pytest.mark.parametrize("release, case", list(_cases("cpumanager.TestValidateStaticPolicyOptions")))
def test_cpu_manager_validate_options(release, case):
    """TestValidateStaticPolicyOptions: align-by-socket refused under single-numa-node and where sockets
    outnumber NUMA nodes (NewStaticPolicy's check)."""
    where = f"pkg/kubelet/cm/cpumanager/policy_options_test.go TestValidateStaticPolicyOptions: {case['description']}"
    topo = _topology(case["topology"])
    tm = TopologyManager(case["topoMgrPolicy"], "container", sorted(topo.details.idx[0]))
    try:
        StaticPolicy(topo, 0, set(), tm, parse_cpu_options(case["policyOption"] or {}), release)
        err = None
    except KubeletError as e:
        err = e.message
    assert (err is not None) == case["expectedErr"], f"{where}: {err}"


def _allocate(policy, default: set[int], n: int, mask: int | None) -> tuple[set[int], str | None]:
    """Allocate for one exclusive container: kubelet's SMT check, then allocateCPUs (default is updated)."""
    try:
        policy.smt_check(default, n)
        return policy.allocate_cpus(default, n, mask, set()), None
    except KubeletError as e:
        return set(), e.message


@pytest.mark.parametrize("release, case",
                         list(_cases("cpumanager.TestPolicyWithAlignBySocketAndDistributeCPUsAcrossNUMAEnabled")))
def test_cpu_manager_align_by_socket_and_distribute(release, case):
    """TestPolicyWithAlignBySocketAndDistributeCPUsAcrossNUMAEnabled (runStaticPolicyTestCase): the fake
    topology manager's hint, NewStaticPolicy with the case's options, Allocate for the pod's first container."""
    where = ("pkg/kubelet/cm/cpumanager/policy_static_test.go TestPolicyWithAlignBySocketAndDistributeCPUsAcrossNUMAEnabled: "
             f"{case['description']}")
    pod, ctr = case["pod"]["metadata"]["uid"], case["pod"]["spec"]["containers"][0]["name"]
    if ctr in (case["stAssignments"] or {}).get(pod, {}):
        pytest.skip("the container already holds CPUs (kubelet keeps them; pinscope predicts a new one)")
    n = _cpu_request(case["pod"])
    if n is None:
        pytest.skip("not an exclusive container (the shared pool: nothing to predict)")
    topo = _topology(case["topo"])
    tm = TopologyManager("none", "container", sorted(topo.details.idx[0]))
    policy = StaticPolicy(topo, case["numReservedCPUs"], set(case.get("reservedCPUs") or ()), tm,
                          parse_cpu_options(case["options"] or {}), release)
    hint = case.get("topologyHint") or {}
    got, err = _allocate(policy, set(case["stDefaultCPUSet"]), n, hint.get("NUMANodeAffinity"))
    assert err == case["expErr"], where
    if case["expCPUAlloc"]:
        assert sorted(got) == case["expCSet"], where


@pytest.mark.parametrize("release, case", list(_cases("cpumanager.TestStaticPolicyAddWithUncoreAlignment")))
def test_cpu_manager_uncore_alignment(release, case):
    """TestStaticPolicyAddWithUncoreAlignment: every container of the pod allocated in turn (no NUMA hint);
    the first container's CPUs, or the uncore caches the pod's CPUs span."""
    where = f"pkg/kubelet/cm/cpumanager/policy_static_test.go TestStaticPolicyAddWithUncoreAlignment: {case['description']}"
    topo = _topology(case["topo"])
    tm = TopologyManager("none", "container", sorted(topo.details.idx[0]))
    policy = StaticPolicy(topo, case["numReservedCPUs"], set(case.get("reserved") or ()), tm,
                          parse_cpu_options(case["cpuPolicyOptions"] or {}), release)
    default = set(case["stDefaultCPUSet"]) - set(case.get("reserved") or ())
    got: list[set[int]] = []
    for c in case["pod"]["spec"]["containers"]:
        n = _cpu_request({"spec": {"containers": [c]}})
        if n is None:
            pytest.skip("a container that is not exclusive (kubelet's shared pool)")
        cpus, err = _allocate(policy, default, n, None)
        assert err is None, f"{where}: {err}"
        got.append(cpus)
    if case["expCPUAlloc"]:
        assert sorted(got[0]) == case["expCSet"], where
    else:
        uncore = {topo.details.info[cpu][3] for cpus in got for cpu in cpus}
        assert sorted(uncore) == case["expUncoreCache"], where


@pytest.mark.parametrize("release, case", list(_cases("cpumanager.TestTopologyAwareAllocateCPUs")))
def test_cpu_manager_topology_aware_allocate(release, case):
    """TestTopologyAwareAllocateCPUs: Start, then allocateCPUs under the case's NUMA mask."""
    where = f"pkg/kubelet/cm/cpumanager/policy_static_test.go TestTopologyAwareAllocateCPUs: {case['description']}"
    topo = _topology(case["topo"])
    policy = StaticPolicy(topo, 0, set(), TopologyManager("none", "container", sorted(topo.details.idx[0])),
                          parse_cpu_options({}), release)
    assignments = {p: {c: set(cs) for c, cs in ctrs.items()} for p, ctrs in (case["stAssignments"] or {}).items()}
    default = set(policy.start(set(case["stDefaultCPUSet"]), assignments))
    got = policy.allocate_cpus(default, case["numRequested"], case["socketMask"], set())
    assert sorted(got) == case["expCSet"], where


MEMORY = ("memory", "hugepages-")


def _guaranteed(pod: dict) -> bool:
    """v1qos.GetPodQOS == Guaranteed, for the pods of these tables: every container limits CPU and memory and
    requests what it limits."""
    for c in pod["spec"].get("containers") or []:
        res = c.get("resources") or {}
        lim, req = res.get("limits") or {}, res.get("requests") or {}
        if "cpu" not in lim or "memory" not in lim:
            return False
        if any(parse_quantity(req.get(r, v)) != parse_quantity(v) for r, v in lim.items() if r in ("cpu", "memory")):
            return False
    return True


def _memory_request(pod: dict, whole_pod: bool = False) -> dict[str, int]:
    """getContainerRequestedResources of the first container (or getPodRequestedResources, for a pod of app
    containers: their sum): memory and hugepages requested, in bytes."""
    out: dict[str, int] = {}
    for c in pod["spec"]["containers"][: None if whole_pod else 1]:
        req = (c.get("resources") or {}).get("requests") or {}
        for r, v in sorted(req.items()):
            if r.startswith(MEMORY):
                out[r] = out.get(r, 0) + int(parse_quantity(v))
    return out


def _skip_memory_case(case: dict) -> str | None:
    pod = case["pod"]
    if pod["spec"].get("resources"):
        return "a pod with pod-level resources (1.37's AllocatePod is not ported)"
    if pod["spec"].get("initContainers"):
        return "init containers (their reusable memory is kubelet's in-memory state only)"
    held = (case["assignments"] or {}).get(pod["metadata"]["uid"], {})
    if any(c["name"] in held for c in pod["spec"]["containers"]):
        return "the container already holds memory (kubelet regenerates; pinscope predicts a new one)"
    if not case["machineState"]:
        return "no machine state given (kubelet's test builds none)"
    return None


def _mem_hints(hints: dict | None) -> dict | None:
    if hints is None:
        return None
    return {r: _sorted([Hint(h["NUMANodeAffinity"], h["Preferred"]) for h in hs]) for r, hs in hints.items()}


@pytest.mark.parametrize("release, case", list(_cases("memorymanager.TestStaticPolicyGetTopologyHints")))
def test_memory_manager_hints(release, case):
    """TestStaticPolicyGetTopologyHints: the Static policy on the case's machine state, its hints for the
    pod's first container."""
    why = _skip_memory_case(case)
    if why:
        pytest.skip(why)
    where = f"pkg/kubelet/cm/memorymanager/policy_static_test.go TestStaticPolicyGetTopologyHints: {case['description']}"
    req = _memory_request(case["pod"])
    if not _guaranteed(case["pod"]) or not req:
        assert case["expectedTopologyHints"] is None, where
        return
    got = MemoryPolicy.from_case({"machine_state": case["machineState"]}).hints(req)
    assert {r: _sorted(h) for r, h in got.items()} == _mem_hints(case["expectedTopologyHints"]), where


@pytest.mark.parametrize("release, case", list(_cases("memorymanager.TestStaticPolicyGetPodTopologyHints")))
def test_memory_manager_pod_hints(release, case):
    """TestStaticPolicyGetPodTopologyHints: the Static policy's hints for the whole pod (scope pod)."""
    why = _skip_memory_case(case)
    if why:
        pytest.skip(why)
    where = f"pkg/kubelet/cm/memorymanager/policy_static_test.go TestStaticPolicyGetPodTopologyHints: {case['description']}"
    req = _memory_request(case["pod"], whole_pod=True)
    if not _guaranteed(case["pod"]) or not req:
        assert case["expectedTopologyHints"] is None, where
        return
    got = MemoryPolicy.from_case({"machine_state": case["machineState"]}).hints(req)
    assert {r: _sorted(h) for r, h in got.items()} == _mem_hints(case["expectedTopologyHints"]), where


@pytest.mark.parametrize("release, case", list(_cases("memorymanager.TestStaticPolicyAllocate")))
def test_memory_manager_allocate(release, case):
    """TestStaticPolicyAllocate: the fake topology manager's hint (none: no NUMA preference, not preferred),
    the Static policy's Allocate for the pod's first container: kubelet's error, or the NUMA nodes of its
    blocks and the machine state after."""
    why = _skip_memory_case(case)
    if why:
        pytest.skip(why)
    where = f"pkg/kubelet/cm/memorymanager/policy_static_test.go TestStaticPolicyAllocate: {case['description']}"
    req = _memory_request(case["pod"])
    if not _guaranteed(case["pod"]) or not req:
        assert case["expectedError"] is None, where
        return
    th = case["topologyHint"] or {"NUMANodeAffinity": None, "Preferred": False}
    policy = MemoryPolicy.from_case({"machine_state": case["machineState"]})
    try:
        nodes, err = policy.allocate(Hint(th["NUMANodeAffinity"], th["Preferred"]), req), None
    except KubeletError as e:
        nodes, err = None, e.message
    assert err == case["expectedError"], where
    if err is not None:
        return
    pod, ctr = case["pod"]["metadata"]["uid"], case["pod"]["spec"]["containers"][0]["name"]
    blocks = case["expectedAssignments"][pod][ctr]
    assert {b["type"]: sorted(b["numaAffinity"]) for b in blocks} == dict.fromkeys(req, sorted(nodes or [])), where
    want = MemoryPolicy.from_case({"machine_state": case["expectedMachineState"]}).machine
    assert {n: (m.assignments, sorted(m.cells), m.free, m.reserved) for n, m in policy.machine.items()} == \
        {n: (m.assignments, sorted(m.cells), m.free, m.reserved) for n, m in want.items()}, where


def test_dumped_tables_are_there():
    for release in RELEASES:
        data = _load(release)
        assert data["kubernetes"].startswith(f"v{release}.")
        assert len(data["merge_cases"]) >= 100
        assert data.get("topologymanager.TestCalculateAvgDistanceFor") and data.get("topologymanager.TestClosest")
        assert data.get("topologymanager.TestCompareHintsNarrowest")
        assert len(data["cpu_hint_cases"]) >= 10 and len(data["device_hint_cases"]) >= 20
        assert len(data["memorymanager.TestStaticPolicyGetTopologyHints"]) >= 5
        assert len(data["memorymanager.TestStaticPolicyAllocate"]) >= 10
        assert data.get("memorymanager.TestStaticPolicyGetPodTopologyHints")
        for name in ("TestGetPodTopologyHintsWithPolicyOptions", "TestStaticPolicyAddWithResvList", "TestStaticPolicyStart",
                     "TestStaticPolicyStartWithResvList", "TestValidateStaticPolicyOptions",
                     "TestPolicyOptionsCompatibility", "TestStaticPolicyAddWithUncoreAlignment",
                     "TestTopologyAwareAllocateCPUs"):
            assert data.get(f"cpumanager.{name}"), name
    # a test 1.35 has not
    assert _load("1.37").get("cpumanager.TestPolicyWithAlignBySocketAndDistributeCPUsAcrossNUMAEnabled")
