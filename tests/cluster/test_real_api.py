"""pinscope through the real API server and kubelet (issue 33, part two), for each kubelet release: a pod the real
kubelet refused at admission is ADMISSION_REJECTED; `node/NAME` end to end (the debug pod created with least
privilege, scheduled, exec'd into through the API server and kubelet, its report equal to `local`'s, deleted
on SIGTERM, SIGHUP, SIGINT and the live view's q); RBAC: a service-account token bound to exactly the roles
docs/kubernetes.md asks users to bind works, and `kubectl auth can-i --list` shows that account nothing more.

Every expected fact is read from the API (kubectl) or the kernel, never from pinscope.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from cluster import realnode as rn
from cluster.pytest_cluster import Cluster

REPO = Path(__file__).resolve().parents[2]
NS = "pinscope"
PROBE_LABELS = {"app.kubernetes.io/name": "pinscope-probe"}


def _debug_pods(c: Cluster) -> list[dict]:
    return [p for p in c.get("pods", "-n", NS)["items"]
            if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "pinscope"
            or any((p["metadata"].get("labels") or {}).get(k) == v for k, v in PROBE_LABELS.items())]


@pytest.fixture(scope="module")
def _deployed_rbac(cluster: Cluster) -> Cluster:
    """deploy/'s namespace and roles, applied once a module (they do not change between the tests)."""
    if cluster.kubelet_root != Path("/var/lib/kubelet"):
        pytest.fail(f"kubelet's root-dir is {cluster.kubelet_root}: /var/lib/kubelet existed before tests/cluster/up "
                    "(something else's), and node/NAME's debug pod mounts only the usual paths", pytrace=False)
    for f in ("namespace.yaml", "rbac.yaml"):
        cluster.kubectl("apply", "-f", str(REPO / "deploy" / f))
    return cluster


@pytest.fixture
def api(_deployed_rbac: Cluster):
    """The cluster with deploy/'s namespace and roles, the node's usual paths kubelet uses (node/NAME's debug pod
    mounts only those), and no debug pod left at the end."""
    cluster = _deployed_rbac
    yield cluster
    rn.poll("node/NAME's debug pods to be gone", lambda: not _debug_pods(cluster), timeout=rn.DEADLINE)


def _node_args(c: Cluster, kubeconfig: str | None = None) -> list[str]:
    return [f"node/{c.node_name}", "--kubeconfig", kubeconfig or c.kubeconfig, "--image", c.busybox_image]


def _cpus(snap: dict) -> list:
    return [(x["id"], x["role"], x["owners"]) for x in snap["cpus"]]


def test_a_pod_the_kubelet_refused_is_admission_rejected(api: Cluster) -> None:
    c = api
    want = len(rn.online_cpus()) + 1  # more CPUs than the node has: kubelet itself refuses it (nodeName set)
    s = rn.spec(c, f"r-{uuid.uuid4().hex[:6]}", [rn.box(c, "big", str(want), "64Mi")])
    name = s["metadata"]["name"]
    c.apply(s)
    try:
        pod = c.wait_pod(name, phase="Failed", timeout=rn.DEADLINE)
        reason, message = pod["status"].get("reason"), pod["status"].get("message", "")
        assert reason and reason.startswith("OutOf") or reason in ("TopologyAffinityError", "UnexpectedAdmissionError"), \
            pod["status"]
        p = rn.pinscope("check", "--json", *_node_args(c), timeout=300)
        assert "Traceback" not in p.stderr, p.stderr
        doc = json.loads(p.stdout)
        doc = doc[0] if isinstance(doc, list) else doc
        mine = [f for f in doc["findings"] if f["code"] == "ADMISSION_REJECTED" and f.get("pod") == name]
        assert len(mine) == 1, (doc["findings"], p.stderr)
        assert reason in mine[0]["message"], (mine, reason, message)
    finally:
        c.delete_pod(name)


