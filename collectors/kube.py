"""`--kube`: nodes from the Kubernetes API (the `kubernetes` client: kubeconfig or in-cluster), reached
over SSH by InternalIP or a host template; pods enriched with API data where the API answers (owner
workload, requests and limits, QoS). The node's own files stay the truth for CPUs: the API only adds
names and intent, and an API that is down degrades to node-local names, with a notice.

`api_node` is one API round for a node (ApiNode): its pods and those kubelet rejected at admission, its
Allocatable CPU, kubelet's own metrics through the API server's node proxy; each part fails on its own, as
one line, never as an exception. `ApiWindow` holds the last two rounds (findings/api.py judges them).

Responses are read raw (`_preload_content=False`) and parsed here, so a client release that changes
its generated models does not break pinscope.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from . import kubefiles
from .errors import PinscopeError
from .inventory import Target, address
from .parse.kubelet_metrics import KubeletMetrics, parse_kubelet_metrics


class KubeError(PinscopeError):
    """The Kubernetes API did not answer, or answered something we cannot use."""


@dataclass(frozen=True)
class ApiContainer:
    name: str
    requests: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ApiPod:
    uid: str
    namespace: str
    name: str
    qos: str | None
    owner: str | None  # "ReplicaSet/web-5c8d" (the first ownerReference)
    containers: tuple = ()
    ids: dict = field(default_factory=dict)  # container id (no "containerd://") -> container name
    phase: str | None = None  # status.phase (Pending, Running, Succeeded, Failed), None when not said
    deleting: bool = False  # metadata.deletionTimestamp is set: kubelet is asked to terminate it
    ephemeral: tuple[str, ...] = ()  # ephemeral containers' names (kubectl debug; spec, or status): no resources of their own


@dataclass(frozen=True, slots=True)
class Rejected:
    """A pod kubelet refused at admission (status.phase Failed, status.reason one of ADMISSION_REASONS)."""

    uid: str
    namespace: str
    name: str
    reason: str
    message: str  # kubelet's own words (status.message), at most MESSAGE_CAP characters, raw: escaped when shown


@dataclass(frozen=True, slots=True)
class ApiNode:
    """What one API round says of a node. Each part may fail on its own (RBAC allows pods but not nodes/proxy,
    a kubelet that does not answer its proxy): its value is then None and its `*_error` one line why."""

    node: str
    t: float  # time.monotonic() when the round ended
    pods: dict | None = None  # uid -> ApiPod (as node_pods gives), None when the list failed
    rejected: tuple[Rejected, ...] = ()
    pods_error: str | None = None
    allocatable_cpu: str | None = None  # status.allocatable.cpu as the API gives it ("3500m", "4")
    node_error: str | None = None
    metrics: KubeletMetrics | None = None
    metrics_error: str | None = None
    notes: tuple[str, ...] = ()  # what was read only in part (pod items that are not pods)
    answered: bool = True  # False: the API did not answer at all (no kubeconfig, unreachable)
    kubelet_version: str | None = None  # status.nodeInfo.kubeletVersion ("v1.37.2"), None when not said

    @property
    def problems(self) -> tuple[str, ...]:
        """Every part that failed or was read in part, one line each."""
        said = (self.pods_error, self.node_error, self.metrics_error,
                f"kubelet metrics: {self.metrics.problem}" if self.metrics and self.metrics.problem else None)
        return tuple(x for x in said if x) + self.notes


@dataclass(frozen=True, slots=True)
class ApiWindow:
    """The last API round of a node and the one before (None after the first): kubelet's counters grow
    over the window between them."""

    now: ApiNode
    before: ApiNode | None = None

    @property
    def seconds(self) -> float | None:
        return self.now.t - self.before.t if self.before is not None else None

    def next(self, node: ApiNode) -> ApiWindow:
        return ApiWindow(node, self.now)


def container_ids(status: dict) -> dict:
    """status.{init,ephemeral,}containerStatuses[].containerID ("<runtime>://<id>") -> {id: name}."""
    out = {}
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            cid = str(cs.get("containerID") or "").rpartition("://")[2]
            if cid and cs.get("name"):
                out[cid] = str(cs["name"])
    return out


_CONFIGS: dict = {}


def load_config(context: str | None = None, kubeconfig: str | None = None):
    """A `kubernetes.client.Configuration` from the kubeconfig (its current or the given context) or, inside
    a pod with neither given, the service account. Loaded once per (context, file): an exec plugin's
    token is refreshed by the configuration's own hook when it expires."""
    key = (context, kubeconfig)
    if key in _CONFIGS:
        return _CONFIGS[key]
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError as err:  # declared dependency; say so plainly if it is missing
        raise KubeError("the Kubernetes API needs the 'kubernetes' package") from err
    cfg = client.Configuration()
    try:
        if kubeconfig or context or not _in_cluster():
            kubefiles.load_kube_config(config, cfg, kubeconfig, context)  # credentials never left on disk
        else:
            config.load_incluster_config(client_configuration=cfg)
    except (ConfigException, OSError, TypeError, ValueError) as err:
        raise KubeError(f"Kubernetes API: no usable kubeconfig ({err})") from err
    _CONFIGS[key] = cfg
    return cfg


