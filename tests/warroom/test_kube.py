"""--kube through the real `kubernetes` client, against a local HTTP server that speaks the Kubernetes
API for nodes and pods (recorded-style responses); then the API goes away mid-session."""
import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

import sshd as sshd_mod
from pinscope.collectors.kube import KubeError, discover, node_pods
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import need, run_cli

UID = "6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f"


def node_list(port):
    return {"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "1234"}, "items": [
        {"metadata": {"name": "node-a", "labels": {"pool": "trading", "kubernetes.io/hostname": "node-a"}},
         "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": "node-a"}]}},
        {"metadata": {"name": "node-b", "labels": {"pool": "batch"}},
         "status": {"addresses": [{"type": "InternalIP", "address": "10.1.2.3"}]}},
    ]}


POD_LIST = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1235"}, "items": [
    {"metadata": {"name": "md-feed-0", "namespace": "trading", "uid": UID,
                  "ownerReferences": [{"kind": "StatefulSet", "name": "md-feed", "controller": True}]},
     "spec": {"nodeName": "node-a", "containers": [
         {"name": "feed", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}}]},
     "status": {"qosClass": "Guaranteed", "phase": "Running",
                "containerStatuses": [{"name": "feed", "containerID": "containerd://" + "ab" * 32}]}},
    # a static pod's mirror: the node knows it by the manifest hash in this annotation
    {"metadata": {"name": "etcd-node-a", "namespace": "kube-system", "uid": "0a4d4a8e-1111-4222-8333-944455556666",
                  "annotations": {"kubernetes.io/config.mirror": "e4e6004e2b0a4b4a9c1f0e4c3d2b1a09"}},
     "spec": {"nodeName": "node-a", "containers": [{"name": "etcd"}]},
     "status": {"qosClass": "Burstable", "phase": "Running"}},
]}


class Api:
    def __init__(self):
        api = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                u = urlparse(self.path)
                q = parse_qs(u.query)
                api.seen.append(self.path)
                if api.failing:  # an API server that is up but cannot answer (overloaded, its etcd gone)
                    self.send_response(503)
                    self.end_headers()
                    return
                if u.path == "/api/v1/nodes":
                    body = node_list(0)
                    sel = q.get("labelSelector", [None])[0]
                    if sel:
                        k, _, v = sel.partition("=")
                        body["items"] = [n for n in body["items"] if n["metadata"]["labels"].get(k) == v]
                elif u.path == "/api/v1/pods":
                    body = dict(api.pod_list if api.pod_list is not None else POD_LIST)
                    if q.get("fieldSelector", [""])[0] != "spec.nodeName=node-a":
                        body = {**POD_LIST, "items": []}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.seen = []
        self.failing = False
        self.pod_list = None  # another PodList to answer with
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.t = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.t.start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


@pytest.fixture
def api(tmp_path):
    a = Api()
    kc = tmp_path / "kubeconfig"
    kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: lab, cluster: {{server: "http://127.0.0.1:{a.port}"}}}}]
