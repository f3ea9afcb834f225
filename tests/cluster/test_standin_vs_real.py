"""The stand-in API server (tests/kube_standin.py) against the real one (issue 33), for each kubelet release.

The stand-in stays for what one small node cannot show (a 96-CPU node's objects, a pod Pending for a minute,
a refusing admission hook); for every request it answers (its routes: discovery, nodes, nodes/proxy, pods
list/get/create/delete/patch, the Table kubectl asks for, pods/exec, 401 and 403), the same request goes to
the real API server (the `cluster` fixture's, with kubelet and containerd behind it) and the answers are
compared in what pinscope reads of them (collectors/kube.py, collectors/transport/kube.py, kubeexec.py): each
field present or absent alike, of the same JSON type and format (a uuid, an RFC 3339 time, a quantity, a
containerd:// id ...), enumerated values (kind, phase, QoS class, a Status's reason and code) equal, and a
Status's message equal once names are set aside. The same client pinscope uses sends every request (the
`kubernetes` package's ApiClient from pinscope's load_config; aiohttp's websocket with pinscope's TLS and
headers for exec).
"""
from __future__ import annotations

import asyncio
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes.client import ApiClient

import kube_standin
from cluster import realnode as rn
from cluster.pytest_cluster import Cluster
from helpers import need
from kube_standin import StandIn

from pinscope.collectors.kube import load_config
from pinscope.collectors.sim.node import NodeSpec, SimNode
from pinscope.collectors.transport.kubeexec import V4, V5, auth_headers, ssl_context

# the exec subprotocol the real node agrees when offered v5 and v4 (kube-apiserver 1.37.2 in front): the stand-in is
# made to speak as that node does
PROTOCOLS = {"v1.37.2": (V5, V4), "v1.35.4": (V4,)}
NOBODY = "pinscope-nobody"  # a service account bound to no role (real) / a user with no rule (stand-in)
NOBODY_USER = f"system:serviceaccount:default:{NOBODY}"


# ---- answers and their shapes ------------------------------------------------------------------------------


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Api:
    """Raw requests through the `kubernetes` client pinscope uses (its TLS, certificate or token)."""

    def __init__(self, kubeconfig: str) -> None:
        self.cfg = load_config(None, kubeconfig)
        self.client = ApiClient(self.cfg)

    def __call__(self, method: str, path: str, query: dict | None = None, body: Any = None,
                 content_type: str | None = None, accept: str = "application/json") -> Answer:
        headers = {"Accept": accept, **({"Content-Type": content_type} if content_type else {})}
        m, url, h, b, _ = self.client.param_serialize(method, path, query_params=list((query or {}).items()),
                                                      header_params=headers, body=body, auth_settings=["BearerToken"])
        r = self.client.call_api(m, url, header_params=h, body=b, _request_timeout=30)
        r.read()
        return Answer(r.status, r.getheader("Content-Type") or "", r.data)


