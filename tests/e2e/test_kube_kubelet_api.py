"""What kubelet said, through the API (issue 26): pods kubelet rejected at admission, a fractional Allocatable,
kubelet's own metrics through the API server's node proxy. Against the local stand-in API server
(tests/kube_standin.py), which the real `kubectl get --raw` reads first; then `check`/`snapshot --json`
with `--kube --via api` (the node read through a debug pod, as on a cluster) and the TUI.

Needs root (node/NAME's exec runs in a chroot), busybox, openssl and kubectl: skipped on a laptop without
them, FAILS in CI. Expected values are written by hand.
"""
from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess

import pytest

import kube_standin
from helpers import need, run_cli
from kube_standin import StandIn, kubelet_metrics_text
from nodes import dual_socket_intel
from pinscope.collectors.sim.node import SimNode

NODE = "xeon-2s"  # dual_socket_intel: 48 CPUs, static policy, single-numa-node
MSG = "Resources cannot be allocated with Topology locality"  # k/k topologymanager TopologyAffinityError.Error()
NOT_ALLOWED = "kubelet metrics: not allowed (get nodes/proxy)"


@pytest.fixture
def sim(tmp_path):
    ok, why = kube_standin.available()
    need(ok, why)
    need(shutil.which("openssl") is not None, "the stand-in serves TLS with an openssl certificate")
    return SimNode(dual_socket_intel(), tmp_path / "node").write()


@pytest.fixture
def api(sim, tmp_path):
    srv = StandIn({NODE: sim.root}).start()
    srv.kc = srv.kubeconfig(tmp_path / "kc")
    yield srv
    srv.stop()


def kubectl(kc: str, *args: str) -> subprocess.CompletedProcess:
    need(shutil.which("kubectl") is not None, "kubectl is not installed (Debian: kubernetes-client)")
    return subprocess.run(["kubectl", "--kubeconfig", kc, *args], capture_output=True, text=True, timeout=60)


def troubled(srv: StandIn, message: str = MSG) -> None:
    """A pod kubelet refused with TopologyAffinityError, and Allocatable cpu 47500m."""
    srv.allocatable[NODE] = "47500m"
    srv.call(lambda: srv.reject_pod("matcher-x", NODE, "TopologyAffinityError", message, "trading"))


def report(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, dict | None]:
    r = run_cli(*args, timeout=timeout)
    assert "Traceback" not in r.stderr, r.stderr
    return r, (json.loads(r.stdout) if "--json" in args and r.stdout.strip() else None)  # one node: its object


def codes(o: dict) -> dict:
    return {f["code"]: f for f in o["findings"]}


# ---------------------------------------------------------------------------------------------- the stand-in
def test_kubectl_reads_kubelets_metrics_through_the_stand_ins_node_proxy(api, tmp_path):
    """The real client: `kubectl get --raw /api/v1/nodes/NAME/proxy/metrics` returns the very text the stand-in
    serves; a user without get nodes/proxy gets the API server's 403, as kubectl says it."""
    text = kubelet_metrics_text(pinning_requests=30, pinning_errors=2, admission_requests=31, admission_errors=1,
                                exclusive_cpus=8)
    api.kubelet_metrics[NODE] = [text]
    r = kubectl(api.kc, "get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics")
    assert r.returncode == 0, r.stderr
    assert r.stdout == text
    assert "# TYPE kubelet_cpu_manager_pinning_errors_total counter\nkubelet_cpu_manager_pinning_errors_total 2\n" in r.stdout
    assert ("get", "nodes/proxy") in api.used

    api.users["reader"] = ("reader", [(("get", "list"), ("nodes", "pods"), None)])
    kc = api.kubeconfig(tmp_path / "kc-reader", token="reader")
    r = kubectl(kc, "get", "--raw", f"/api/v1/nodes/{NODE}/proxy/metrics")
    assert r.returncode == 1 and "Error from server (Forbidden)" in r.stderr, r.stderr
    r = kubectl(api.kc, "get", "node", NODE, "-o", "jsonpath={.status.allocatable.cpu}")
    assert r.returncode == 0 and r.stdout == "8", r.stderr


