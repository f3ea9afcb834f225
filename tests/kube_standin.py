"""A local stand-in for the Kubernetes API server (and the kubelets behind it), speaking the real protocol.

What it serves (enough for pinscope and for Debian's real `kubectl` to drive it):
  discovery   GET /version, /api, /apis, /api/v1 (legacy discovery: kubectl falls back to it)
  nodes       list, get (status.allocatable.cpu: `allocatable`, status.nodeInfo.kubeletVersion: `kubelet_version`,
              per node)
  nodes/proxy GET /api/v1/nodes/NAME/proxy/metrics: kubelet's /metrics text (`kubelet_metrics`, per node; a
              list is served in turn, its last text from then on), authorized as get nodes/proxy like a real
              API server
  pods        list (all namespaces or one; labelSelector, fieldSelector), get, create, delete, patch (a JSON
              merge patch of metadata.labels/annotations: what pinscope's heartbeat and `kubectl annotate`
              send); as a meta.k8s.io Table when the client asks (what `kubectl get pods` prints)
  pods/exec   the websocket exec stream, subprotocols v5.channel.k8s.io and v4.channel.k8s.io (or only
              v4, like an API server before 1.30, or a 1.37 one in front of a 1.35 kubelet); the error channel
              carries a v1 Status at the end, worded as the real path of the agreed subprotocol words it
  authz       bearer tokens -> users -> RBAC-like rules (verb, resource, namespace); 403 Status bodies
              shaped like the real ones; an admission hook that can refuse a pod (PodSecurity, quota)

Pods "run" as the kubelet would run them: a pod becomes Running shortly after it is created (or waits in
ErrImagePull for an image the stand-in does not know), ends at activeDeadlineSeconds (DeadlineExceeded),
a container with a `command` runs it for real (when every container's process has ended the pod is
Succeeded, or Failed if one exited non-zero, as under restartPolicy Never), and an exec runs the command
for real in the pod's container (tests/kube_kubelet.py: a chroot whose
hostPath volumes are bind mounts of the node's SIMULATED tree). The exec'd command is never rewritten.

Each request it answers is sent to a real API server too (tests/cluster/test_standin_vs_real.py, kubelet 1.35.4
and 1.37.2 behind kube-apiserver 1.37.2), and the fields pinscope reads are compared: shapes here follow it.

Run by hand (docs/kubernetes.md's recipe): `python3 tests/kube_standin.py --sim worker-3 --kubeconfig /tmp/kc`.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import shutil
import signal
import tempfile
import threading
import time
import uuid
from pathlib import Path

from aiohttp import WSMsgType, web

import kube_kubelet as kubelet
from kube_kubelet import available  # tests ask the stand-in

V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"
USER = web.RequestKey("user", tuple)
def now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code: int, reason: str, message: str, details: dict | None = None) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return web.json_response(body, status=code)


def qos_class(spec: dict) -> str:
    """The pod's QoS class as the API server sets it at create (k/k pkg/apis/core/v1/helper/qos GetPodQOS): from
    cpu and memory only (zero quantities ignored), the pod-level resources where the pod has them, else every
    init and app container's; Guaranteed when every one limits both and requests what it limits."""
    def cm(r) -> dict:
        return {k: str(v) for k, v in (r or {}).items() if k in ("cpu", "memory") and str(v) not in ("0", "0m")}

    pod = spec.get("resources")
    sets = [pod] if pod else [c.get("resources") or {} for c in (spec.get("initContainers") or [])
                               + (spec.get("containers") or [])]
    reqs_lims = [(cm(r.get("requests")), cm(r.get("limits"))) for r in sets]
    if not any(req or lim for req, lim in reqs_lims):
        return "BestEffort"
    if all(set(lim) == {"cpu", "memory"} and all(lim.get(k) == v for k, v in req.items()) for req, lim in reqs_lims):
        return "Guaranteed"
    return "Burstable"


def _defaulted(pod: dict) -> None:
    """What the API server's defaulting does to a created pod's spec that pinscope reads: a container's requests
    default to its limits; empty lists are left out (Go's omitempty), as a real answer has them."""
    spec = pod.get("spec") or {}
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        res = c.get("resources") or {}
        if res.get("limits"):
            res["requests"] = {**res["limits"], **(res.get("requests") or {})}
    for k in [k for k, v in spec.items() if v == []]:
        del spec[k]