FORMATS = (  # the formats a string field is told apart by (first match)
    ("uuid", r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
    ("time", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"),
    ("containerd-id", r"containerd://[0-9a-f]{64}"),
    ("ipv4", r"(\d{1,3}\.){3}\d{1,3}"),
    ("version", r"v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?"),
    ("quantity", r"\d+(\.\d+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?"),
)


def kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, str):
        return "str:" + next((n for n, rx in FORMATS if re.fullmatch(rx, v)), "text")
    return {list: "list", dict: "object"}.get(type(v), type(v).__name__)


_ABSENT = object()


def pick(doc: Any, path: str) -> list:
    """The values at `path` ("a.b[].c": every item of list b; "m{}": every value of map m; "m{*}": its keys,
    sorted, as one string); _ABSENT where a part is missing."""
    vals = [doc]
    for part in filter(None, re.split(r"\.|(?=\[\])|(?=\{)", path)):
        out: list = []
        for v in vals:
            if v is _ABSENT:
                out.append(v)
            elif part == "[]":
                out += v if isinstance(v, list) else [_ABSENT]
            elif part == "{}":
                out += list(v.values()) if isinstance(v, dict) else [_ABSENT]
            elif part == "{*}":
                out.append(" ".join(sorted(v)) if isinstance(v, dict) else _ABSENT)
            else:
                out.append(v.get(part, _ABSENT) if isinstance(v, dict) else _ABSENT)
        vals = out
    return vals


def shape(doc: Any, paths: list[str], values: tuple[str, ...] = ()) -> dict[str, set[str]]:
    """{path: the kinds of its values ("absent" for a missing one)}; for the paths in `values`, the values."""
    return {p: {"absent" if v is _ABSENT else (repr(v) if p in values else kind(v)) for v in pick(doc, p)}
            for p in paths}


def differences(what: str, real: dict, standin: dict) -> list[str]:
    return [f"{what}: {p}: real {sorted(real[p])}, stand-in {sorted(standin.get(p, set()))}"
            for p in real if real[p] != standin.get(p)]


STATUS_PATHS = ["kind", "apiVersion", "metadata{*}", "status", "message", "reason", "code", "details{*}",
                "details.name", "details.kind", "details.causes[]{*}", "details.causes[].reason",
                "details.causes[].message", "details.causes[].field"]
STATUS_VALUES = ("kind", "apiVersion", "metadata{*}", "status", "reason", "code", "details{*}", "details.kind",
                 "details.causes[]{*}", "details.causes[].reason", "details.causes[].message", "details.causes[].field")


def status_shape(a: Answer, names: dict[str, str] | None = None) -> dict:
    """A v1 Status body's shape and values; its message with the names of this run set aside (`names`)."""
    doc = a.json()
    out = shape(doc, STATUS_PATHS, STATUS_VALUES)
    msg = str(doc.get("message", ""))
    for name, placeholder in (names or {}).items():
        msg = msg.replace(name, placeholder)
    out["message"] = {msg}
    out["http"] = {str(a.status)}
    out["content-type"] = {a.content_type.split(";")[0]}
    return out


# ---- the two servers ---------------------------------------------------------------------------------------


@dataclass
class Pair:
    c: Cluster
    standin: StandIn
    real: Api
    fake: Api
    real_nobody: Api
    fake_nobody: Api
    real_badtoken: Api
    fake_badtoken: Api
    tag: str

    def both(self, *args, **kw) -> tuple[Answer, Answer]:
        return self.real(*args, **kw), self.fake(*args, **kw)


def _token_kubeconfig(c: Cluster, token: str, where: Path) -> str:
    """A kubeconfig for the real API server with a bearer token (no client certificate)."""
    server = json.loads(c.kubectl("config", "view", "--raw", "-o", "json").stdout)["clusters"][0]["cluster"]
    where.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "t",
        "clusters": [{"name": "c", "cluster": {"server": server["server"],
                                               "certificate-authority": server["certificate-authority"]}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}]}))
    where.chmod(0o600)
    return str(where)


@pytest.fixture(scope="module")
def pair(cluster: Cluster, tmp_path_factory):
    ok, why = kube_standin.available()
    need(ok, why)
    tmp = tmp_path_factory.mktemp("standin-vs-real")
    sim = SimNode(NodeSpec(hostname=cluster.node_name, cores=2), tmp / "node").write()
    srv = StandIn({cluster.node_name: sim.root}, protocols=PROTOCOLS[cluster.version],
                  users={"admin-token": ("admin", None), "nobody-token": (NOBODY_USER, [])}).start()
    cluster.kubectl("create", "serviceaccount", NOBODY, "-n", "default", check=False)
    token = cluster.kubectl("create", "token", NOBODY, "-n", "default", "--duration", "1h").stdout.strip()
    try:
        yield Pair(cluster, srv, Api(cluster.kubeconfig), Api(srv.kubeconfig(tmp / "standin")),
                   Api(_token_kubeconfig(cluster, token, tmp / "real-nobody")),
                   Api(srv.kubeconfig(tmp / "standin-nobody", token="nobody-token")),
                   Api(_token_kubeconfig(cluster, "no-such-token", tmp / "real-bad")),
                   Api(srv.kubeconfig(tmp / "standin-bad", token="no-such-token")),
                   uuid.uuid4().hex[:6])
    finally:
        srv.stop()
        cluster.kubectl("delete", "serviceaccount", NOBODY, "-n", "default", "--ignore-not-found", check=False)


# ---- discovery (what kubectl asks first) --------------------------------------------------------------------


