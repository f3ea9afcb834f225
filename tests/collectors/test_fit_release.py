"""The node's kubelet release (issue 36): read from the Node object (status.nodeInfo.kubeletVersion) where the API
is asked, never by running anything on the node; the predictor, the "what fits" pane and EXCLUSIVE_FRAGMENTED
follow it, and say which release was assumed, and why, where it is not known."""
from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.fit.kubelet import Kubelet
from pinscope.collectors.fit.predict import case_from_snapshot, predict
from pinscope.collectors.kube import ApiNode, ApiWindow, kubelet_version_of
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode


@pytest.mark.parametrize("given, kept", [
    ("v1.37.2", "v1.37.2"), ("v1.35.4+k3s1", "v1.35.4+k3s1"), ("v1.36.3-eks-a1b2c3", "v1.36.3-eks-a1b2c3"),
    ("1.36", "1.36"), ("", None), ("kubelet", None), ("v1.37.2\x1b[2J", None), ("v1." + "9" * 80, None),
    (137, None), (None, None)])
def test_the_version_is_taken_only_when_shaped_like_one(given, kept):
    assert kubelet_version_of({"status": {"nodeInfo": {"kubeletVersion": given}}}) == kept


@pytest.mark.parametrize("doc", [None, [], {"status": "x"}, {"status": {"nodeInfo": []}}, {"status": {}}])
def test_a_node_object_of_another_shape_says_no_version(doc):
    assert kubelet_version_of(doc) is None


@pytest.fixture(scope="module")
def frag(tmp_path_factory):
    """EXCLUSIVE_FRAGMENTED's node (tests/collectors/test_fit_finding.py): 8 CPUs free over two NUMA nodes,
    single-numa-node, the largest pinned request 8."""
    pods = [PodSpec("a", containers=[CtrSpec("app", cpus="1-3,17-19")]),
            PodSpec("b", containers=[CtrSpec("app", cpus="8-10,24-26")]),
            PodSpec("big", containers=[CtrSpec("app", cpus="4-5,20-21,11-12,27-28")])]
    spec = NodeSpec(hostname="frag", sockets=2, cores=8, threads=2, topology_policy="single-numa-node",
                    reserved="0,16", pods=pods)
    sim = SimNode(spec, tmp_path_factory.mktemp("frag") / "root").write()
    return asyncio.run(snapshot("local", Options(root=str(sim.root)), samples=1, interval=1.0, timeout=60))


def test_the_predictor_follows_the_release_it_is_given(frag):
    snap = frag.snapshot
    for version, release in (("v1.35.4", "1.35"), ("v1.36.1", "1.35"), ("v1.37.2", "1.37")):
        ans = predict(snap, 4, version)
        assert (ans.kubelet_version, ans.release) == (version, release)
        assert not any("release" in a for a in ans.assumed), ans.assumed
        case, _, _ = case_from_snapshot(snap, [4])
        d = Kubelet(case, release).admit([4])
        assert ans.cpus == sorted(d.sets[0]) and ans.error == d.error
        assert ans.as_json()["kubelet_version"] == version


def test_an_unknown_release_is_assumed_and_why_said(frag):
    ans = predict(frag.snapshot, 4, None, unknown_why="no Kubernetes API asked")
    assert ans.release == "1.37" and ans.as_json()["kubelet_version"] is None
    assert ans.assumed[0] == "kubelet release unknown: kubelet 1.37's code assumed (no Kubernetes API asked)"


def _api(version: str | None) -> ApiWindow:
    return ApiWindow(ApiNode("frag", time.monotonic(), pods={}, allocatable_cpu="30", kubelet_version=version))


def test_exclusive_fragmented_follows_the_apis_release(frag):
    def evidence(report):
        (f,) = [f for f in report.findings if f.code == "EXCLUSIVE_FRAGMENTED"]
        return f.evidence

    assert "assumed: kubelet release unknown: kubelet 1.37's code assumed" in evidence(frag)
    said = frag.with_api(_api("v1.35.4"))
    ev = evidence(said)
    assert "kubelet v1.35.4's rules (the Kubernetes API: status.nodeInfo.kubeletVersion)" in ev
    assert not any("release unknown" in e for e in ev)
    # the API's answer gone: the release is assumed again, the finding stays
    assert "assumed: kubelet release unknown: kubelet 1.37's code assumed" in evidence(said.with_api(None))
    assert [f.code for f in said.findings].count("EXCLUSIVE_FRAGMENTED") == 1


def test_the_pane_says_the_release(frag):
    from pinscope.tui.screens.fit import fit_text

    text, _ = fit_text(frag.snapshot, None, "", "v1.35.4")
    assert text.plain.splitlines()[0] == "what fits on frag (kubelet v1.35.4)"
    text, _ = fit_text(frag.snapshot, None, "")
    assert text.plain.splitlines()[0] == "what fits on frag (kubelet 1.37, assumed)"
    snap = dataclasses.replace(frag.snapshot)
    assert fit_text(snap, 4, "", "v1.35.4")[1] == frozenset(predict(snap, 4, "v1.35.4").cpus or ())
