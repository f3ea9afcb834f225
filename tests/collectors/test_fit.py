"""`pinscope fit` and collectors/fit/predict.py on real --root trees (the demo's simulated nodes,
read by the real collector): the JSON shape of issue 36, the exit codes, what is assumed and
what cannot be known, and the non-root case (an unreadable checkpoint is said, not guessed)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json

import pytest

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.fit.kubelet import cpuset_parse, decide
from pinscope.collectors.fit.predict import case_from_snapshot, how_many_fit, predict, release_of
from pinscope.collectors.sim.demo import DemoCluster
from pinscope.cli import main

@pytest.fixture(scope="module")
def demo():
    d = DemoCluster()
    try:
        yield d
    finally:
        d.close()


def _snap(root):
    return asyncio.run(snapshot("local", Options(root=str(root)), samples=1, interval=1.0, timeout=60)).snapshot


def _run(argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue()


def test_release_assumed_when_unknown():
    assert release_of(None)[0] == "1.37" and "assumed" in release_of(None)[1]
    assert release_of("v1.35.4") == ("1.35", None)
    assert release_of("v1.36.1") == ("1.35", None)  # 1.36 runs 1.35's distribute-across-NUMA code
    assert release_of("v1.37.0") == ("1.37", None)
    rel, why = release_of("v1.38.0-alpha.1")
    assert rel == "1.37" and "1.38" in why


def test_fit_json_on_the_demo(demo):
    rc, out = _run(["fit", "demo", "--cpus", "4", "--json"])
    assert rc == 0
    objs = json.loads(out)
    assert len(objs) == len(demo.sims)
    for o in objs:
        assert {"node", "kubelet_version", "assumed", "cpus", "error", "per_numa"} <= set(o)
        assert any("assumed" in s for s in o["assumed"])  # the demo's release is not known
    static = [o for o in objs if o["cpus"] is not None]
    assert static, "a static-policy node of the demo"
    for o in static:
        assert len(o["cpus"]) == 4 and o["error"] is None
        free = set()
        for p in o["per_numa"]:
            free |= cpuset_parse(p["free_cpus"])
            assert {"numa_node", "free_cpus", "largest_fit"} <= set(p)
        assert set(o["cpus"]) <= free  # kubelet gives free, unreserved CPUs only
        assert o["how_many_fit"] >= 1
    none = [o for o in objs if o["cpus"] is None]
    assert all("shared pool" in o["note"] for o in none)
    # a script tells policy none (read, nothing pinned) from "read too little to say" by `readable`
    assert none and all(o["readable"] is True for o in none) and all(o["readable"] is True for o in static)


def test_prediction_is_the_ports_decision(demo):
    """predict() hands the node's files to the port unchanged: the same CPUs as deciding the case."""
    for sim in demo.sims:
        snap = _snap(sim.root)
        if snap.kubelet.cpu_manager_policy != "static":
            continue
        ans = predict(snap, 2)
        case, _assumed, problems = case_from_snapshot(snap, [2])
        assert not problems
        d = decide(case, ans.release)
        assert d.error == ans.error
        assert (sorted(cpuset_parse(d.cpus[0])) if d.cpus else None) == ans.cpus


def test_too_large_is_rejected_exit_1(demo):
    rc, out = _run(["fit", "demo", "--cpus", "4000", "--json"])
    assert rc == 1
    errs = [o["error"] for o in json.loads(out) if o["error"]]
    # the topology manager refuses first where its policy needs alignment; else the allocation fails
    assert errs and {e["kind"] for e in errs} <= {"UnexpectedAdmissionError", "TopologyAffinityError"}
    assert all("not enough cpus available to satisfy request: requested=4000" in e["message"]
               for e in errs if e["kind"] == "UnexpectedAdmissionError")


def test_how_many_fit_leaves_the_state_alone(demo):
    from pinscope.collectors.fit.kubelet import Kubelet

    sim = next(s for s in demo.sims if _snap(s.root).kubelet.cpu_manager_policy == "static")
    case, _, _ = case_from_snapshot(_snap(sim.root), [3])
    k = Kubelet(case)
    before = set(k.default)
    n = how_many_fit(k, 3)
    assert k.default == before
    free = len(before - k.policy.reserved)
    assert n == free // 3 or n < free // 3  # packing may strand CPUs, never invent them


def test_unreadable_checkpoint_is_said(demo):
    """Non-root: cpu_manager_state (0600, root's) cannot be read; fit says so and exits 3."""
    sim = next(s for s in demo.sims if _snap(s.root).kubelet.cpu_manager_policy == "static")
    snap = dataclasses.replace(_snap(sim.root), state=None, state_status="unreadable")
    ans = predict(snap, 4)
    assert not ans.readable and ans.cpus is None and ans.error is None
    assert "unreadable" in ans.note and "root" in ans.note
    assert ans.as_json()["readable"] is False  # in --json: not the same as policy none's nulls



def test_uncore_cache_as_cadvisor_reports_it(demo):
    """An L3 shared by exactly one NUMA node's threads is a node cache for cadvisor: kubelet's uncore
    cache falls back to the socket (-1 in the case). CCX-sized L3s (several per NUMA node) are kept."""
    seen = {}
    for sim in demo.sims:
        snap = _snap(sim.root)
        case, _, _ = case_from_snapshot(snap, [1])
        per_node = {}
        for c in snap.topology.cpus:
            if c.id in snap.topology.online:
                per_node.setdefault(c.numa_node, set()).add(c.l3)
        seen[sim.spec.hostname] = ({r[4] for r in case["cpus"]}, per_node)
    for host, (uncores, per_node) in seen.items():
        if all(len(l3s) == 1 for l3s in per_node.values()):  # one L3 per NUMA node
            assert uncores == {-1}, host
        else:
            assert -1 not in uncores, host


def test_fit_text_counts_in_english():
    """One free whole core and a largest fit of one CPU read "1 whole core", "1 CPU" (not "1 whole cores",
    "1 CPUs"); the JSON's keys and numbers are unchanged."""
    from pinscope.cli.fit import render
    from pinscope.collectors.fit.predict import FitAnswer

    numa = {"numa_node": 0, "free_count": 2, "free_cpus": "3,7", "free_whole_cores": 1,
            "largest_fit": {"cpus": 1, "whole_cores": 0}}
    ans = FitAnswer(node="n1", kubelet_version="1.37", release="1.37", cpus=[3], per_numa=[numa])
    text = render(ans, 1)
    assert "2 (3,7), 1 whole core; largest container kubelet could give from it alone: 1 CPU, 0 as whole cores" in text, text
    assert "1 whole cores" not in text and "1 CPUs" not in text
    assert ans.as_json()["per_numa"] == [numa]


def test_unreadable_checkpoint_names_sudo(demo):
    """fit (and the pane) take --sudo, as check does: a checkpoint unreadable for want of root says so."""
    snap = _snap(demo.sims[0].root)
    ans = predict(dataclasses.replace(snap, state=None, state_status="unreadable"), 2)
    assert not ans.readable and "run with --sudo, or as root" in ans.note, ans.note