def test_discovery(pair: Pair) -> None:
    diffs: list[str] = []
    r, s = pair.both("GET", "/version")
    keys = sorted(s.json())  # what the stand-in says, as the real server says it
    diffs += differences("/version", shape(r.json(), keys, ("major",)), shape(s.json(), keys, ("major",)))
    r, s = pair.both("GET", "/api")
    p = ["kind", "versions[]", "serverAddressByClientCIDRs[].clientCIDR"]
    diffs += differences("/api", shape(r.json(), p, tuple(p)), shape(s.json(), p, tuple(p)))
    r, s = pair.both("GET", "/apis")
    p = ["kind", "apiVersion"]
    diffs += differences("/apis", shape(r.json(), p, tuple(p)), shape(s.json(), p, tuple(p)))
    r, s = pair.both("GET", "/api/v1")
    p = ["kind", "groupVersion"]
    diffs += differences("/api/v1", shape(r.json(), p, tuple(p)), shape(s.json(), p, tuple(p)))
    real = {x["name"]: x for x in r.json()["resources"]}
    for res in s.json()["resources"]:
        want = real.get(res["name"])
        if want is None:
            diffs.append(f"/api/v1: the real server has no resource {res['name']}")
            continue
        for k in ("singularName", "namespaced", "kind", "shortNames"):
            if res.get(k) != want.get(k):
                diffs.append(f"/api/v1 {res['name']}.{k}: real {want.get(k)!r}, stand-in {res.get(k)!r}")
        if not set(res["verbs"]) <= set(want["verbs"]):
            diffs.append(f"/api/v1 {res['name']}.verbs: real {want['verbs']}, stand-in {res['verbs']}")
    assert not diffs, "\n".join(diffs)


# ---- nodes ----------------------------------------------------------------------------------------------------

NODE_PATHS = ["kind", "apiVersion", "metadata.name", "metadata.uid", "metadata.labels{}", "metadata.creationTimestamp",
              "metadata.resourceVersion", "status.addresses[].type", "status.addresses[].address",
              "status.allocatable.cpu", "status.capacity.cpu", "status.conditions[].type", "status.conditions[].status",
              "status.nodeInfo.kubeletVersion"]
NODE_VALUES = ("kind", "apiVersion", "metadata.name", "status.addresses[].type")


def test_nodes(pair: Pair) -> None:
    """list nodes (--kube discovery: name, labels, addresses), get node (Allocatable CPU; node/NAME's first
    request, its 404), as pinscope sends them."""
    node = pair.c.node_name
    diffs: list[str] = []
    r, s = pair.both("GET", "/api/v1/nodes", {"labelSelector": f"kubernetes.io/hostname={node}"})
    lp = ["kind", "apiVersion", "metadata.resourceVersion"] + [f"items[].{p}" for p in NODE_PATHS]
    lv = ("kind", "apiVersion") + tuple(f"items[].{p}" for p in NODE_VALUES)
    diffs += differences("list nodes", shape(r.json(), lp, lv), shape(s.json(), lp, lv))
    r, s = pair.both("GET", f"/api/v1/nodes/{node}")
    diffs += differences("get node", shape(r.json(), NODE_PATHS, NODE_VALUES), shape(s.json(), NODE_PATHS, NODE_VALUES))
    missing = f"no-such-node-{pair.tag}"
    r, s = pair.both("GET", f"/api/v1/nodes/{missing}")
    diffs += differences("get a missing node", status_shape(r), status_shape(s))
    assert not diffs, "\n".join(diffs)


# ---- kubelet's /metrics through the API server's node proxy ------------------------------------------------------

# the families pinscope reads (collectors/parse/kubelet_metrics.py)
READ_FAMILIES = ("kubelet_cpu_manager_pinning_requests_total", "kubelet_cpu_manager_pinning_errors_total",
                 "kubelet_topology_manager_admission_requests_total", "kubelet_topology_manager_admission_errors_total",
                 "kubelet_cpu_manager_exclusive_cpu_allocation_count")


def families(text: str) -> dict[str, dict]:
    """The text format's families -> {name: {"type", "help", "labels": {label names of its samples}}}."""
    out: dict[str, dict] = {}
    for line in text.splitlines():
        m = re.match(r"# (TYPE|HELP) (\S+) ?(.*)", line)
        if m:
            out.setdefault(m.group(2), {"labels": set()})[m.group(1).lower()] = m.group(3)
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s", line)
        if m:
            base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
            fam = out.get(m.group(1)) or out.get(base)
            if fam is not None:
                fam["labels"] |= set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(2) or "")) - {"le"}
    return out