# ---------------------------------------------------------------------------------------------- check, snapshot
def test_check_kube_names_the_rejected_pod_and_the_fractional_allocatable(api):
    troubled(api)
    r, _ = report("check", "--kube", "--via", "api", "--kubeconfig", api.kc)
    assert r.returncode == 1, r.stdout + r.stderr  # warnings
    lines = r.stdout.splitlines()
    assert (f"{NODE}: warning  ADMISSION_REJECTED       trading/matcher-x: kubelet rejected the pod at admission: "
            f"TopologyAffinityError (Pod was rejected: {MSG})  [trading/matcher-x]") in lines
    assert (f"{NODE}: warning  ALLOCATABLE_FRACTIONAL   Allocatable cpu 47500m (47.5 CPUs) under the static CPU "
            "manager policy") in lines
    assert not any("KUBELET_PINNING_ERRORS" in ln for ln in lines)  # one round: no window, no claim

    r, o = report("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", api.kc)
    assert r.returncode == 0, r.stderr
    f = codes(o)["ADMISSION_REJECTED"]
    assert f["evidence"] == ["Kubernetes API pods/trading/matcher-x: status.phase Failed, status.reason TopologyAffinityError",
                             f"kubelet's message: Pod was rejected: {MSG}"]
    k = o["kubernetes"]
    assert (k["allocatable_cpu"], k["window_s"], k["metrics_error"]) == ("47500m", None, None)
    assert k["rejected_pods"][0]["reason"] == "TopologyAffinityError"
    assert k["kubelet_metrics"] == {"cpu_manager_pinning_requests_total": 12, "cpu_manager_pinning_errors_total": 0,
                                    "topology_manager_admission_requests_total": 12,
                                    "topology_manager_admission_errors_total": 0,
                                    "cpu_manager_exclusive_cpu_allocation_count": 4}
    assert [e for e in o["errors"] if e["source"] == "kubernetes"] == []


def test_allocatable_fractional_only_under_the_static_policy(tmp_path):
    """The same Allocatable on a node whose files say policy none, and on one whose policy cannot be known
    (kubelet's config not YAML, no checkpoint of its own): no ALLOCATABLE_FRACTIONAL."""
    import dataclasses

    ok, why = kube_standin.available()
    need(ok, why)
    spec = dual_socket_intel()
    none = SimNode(dataclasses.replace(spec, hostname="pol-none", policy="none", pods=[]), tmp_path / "n").write()
    unknown = SimNode(dataclasses.replace(spec, hostname="pol-unknown", config_text="::: {{", state_text="x"),
                      tmp_path / "u").write()
    srv = StandIn({"pol-none": none.root, "pol-unknown": unknown.root}).start()
    try:
        srv.allocatable.update({"pol-none": "47500m", "pol-unknown": "47500m"})
        kc = srv.kubeconfig(tmp_path / "kc")
        r, objs = report("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", kc)
        assert r.returncode == 0, r.stderr
        by = {o["node"]: o for o in objs}
        assert by["pol-none"]["kubelet"]["cpu_manager_policy"] == "none"
        assert by["pol-unknown"]["kubelet"]["cpu_manager_policy"] is None
        for o in objs:
            assert o["kubernetes"]["allocatable_cpu"] == "47500m"
            assert "ALLOCATABLE_FRACTIONAL" not in codes(o), o["node"]
    finally:
        srv.stop()


