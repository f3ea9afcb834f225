"""`--kube`: nodes from the Kubernetes API (the `kubernetes` client: kubeconfig or in-cluster), reached
over SSH by InternalIP or a host template; pods enriched with API data where the API answers (owner
workload, requests and limits, QoS). The node's own files stay the truth for CPUs: the API only adds
names and intent, and an API that is down degrades to node-local names, with a notice.

Responses are read raw (`_preload_content=False`) and parsed here, so a client release that changes
its generated models does not break pinscope.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from .errors import PinscopeError
from .inventory import Target, address


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
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg,
                                    persist_config=False)
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


def call(fn, verb: str, resource: str, in_ns: str | None = None, timeout: float = 10.0, **kw) -> dict:
    """One request through the kubernetes client, read raw (no generated models). Every way it can fail is
    one plain line naming the RBAC verb and resource that was asked for, and the API's own reason."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    what = f"{verb} {resource}" + (f" in namespace {in_ns}" if in_ns else "")
    try:
        resp = fn(_preload_content=False, _request_timeout=timeout, **kw)
        return json.loads(resp.data) if resp.data else {}
    except ApiException as err:
        msg = " ".join(_status_message(err.body, err.reason).split())[:400]
        if err.status == 404:
            raise NotFound(f"Kubernetes API: {what}: not found ({msg})") from err
        if err.status == 401:
            raise Refused(f"Kubernetes API refused {what}: not authenticated (401: {msg})") from err
        if err.status in (400, 403, 409, 422):
            raise Refused(f"Kubernetes API refused {what} ({err.status}: {msg})") from err
        raise KubeError(f"Kubernetes API: {what}: {err.status} {msg}") from err
    except (HTTPError, OSError) as err:
        reason = getattr(err, "reason", None) or err
        raise ApiUnreachable(f"Kubernetes API did not answer {what} ({type(reason).__name__}: {str(reason)[:200]})") from err
    except ValueError as err:
        raise KubeError(f"Kubernetes API: {what}: the answer is not JSON") from err


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
    """The pods the API places on `node`, by uid."""
    api = _api(context, kubeconfig)
    doc = _get(lambda **kw: api.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}", **kw),
               f"list pods on {node}", timeout)
    out = {}
    for p in doc.get("items") or []:
        meta = p.get("metadata") or {}
        uid = meta.get("uid")
        if not uid:
            continue
        owners = meta.get("ownerReferences") or []
        owner = f"{owners[0].get('kind')}/{owners[0].get('name')}" if owners else None
        spec = p.get("spec") or {}
        ctrs = []
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            res = c.get("resources") or {}
            ctrs.append(ApiContainer(str(c.get("name")), dict(res.get("requests") or {}), dict(res.get("limits") or {})))
        status = p.get("status") or {}
        ap = ApiPod(uid, str(meta.get("namespace")), str(meta.get("name")),
                    status.get("qosClass"), owner, tuple(ctrs), container_ids(status))
        out[uid] = ap
        # a static pod's mirror has an API uid of its own; the node knows the pod by the manifest hash
        # (k/k pkg/kubelet/types/pod_update.go ConfigMirrorAnnotationKey)
        mirror = (meta.get("annotations") or {}).get("kubernetes.io/config.mirror")
        if mirror:
            out.setdefault(str(mirror), ap)
    return out