def test_kubelet_metrics_through_the_node_proxy(pair: Pair, pods) -> None:
    """kubelet's /metrics (a Guaranteed pod holding a CPU: the CPU manager's per-NUMA gauge has a sample, a
    family kubelet exposes only once it has one), an unknown kubelet path, a missing node."""
    node = pair.c.node_name
    diffs: list[str] = []
    r, s = pair.both("GET", f"/api/v1/nodes/{node}/proxy/metrics", accept="*/*")
    assert (r.status, s.status) == (200, 200), (r.status, r.body[:300], s.status)
    if r.content_type.split(";")[0] != s.content_type.split(";")[0]:
        diffs.append(f"metrics content type: real {r.content_type}, stand-in {s.content_type}")
    real, fake = families(r.body.decode()), families(s.body.decode())
    for name in sorted(fake):
        if name not in real:
            diffs.append(f"metrics: the stand-in serves {name}, kubelet {pair.c.version} has no such family")
            continue
        for k in ("type", "help", "labels"):
            if real[name].get(k) != fake[name].get(k):
                diffs.append(f"metrics {name} {k}: real {real[name].get(k)!r}, stand-in {fake[name].get(k)!r}")
    for name in READ_FAMILIES:
        if name in real and name not in fake:
            diffs.append(f"metrics: kubelet {pair.c.version} has {name} (pinscope reads it), the stand-in not")
    r, s = pair.both("GET", f"/api/v1/nodes/{node}/proxy/no-such-path", accept="*/*")
    if (r.status, r.body) != (s.status, s.body):
        diffs.append(f"an unknown kubelet path: real {r.status} {r.body[:80]!r}, stand-in {s.status} {s.body[:80]!r}")
    r, s = pair.both("GET", f"/api/v1/nodes/no-such-node-{pair.tag}/proxy/metrics", accept="*/*")
    diffs += differences("the proxy to a missing node", status_shape(r), status_shape(s))
    assert not diffs, "\n".join(diffs)


# ---- pods -------------------------------------------------------------------------------------------------------

# what pinscope reads of a pod: api_node's list (uid, names, owner, resources, QoS, admission refusals, container
# ids), node/NAME's debug pod (its phase, waiting reasons, host mounts), gc (labels, heartbeat, deletion, age)
POD_PATHS = [
    "kind", "apiVersion", "metadata.name", "metadata.namespace", "metadata.uid", "metadata.creationTimestamp",
    "metadata.resourceVersion", "metadata.labels{}", "metadata.annotations{}", "metadata.ownerReferences",
    "metadata.deletionTimestamp", "spec.nodeName",
    "spec.containers[].name", "spec.containers[].resources.requests{}", "spec.containers[].resources.limits{}",
    "spec.initContainers[].name", "spec.initContainers[].resources.requests{}",
    "status.phase", "status.qosClass", "status.reason", "status.message", "status.hostIP", "status.startTime",
    "status.containerStatuses[].name", "status.containerStatuses[].containerID", "status.containerStatuses[].ready",
    "status.containerStatuses[].state{*}", "status.containerStatuses[].state.running.startedAt",
    "status.containerStatuses[].state.waiting.reason", "status.containerStatuses[].state.waiting.message",
    "status.initContainerStatuses[].name", "status.initContainerStatuses[].containerID",
    "status.initContainerStatuses[].state{*}", "status.initContainerStatuses[].state.terminated.reason",
    "status.initContainerStatuses[].state.terminated.exitCode",
    "status.ephemeralContainerStatuses",
]
POD_VALUES = ("kind", "apiVersion", "metadata.name", "metadata.namespace", "spec.nodeName", "status.phase",
              "status.qosClass", "status.reason", "status.containerStatuses[].name",
              "status.containerStatuses[].ready", "status.containerStatuses[].state{*}",
              "status.containerStatuses[].state.waiting.reason", "status.initContainerStatuses[].name",
              "status.initContainerStatuses[].state{*}", "status.initContainerStatuses[].state.terminated.reason",
              "status.initContainerStatuses[].state.terminated.exitCode")
NO_IMAGE = "localhost/pinscope/no-such-image:0"  # no registry answers: kubelet says ErrImagePull, ImagePullBackOff


def pod_shape(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc).replace('"ImagePullBackOff"', '"ErrImagePull"'))  # the same, a moment later
    return shape(doc, POD_PATHS, POD_VALUES)