def _api(context: str | None, kubeconfig: str | None = None):
    from kubernetes import client

    return client.CoreV1Api(client.ApiClient(load_config(context, kubeconfig)))


def _in_cluster() -> bool:
    import os

    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _get(call, what: str, timeout: float):
    try:
        resp = call(_preload_content=False, _request_timeout=timeout)
        return json.loads(resp.data)
    except Exception as err:  # urllib3, ApiException, JSON: all "the API did not answer"
        raise KubeError(f"Kubernetes API: {what}: {type(err).__name__}: {str(err)[:200]}") from err


class Refused(KubeError):
    """The API answered no: RBAC (403), admission policy or quota (403, 400, 422), bad credentials (401)."""


class NotFound(KubeError):
    pass


class ApiUnreachable(KubeError):
    pass


class Forbidden(Refused):
    """403: RBAC (or an admission policy) said no."""


def call(fn, verb: str, resource: str, in_ns: str | None = None, timeout: float = 10.0, **kw) -> dict:
    """One request through the kubernetes client, read raw (no generated models). Every way it can fail is
    one plain line naming the RBAC verb and resource that was asked for, and the API's own reason."""
    what = f"{verb} {resource}" + (f" in namespace {in_ns}" if in_ns else "")
    try:
        return _request(fn, what, timeout, lambda resp: json.loads(resp.data) if resp.data else {}, **kw)
    except ValueError as err:
        raise KubeError(f"Kubernetes API: {what}: the answer is not JSON") from err