@pytest.mark.parametrize("grows", [True, False], ids=["grew", "flat"])
def test_pinning_errors_only_when_the_counter_grew(api, grows):
    """`--samples 2`: kubelet's metrics read at both ends of the window; the finding only when an error counter
    grew between the two reads, with both values."""
    api.kubelet_metrics[NODE] = [kubelet_metrics_text(12, 0, 12, 0), kubelet_metrics_text(13, 1 if grows else 0, 13, 0)]
    r, o = report("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", api.kc, "--samples", "2",
                     "--interval", "0.5")
    assert r.returncode == 0, r.stderr
    assert api.metrics_served[NODE] == 2
    assert o["kubernetes"]["window_s"] > 0
    f = codes(o).get("KUBELET_PINNING_ERRORS")
    if not grows:
        assert f is None
        return
    assert f["severity"] == "warning"
    assert f["message"].endswith("kubelet_cpu_manager_pinning_errors_total +1")
    assert f["evidence"][1:] == ["kubelet_cpu_manager_pinning_errors_total: 0 -> 1; kubelet_cpu_manager_pinning_requests_total: 12 -> 13",
                                 "kubelet_topology_manager_admission_errors_total: 0 -> 0; kubelet_topology_manager_admission_requests_total: 12 -> 13"]


# ---------------------------------------------------------------------------------------------- bad answers
def test_hostile_messages_and_garbage_answers_are_said_never_a_traceback(api):
    """kubelet's message with escape sequences is escaped on the terminal and kept exact in JSON; a pod item
    whose status is not an object, and a /metrics answer that is not Prometheus text, are one stated line each."""
    hostile = "\x1b]0;owned\x07\x1b[2J gone\u202e"
    troubled(api, hostile)
    api.call(lambda: api.pods.__setitem__(("default", "bad"), {
        "metadata": {"name": "bad", "namespace": "default", "uid": "b-1"}, "spec": {"nodeName": NODE}, "status": "Failed"}))
    api.kubelet_metrics[NODE] = [b"<html>\x1b[31m502 Bad Gateway\xff</html>\n"]
    r, _ = report("check", "--kube", "--via", "api", "--kubeconfig", api.kc)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\x1b" not in r.stdout + r.stderr and "\u202e" not in r.stdout
    assert "(Pod was rejected: \\033]0;owned\\a\\033[2J gone\\u202e)" in r.stdout
    said = [ln for ln in r.stdout.splitlines() if ": kubernetes: " in ln]
    assert said == [f"{NODE}: kubernetes: kubelet metrics: the answer has none of kubelet's CPU and topology manager series",
                    f"{NODE}: kubernetes: Kubernetes API: list pods: 1 item(s) are not shaped like pods (skipped)"]
    r, o = report("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", api.kc)
    assert codes(o)["ADMISSION_REJECTED"]["evidence"][1] == f"kubelet's message: Pod was rejected: {hostile}"
    assert o["kubernetes"]["kubelet_metrics"] == dict.fromkeys(
        ["cpu_manager_pinning_requests_total", "cpu_manager_pinning_errors_total", "topology_manager_admission_requests_total",
         "topology_manager_admission_errors_total", "cpu_manager_exclusive_cpu_allocation_count"])


def test_a_metrics_answer_longer_than_the_cap_is_cut_and_said(api):
    """Through the real client: at most `cap` bytes are read, the partial last line dropped, the cut said."""
    from pinscope.collectors.kube import api_node

    text = kubelet_metrics_text(20, 3, 21, 1)
    api.kubelet_metrics[NODE] = [text + "# HELP pad [ALPHA] pad\n" + "pad 1\n" * 200_000]
    cap = text.index("# HELP kubelet_topology_manager_admission_errors_total") + 10
    a = api_node(NODE, kubeconfig=api.kc, cap=cap)
    assert (a.metrics.pinning_requests, a.metrics.pinning_errors, a.metrics.admission_errors) == (20, 3, None)
    assert a.metrics.problem == f"the answer is longer than {cap} bytes: read up to there"
    assert a.problems == (f"kubelet metrics: the answer is longer than {cap} bytes: read up to there",)
    full = api_node(NODE, kubeconfig=api.kc)
    assert (full.metrics.admission_errors, full.metrics.problem) == (1, None)