def specs(c: Cluster, tag: str) -> dict[str, dict]:
    """The pods made on both servers, by role: Guaranteed (an init container, then one CPU's container),
    Burstable, BestEffort, one whose image no registry has, one with a limit and no request."""
    def one(role: str, containers: list[dict], init: list[dict] | None = None) -> dict:
        s = rn.spec(c, f"{role}-{tag}", containers, init)
        s["metadata"]["labels"] = {"pinscope-test": f"standin-vs-real-{tag}"}
        return s
    bad = rn.box(c, "app")
    bad["image"] = NO_IMAGE
    capped = rn.box(c, "capped")
    capped["resources"] = {"limits": {"memory": "32Mi"}}  # the API server defaults the request to the limit
    return {
        "guaranteed": one("g", [rn.box(c, "work", "1", "64Mi")], [rn.box(c, "init", "1", "32Mi", command=["true"])]),
        "burstable": one("b", [rn.box(c, "web", memory="16Mi", limits=False)]),
        "besteffort": one("e", [rn.box(c, "idle")]),
        "no-image": one("i", [bad]),
        "limits-only": one("l", [capped]),
    }


def _settled(doc: dict, role: str) -> bool:
    st = doc.get("status") or {}
    if role == "no-image":
        return any((cs.get("state") or {}).get("waiting", {}).get("reason") in ("ErrImagePull", "ImagePullBackOff")
                   for cs in st.get("containerStatuses") or [])
    return st.get("phase") == "Running" and all(cs.get("ready") for cs in st.get("containerStatuses") or [])


@pytest.fixture(scope="module")
def pods(pair: Pair):
    """The same pods created on both servers, each settled (running, or refused its image) -> {role: (the
    create answers, the settled pods)}; deleted at the end."""
    made = specs(pair.c, pair.tag)
    created: dict[str, tuple[Answer, Answer]] = {}
    try:
        for role, s in made.items():
            created[role] = pair.both("POST", "/api/v1/namespaces/default/pods", body=s,
                                      content_type="application/json")
            assert [a.status for a in created[role]] == [201, 201], [a.body[:300] for a in created[role]]
        settled = {}
        for role, s in made.items():
            name = s["metadata"]["name"]
            got = [rn.poll(f"{role} pod {name} on the {side} server to settle",
                           lambda api=api, role=role, name=name: (
                               d if _settled(d := api("GET", f"/api/v1/namespaces/default/pods/{name}").json(), role)
                               else None))
                   for side, api in (("real", pair.real), ("stand-in", pair.fake))]
            settled[role] = (got[0], got[1])
        yield made, created, settled
    finally:
        for s in made.values():
            pair.fake("DELETE", f"/api/v1/namespaces/default/pods/{s['metadata']['name']}")
        rn.delete(pair.c, list(made.values()))


def test_pods_created_listed_and_got(pair: Pair, pods) -> None:
    """create (the answer), get, list on the node (api_node's request) and list by label (node/NAME, gc): the
    fields pinscope reads, pod by pod."""
    made, created, settled = pods
    diffs: list[str] = []
    for role, (r, s) in created.items():
        diffs += differences(f"create {role}", pod_shape(r.json()), pod_shape(s.json()))
    for role, (r, s) in settled.items():
        diffs += differences(f"get {role}", pod_shape(r), pod_shape(s))
    node = pair.c.node_name
    for what, path, query in (
            ("list pods on the node", "/api/v1/pods", {"fieldSelector": f"spec.nodeName={node}"}),
            ("list pods by label", "/api/v1/namespaces/default/pods",
             {"labelSelector": f"pinscope-test=standin-vs-real-{pair.tag}", "fieldSelector": f"spec.nodeName={node}"})):
        r, s = pair.both("GET", path, query)
        lp = ["kind", "apiVersion", "metadata.resourceVersion"]
        diffs += differences(what, shape(r.json(), lp, lp[:2]), shape(s.json(), lp, lp[:2]))
        real = {p["metadata"]["name"]: p for p in r.json()["items"]}
        fake = {p["metadata"]["name"]: p for p in s.json()["items"]}
        for role, spec in made.items():
            name = spec["metadata"]["name"]
            if name not in real or name not in fake:
                diffs.append(f"{what}: {name} listed by real {name in real}, by the stand-in {name in fake}")
                continue
            if _settled(real[name], role) and _settled(fake[name], role):
                diffs += differences(f"{what}: {role}", pod_shape(real[name]), pod_shape(fake[name]))
    assert not diffs, "\n".join(diffs)