def _request(fn, what: str, timeout: float, read, **kw):
    """`read(response)` of one raw request; the API's refusals and silences as the KubeError family."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        return read(fn(_preload_content=False, _request_timeout=timeout, **kw))
    except ApiException as err:
        msg = " ".join(_status_message(err.body, err.reason).split())[:400]
        if err.status == 404:
            raise NotFound(f"Kubernetes API: {what}: not found ({msg})") from err
        if err.status == 401:
            raise Refused(f"Kubernetes API refused {what}: not authenticated (401: {msg})") from err
        if err.status == 403:
            raise Forbidden(f"Kubernetes API refused {what} (403: {msg})") from err
        if err.status in (400, 409, 422):
            raise Refused(f"Kubernetes API refused {what} ({err.status}: {msg})") from err
        raise KubeError(f"Kubernetes API: {what}: {err.status} {msg}") from err
    except (HTTPError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise ApiUnreachable(f"Kubernetes API did not answer {what} ({type(reason).__name__}: {str(reason)[:200]})") from err


def _status_message(body, default) -> str:
    """The `message` of a v1 Status body (what kubectl prints after 'Error from server')."""
    try:
        doc = json.loads(body)
        return str(doc.get("message") or doc.get("reason") or default)
    except (TypeError, ValueError, AttributeError):
        return str(body or default)


def discover(context: str | None = None, selector: str | None = None, host_template: str = "{ip}",
             user: str | None = None, kubeconfig: str | None = None, timeout: float = 10.0) -> list[Target]:
    api = _api(context, kubeconfig)
    doc = _get(lambda **kw: api.list_node(label_selector=selector or None, **kw), "list nodes", timeout)
    out = []
    for n in doc.get("items") or []:
        meta = n.get("metadata") or {}
        name = meta.get("name")
        if not name:
            continue
        addrs = {a.get("type"): a.get("address") for a in (n.get("status") or {}).get("addresses") or []}
        ip = addrs.get("InternalIP") or addrs.get("ExternalIP") or addrs.get("Hostname") or name
        try:
            host = host_template.format(name=name, ip=ip)
        except (KeyError, IndexError, ValueError) as err:
            raise KubeError(f"--host-template {host_template!r}: {err}") from err
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        out.append(Target(name, address(host, user, None), labels=labels))
    return out


def node_pods(node: str, context: str | None = None, kubeconfig: str | None = None,
              timeout: float = 5.0) -> dict[str, ApiPod]:
    """The pods the API places on `node`, by uid. KubeError when the answer is no list, or holds an item not
    shaped like a pod: its callers take a pod it lacks as gone (fit frees its CPUs), so a list with holes
    must not count as one."""
    api = _api(context, kubeconfig)
    doc = _get(lambda **kw: api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}", **kw),
               f"list pods on {node}", timeout)
    pods, _rejected, bad = _pods(doc)
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list) or bad:
        why = f"{bad} item(s) not shaped like a pod" if bad else "the answer holds no list of pods"
        raise KubeError(f"Kubernetes API: list pods on {node}: {why}: which pods are on the node is not known")
    return pods


def _pods(doc) -> tuple[dict[str, ApiPod], tuple[Rejected, ...], int]:
    """A PodList -> (pods by uid, those kubelet rejected at admission, how many items could not be read).
    An item that is not shaped like a pod (a status that is a string, a name that is a list) is counted and
    skipped: one bad object must not hide the others."""
    out: dict[str, ApiPod] = {}
    rejected: list[Rejected] = []
    bad = 0
    items = doc.get("items") if isinstance(doc, dict) else None
    for p in items if isinstance(items, list) else []:
        try:
            ap, rej, mirror = _pod(p)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError):  # a shape no API server sends
            bad += 1
            continue
        if ap is None:
            continue
        out[ap.uid] = ap
        if rej is not None:
            rejected.append(rej)
        if mirror:
            out.setdefault(mirror, ap)
    return out, tuple(rejected), bad


def _pod(p: dict) -> tuple[ApiPod | None, Rejected | None, str | None]:
    """One PodList item -> (the pod, its admission rejection or None, its static pod's manifest hash or None)."""
    meta = p.get("metadata") or {}
    uid = meta.get("uid")
    if not uid:
        return None, None, None
    # a static pod's mirror has an API uid of its own; the node knows the pod by the manifest hash
    # (k/k pkg/kubelet/types/pod_update.go ConfigMirrorAnnotationKey)
    mirror = (meta.get("annotations") or {}).get("kubernetes.io/config.mirror")
    owners = meta.get("ownerReferences") or []
    owner = f"{owners[0].get('kind')}/{owners[0].get('name')}" if owners else None
    spec = p.get("spec") or {}
    ctrs = []
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests"), res.get("limits")
        ctrs.append(ApiContainer(str(c.get("name")), dict(req) if isinstance(req, dict) else {},
                                 dict(lim) if isinstance(lim, dict) else {}))
    status = p.get("status") or {}
    phase = status.get("phase")
    ephemeral = tuple(dict.fromkeys(str(c.get("name")) for c in (spec.get("ephemeralContainers") or [])
                                    + (status.get("ephemeralContainerStatuses") or []) if isinstance(c, dict)))
    ap = ApiPod(str(uid), str(meta.get("namespace")), str(meta.get("name")),
                status.get("qosClass"), owner, tuple(ctrs), container_ids(status),
                phase if isinstance(phase, str) else None, meta.get("deletionTimestamp") is not None, ephemeral)
    reason = status.get("reason")
    rejected = None
    if status.get("phase") == "Failed" and isinstance(reason, str) and admission_reason(reason):
        rejected = Rejected(ap.uid, ap.namespace, ap.name, reason, str(status.get("message") or "")[:MESSAGE_CAP])
    return ap, rejected, str(mirror) if mirror else None


# The reasons kubelet writes into a pod's status.reason when it refuses the pod at admission (the pod is then
# status.phase Failed, for good: kubelet never retries it):
#   pkg/kubelet/lifecycle/predicate.go        PodOSSelectorNodeLabelDoesNotMatch, PodOSNotSupported,
#       InvalidNodeInfo, InitContainerRestartPolicyForbidden, SupplementalGroupsPolicyNotSupported,
#       UnexpectedAdmissionError, UnknownReason, UnexpectedPredicateFailureType; InsufficientResourcePrefix
#       "OutOf" + the resource (OutOfcpu, OutOfmemory, OutOfephemeral-storage, OutOfpods, OutOf<extended>);
#       generalFilter's predicate names: NodeName, NodePorts, NodeAffinity, TaintToleration
#   pkg/kubelet/cm/topologymanager/topology_manager.go   ErrorTopologyAffinity = "TopologyAffinityError"
#   pkg/kubelet/cm/cpumanager/policy_static.go           ErrorSMTAlignment = "SMTAlignmentError"
#   pkg/kubelet/cm/admission/errors.go                   ErrorReasonUnexpected = "UnexpectedAdmissionError",
#       PodLevelResourcesIncompatible
# Not "Evicted" nor "DeadlineExceeded": a pod that ran and was then evicted or timed out says the same.
ADMISSION_REASONS = frozenset({
    "TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError", "PodLevelResourcesIncompatible",
    "PodOSSelectorNodeLabelDoesNotMatch", "PodOSNotSupported", "InvalidNodeInfo",
    "InitContainerRestartPolicyForbidden", "SupplementalGroupsPolicyNotSupported", "UnknownReason",
    "UnexpectedPredicateFailureType", "NodeName", "NodePorts", "NodeAffinity", "TaintToleration"})
MESSAGE_CAP = 1000  # characters of kubelet's message kept (a message is a line; an API answer is not bounded)


def admission_reason(reason: str) -> bool:
    """Is this status.reason one kubelet gives a pod it refused at admission?"""
    return reason in ADMISSION_REASONS or (reason.startswith("OutOf") and len(reason) > 5)


METRICS_CAP = 4 << 20  # bytes of kubelet's /metrics read (a real one is some hundred KiB)
_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,2})?")
_SUFFIX = {"m": Decimal("0.001"), "": Decimal(1), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6,
           "G": Decimal(10) ** 9, "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18}


def cpu_millis(q: str) -> Decimal | None:
    """A CPU quantity as the API writes it ("3500m", "4", "3.5", "2e3") -> millicores; None if it is none."""
    m = _QUANTITY.fullmatch(q.strip()) if len(q) <= 40 else None
    if m is None:
        return None
    try:
        suffix = m.group(2) or ""
        scale = _SUFFIX[suffix] if suffix in _SUFFIX else Decimal(10) ** int(suffix[1:])
        return Decimal(m.group(1)) * scale * 1000
    except (InvalidOperation, ValueError):
        return None


def api_node(node: str, context: str | None = None, kubeconfig: str | None = None, timeout: float = 5.0,
             cap: int = METRICS_CAP) -> ApiNode:
    """One API round for `node`: its pods and those kubelet rejected (list pods), its Allocatable CPU (get
    nodes), kubelet's metrics through the API server's node proxy (get nodes/proxy). Never raises: each part
    that fails is one line in the result, and an API that does not answer the first request is not asked
    the others (three timeouts per node and round would say nothing more)."""
    try:
        api = _api(context, kubeconfig)
    except KubeError as err:
        return ApiNode(node, time.monotonic(), pods_error=str(err), node_error=str(err),
                       metrics_error=f"kubelet metrics: {err}", answered=False)
    try:
        doc = call(lambda **kw: api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}", **kw),
                   "list", "pods", timeout=timeout)
    except ApiUnreachable as err:
        return ApiNode(node, time.monotonic(), pods_error=str(err), node_error=str(err),
                       metrics_error=f"kubelet metrics: {err}", answered=False)
    except KubeError as err:
        pods: dict | None = None
        rejected: tuple[Rejected, ...] = ()
        bad = 0
        pods_error: str | None = str(err)
    else:
        (pods, rejected, bad), pods_error = _pods(doc), None
    notes = (f"Kubernetes API: list pods: {bad} item(s) are not shaped like pods (skipped)",) if bad else ()
    ndoc: dict | None = None
    cpu: str | None = None
    try:
        ndoc = call(lambda **kw: api.read_node(node, **kw), "get", "nodes", timeout=timeout)
    except KubeError as err:
        node_error: str | None = str(err)
    else:
        cpu, node_error = _allocatable(ndoc, node)
    metrics, metrics_error = _kubelet_metrics(api, node, timeout, cap)
    return ApiNode(node, time.monotonic(), pods, rejected, pods_error, cpu, node_error, metrics=metrics,
                   metrics_error=metrics_error, notes=notes, kubelet_version=kubelet_version_of(ndoc))