# ---------------------------------------------------------------------------------------------- the TUI
async def test_the_tui_shows_kubelets_metrics_in_the_node_pane_and_the_findings(api, sim):
    """The app with --kube: the findings pane lists the API's findings, the node pane kubelet's counters (what
    grew over the window) and the rejected pod; hostile text escaped on screen."""
    from textual.widgets import DataTable

    from pinscope.collectors.collect import Options
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.collectors.inventory import Target
    from pinscope.tui.app import PinscopeApp

    troubled(api)
    api.kubelet_metrics[NODE] = [kubelet_metrics_text(12, i, 12, 0) for i in range(100)]

    app = PinscopeApp([NodeTarget.of(Target(NODE, "local", root=str(sim.root)), Options())], interval=0.3,
                      kube=(None, api.kc))
    app.fleet.kube_period = 0.3
    async with app.run_test(size=(200, 60)) as pilot:
        v = app.views[NODE]
        for _ in range(600):  # a hang guard: the API's rounds, then a tick that carries them
            await asyncio.sleep(0.1)
            if {f.code for f in v.findings} >= {"ADMISSION_REJECTED", "ALLOCATABLE_FRACTIONAL", "KUBELET_PINNING_ERRORS"}:
                break
        assert {f.code for f in v.findings} >= {"ADMISSION_REJECTED", "ALLOCATABLE_FRACTIONAL", "KUBELET_PINNING_ERRORS"}
        await pilot.press("n")
        await pilot.pause()
        text = str(app.screen.query_one("#node-info").render())
        assert f"kubelet, through the Kubernetes API (node {NODE})" in text
        assert "Allocatable cpu 47500m" in text
        assert "kubelet_cpu_manager_pinning_errors_total" in text and "over " in text
        assert re.search(r"kubelet_cpu_manager_exclusive_cpu_allocation_count +4\n", text)
        assert f"trading/matcher-x: TopologyAffinityError: Pod was rejected: {MSG}" in text
        await pilot.press("escape", "f")
        await pilot.pause()
        table = app.screen.query_one("#findings", DataTable)
        shown = " ".join(str(c) for i in range(table.row_count) for c in table.get_row_at(i))
        for code in ("ADMISSION_REJECTED", "ALLOCATABLE_FRACTIONAL", "KUBELET_PINNING_ERRORS"):
            assert code in shown
        await pilot.press("q")



async def test_the_tui_without_nodes_proxy_says_it_once_and_shows_the_rest(api, sim, tmp_path, notices):
    from pinscope.collectors.collect import Options
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.collectors.inventory import Target
    from pinscope.tui.app import PinscopeApp

    troubled(api)
    api.users["reader"] = ("reader", [(("get", "list"), ("nodes", "pods"), None)])
    kc = api.kubeconfig(tmp_path / "kc-reader", token="reader")

    app = PinscopeApp([NodeTarget.of(Target(NODE, "local", root=str(sim.root)), Options())], interval=0.3,
                      kube=(None, kc))
    app.fleet.kube_period = 0.3
    async with app.run_test(size=(200, 60)) as pilot:
        v = app.views[NODE]
        for _ in range(600):
            await asyncio.sleep(0.1)
            if "ADMISSION_REJECTED" in {f.code for f in v.findings} and api.metrics_served.get(NODE) is None \
                    and len([m for m, p, u in api.requests if "/proxy/" in p]) >= 3:
                break
        assert {"ADMISSION_REJECTED", "ALLOCATABLE_FRACTIONAL"} <= {f.code for f in v.findings}
        await pilot.press("n")
        await pilot.pause()
        text = str(app.screen.query_one("#node-info").render())
        assert text.count(NOT_ALLOWED) == 1
        assert not any("nodes/proxy" in n for n in notices)  # a state on the node pane, not a notice per round
        await pilot.press("q")

