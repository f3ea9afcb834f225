"""`pinscope fit` follows the node's kubelet release as its Node object says it (status.nodeInfo.kubeletVersion),
through the stand-in API server (tests/kube_standin.py) with `--kube --via api`: `--json`'s kubelet_version is
the API's, nothing is assumed of it; where the API does not say it (no API asked, a Node without it, an API that
does not answer) the release is assumed, and why is said.
Nothing is run on the node for it (the debug pod runs the probe only, as for every read). The API's pods of the
node (which free a deleted pod's checkpoint CPUs) are taken only for a name the API has a Node of."""
from __future__ import annotations

import json
import shutil

import pytest

import kube_standin
from helpers import need, run_cli
from kube_standin import StandIn
from nodes import dual_socket_intel
from pinscope.collectors.sim.node import SimNode

NODE = "xeon-2s"


@pytest.fixture
def api(tmp_path):
    ok, why = kube_standin.available()
    need(ok, why)
    need(shutil.which("openssl") is not None, "the stand-in serves TLS with an openssl certificate")
    sim = SimNode(dual_socket_intel(), tmp_path / "node").write()
    srv = StandIn({NODE: sim.root}).start()
    srv.kc = srv.kubeconfig(tmp_path / "kc")
    yield srv
    srv.stop()


def fit(*args: str) -> dict:
    r = run_cli("fit", "--json", "--cpus", "2", *args, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)


def test_the_release_is_the_apis(api):
    api.kubelet_version[NODE] = "v1.35.4"
    o = fit("--kube", "--via", "api", "--kubeconfig", api.kc)
    assert o["node"] == NODE and o["kubelet_version"] == "v1.35.4"
    assert not any("release" in a for a in o["assumed"]), o["assumed"]
    assert ("get", "nodes") in api.used
    r = run_cli("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", api.kc, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["kubernetes"]["kubelet_version"] == "v1.35.4"


def test_an_api_that_does_not_answer_is_said(api, tmp_path):
    """--kube --via ssh with the API down meanwhile: the release is not known, and why (never raised)."""
    from pinscope.collectors.kube import node_kubelet_version

    assert node_kubelet_version(NODE, kubeconfig=api.kc) == ("v1.37.2", None)
    api.stop()
    version, why = node_kubelet_version(NODE, kubeconfig=api.kc, timeout=3)
    assert version is None and why.startswith("Kubernetes API did not answer get nodes"), why


def test_a_node_that_says_no_release(api):
    api.kubelet_version[NODE] = None
    o = fit(f"node/{NODE}", "--kubeconfig", api.kc)
    (said,) = [a for a in o["assumed"] if "release" in a]
    assert said.endswith(f"(Kubernetes API: nodes/{NODE} says no kubelet release (status.nodeInfo.kubeletVersion))")


def test_without_the_api_the_release_is_assumed(tmp_path):
    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    o = fit("--root", str(root), "local")
    assert o["kubelet_version"] is None
    assert ("kubelet release unknown: kubelet 1.37's code assumed (no Kubernetes API asked: --kube or node/NAME "
            "reads it from the Node object)") in o["assumed"]


def test_the_pods_of_a_name_the_api_has_no_node_of_free_nothing(api, tmp_path):
    """`fit --kube` for `local`, whose kubelet's name (pinscope-node, in the real tree) the API has no Node of:
    the API's pod list for that name is empty, and read as "every pod of the checkpoint is deleted" it predicted
    their CPUs free (collectors/fit/active.py). The list is not taken for a name the API knows no Node of: the
    tree's Guaranteed pod keeps CPU 1, and kubelet's refusal of a 1-CPU pod stands."""
    from pathlib import Path

    root = tmp_path / "tree"
    shutil.copytree(Path(__file__).resolve().parent.parent / "trees" / "real-kubelet-v1.37.2", root, symlinks=True)
    r = run_cli("fit", "--json", "--cpus", "1", "--root", str(root), "local", "--kube", "--via", "api",
                "--selector", "pinscope-test=no-such-node", "--kubeconfig", api.kc, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    o = json.loads(r.stdout)
    assert o["error"] is not None and o["error"]["kind"] == "TopologyAffinityError", o
    assert not any(" is gone " in a for a in o["assumed"]), o["assumed"]
    assert r.returncode == 1