def test_pod_errors(pair: Pair, pods) -> None:
    """The refusals pinscope turns into one line (collectors/kube.py _request, _status_message): their HTTP
    code, and the v1 Status body (its reason, details and message)."""
    made = pods[0]
    name = made["besteffort"]["metadata"]["name"]
    missing, ns = f"no-such-pod-{pair.tag}", f"no-such-ns-{pair.tag}"
    names = {name: "POD", missing: "MISSING", ns: "NS"}
    pod_url = "/api/v1/namespaces/default/pods"
    cases = [
        ("create an existing pod", ("POST", pod_url), {"body": made["besteffort"], "content_type": "application/json"}),
        ("create in a missing namespace", ("POST", f"/api/v1/namespaces/{ns}/pods"),
         {"body": {**made["besteffort"], "metadata": {"name": name}}, "content_type": "application/json"}),
        ("create with another namespace in the body", ("POST", f"/api/v1/namespaces/{ns}/pods"),
         {"body": made["besteffort"], "content_type": "application/json"}),
        ("create without a name", ("POST", pod_url),
         {"body": {**made["besteffort"], "metadata": {"namespace": "default"}}, "content_type": "application/json"}),
        # what the kubernetes client sends a body as when told no type (a 415 real servers gave pinscope once)
        ("create from a body of no type", ("POST", pod_url),
         {"body": json.dumps(made["besteffort"]), "content_type": "application/octet-stream"}),
        ("get a missing pod", ("GET", f"{pod_url}/{missing}"), {}),
        ("patch a missing pod", ("PATCH", f"{pod_url}/{missing}"),
         {"body": {"metadata": {"annotations": {"a": "b"}}}, "content_type": "application/merge-patch+json"}),
        ("patch in an unknown format", ("PATCH", f"{pod_url}/{name}"),
         {"body": json.dumps({"metadata": {"annotations": {"a": "b"}}}), "content_type": "application/octet-stream"}),
        ("delete a missing pod", ("DELETE", f"{pod_url}/{missing}"), {}),
    ]
    diffs: list[str] = []
    for what, (method, path), kw in cases:
        r, s = pair.both(method, path, **kw)
        diffs += differences(what, status_shape(r, names), status_shape(s, names))
    assert not diffs, "\n".join(diffs)


def test_heartbeat_patch_and_table(pair: Pair, pods) -> None:
    """node/NAME's heartbeat (a JSON merge patch of an annotation: the answer's annotations, resourceVersion),
    and the Table `kubectl get pods` asks for."""
    from pinscope.collectors.transport.kube import HEARTBEAT, _utc_now

    made = pods[0]
    name = made["besteffort"]["metadata"]["name"]
    beat = _utc_now()
    r, s = pair.both("PATCH", f"/api/v1/namespaces/default/pods/{name}",
                     body={"metadata": {"annotations": {HEARTBEAT: beat}}}, content_type="application/merge-patch+json")
    p = ["kind", "metadata.annotations{*}", "metadata.annotations{}", "metadata.resourceVersion"]
    diffs = differences("patch the heartbeat", {**shape(r.json(), p, p[:2]), "http": {str(r.status)}},
                        {**shape(s.json(), p, p[:2]), "http": {str(s.status)}})
    assert r.json()["metadata"]["annotations"][HEARTBEAT] == s.json()["metadata"]["annotations"][HEARTBEAT] == beat
    table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    r, s = pair.both("GET", "/api/v1/namespaces/default/pods",
                     {"labelSelector": f"pinscope-test=standin-vs-real-{pair.tag}"}, accept=table)
    p = ["kind", "apiVersion", "rows[].object.kind", "rows[].object.apiVersion", "rows[].object.metadata.name"]
    diffs += differences("the pods' Table", shape(r.json(), p, tuple(p[:4])), shape(s.json(), p, tuple(p[:4])))
    real_cols = [(c["name"], c["type"], c["format"], c["priority"]) for c in r.json()["columnDefinitions"]]
    fake_cols = [(c["name"], c["type"], c["format"], c["priority"]) for c in s.json()["columnDefinitions"]]
    if [c for c in real_cols if c in fake_cols] != fake_cols:
        diffs.append(f"the Table's columns: real {real_cols}, stand-in {fake_cols}")
    for side, doc, cols in (("real", r.json(), real_cols), ("stand-in", s.json(), fake_cols)):
        if any(len(row["cells"]) != len(cols) for row in doc["rows"]):
            diffs.append(f"the Table's rows ({side}): a row's cells do not match its columns")
    assert not diffs, "\n".join(diffs)