_VERSION = re.compile(r"v?[0-9]+\.[0-9]+(\.[0-9]+)?([-+][0-9A-Za-z.+-]*)?")


def kubelet_version_of(doc) -> str | None:
    """A Node object's status.nodeInfo.kubeletVersion ("v1.37.2", "v1.35.4+k3s1", "v1.36.3-eks-a1b2c3"), kept
    only when it is shaped like a release (at most 64 characters): anything else is no version."""
    st = doc.get("status") if isinstance(doc, dict) else None
    info = st.get("nodeInfo") if isinstance(st, dict) else None
    v = info.get("kubeletVersion") if isinstance(info, dict) else None
    return v if isinstance(v, str) and len(v) <= 64 and _VERSION.fullmatch(v) else None


def node_kubelet_version(node: str, context: str | None = None, kubeconfig: str | None = None,
                         timeout: float = 5.0) -> tuple[str | None, str | None]:
    """(the node's kubelet release as the API says it, None and why it is not known). Never raises."""
    try:
        api = _api(context, kubeconfig)
        doc = call(lambda **kw: api.read_node(node, **kw), "get", "nodes", timeout=timeout)
    except KubeError as err:
        return None, str(err)
    v = kubelet_version_of(doc)
    return (v, None) if v else (None, f"Kubernetes API: nodes/{node} says no kubelet release (status.nodeInfo.kubeletVersion)")


