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
    pass


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


def _api(context: str | None, kubeconfig: str | None = None):
    try:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException
    except ImportError as err:  # declared dependency; say so plainly if it is missing
        raise KubeError("--kube needs the 'kubernetes' package") from err
    try:
        if kubeconfig or context or not _in_cluster():
            config.load_kube_config(config_file=kubeconfig, context=context)
        else:
            config.load_incluster_config()
    except (ConfigException, OSError, TypeError, ValueError) as err:
        raise KubeError(f"--kube: no usable kubeconfig ({err})") from err
    return client.CoreV1Api()


def _in_cluster() -> bool:
    import os

    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def _get(call, what: str, timeout: float):
    try:
        resp = call(_preload_content=False, _request_timeout=timeout)
        return json.loads(resp.data)
    except Exception as err:  # urllib3, ApiException, JSON: all "the API did not answer"
        raise KubeError(f"Kubernetes API: {what}: {type(err).__name__}: {str(err)[:200]}") from err


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
        out[uid] = ApiPod(uid, str(meta.get("namespace")), str(meta.get("name")),
                          (p.get("status") or {}).get("qosClass"), owner, tuple(ctrs))
    return out