users: [{{name: me, user: {{}}}}]
contexts: [{{name: lab, context: {{cluster: lab, user: me}}}}]
current-context: lab
""")
    a.kubeconfig = str(kc)
    yield a
    a.stop()


def test_discover_and_pods_through_the_real_client(api):
    ts = discover(kubeconfig=api.kubeconfig, selector="pool=trading", host_template="{ip}:2222", user="ops")
    assert [(t.name, t.address, t.labels["pool"]) for t in ts] == [("node-a", "ops@127.0.0.1:2222", "trading")]
    assert any("labelSelector=pool%3Dtrading" in s for s in api.seen)
    pods = node_pods("node-a", kubeconfig=api.kubeconfig)
    p = pods[UID]
    assert (p.namespace, p.name, p.owner, p.qos) == ("trading", "md-feed-0", "StatefulSet/md-feed", "Guaranteed")
    assert p.containers[0].requests == {"cpu": "2", "memory": "4Gi"}
    assert p.ids == {"ab" * 32: "feed"}  # containerStatuses[].containerID, runtime prefix dropped
    assert pods["e4e6004e2b0a4b4a9c1f0e4c3d2b1a09"].name == "etcd-node-a"  # the mirror, by the node's uid
    api.stop()
    with pytest.raises(KubeError):
        node_pods("node-a", kubeconfig=api.kubeconfig, timeout=2)


def test_a_pod_list_with_holes_is_no_list(api):
    """fit takes a pod the node's list lacks as gone and frees its CPUs: an answer with no items, or with an item
    not shaped like a pod, must not say every pod (or that one) is gone; it is an API error, as if unanswered."""
    for body in ({"kind": "PodList", "items": None}, {"kind": "Status", "status": "Success"},
                 {**POD_LIST, "items": [*POD_LIST["items"], {"metadata": {"uid": "u2", "name": "x"}, "spec": {"containers": "oops"}}]}):
        api.pod_list = body
        with pytest.raises(KubeError, match="which pods are on the node is not known"):
            node_pods("node-a", kubeconfig=api.kubeconfig)
    api.pod_list = {**POD_LIST, "items": []}
    assert node_pods("node-a", kubeconfig=api.kubeconfig) == {}  # a node with no pods says so


def test_snapshot_kube_over_ssh_enriches_pods(api, tmp_path):
    ok, why = sshd_mod.available()
    need(ok, why)
    root = tmp_path / "root"
    SimNode(NodeSpec(hostname="node-a", cores=4, pods=[PodSpec("md-feed-0", "trading", uid=UID,
                                                               containers=[CtrSpec("feed", cpus="1,5")])]), root).write()
    srv = sshd_mod.Sshd(tmp_path / "s").start()
    try:
        r = run_cli("snapshot", "--json", "--kube", "--kubeconfig", api.kubeconfig, "--selector", "pool=trading",
                    "--host-template", f"{{ip}}:{srv.port}", "--kube-user", "root", "--root", str(root), *srv.args())
        assert r.returncode == 0, r.stderr
        o = json.loads(r.stdout)
        (p,) = o["pods"]
        assert p["owner"] == "StatefulSet/md-feed" and p["api_qos"] == "Guaranteed"
        assert p["containers"][0]["requests"] == {"cpu": "2", "memory": "4Gi"}
        assert next(c for c in o["cpus"] if c["id"] == 1)["owners"][0]["pod"] == "md-feed-0"  # the node's truth
    finally:
        srv.kill()


async def test_api_going_away_mid_session_degrades_with_a_notice(api, tmp_path, notices):
    from pinscope.collectors.collect import Options
    from pinscope.collectors.inventory import Target
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.tui.app import PinscopeApp

    root = tmp_path / "root"
    SimNode(NodeSpec(hostname="node-a", cores=4, pods=[PodSpec("md-feed-0", "trading", uid=UID,
                                                               containers=[CtrSpec("feed", cpus="1,5")])]), root).write()

    app = PinscopeApp([NodeTarget.of(Target("node-a", "local", root=str(root)), Options())],
                      interval=0.3, kube=(None, api.kubeconfig))
    app.fleet.kube_period = 0.3
    async with app.run_test(size=(160, 40)) as pilot:
        v = app.views["node-a"]
        for _ in range(600):
            await asyncio.sleep(0.1)
            if v.api_pods and v.snap:
                break
        assert v.api_pods[UID].owner == "StatefulSet/md-feed"
        api.failing = True  # it fails, then answers again: a notice each way, and the error goes
        for _ in range(600):  # a generous deadline: only a hang fails
            await asyncio.sleep(0.1)
            if v.api_error:
                break
        assert v.api_error and any("showing node-local names" in n for n in notices)
        api.failing = False
        for _ in range(600):  # a generous deadline: only a hang fails
            await asyncio.sleep(0.1)
            if v.api_error is None:
                break
        assert v.api_error is None and v.api_pods[UID].owner == "StatefulSet/md-feed"
        assert any("Kubernetes API is back" in n for n in notices)
        said = len(notices)
        api.stop()
        for _ in range(600):  # a generous deadline: only a hang fails
            await asyncio.sleep(0.1)
            if v.api_error:
                break
        assert v.api_error and "Kubernetes API" in v.api_error
        assert any("showing node-local names" in n for n in notices[said:]), notices  # a new notice
        g = v.generation
        for _ in range(600):
            await asyncio.sleep(0.1)
            if v.generation > g + 2:
                break
        assert v.generation > g + 2 and v.state == "up"
        assert v.snap.pods[0].name == "md-feed-0"  # from /var/log/pods, not the API
        await pilot.press("q")