def test_node_name_reports_what_local_reports(api: Cluster) -> None:
    """One snapshot through the debug pod (created, scheduled, exec'd into through the real API server and
    kubelet) equals `snapshot local` in every CPU's role and owners and every pod; the pod is gone after."""
    c = api
    specs = [rn.workloads(c)["guaranteed"]]
    try:
        rn.start(c, specs)
        p = rn.pinscope("snapshot", "--json", *_node_args(c), timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        remote = json.loads(p.stdout)
        local = rn.snapshot()
        assert _cpus(remote) == _cpus(local)
        assert remote["kubelet"]["root_dir"] == local["kubelet"]["root_dir"] == str(c.kubelet_root)
        assert remote["kubelet"]["state"] == local["kubelet"]["state"]
        # the debug pod itself runs on the node too (a pod of the shared pool) while node/NAME reads, and may
        # still be ending when local reads: pinscope's namespace apart, the same pods
        def pods(snap: dict) -> dict:
            return {p["uid"]: (p["name"], p["namespace"], p["qos"]) for p in snap["pods"] if p["namespace"] != NS}
        assert pods(remote) == pods(local)
    finally:
        rn.delete(c, specs)


def _running_debug_pod(c: Cluster) -> dict:
    def one():
        pods = [p for p in _debug_pods(c) if p["status"].get("phase") == "Running"]
        return pods[0] if len(pods) == 1 else None
    return rn.poll("node/NAME's debug pod running", one, timeout=rn.DEADLINE)


def test_the_debug_pod_has_least_privilege_as_the_api_stored_it(api: Cluster) -> None:
    c = api
    p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "snapshot", *_node_args(c), "--samples", "600",
                          "--interval", "0.5"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        pod = _running_debug_pod(c)
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(120)
    spec = pod["spec"]
    assert spec["nodeName"] == c.node_name and spec.get("hostPID") is True
    assert not spec.get("hostNetwork") and not spec.get("hostIPC")
    assert spec.get("automountServiceAccountToken") is False
    (ct,) = spec["containers"]
    sc = ct["securityContext"]
    assert sc.get("privileged") is False and sc.get("allowPrivilegeEscalation") is False
    assert sc.get("readOnlyRootFilesystem") is True and sc["capabilities"] == {"drop": ["ALL"]}
    # what the kernel gave the container: no capability at all, and the host's paths read-only
    st = pod["status"]["containerStatuses"][0]
    assert st["ready"] is True and st["image"].endswith(c.busybox_image.split("/", 1)[1]), st
    assert rc == 128 + signal.SIGTERM, (rc, p.stderr.read() if p.stderr else "")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_a_signal_ends_pinscope_and_its_debug_pod_is_deleted(api: Cluster, sig) -> None:
    c = api
    p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "snapshot", *_node_args(c), "--samples", "600",
                          "--interval", "0.5"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        pod = _running_debug_pod(c)
        p.send_signal(sig)
        rc = p.wait(120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(30)
    assert rc == 128 + sig, (rc, p.stderr.read() if p.stderr else "")
    gone = c.kubectl("get", "pod", "-n", NS, pod["metadata"]["name"], "--ignore-not-found", "-o", "name").stdout
    # deleted through the API (it may still be terminating for its grace period; it must not be Running on)
    assert not gone.strip() or c.get("pod", "-n", NS, pod["metadata"]["name"])["metadata"].get("deletionTimestamp")


async def test_q_in_the_live_view_deletes_the_debug_pod(api: Cluster) -> None:
    import asyncio

    from pinscope.collectors.collect import Options
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.collectors.transport import kube as kube_transport
    from pinscope.tui.app import PinscopeApp

    c = api

    app = PinscopeApp([NodeTarget(f"node/{c.node_name}")],
                      Options(kubeconfig=c.kubeconfig, kube_image=c.busybox_image), interval=1.0,
                      kube=(None, c.kubeconfig))
    async with app.run_test(size=(160, 48)) as pilot:
        v = app.views[f"node/{c.node_name}"]
        end = time.monotonic() + rn.DEADLINE
        while not (v.snap is not None and v.state == "up"):
            assert time.monotonic() < end, f"node/NAME never up: {v.state}"
            await asyncio.sleep(0.2)
        assert len(v.snap.topology.cpus) == len(rn.online_cpus())
        assert len(await asyncio.to_thread(_debug_pods, c)) == 1
        await pilot.press("q")
    # a delete the app's 2 s a node cut short goes on in its own task (a thread's API call): the test's own
    # asyncio.run waited for it as it closed the loop; this loop is the test's until its teardown
    await asyncio.gather(*kube_transport._RUNNING, return_exceptions=True)

    left = [p for p in _debug_pods(c) if not p["metadata"].get("deletionTimestamp")]
    assert left == []


# ---------------------------------------------------------------------------------------------------------- RBAC
README_RULES = {  # what docs/kubernetes.md and deploy/rbac.yaml say pinscope needs: (namespace or "", resource, verb)
    ("", "nodes", "get"), ("", "nodes", "list"), ("", "pods", "list"),
    *((NS, "pods", v) for v in ("create", "get", "list", "delete", "patch")),
    (NS, "pods/exec", "create"), (NS, "pods/exec", "get"),
}


def _token_kubeconfig(c: Cluster, sa: str, where: Path) -> str:
    token = c.kubectl("create", "token", sa, "-n", NS, "--duration", "1h").stdout.strip()
    server = json.loads(c.kubectl("config", "view", "--raw", "-o", "json").stdout)["clusters"][0]["cluster"]
    where.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": {"server": server["server"],
                                               "certificate-authority": server["certificate-authority"]}}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": sa}}]}))
    where.chmod(0o600)
    return str(where)


