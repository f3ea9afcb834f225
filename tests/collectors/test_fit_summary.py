"""What fits per NUMA node (collectors/fit/capacity.py), cached per node state (summary.py), and the
exporter's series of it, on the demo's fragmented node read by the real collector: db-numa-32 (2 x 8 cores,
HT, siblings 16 apart, single-numa-node, full-pcpus-only, reserved 0,16; pg-primary-0 on 1-4,17-20,
pg-replica-1 on 8-12,24-28): free NUMA 0 = 5-7,21-23, NUMA 1 = 13-15,29-31, 6 CPUs (3 whole cores) each."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import read_sim

from pinscope.collectors.exporter.metrics import node_samples
from pinscope.collectors.fit import summary
from pinscope.collectors.fit.capacity import largest_alone
from pinscope.collectors.fit.kubelet import Kubelet, cpuset_parse
from pinscope.collectors.fit.predict import case_from_snapshot, predict
from pinscope.collectors.sim.demo import demo_specs


def _spec(name: str):
    (spec,) = [s for s in demo_specs() if s.hostname == name]
    return spec


@pytest.fixture(scope="module")
def fragmented(tmp_path_factory):
    return read_sim(_spec("db-numa-32"), tmp_path_factory.mktemp("frag"), samples=1)


def test_largest_per_numa_node_is_what_fits_there_not_where_the_next_one_goes(fragmented):
    """Both NUMA nodes hold 6 free CPUs, and kubelet admits a container of 6 on either (alone). Asked
    "where would the next container go" per NUMA node instead, NUMA 1 read 0 (kubelet fills NUMA 0 first):
    a NUMA node with 3 free whole cores said to hold nothing (the code before this fix)."""
    ans = predict(fragmented.snapshot, 6)
    per = {p["numa_node"]: p for p in ans.per_numa}
    assert cpuset_parse(per[0]["free_cpus"]) == {5, 6, 7, 21, 22, 23}
    assert cpuset_parse(per[1]["free_cpus"]) == {13, 14, 15, 29, 30, 31}
    for node in (0, 1):
        assert per[node]["free_whole_cores"] == 3
        assert per[node]["largest_fit"] == {"cpus": 6, "whole_cores": 6}, per[node]
    assert ans.error is None and set(ans.cpus) <= {5, 6, 7, 21, 22, 23}  # the next one: NUMA 0 (by id)
    assert predict(fragmented.snapshot, 10).error["kind"] == "TopologyAffinityError"  # 12 free, none holds 10


def test_largest_alone_leaves_kubelets_pool_as_it_was(fragmented):
    case, _, problems = case_from_snapshot(fragmented.snapshot, [1])
    assert not problems
    k = Kubelet(case)
    before = set(k.default)
    numa1 = {c for c, t in k.topo.details.info.items() if t[0] == 1}
    assert largest_alone(k, numa1, True) == 6
    assert k.default == before
    assert k.admit([2]).sets[0] <= {5, 6, 7, 21, 22, 23}  # the next container still goes where kubelet puts it


def test_computed_once_per_node_state(fragmented):
    """The pane and the exporter ask every tick; the answer is computed again only when the node's files
    (here: the checkpoint, a pod gone) changed."""
    snap = fragmented.snapshot
    summary._CACHE.clear()
    start = summary.computed
    a = summary.node_fit(snap)
    for _ in range(5):
        assert summary.node_fit(snap) is a
        summary.request_fit(snap, 4)
    assert summary.computed - start == 2  # the summary, and the request of 4
    st = snap.state
    gone = dataclasses.replace(st, entries={u: c for u, c in st.entries.items() if not any(8 in s for s in c.values())},
                               default_cpuset=st.default_cpuset | frozenset({8, 9, 10, 11, 12, 24, 25, 26, 27, 28}))
    b = summary.node_fit(dataclasses.replace(snap, state=gone))
    assert summary.computed - start == 3 and b is not a
    assert {p["numa_node"]: p["largest_fit"]["cpus"] for p in b.per_numa} == {0: 6, 1: 16}


def test_exporter_serves_the_largest_fit_per_numa_node(fragmented):
    got = {(s.labels["numa_node"], s.labels["alignment"]): s.value
           for s in node_samples("db-numa-32", fragmented)["pinscope_fit_largest_exclusive_cpus"]}
    assert got == {("0", "cpus"): 6, ("0", "whole_cores"): 6, ("1", "cpus"): 6, ("1", "whole_cores"): 6}


def test_exporter_serves_nothing_where_nothing_is_predicted(tmp_path):
    plain = read_sim(_spec("batch-16"), tmp_path / "b", samples=1)  # cpuManagerPolicy none
    assert node_samples("batch-16", plain)["pinscope_fit_largest_exclusive_cpus"] == []


def test_the_reason_says_what_kubelets_words_mean():
    assert "whole number of physical cores" in summary.reason(
        {"kind": "SMTAlignmentError", "message": "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"})
    assert "siblings" in summary.reason({"kind": "SMTAlignmentError", "message": "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 2, requested CPUs = 4, CPUs per core = 2"})
    assert "NUMA" in summary.reason({"kind": "TopologyAffinityError", "message": "Resources cannot be allocated with Topology locality"})
    assert "not enough free CPUs" in summary.reason({"kind": "UnexpectedAdmissionError", "message": "Allocate failed due to not enough cpus available to satisfy request: requested=9, available=4, which is unexpected"})
    assert summary.reason(None) == ""
    assert summary.reason({"kind": "Whatever"})  # a kind it does not know: still a sentence, never a crash


def test_a_refusal_for_want_of_cpus_is_not_called_a_placement_problem(fragmented):
    """This machine's real kubelet (single-numa-node, 1 CPU free) refuses 2 CPUs with TopologyAffinityError;
    the reason said "the free CPUs are there, but not on few enough NUMA nodes": they were not there."""
    err = {"kind": "TopologyAffinityError", "message": "Resources cannot be allocated with Topology locality"}
    assert "only 1 CPU free for exclusive use" in summary.reason(err, 2, 1)
    assert "NUMA placement" in summary.reason(err, 10, 12)  # 12 free, none holds 10: placement it is
    ans = predict(fragmented.snapshot, 13)
    assert ans.error["kind"] == "TopologyAffinityError" and summary.free_count(ans) == 12
    assert "only 12 CPUs free" in summary.reason(ans.error, 13, summary.free_count(ans))


def test_no_kubelet_is_said_as_such(tmp_path):
    """This machine with its kubelet stopped: 'kubelet's configuration could not be read' read as if a file
    were broken; no kubelet process and no configuration found is what it is."""
    from pinscope.collectors.sim.node import NodeSpec

    spec = NodeSpec(hostname="stopped", cores=2, kubelet_running=False, config_path="/etc/elsewhere/kubelet.yaml")
    ans = predict(read_sim(spec, tmp_path / "s", samples=1).snapshot, 1)
    assert not ans.readable and ans.note.startswith("no kubelet process was found"), ans.note
