"""Kubelet's own test tables, carried over as data (tests/kubeletsim/tables/v1.N.json, extracted
by tests/kubeletsim/tables.py from k8s.io/kubernetes' pkg/kubelet/cm/cpumanager/cpu_assignment_test.go
and policy_test.go at each pinned release): every takeByTopology case, run through pinscope's port
exactly as kubelet's test runs it, must give kubelet's expected CPUs or error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinscope.collectors.fit.kubelet import (
    KubeletError,
    StaticPolicy,
    TopologyManager,
    parse_cpu_options,
    take_distributed,
    take_packed,
    topology_of,
)

TABLES = Path(__file__).resolve().parents[1] / "kubeletsim" / "tables"


def _cases():
    for path in sorted(TABLES.glob("v1.*.json")):
        data = json.loads(path.read_text())
        release = path.stem[1:]
        for i, c in enumerate(data["cases"]):
            yield pytest.param(release, data["topologies"][c["topology"]], c, id=f"{release}-{i}-{c['description'][:50]}")


@pytest.mark.parametrize("release, topo, case", list(_cases()))
def test_kubelet_table_case(release, topo, case):
    t = topology_of(topo["details"], topo["NumCPUs"], topo["NumSockets"], topo["NumCores"], topo["NumUncoreCache"],
                    topo["NumNUMANodes"])
    opts = case["options"]
    spread = opts.get("distribute-cpus-across-cores") == "true"
    try:
        if case["kind"] == "distributed":  # as TestTakeByTopologyNUMADistributed calls it: packed order, no align
            got = take_distributed(t, set(case["available"]), case["num_cpus"], case["cpu_group_size"], False, False, release)
        else:
            got = take_packed(t, set(case["available"]), case["num_cpus"], spread,
                              opts.get("prefer-align-cpus-by-uncorecache") == "true")
        err = None
    except KubeletError as e:
        got, err = set(), e.message
    where = f"{case['source']}: {case['description']}"
    if case["error"]:
        assert err == case["error"], where
    else:
        assert err is None, where
    assert sorted(got) == case["result"], where


def test_tables_are_there():
    for release in ("1.35", "1.37"):
        data = json.loads((TABLES / f"v{release}.json").read_text())
        assert len(data["cases"]) >= 60 and not data["skipped"]


def _policy_cases():
    for path in sorted(TABLES.glob("v1.*.json")):
        data = json.loads(path.read_text())
        release = path.stem[1:]
        for i, c in enumerate(data["policy_cases"]):
            yield pytest.param(release, data["topologies"][c["topology"]], c, id=f"{release}-p{i}-{c['description'][:50]}")


@pytest.mark.parametrize("release, topo, case", list(_policy_cases()))
def test_kubelet_static_policy_case(release, topo, case):
    """TestStaticPolicyAdd's cases: NewStaticPolicy (reserved given or picked), the state as written
    (kubelet's test does not Start the policy), the fake topology manager's hint, then Allocate."""
    t = topology_of(topo["details"], topo["NumCPUs"], topo["NumSockets"], topo["NumCores"], topo["NumUncoreCache"],
                    topo["NumNUMANodes"])
    tm = TopologyManager("none", "container", sorted(t.details.idx[0]))
    policy = StaticPolicy(t, case["num_reserved"], set(case["reserved"]), tm, parse_cpu_options(case["options"]), release)
    default = set(case["default"])
    mask = None
    if case["hint"]:
        mask = sum(1 << n for n in case["hint"])
    try:
        policy.smt_check(default, case["num_cpus"])
        got, err = policy.allocate_cpus(default, case["num_cpus"], mask, set()), None
    except KubeletError as e:
        got, err = set(), e.message
    where = f"{case['source']}: {case['description']} (options {case['options']})"
    assert err == (case["error"] or {}).get("message"), where
    if case["alloc"]:
        assert sorted(got) == case["result"], where
        assert not got & default, where


def test_policy_tables_are_there():
    for release in ("1.35", "1.37"):
        data = json.loads((TABLES / f"v{release}.json").read_text())
        assert len(data["policy_cases"]) >= 20