def _can_i(c: Cluster, kubeconfig: str, namespace: str) -> set[tuple[str, str]]:
    """`kubectl auth can-i --list -n NAMESPACE` as the kubeconfig's user -> {(resource, verb)} (resources only)."""
    p = subprocess.run([c.kubectl_bin, "--kubeconfig", kubeconfig, "auth", "can-i", "--list", "-n", namespace],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = set()
    for line in p.stdout.splitlines()[1:]:
        if not line.strip() or line[0].isspace():  # a non-resource URL's line (its Resources column is empty)
            continue
        verbs = line[line.rindex("[") + 1:line.rindex("]")].split()
        out |= {(line.split()[0], v) for v in verbs}
    return out


def test_a_token_bound_to_the_readme_roles_works_and_grants_no_more(api: Cluster, tmp_path) -> None:
    c = api
    sa, bare = f"rbac-{uuid.uuid4().hex[:6]}", f"bare-{uuid.uuid4().hex[:6]}"
    made = [("serviceaccount", sa, NS), ("serviceaccount", bare, NS), ("rolebinding", sa, NS),
            ("clusterrolebinding", f"{sa}-nodes", None), ("clusterrolebinding", f"{sa}-pods", None)]
    try:
        for name in (sa, bare):
            c.kubectl("create", "serviceaccount", name, "-n", NS)
        who = f"--serviceaccount={NS}:{sa}"
        c.kubectl("create", "clusterrolebinding", f"{sa}-nodes", "--clusterrole=pinscope-node-reader", who)
        c.kubectl("create", "clusterrolebinding", f"{sa}-pods", "--clusterrole=pinscope-pod-reader", who)
        c.kubectl("create", "rolebinding", sa, "-n", NS, "--role=pinscope-prober", who)
        kc = _token_kubeconfig(c, sa, tmp_path / "sa.kubeconfig")
        kc_bare = _token_kubeconfig(c, bare, tmp_path / "bare.kubeconfig")

        p = rn.pinscope("snapshot", "--json", *_node_args(c, kc), timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        assert _cpus(json.loads(p.stdout)) == _cpus(rn.snapshot())

        # beyond what every authenticated account may (the unbound account's list): only the documented rules,
        # the namespaced ones in pinscope's namespace only
        allowed = {"default": {(r, v) for n, r, v in README_RULES if not n}, NS: {(r, v) for _, r, v in README_RULES}}
        for ns, ok in allowed.items():
            extra = _can_i(c, kc, ns) - _can_i(c, kc_bare, ns)
            assert extra <= ok, (ns, sorted(extra - ok))
        assert {(r, v) for n, r, v in README_RULES if n == NS} <= _can_i(c, kc, NS)
    finally:
        for kind, name, ns in made:
            c.kubectl("delete", kind, name, *(["-n", ns] if ns else []), "--ignore-not-found", check=False)


def _kubelet_counters(c: Cluster) -> dict[str, float]:
    """kubelet's own /metrics through the API server's node proxy (kubectl get --raw): the pinning and topology
    admission counters, summed over their labels."""
    text = c.kubectl("get", "--raw", f"/api/v1/nodes/{c.node_name}/proxy/metrics").stdout
    out: dict[str, float] = {}
    for line in text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name.startswith(("kubelet_cpu_manager_pinning_", "kubelet_topology_manager_admission_")) \
                and name.endswith("_total"):
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def test_kube_local_is_enriched_from_the_node_kubelet_registered(api: Cluster) -> None:
    """`check --kube local` on the node: the API's node (kubelet registered it under --hostname-override, not the
    hostname), its allocatable CPU, and kubelet's metrics through nodes/proxy, between two reads of kubectl's."""
    c = api
    before = _kubelet_counters(c)
    p = rn.pinscope("check", "--json", "--kube", "--selector", "pinscope-test=none", "--kubeconfig", c.kubeconfig,
                    "local", timeout=300)
    after = _kubelet_counters(c)
    doc = json.loads(p.stdout)
    doc = doc[0] if isinstance(doc, list) else doc
    k = doc["kubernetes"]
    assert (k["node"], k["node_error"], k["metrics_error"]) == (c.node_name, None, None), k
    assert k["allocatable_cpu"] == c.get("node", c.node_name)["status"]["allocatable"]["cpu"]
    names = {"cpu_manager_pinning_requests_total": "kubelet_cpu_manager_pinning_requests_total",
             "cpu_manager_pinning_errors_total": "kubelet_cpu_manager_pinning_errors_total",
             "topology_manager_admission_requests_total": "kubelet_topology_manager_admission_requests_total",
             "topology_manager_admission_errors_total": "kubelet_topology_manager_admission_errors_total"}
    for ours, theirs in names.items():
        assert before[theirs] <= k["kubelet_metrics"][ours] <= after[theirs], (ours, before, k, after)