def test_a_pod_the_kubelet_refused(pair: Pair) -> None:
    """A pod kubelet refused at admission (ADMISSION_REJECTED reads its phase, reason, message, QoS class): the
    real kubelet's refusal, and the stand-in's reject_pod given the same reason and words."""
    c = pair.c
    s = rn.spec(c, f"r-{pair.tag}", [rn.box(c, "app", str(len(rn.online_cpus()) + 1), "1Gi")])
    del s["metadata"]["labels"]  # as the stand-in's reject_pod makes it: container app, its CPUs and 1Gi
    name = s["metadata"]["name"]
    assert pair.real("POST", "/api/v1/namespaces/default/pods", body=s, content_type="application/json").status == 201
    try:
        real = c.wait_pod(name, phase="Failed", timeout=rn.DEADLINE)
        st = real["status"]
        prefix = "Pod was rejected: "
        assert st["message"].startswith(prefix), st
        res = s["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        pair.standin.call(lambda: pair.standin.reject_pod(name, c.node_name, st["reason"], st["message"][len(prefix):],
                                                          cpu=res))
        fake = pair.fake("GET", f"/api/v1/namespaces/default/pods/{name}").json()
        diffs = differences("a refused pod", pod_shape(real), pod_shape(fake))
        assert not diffs, "\n".join(diffs)
    finally:
        c.delete_pod(name)
        pair.fake("DELETE", f"/api/v1/namespaces/default/pods/{name}")


def test_delete_answers(pair: Pair) -> None:
    """DELETE of a running pod (node/NAME's last request, gc's): the answer pinscope reads (its code, a Pod
    being deleted)."""
    c = pair.c
    s = rn.spec(c, f"d-{pair.tag}", [rn.box(c, "idle")])
    name = s["metadata"]["name"]
    for api in (pair.real, pair.fake):
        assert api("POST", "/api/v1/namespaces/default/pods", body=s, content_type="application/json").status == 201
    c.wait_pod(name)
    rn.poll("the stand-in's pod to run",
            lambda: pair.fake("GET", f"/api/v1/namespaces/default/pods/{name}").json()["status"]["phase"] == "Running")
    try:
        r, f = pair.both("DELETE", f"/api/v1/namespaces/default/pods/{name}")
        p = ["kind", "metadata.name", "metadata.deletionTimestamp"]
        diffs = differences("delete a running pod", {**shape(r.json(), p, p[:2]), "http": {str(r.status)}},
                            {**shape(f.json(), p, p[:2]), "http": {str(f.status)}})
        assert not diffs, "\n".join(diffs)
    finally:
        c.delete_pod(name)


# ---- pods/exec --------------------------------------------------------------------------------------------------


async def _exec(api: Api, pod: str, container: str, command: list[str], protocols=(V5, V4)) -> dict:
    """One exec over the websocket as kubeexec.py opens it -> {protocol, stdout, stderr, status} or
    {handshake: HTTP code} when the upgrade is refused."""
    from pinscope.collectors.transport.kubeexec import exec_url

    url = exec_url(api.cfg, "default", pod, container, command).replace("https:", "wss:", 1)
    got: dict[int, bytes] = {1: b"", 2: b"", 3: b""}
    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(url, protocols=protocols, headers=auth_headers(api.cfg),
                                          ssl=ssl_context(api.cfg)) as ws:
                if ws.protocol == V5:
                    try:
                        await ws.send_bytes(bytes([255, 0]))  # stdin closed: nothing to send
                    except aiohttp.ClientConnectionResetError:
                        pass  # the real server already ended the stream (an exec that fails at once): read what came
                async for msg in ws:
                    if msg.type is aiohttp.WSMsgType.BINARY and msg.data:
                        got[msg.data[0]] = got.get(msg.data[0], b"") + msg.data[1:]
                return {"protocol": ws.protocol, "stdout": got[1], "stderr": got[2],
                        "status": json.loads(got[3]) if got[3] else None}
        except aiohttp.WSServerHandshakeError as err:
            return {"handshake": err.status}


EXEC_PATHS = ["{*}", "metadata{*}", "status", "reason", "message", "code", "details{*}", "details.causes[]{*}",
              "details.causes[].reason", "details.causes[].message"]


def exec_status(st: dict | None) -> dict:
    """The error channel's Status, its values; a runtime's exec id in a message set aside."""
    text = re.sub(r"[0-9a-f]{64}", "ID", json.dumps(st or {}))
    return shape(json.loads(text), EXEC_PATHS, tuple(EXEC_PATHS))