def _item(obj: dict) -> dict:
    """An object as a list's item: a real list's items carry no kind nor apiVersion."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _container_id() -> str:
    return "containerd://" + uuid.uuid4().hex + uuid.uuid4().hex


def _match_labels(labels: dict, selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.strip() not in labels:
            return False
    return True


def _field(obj: dict, path: str):
    cur = obj
    for part in path.split("."):
        cur = (cur or {}).get(part) if isinstance(cur, dict) else None
    return cur


def _match_fields(obj: dict, selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        neg = "!=" in term
        k, v = term.replace("==", "=").replace("!=", "=").split("=", 1)
        if (str(_field(obj, k.strip()) or "") == v.strip()) == neg:
            return False
    return True


class StandIn:
    """The API server. `nodes` maps a node name to its simulated root (collectors.sim.node.SimNode.root)."""

    def __init__(self, nodes: dict[str, Path], *, protocols=(V5, V4), exec_verb: str = "create",
                 users: dict | None = None, namespaces=("default", "kube-system", "pinscope"),
                 tls: bool = True, start_delay: float = 0.2, images=("busybox", "pinscope")) -> None:
        self.nodes = {k: Path(v) for k, v in nodes.items()}
        for root in self.nodes.values():  # what a kubelet makes at its start (setupDataDirs; the log dirs:
            # kuberuntime's ContainerLogsDir and podLogsDir; pki/: its --cert-dir, made where kubelet manages its
            # certificates, as on kubeadm, EKS, GKE and AKS nodes, the common node, whose pki/ the exporter DaemonSet
            # shadows by default). A kubelet given its certificates makes no pki/: tests/cluster's real node is that
            # kind (1.35.4, 1.37.2), and node/NAME's debug pod does not shadow pki/ so that it reads both kinds.
            for d in ("var/lib/kubelet/pods", "var/lib/kubelet/plugins", "var/lib/kubelet/plugins_registry",
                      "var/lib/kubelet/pod-resources", "var/lib/kubelet/pki", "var/log/pods", "var/log/containers"):
                (root / d).mkdir(parents=True, exist_ok=True)
        self.protocols = tuple(protocols)
        self.exec_verb = exec_verb  # "create" (servers with AuthorizePodWebsocketUpgradeCreatePermission) or "get"
        # token -> (user, rules); rules None = everything; else a list of (verbs, resources, namespace|None)
        self.users = users if users is not None else {"admin-token": ("admin", None)}
        self.namespaces = set(namespaces)
        self.tls = tls
        self.start_delay = start_delay
        self.images = images
        self.admission = None  # callable(pod dict) -> refusal message or None
        self.create_answer_delay = 0.0  # s between storing a created pod and answering (a slow API server)
        self.log = False  # print each request (the CLI's --log)
        self.stalled_deletes = 0  # how many pod DELETEs, first come, the server sits on (read, never answered)
        self.allocatable: dict[str, str] = {}  # node -> status.allocatable.cpu (default "8")
        # node -> status.nodeInfo.kubeletVersion (default v1.37.2: the real node's newest release); None: not said
        self.kubelet_version: dict[str, str | None] = {}
        self.kubelet_metrics: dict[str, list] = {}  # node -> the /metrics texts (str or bytes) served in turn
        self.metrics_served: dict[str, int] = {}  # node -> how many times its /metrics was served
        self.pods: dict[tuple[str, str], dict] = {}
        self.execs: dict[tuple[str, str], list] = {}  # pod -> running exec processes
        self.mains: dict[tuple[str, str], list] = {}  # pod -> its containers' own running processes
        self.used: set[tuple[str, str]] = set()  # (verb, resource) authorized, for the RBAC test
        self.requests: list[tuple[str, str, str]] = []  # (method, path, user)
        self.protocols_seen: list[str | None] = []
        self.rv = 1000
        self.dir = Path(tempfile.mkdtemp(prefix="pinscope-standin-"))
        self.loop: asyncio.AbstractEventLoop | None = None
        self.port = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "StandIn":
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        if not ready.wait(20) or not self.port:
            raise RuntimeError("stand-in API server did not start")
        return self

    def _run(self, ready: threading.Event) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        app = web.Application(middlewares=[self._auth])
        r = app.router
        r.add_get("/version", self._version)
        r.add_get("/api", self._api)
        r.add_get("/apis", self._apis)
        r.add_get("/api/v1", self._resources)
        r.add_get("/api/v1/nodes", self._list_nodes)
        r.add_get("/api/v1/nodes/{name}", self._get_node)
        r.add_get("/api/v1/nodes/{name}/proxy/{path:.*}", self._node_proxy)
        r.add_get("/api/v1/pods", self._list_pods)
        r.add_get("/api/v1/namespaces/{ns}/pods", self._list_pods)
        r.add_post("/api/v1/namespaces/{ns}/pods", self._create_pod)
        r.add_get("/api/v1/namespaces/{ns}/pods/{name}", self._get_pod)
        r.add_delete("/api/v1/namespaces/{ns}/pods/{name}", self._delete_pod)
        r.add_patch("/api/v1/namespaces/{ns}/pods/{name}", self._patch_pod)
        r.add_route("*", "/api/v1/namespaces/{ns}/pods/{name}/exec", self._exec)
        self.runner = web.AppRunner(app, handle_signals=False)
        self.loop.run_until_complete(self.runner.setup())
        ctx = self._ssl() if self.tls else None
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=ctx)
        self.loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    def _ssl(self):
        import ssl
        import subprocess

        key, crt = self.dir / "server.key", self.dir / "server.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-days", "1", "-subj", "/CN=standin", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(crt)], check=True, capture_output=True)
        self.ca = crt.read_bytes()
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(crt), str(key))
        return ctx

    def stop(self) -> None:
        if self.loop is None:
            return

        async def down():
            for key in set(self.execs) | set(self.mains):
                self._kill_execs(key)
            await self.runner.cleanup()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(down(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop = None
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path, token: str = "admin-token", context: str = "standin",
                   others: dict | None = None) -> str:
        """A kubeconfig for this server: `context` (the current one) with `token`; `others` adds more
        contexts, {context name: token}."""
        import base64

        cluster = {"server": self.url}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca).decode()
        ctxs = {context: token, **(others or {})}
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
               "clusters": [{"name": "standin", "cluster": cluster}],
               "users": [{"name": f"u-{c}", "user": {"token": t}} for c, t in ctxs.items()],
               "contexts": [{"name": c, "context": {"cluster": "standin", "user": f"u-{c}"}} for c in ctxs]}
        Path(path).write_text(json.dumps(doc))
        return str(path)

    def call(self, fn):
        """Run fn() on the server's loop (to change state from a test thread)."""
        async def go():
            return fn()
        return asyncio.run_coroutine_threadsafe(go(), self.loop).result(10)

    # ------------------------------------------------------------------ auth
    @web.middleware
    async def _auth(self, request: web.Request, handler):
        h = request.headers.get("Authorization", "")
        token = h[7:] if h.startswith("Bearer ") else None
        if token not in self.users:
            return status(401, "Unauthorized", "Unauthorized")
        request[USER] = self.users[token]
        self.requests.append((request.method, request.path_qs, self.users[token][0]))
        if self.log:
            print(f"{time.strftime('%H:%M:%S')} {request.method} {request.path_qs[:160]}", flush=True)
        return await handler(request)

    def _allowed(self, request, verb: str, resource: str, ns: str | None) -> web.Response | None:
        user, rules = request[USER]
        if rules is None or any(verb in verbs and resource in res and (rns is None or rns == ns)
                                for verbs, res, rns in rules):
            self.used.add((verb, resource))
            return None
        # k8s.io/apiserver endpoints/handlers/responsewriters forbiddenMessage, errors.NewForbidden
        kind = resource.split("/")[0]
        name = request.match_info.get("name")
        where = f' in the namespace "{ns}"' if ns else " at the cluster scope"
        return status(403, "Forbidden", f'{kind}{f" {json.dumps(name)}" if name else ""} is forbidden: User "{user}" '
                                        f'cannot {verb} resource "{resource}" in API group ""{where}',
                      {**({"name": name} if name else {}), "kind": kind})

    # ------------------------------------------------------------------ discovery
    async def _version(self, request):
        return web.json_response({"major": "1", "minor": "32", "gitVersion": "v1.32.0-standin",
                                  "platform": "linux/amd64"})

    async def _api(self, request):
        return web.json_response({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}]})

    async def _apis(self, request):
        return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": []})

    async def _resources(self, request):
        def res(name, kind, namespaced, verbs, short=()):
            return {"name": name, "singularName": "" if "/" in name else kind.lower(), "namespaced": namespaced,
                    "kind": kind, "verbs": verbs, **({"shortNames": list(short)} if short else {})}
        return web.json_response({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            res("nodes", "Node", False, ["get", "list"], ("no",)),
            res("nodes/proxy", "NodeProxyOptions", False, ["create", "delete", "get", "patch", "update"]),
            res("pods", "Pod", True, ["create", "delete", "get", "list", "patch"], ("po",)),
            res("pods/exec", "PodExecOptions", True, ["create", "get"]),
        ]})

    # ------------------------------------------------------------------ nodes
    def _node(self, name: str) -> dict:
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                             "labels": {"kubernetes.io/hostname": name}, "creationTimestamp": "2026-01-01T00:00:00Z",
                             "resourceVersion": "1"},
                "status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                         {"type": "Hostname", "address": name}],
                           "conditions": [{"type": "Ready", "status": "True"}],
                           "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "allocatable": {"cpu": self.allocatable.get(name, "8"), "memory": "31Gi", "pods": "110"},
                           "nodeInfo": self._node_info(name)}}

    def _node_info(self, name: str) -> dict:
        info = {"architecture": "amd64", "operatingSystem": "linux", "containerRuntimeVersion": "containerd://2.1.4",
                "kubeletVersion": self.kubelet_version.get(name, "v1.37.2")}
        if info["kubeletVersion"] is None:
            del info["kubeletVersion"]
        return info

    async def _list_nodes(self, request):
        if (r := self._allowed(request, "list", "nodes", None)):
            return r
        items = [_item(self._node(n)) for n in sorted(self.nodes)]
        items = [n for n in items if _match_labels(n["metadata"]["labels"], request.query.get("labelSelector"))]
        return web.json_response({"kind": "NodeList", "apiVersion": "v1",
                                  "metadata": {"resourceVersion": str(self.rv)}, "items": items})

    async def _get_node(self, request):
        if (r := self._allowed(request, "get", "nodes", None)):
            return r
        name = request.match_info["name"]
        if name not in self.nodes:
            return status(404, "NotFound", f'nodes "{name}" not found', {"name": name, "kind": "nodes"})
        return web.json_response(self._node(name))

    async def _node_proxy(self, request):
        """The API server's proxy to a node's kubelet (GET only here; kubelet's /metrics is what is served)."""
        if (r := self._allowed(request, "get", "nodes/proxy", None)):
            return r
        name, path = request.match_info["name"], request.match_info["path"]
        if name not in self.nodes:
            return status(404, "NotFound", f'nodes "{name}" not found', {"name": name, "kind": "nodes"})
        if path != "metrics":
            return web.Response(status=404, text="404 page not found\n")  # what kubelet answers an unknown path
        texts = self.kubelet_metrics.get(name) or [kubelet_metrics_text()]
        n = self.metrics_served.get(name, 0)
        self.metrics_served[name] = n + 1
        body = texts[min(n, len(texts) - 1)]
        return web.Response(body=body.encode() if isinstance(body, str) else body,
                            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    # ------------------------------------------------------------------ pods
    def reject_pod(self, name: str, node: str, reason: str, message: str, namespace: str = "default",
                   cpu: str = "2") -> dict:
        """A pod kubelet refused at admission, as kubelet writes it (pkg/kubelet/kubelet.go rejectPod:
        phase Failed, the reason, "Pod was rejected: " + the message; the QoS class kept, nothing else)."""
        res = {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": cpu, "memory": "1Gi"}}
        pod = self.add_pod({"metadata": {"name": name, "namespace": namespace},
                            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox",
                                                                       "resources": res}]}}, running=False)
        pod["status"] = {"phase": "Failed", "reason": reason, "message": "Pod was rejected: " + message,
                         "qosClass": qos_class(pod["spec"]), "startTime": now()}
        return pod

    def add_pod(self, pod: dict, running: bool = True) -> dict:
        """Put a pod in place as if a controller had made it (the exporter DaemonSet's pod, in tests)."""
        meta = pod.setdefault("metadata", {})
        meta.setdefault("namespace", "default")
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now())
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        _defaulted(pod)
        pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod.get("spec") or {})}
        self.pods[(meta["namespace"], meta["name"])] = pod
        if running:
            self._set_running(pod)
        return pod

    def _set_running(self, pod: dict) -> None:
        spec = pod.get("spec") or {}
        statuses = []
        ok = True
        for c in spec.get("containers") or []:
            image = str(c.get("image") or "")
            if any(image.split("/")[-1].startswith(i) for i in self.images):
                statuses.append({"name": c["name"], "image": image, "ready": True, "restartCount": 0,
                                 "containerID": _container_id(), "state": {"running": {"startedAt": now()}}})
            else:
                ok = False
                statuses.append({"name": c["name"], "image": image, "ready": False, "restartCount": 0,
                                 "state": {"waiting": {"reason": "ErrImagePull",
                                                       "message": f'failed to pull image "{image}": not found'}}})
        st = pod["status"]
        st.update(containerStatuses=statuses, hostIP="127.0.0.1", startTime=now())
        if ok and spec.get("initContainers"):  # they ran before the app containers (their commands are not run here)
            st["initContainerStatuses"] = [
                {"name": c["name"], "image": str(c.get("image") or ""), "ready": True, "restartCount": 0,
                 "containerID": _container_id(),
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now(), "finishedAt": now()}}}
                for c in spec["initContainers"]]
        if ok:
            st["phase"] = "Running"
            st["conditions"] = [{"type": "Ready", "status": "True"}]
        deadline = spec.get("activeDeadlineSeconds")
        if deadline:
            self.loop.call_later(float(deadline), self._deadline, pod)
        if ok and any(c.get("command") for c in spec.get("containers") or []):
            self.loop.create_task(self._run_containers(pod))

    async def _run_containers(self, pod: dict) -> None:
        """Each container's own command, as the runtime starts it; the pod ends when they all have."""
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        node = self.nodes[pod["spec"]["nodeName"]]
        ctrs = [c for c in pod["spec"]["containers"] if c.get("command")]
        procs = [await kubelet.exec_in(self.dir, node, pod, c, list(c["command"]) + list(c.get("args") or []),
                                       main=True) for c in ctrs]
        self.mains[key] = procs
        codes = await asyncio.gather(*(p.wait() for p in procs))
        self.mains.pop(key, None)
        if self.pods.get(key) is not pod or pod["status"]["phase"] != "Running":
            return  # deleted, or ended at its deadline
        for c, rc in zip(ctrs, codes):
            for cs in pod["status"]["containerStatuses"]:
                if cs["name"] == c["name"]:
                    cs.update(ready=False, state={"terminated": {
                        "exitCode": rc, "reason": "Completed" if rc == 0 else "Error", "finishedAt": now()}})
        pod["status"]["phase"] = "Succeeded" if not any(codes) else "Failed"
        self._kill_execs(key)

    def _deadline(self, pod: dict) -> None:
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"])
        if self.pods.get(key) is not pod or pod["status"]["phase"] not in ("Pending", "Running"):
            return
        pod["status"].update(phase="Failed", reason="DeadlineExceeded",
                             message="Pod was active on the node longer than the specified deadline")
        self._kill_execs(key)

    def _kill_execs(self, key) -> None:
        for p in self.execs.pop(key, []) + self.mains.pop(key, []):
            kubelet.signal_exec(p, signal.SIGKILL)

    def running(self, namespace: str, name: str) -> int:
        """How many processes of the pod (its containers' own and its execs) are still running."""
        key = (namespace, name)
        return sum(p.returncode is None for p in self.execs.get(key, []) + self.mains.get(key, []))

    def freeze(self, namespace: str, name: str) -> None:
        """A hung node: every exec process of the pod stops (SIGSTOP), its streams stay open and silent."""
        for p in self.execs.get((namespace, name), []):
            kubelet.signal_exec(p, signal.SIGSTOP)

    def _table(self, pods: list[dict]) -> dict:
        rows = []
        for p in pods:
            st = p.get("status") or {}
            cs = st.get("containerStatuses") or []
            ready = sum(1 for c in cs if c.get("ready"))
            waiting = next((c["state"]["waiting"]["reason"] for c in cs if "waiting" in c.get("state", {})), None)
            shown = st.get("reason") or waiting or st.get("phase")
            age = dt.datetime.now(dt.timezone.utc) - dt.datetime.strptime(
                p["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
            rows.append({"cells": [p["metadata"]["name"], f"{ready}/{len((p.get('spec') or {}).get('containers') or [])}",
                                   shown, 0, f"{int(age.total_seconds())}s",
                                   (p.get("spec") or {}).get("nodeName") or "<none>"],
                         "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                    "metadata": p["metadata"]}})
        cols = [("Name", "string", "name", 0), ("Ready", "string", "", 0), ("Status", "string", "", 0),
                ("Restarts", "string", "", 0), ("Age", "string", "", 0), ("Node", "string", "", 1)]
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": str(self.rv)},
                "columnDefinitions": [{"name": n, "type": t, "format": f, "description": n, "priority": pr}
                                      for n, t, f, pr in cols],
                "rows": rows}

    async def _list_pods(self, request):
        ns = request.match_info.get("ns")
        if (r := self._allowed(request, "list", "pods", ns)):
            return r
        q = request.query
        items = [p for (pns, _), p in sorted(self.pods.items()) if ns is None or pns == ns]
        items = [p for p in items if _match_labels(p["metadata"].get("labels") or {}, q.get("labelSelector"))
                 and _match_fields(p, q.get("fieldSelector"))]
        if "as=Table" in request.headers.get("Accept", ""):
            return web.json_response(self._table(items))
        return web.json_response({"kind": "PodList", "apiVersion": "v1",
                                  "metadata": {"resourceVersion": str(self.rv)}, "items": [_item(p) for p in items]})

    async def _get_pod(self, request):
        ns, name = request.match_info["ns"], request.match_info["name"]
        if (r := self._allowed(request, "get", "pods", ns)):
            return r
        pod = self.pods.get((ns, name))
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        if "as=Table" in request.headers.get("Accept", ""):
            return web.json_response(self._table([pod]))
        return web.json_response(pod)

    async def _create_pod(self, request):
        ns = request.match_info["ns"]
        if (r := self._allowed(request, "create", "pods", ns)):
            return r
        if "json" not in request.content_type:  # the real server's words; the stand-in reads JSON only (kubectl debug
            # posts protobuf: not served here)
            return status(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                                                       "media types include: application/json, application/yaml, "
                                                       "application/vnd.kubernetes.protobuf")
        pod = await request.json()
        meta = pod.setdefault("metadata", {})
        if meta.get("namespace") not in (None, "", ns):  # checked before the namespace's existence, as for real
            return status(400, "BadRequest", "the namespace of the provided object does not match the namespace sent "
                                             "on the request")
        if ns not in self.namespaces:
            return status(404, "NotFound", f'namespaces "{ns}" not found', {"name": ns, "kind": "namespaces"})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
        name = meta.get("name")
        if not name:
            why = "Required value: name or generateName is required"
            return status(422, "Invalid", f'Pod "" is invalid: metadata.name: {why}', {"kind": "Pod", "causes": [
                {"reason": "FieldValueRequired", "message": why, "field": "metadata.name"}]})
        if (ns, name) in self.pods:
            return status(409, "AlreadyExists", f'pods "{name}" already exists', {"name": name, "kind": "pods"})
        if self.admission is not None and (why := self.admission(pod)):
            return status(403, "Forbidden", f'pods "{name}" is forbidden: {why}', {"name": name, "kind": "pods"})
        meta["namespace"] = ns
        pod = self.add_pod(pod, running=False)
        self.loop.call_later(self.start_delay, self._set_running, pod)
        if self.create_answer_delay:
            await asyncio.sleep(self.create_answer_delay)  # the pod exists; its creator does not know yet
        return web.json_response(pod, status=201)

    async def _delete_pod(self, request):
        ns, name = request.match_info["ns"], request.match_info["name"]
        if (r := self._allowed(request, "delete", "pods", ns)):
            return r
        if self.stalled_deletes > 0:  # an API server (or its etcd) that hangs: the client's deadline ends it
            self.stalled_deletes -= 1
            await asyncio.sleep(3600)
        pod = self.pods.pop((ns, name), None)
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        self._kill_execs((ns, name))
        pod["metadata"]["deletionTimestamp"] = now()
        return web.json_response(pod)

    async def _patch_pod(self, request):
        """A JSON merge patch (RFC 7386; a strategic merge patch is the same for maps) of the pod's labels and
        annotations. Anything else in the patch is refused (422): the stand-in does not model spec updates."""
        ns, name = request.match_info["ns"], request.match_info["name"]
        if (r := self._allowed(request, "patch", "pods", ns)):
            return r
        pod = self.pods.get((ns, name))
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        if request.content_type not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            return status(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})  # the real server's words
        try:
            patch = await request.json()
        except ValueError:
            return status(400, "BadRequest", "the patch is not JSON")
        meta = patch.get("metadata") if isinstance(patch, dict) else None
        if set(patch or {}) - {"metadata"} or not isinstance(meta, dict) or set(meta) - {"labels", "annotations"}:
            return status(422, "Invalid", f'Pod "{name}" is invalid: the stand-in patches metadata.labels and '
                                          f'metadata.annotations only')
        for key in ("labels", "annotations"):
            for k, v in (meta.get(key) or {}).items():
                if v is None:
                    (pod["metadata"].get(key) or {}).pop(k, None)
                elif not isinstance(v, str):
                    return status(422, "Invalid", f'Pod "{name}" is invalid: metadata.{key}: a value must be a string')
                else:
                    pod["metadata"].setdefault(key, {})[k] = v
        self.rv += 1
        pod["metadata"]["resourceVersion"] = str(self.rv)
        return web.json_response(pod)

    # ------------------------------------------------------------------ exec
    async def _exec(self, request):
        ns, name = request.match_info["ns"], request.match_info["name"]
        # a websocket upgrade is a GET; since 1.31/1.35 the API server also asks for "create" on it
        if (r := self._allowed(request, self.exec_verb, "pods/exec", ns)):
            return r
        pod = self.pods.get((ns, name))
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        if pod["status"].get("phase") != "Running":
            return status(400, "BadRequest", f"pod {name} is not running (phase {pod['status'].get('phase')})")
        spec = pod["spec"]
        cname = request.query.get("container") or spec["containers"][0]["name"]
        ctr = next((c for c in spec["containers"] if c["name"] == cname), None)
        if ctr is None:
            return status(400, "BadRequest", f"container {cname} is not valid for pod {name}")
        command = request.query.getall("command", [])
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return status(400, "BadRequest", "Upgrade request required")  # the SPDY path is not served
        offered = [x.strip() for x in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if x.strip()]
        if offered and not set(offered) & set(self.protocols):
            # what wsstream does: no common subprotocol is a failed upgrade (kubectl then tries SPDY)
            return status(400, "BadRequest", f"requested protocols {offered} are not supported; "
                                             f"this server speaks {list(self.protocols)}")
        ws = web.WebSocketResponse(protocols=self.protocols, max_msg_size=0, autoping=True)
        await ws.prepare(request)
        self.protocols_seen.append(ws.ws_protocol)
        if not command:  # no API server refuses it: the runtime does, once the stream is up
            await self._exec_end(ws, _no_command_status(ws.ws_protocol))
            return ws
        proc = await kubelet.exec_in(self.dir, self.nodes[spec["nodeName"]], pod, ctr, command)
        self.execs.setdefault((ns, name), []).append(proc)

        async def pump(stream, ch: int):
            while True:
                data = await stream.read(65536)
                if not data:
                    return
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await ws.send_bytes(bytes([ch]) + data)

        outs = asyncio.gather(pump(proc.stdout, 1), pump(proc.stderr, 2))

        async def stdin():
            async for msg in ws:
                if msg.type is not WSMsgType.BINARY or not msg.data:
                    continue
                ch, payload = msg.data[0], msg.data[1:]
                if ch == 0 and not proc.stdin.is_closing():
                    proc.stdin.write(payload)
                    with contextlib.suppress(ConnectionError):
                        await proc.stdin.drain()
                elif ch == 255 and ws.ws_protocol == V5 and payload[:1] == b"\x00":
                    proc.stdin.close()  # v5: the client closed stdin
            proc.stdin.close()  # the websocket ended: the kubelet closes the process's stdin

        reader = asyncio.ensure_future(stdin())
        await outs
        rc = await proc.wait()
        if rc < 0:  # killed by a signal: a container runtime reports 128 + the signal, as a shell does
            rc = 128 - rc
        with contextlib.suppress(ValueError):
            self.execs.get((ns, name), []).remove(proc)
        await self._exec_end(ws, _exit_status(ws.ws_protocol, command, rc))
        reader.cancel()
        return ws

    @staticmethod
    async def _exec_end(ws, st: dict) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.send_bytes(b"\x03" + json.dumps(st).encode())
        await ws.close()


def _exit_status(protocol: str | None, command: list[str], rc: int) -> dict:
    """The error channel's Status when the command ended, as the real path words it (API server and kubelet 1.37.2
    agree v5: with metadata; 1.35.4 behind it v4: without, and the command in the message)."""
    meta = {"metadata": {}} if protocol == V5 else {}
    if rc == 0:
        return {**meta, "status": "Success"}
    why = (f"command terminated with exit code {rc}" if protocol == V5
           else f"error executing command [{' '.join(command)}], exit code {rc}")
    return {**meta, "status": "Failure", "reason": "NonZeroExitCode",
            "message": f"command terminated with non-zero exit code: {why}",
            "details": {"causes": [{"reason": "ExitCode", "message": str(rc)}]}}


def _no_command_status(protocol: str | None) -> dict:
    """The error channel's Status of an exec with no command: the runtime's refusal, an InternalError (real words,
    containerd 2.4 and runc; the v5 path wraps it once more, with metadata and the cause)."""
    why = (f'error executing command in container: failed to exec in container: failed to start exec '
           f'"{uuid.uuid4().hex}{uuid.uuid4().hex}": OCI runtime exec failed: exec failed: args must not be empty')
    if protocol != V5:
        return {"status": "Failure", "message": f"Internal error occurred: {why}", "reason": "InternalError", "code": 500}
    return {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: Internal error occurred: {why}",
            "reason": "InternalError", "details": {"causes": [{"message": f"Internal error occurred: {why}"}]},
            "code": 500}

def kubelet_metrics_text(pinning_requests: int = 12, pinning_errors: int = 0, admission_requests: int = 12,
                         admission_errors: int = 0, exclusive_cpus: int | None = 4) -> str:
    """kubelet's /metrics as a real kubelet writes it (text format 0.0.4, component-base's "[ALPHA]" in HELP),
    cut to the families around the CPU and topology managers. Names, help and types from k/k
    pkg/kubelet/metrics/metrics.go (CPUManagerPinningRequestsTotal ... TopologyManagerAdmissionDuration,
    CPUManagerSharedPoolSizeMilliCores, CPUManagerExclusiveCPUsAllocationCount, CPUManagerAllocationPerNUMA:
    the last three only in newer kubelets; exclusive_cpus None leaves the exclusive gauge out, as an older
    kubelet does)."""
    def fam(name, kind, help_, lines):
        return [f"# HELP {name} [ALPHA] {help_}", f"# TYPE {name} {kind}", *lines]

    out = fam("kubelet_cgroup_manager_duration_seconds", "histogram", "Duration in seconds for cgroup manager operations. Broken down by method.",
              ['kubelet_cgroup_manager_duration_seconds_bucket{operation_type="create",le="0.005"} 9',
               'kubelet_cgroup_manager_duration_seconds_bucket{operation_type="create",le="+Inf"} 14',
               'kubelet_cgroup_manager_duration_seconds_sum{operation_type="create"} 0.213',
               'kubelet_cgroup_manager_duration_seconds_count{operation_type="create"} 14'])
    if exclusive_cpus is not None:
        out += fam("kubelet_cpu_manager_allocation_per_numa", "gauge", "Number of CPUs allocated per NUMA node",
                   [f'kubelet_cpu_manager_allocation_per_numa{{numa_node="0"}} {exclusive_cpus}',
                    'kubelet_cpu_manager_allocation_per_numa{numa_node="1"} 0'])
        out += fam("kubelet_cpu_manager_exclusive_cpu_allocation_count", "gauge",
                   "The total number of CPUs exclusively allocated to containers running on this node",
                   [f"kubelet_cpu_manager_exclusive_cpu_allocation_count {exclusive_cpus}"])
    out += fam("kubelet_cpu_manager_pinning_errors_total", "counter", "The number of cpu core allocations which required pinning failed.",
               [f"kubelet_cpu_manager_pinning_errors_total {pinning_errors}"])
    out += fam("kubelet_cpu_manager_pinning_requests_total", "counter", "The number of cpu core allocations which required pinning.",
               [f"kubelet_cpu_manager_pinning_requests_total {pinning_requests}"])
    if exclusive_cpus is not None:
        out += fam("kubelet_cpu_manager_shared_pool_size_millicores", "gauge",
                   "The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.",
                   [f"kubelet_cpu_manager_shared_pool_size_millicores {(8 - exclusive_cpus) * 1000}"])
    out += fam("kubelet_running_pods", "gauge", "Number of pods that have a running pod sandbox", ["kubelet_running_pods 7"])
    out += fam("kubelet_topology_manager_admission_duration_ms", "histogram", "Duration in milliseconds to serve a pod admission request.",
               ['kubelet_topology_manager_admission_duration_ms_bucket{le="0.05"} 3',
                f'kubelet_topology_manager_admission_duration_ms_bucket{{le="+Inf"}} {admission_requests}',
                "kubelet_topology_manager_admission_duration_ms_sum 4.2",
                f"kubelet_topology_manager_admission_duration_ms_count {admission_requests}"])
    out += fam("kubelet_topology_manager_admission_errors_total", "counter", "The number of admission request failures where resources could not be aligned.",
               [f"kubelet_topology_manager_admission_errors_total {admission_errors}"])
    out += fam("kubelet_topology_manager_admission_requests_total", "counter", "The number of admission requests where resources have to be aligned.",
               [f"kubelet_topology_manager_admission_requests_total {admission_requests}"])
    return "\n".join(out) + "\n"


def main() -> int:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from pinscope.collectors.sim.node import NodeSpec, SimNode
    from pinscope.collectors.sim.demo import demo_specs

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim", action="append", default=[], metavar="NAME",
                    help="a simulated node (the demo's nodes by their names, or any name for a small node)")
    ap.add_argument("--kubeconfig", required=True, help="write a kubeconfig for the stand-in here")
    ap.add_argument("--v4-only", action="store_true", help="offer only v4.channel.k8s.io (API servers before 1.30)")
    ap.add_argument("--plain-http", action="store_true", help="no TLS (kubectl then sends no token)")
    ap.add_argument("--log", action="store_true", help="print each request the stand-in serves")
    ap.add_argument("--start-delay", type=float, default=0.2, metavar="S",
                    help="seconds a created pod stays Pending before it runs (a slow image pull)")
    ap.add_argument("--kubelet-story", action="store_true",
                    help="what kubelet says on a troubled node: a pod rejected with TopologyAffinityError, Allocatable "
                         "cpu 7500m, pinning errors that grow by one at each read of /metrics")
    a = ap.parse_args()
    ok, why = available()
    if not ok:
        print(why, file=sys.stderr)
        return 1
    base = Path(tempfile.mkdtemp(prefix="pinscope-standin-nodes-"))
    specs = {s.hostname: s for s in demo_specs()}
    sims = []
    for name in a.sim or ["worker-1"]:
        spec = specs.get(name) or NodeSpec(hostname=name, cores=4)
        sims.append(SimNode(spec, base / name).write())
    nodes = {s.spec.hostname: s.root for s in sims}
    srv = StandIn(nodes, protocols=(V4,) if a.v4_only else (V5, V4), tls=not a.plain_http,
                  start_delay=a.start_delay).start()
    srv.log = a.log
    srv.kubeconfig(Path(a.kubeconfig))
    if a.kubelet_story:
        for name in nodes:
            srv.allocatable[name] = "7500m"
            srv.kubelet_metrics[name] = [kubelet_metrics_text(12 + i, i, 12 + i, i) for i in range(1000)]
            srv.call(lambda name=name: srv.reject_pod(f"matcher-{name}", name, "TopologyAffinityError",
                                                      "Resources cannot be allocated with Topology locality", "trading"))
    print(f"stand-in API at {srv.url}; kubeconfig {a.kubeconfig}; nodes {', '.join(nodes)}; Ctrl-C stops",
          flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        while True:  # the nodes live: their counters advance once a second, their load in slow waves
            time.sleep(1.0)
            for i, sim in enumerate(sims):
                wave = math.sin(time.monotonic() / 7.0 + i)
                sim.tick(1.0, load={t[5]: wave for t in sim.tasks if t[5] is not None})
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