def _allocatable(doc, node: str) -> tuple[str | None, str | None]:
    """The node's status.allocatable.cpu, or why it is not known."""
    st = doc.get("status") if isinstance(doc, dict) else None
    alloc = st.get("allocatable") if isinstance(st, dict) else None
    cpu = alloc.get("cpu") if isinstance(alloc, dict) else None
    if cpu is None:
        return None, f"Kubernetes API: get nodes: node {node} has no status.allocatable.cpu"
    if cpu_millis(str(cpu)) is None:
        return None, f"Kubernetes API: get nodes: status.allocatable.cpu {str(cpu)[:40]!r} is not a CPU quantity"
    return str(cpu), None


def _kubelet_metrics(api, node: str, timeout: float, cap: int) -> tuple[KubeletMetrics | None, str | None]:
    """kubelet's /metrics through the API server (GET /api/v1/nodes/NAME/proxy/metrics), at most `cap` bytes
    read; or why not. A 403 is the usual case, not a fault: nodes/proxy is opt-in (deploy/rbac.yaml)."""
    def read(resp) -> bytes:
        data = resp.read(cap + 1)
        if len(data) > cap:
            resp.close()  # the rest is never read: this connection cannot go back to the pool
        else:
            resp.release_conn()
        return data

    try:
        body = _request(lambda **kw: api.connect_get_node_proxy_with_path(node, "metrics", **kw),
                        f"get nodes/proxy (kubelet /metrics of {node})", timeout, read)
    except Forbidden:
        return None, "kubelet metrics: not allowed (get nodes/proxy)"
    except KubeError as err:
        return None, f"kubelet metrics: {err}"
    cut = len(body) > cap
    if cut:
        body = body[:cap].rpartition(b"\n")[0]  # the last line is partial: dropped
    return parse_kubelet_metrics(body.decode("utf-8", "replace"), cap if cut else None), None
