"""The checks on what the Kubernetes API says of a node (findings/api.py), over a simulated node read through
the real probe and API answers written by hand; the PodList and quantity readers (collectors/kube.py).
The stand-in API server and the CLI: tests/e2e/test_kube_kubelet_api.py."""
from pinscope.collectors.findings import evaluate
from pinscope.collectors.kube import ApiNode, ApiWindow, Rejected, _pods, admission_reason, cpu_millis
from pinscope.collectors.parse.kubelet_metrics import KubeletMetrics
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from helpers import read_sim

API_CODES = {"ADMISSION_REJECTED", "ALLOCATABLE_FRACTIONAL", "KUBELET_PINNING_ERRORS"}


def node(tmp_path, **kw):
    d = dict(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4",
             pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5")])])
    d.update(kw)
    return read_sim(NodeSpec(**d), tmp_path, samples=1)


REJ = Rejected("3f1c", "trading", "matcher-x", "TopologyAffinityError",
               "Pod was rejected: Resources cannot be allocated with Topology locality")


def api(t=100.0, cpu="8", rejected=(), metrics=None, **kw) -> ApiNode:
    return ApiNode("t", t, {}, tuple(rejected), None, cpu, None, metrics, **kw)


def found(report, window):
    r = report.with_api(window)
    return {f.code: f for f in r.findings if f.code in API_CODES}, r


def test_no_api_answer_no_api_check(tmp_path):
    r = node(tmp_path)
    assert r.with_api(None) is r
    assert not {f.code for f in r.findings} & API_CODES
    assert [f for f in evaluate(r.snapshot, r.rates) if f.code in API_CODES] == []


def test_admission_rejected_with_kubelets_message(tmp_path):
    fs, r = found(node(tmp_path), ApiWindow(api(rejected=[REJ])))
    f = fs["ADMISSION_REJECTED"]
    assert str(f.severity) == "warning"
    assert f.message == ("trading/matcher-x: kubelet rejected the pod at admission: TopologyAffinityError "
                         "(Pod was rejected: Resources cannot be allocated with Topology locality)")
    assert f.evidence == ("Kubernetes API pods/trading/matcher-x: status.phase Failed, status.reason TopologyAffinityError",
                          "kubelet's message: Pod was rejected: Resources cannot be allocated with Topology locality")
    assert (f.pod_uid, f.namespace, f.pod) == ("3f1c", "trading", "matcher-x")
    # the node's own findings stay, in the registry's order
    assert [x for x in r.findings if x.code not in API_CODES] == evaluate(r.snapshot, r.rates)


def test_a_second_api_answer_replaces_the_first(tmp_path):
    r = node(tmp_path).with_api(ApiWindow(api(rejected=[REJ])))
    again = r.with_api(ApiWindow(api()))
    assert "ADMISSION_REJECTED" not in {f.code for f in again.findings}


def test_allocatable_fractional_under_static_only(tmp_path):
    fs, _ = found(node(tmp_path / "s"), ApiWindow(api(cpu="7500m")))
    f = fs["ALLOCATABLE_FRACTIONAL"]
    assert f.message == "Allocatable cpu 7500m (7.5 CPUs) under the static CPU manager policy"
    assert f.evidence == ("Kubernetes API nodes/t: status.allocatable.cpu 7500m",
                          "/var/lib/kubelet/cpu_manager_state: policyName static")
    for whole in ("8", "7000m", "7"):
        assert "ALLOCATABLE_FRACTIONAL" not in found(node(tmp_path / f"w{whole}"), ApiWindow(api(cpu=whole)))[0]
    none = node(tmp_path / "n", policy="none", pods=[PodSpec("web", "prod", qos="Burstable", containers=[CtrSpec("app")])])
    assert "ALLOCATABLE_FRACTIONAL" not in found(none, ApiWindow(api(cpu="7500m")))[0]
    # the policy unknown: kubelet's config not YAML and no checkpoint of its own to say it
    unknown = node(tmp_path / "u", config_text="::: {{ not yaml", state_text="garbage")
    assert unknown.snapshot.kubelet.cpu_manager_policy is None
    assert "ALLOCATABLE_FRACTIONAL" not in found(unknown, ApiWindow(api(cpu="7500m")))[0]


def test_pinning_errors_only_when_a_counter_grew(tmp_path):
    r = node(tmp_path)
    m0 = KubeletMetrics(12, 0, 12, 0, 4)
    assert "KUBELET_PINNING_ERRORS" not in found(r, ApiWindow(api(metrics=m0)))[0]  # one round: no window
    same = ApiWindow(api(130.0, metrics=KubeletMetrics(14, 0, 14, 0, 4)), api(100.0, metrics=m0))
    assert "KUBELET_PINNING_ERRORS" not in found(r, same)[0]  # requests grew, errors did not
    grew = ApiWindow(api(130.0, metrics=KubeletMetrics(14, 1, 14, 0, 4)), api(100.0, metrics=m0))
    f = found(r, grew)[0]["KUBELET_PINNING_ERRORS"]
    assert f.message == "kubelet's error counters grew over 30 s: kubelet_cpu_manager_pinning_errors_total +1"
    assert f.evidence == ("GET /api/v1/nodes/t/proxy/metrics, 30 s apart",
                          "kubelet_cpu_manager_pinning_errors_total: 0 -> 1; kubelet_cpu_manager_pinning_requests_total: 12 -> 14",
                          "kubelet_topology_manager_admission_errors_total: 0 -> 0; kubelet_topology_manager_admission_requests_total: 12 -> 14")
    topo = ApiWindow(api(130.0, metrics=KubeletMetrics(14, 0, 14, 3, None)), api(100.0, metrics=m0))
    assert found(r, topo)[0]["KUBELET_PINNING_ERRORS"].message.endswith("kubelet_topology_manager_admission_errors_total +3")
    restarted = ApiWindow(api(130.0, metrics=KubeletMetrics(1, 0, 1, 0, 4)), api(100.0, metrics=KubeletMetrics(12, 5, 12, 5, 4)))
    assert "KUBELET_PINNING_ERRORS" not in found(r, restarted)[0]  # counters went down: kubelet restarted
    refused = ApiWindow(api(130.0, metrics_error="kubelet metrics: not allowed (get nodes/proxy)"), api(100.0, metrics=m0))
    assert "KUBELET_PINNING_ERRORS" not in found(r, refused)[0]


def test_json_has_the_kubernetes_object_and_says_what_failed(tmp_path):
    r = node(tmp_path).with_api(ApiWindow(api(cpu="7500m", rejected=[REJ], metrics=None,
                                              metrics_error="kubelet metrics: not allowed (get nodes/proxy)")))
    o = r.to_json()
    assert o["kubernetes"] == {"node": "t", "allocatable_cpu": "7500m", "kubelet_version": None, "rejected_pods": [
        {"uid": "3f1c", "namespace": "trading", "name": "matcher-x", "reason": "TopologyAffinityError",
         "message": "Pod was rejected: Resources cannot be allocated with Topology locality"}],
        "kubelet_metrics": None, "window_s": None, "pods_error": None, "node_error": None,
        "metrics_error": "kubelet metrics: not allowed (get nodes/proxy)"}
    assert [e for e in o["errors"] if e["source"] == "kubernetes"] == [
        {"source": "kubernetes", "message": "kubelet metrics: not allowed (get nodes/proxy)"}]
    assert "kubernetes" not in node(tmp_path / "b").to_json()  # without the API: no new field at all


def test_podlist_items_that_are_not_pods_are_counted_not_raised():
    good = {"metadata": {"uid": "u1", "namespace": "a", "name": "p"},
            "status": {"phase": "Failed", "reason": "OutOfcpu",
                       "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 7500, capacity: 8000"}}
    doc = {"items": [good, "a string", {"metadata": {"uid": "u2"}, "status": "Failed"},
                     {"metadata": ["x"]}, {"metadata": {"uid": "u3", "annotations": "x"}}, None]}
    pods, rejected, bad = _pods(doc)
    assert set(pods) == {"u1"} and bad == 5
    assert rejected == (Rejected("u1", "a", "p", "OutOfcpu", good["status"]["message"]),)
    assert _pods("not a list") == ({}, (), 0) and _pods({"items": {"a": 1}}) == ({}, (), 0)


def test_kubelets_admission_reasons():
    for r in ("TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError", "OutOfcpu",
              "OutOfnvidia.com/gpu", "NodeAffinity"):
        assert admission_reason(r), r
    for r in ("Evicted", "DeadlineExceeded", "OutOf", "Error", ""):
        assert not admission_reason(r), r


def test_cpu_quantities():
    assert [cpu_millis(q) for q in ("8", "7500m", "3.5", "2e3", "0.1", "1k")] == [8000, 7500, 3500, 2000000, 100, 1000000]
    assert [cpu_millis(q) for q in ("", "m", "8x", "-1", "1" * 50, "\x1b[2J")] == [None] * 6


def test_requests_or_limits_that_are_not_maps_are_no_traceback():
    """A pod whose resources.requests is a string or a list (no API server sends it; a proxy or a stand-in may):
    dict() raised ValueError past the handler and ended the API worker for the session."""
    doc = {"items": [
        {"metadata": {"uid": "u1", "namespace": "a", "name": "p1"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": "1", "limits": ["ab", "cd"]}}]}},
        {"metadata": {"uid": "u2", "namespace": "a", "name": "p2"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}]}
    pods, rejected, bad = _pods(doc)
    assert bad == 0 and pods["u1"].containers[0].requests == {} and pods["u1"].containers[0].limits == {}
    assert pods["u2"].containers[0].requests == {"cpu": "2"}