def test_exec(pair: Pair, pods) -> None:
    """The exec stream node/NAME speaks: the subprotocol agreed (v5 offered first; v4 alone), stdout and
    stderr, the Status on the error channel (success; a non-zero exit, whose message pinscope shows), and
    the upgrade refused for a missing pod, a missing command, a user without pods/exec."""
    made = pods[0]
    name = made["guaranteed"]["metadata"]["name"]
    cases = [
        ("success", pair.real, pair.fake, (name, "work", ["sh", "-c", "echo out; echo err >&2"]), (V5, V4)),
        ("exit 3", pair.real, pair.fake, (name, "work", ["sh", "-c", "echo out; exit 3"]), (V5, V4)),
        ("exit 3 on v4", pair.real, pair.fake, (name, "work", ["sh", "-c", "exit 3"]), (V4,)),
        ("a missing pod", pair.real, pair.fake, (f"no-such-pod-{pair.tag}", "work", ["true"]), (V5, V4)),
        ("no command", pair.real, pair.fake, (name, "work", []), (V5, V4)),
        ("a user without pods/exec", pair.real_nobody, pair.fake_nobody, (name, "work", ["true"]), (V5, V4)),
    ]
    # the subprotocol a 1.37 API server agrees in front of a 1.35.4 kubelet: v4 in some runs here, v5 in others
    # (CI): the stand-in offers what the real one agreed this time, and the rest is compared as it words it
    agreed = asyncio.run(_exec(pair.real, *cases[0][3], protocols=(V5, V4))).get("protocol")
    offered = pair.standin.protocols
    pair.standin.protocols = (V5, V4) if agreed == V5 else (V4,)
    diffs: list[str] = []
    try:
        diffs += _exec_cases(cases)
    finally:
        pair.standin.protocols = offered
    assert not diffs, "\n".join(diffs)


def _exec_cases(cases) -> list[str]:
    diffs: list[str] = []
    for what, real_api, fake_api, args, protocols in cases:
        r = asyncio.run(_exec(real_api, *args, protocols=protocols))
        for _ in range(2 if not args[2] else 0):
            # an exec with no command: the real server's error channel sometimes closes before kubelet's
            # InternalError is written (seen once in many runs, 1.35.4 behind the 1.37 API server): a race
            # of the real pair, not the Status's shape; asked again, at most twice, before comparing
            if r.get("status") is not None or "handshake" in r:
                break
            r = asyncio.run(_exec(real_api, *args, protocols=protocols))
        f = asyncio.run(_exec(fake_api, *args, protocols=protocols))
        for k in ("handshake", "protocol", "stdout", "stderr"):
            if r.get(k) != f.get(k):
                diffs.append(f"exec {what}: {k}: real {r.get(k)!r}, stand-in {f.get(k)!r}")
        if r.get("status") or f.get("status"):
            a, b = (exec_status(x.get("status")) for x in (r, f))
            diffs += differences(f"exec {what}: the error channel's Status", a, b)
    return diffs


# ---- authentication and RBAC ---------------------------------------------------------------------------------


def test_unauthenticated_and_forbidden(pair: Pair, pods) -> None:
    """401 for a token nobody issued; 403 for a user bound to no role, for each request pinscope sends (its
    message names the user, the verb and the resource: pinscope shows it)."""
    node = pair.c.node_name
    name = pods[0]["besteffort"]["metadata"]["name"]
    names = {name: "POD"}
    diffs: list[str] = []
    r, s = pair.real_badtoken("GET", "/api/v1/nodes"), pair.fake_badtoken("GET", "/api/v1/nodes")
    diffs += differences("a token nobody issued", status_shape(r), status_shape(s))
    pod = "/api/v1/namespaces/default/pods"
    for what, method, path, kw in (
            ("list nodes", "GET", "/api/v1/nodes", {}),
            ("get a node", "GET", f"/api/v1/nodes/{node}", {}),
            ("get nodes/proxy", "GET", f"/api/v1/nodes/{node}/proxy/metrics", {}),
            ("list pods on the node", "GET", "/api/v1/pods", {"query": {"fieldSelector": f"spec.nodeName={node}"}}),
            ("list pods in a namespace", "GET", pod, {}),
            ("get a pod", "GET", f"{pod}/{name}", {}),
            ("create a pod", "POST", pod, {"body": pods[0]["besteffort"], "content_type": "application/json"}),
            ("patch a pod", "PATCH", f"{pod}/{name}",
             {"body": {"metadata": {"annotations": {"a": "b"}}}, "content_type": "application/merge-patch+json"}),
            ("delete a pod", "DELETE", f"{pod}/{name}", {})):
        r, s = pair.real_nobody(method, path, **kw), pair.fake_nobody(method, path, **kw)
        diffs += differences(f"403 {what}", status_shape(r, names), status_shape(s, names))
    assert not diffs, "\n".join(diffs)
