"""kubelet's allocation checkpoint, `<root-dir>/allocated_pods_state`: the resources kubelet admitted each pod
with (k/k pkg/kubelet/allocation/state/{checkpoint.go,state.go}; written while InPlacePodVerticalScaling is on,
its default since 1.33; read here as kubelet v1.35.4 and v1.37.2 write it).

    {"data": "<JSON of PodResourceCheckpointInfo>", "checksum": N}
    PodResourceCheckpointInfo: {"entries": {"<pod uid>": PodResourceInfo}}
    PodResourceInfo (no JSON tags): {"ContainerResources": {"<name>": v1.ResourceRequirements},
                                     "PodLevelResources": v1.ResourceRequirements or null, ...}

N is checksum.New(Data): FNV-1a 32 of "(string)" + data, as the v4/v3 `data` of the CPU and memory managers'
checkpoints. Only what pinscope uses is kept, per pod: whether it has pod-level resources (spec.resources, KEP
2837: kubelet's CPU manager does not pin their containers unless PodLevelResourceManagers is on, a gate off by
default; a container without a CPU limit of its own runs under the pod's as its CFS quota), and whether a
container of it has no CPU or memory limit of its own. Kubelet records PodLevelResources only with
InPlacePodLevelResourcesVerticalScaling (beta, on, since 1.36; v1.35.4 wrote none); a Guaranteed pod one of whose
containers has no limits of its own is Guaranteed by its pod-level resources all the same (a pod is Guaranteed
by its containers only when every one has CPU and memory limits).
"""
from __future__ import annotations

from typing import Any

from ..errors import Problem
from ..model import PodAllocation
from . import gojson as g
from .checkpoint import json_object


def _requirements(v: Any, what: str) -> dict[str, dict[str, str]] | None:
    """v1.ResourceRequirements -> {"limits": {...}, "requests": {...}} (null: None, a nil pointer)."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into v1.ResourceRequirements")
    f = g.fields(v, ("limits", "requests"))
    return {k: g.go_map(f.get(k), f"{what}.{k}", lambda q, _: q) or {} for k in ("limits", "requests")}


def _pod(v: Any, what: str) -> PodAllocation:
    """state.PodResourceInfo -> what pinscope keeps of it."""
    if v is not None and not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into state.PodResourceInfo")
    f = g.fields(v or {}, ("ContainerResources", "PodLevelResources"))
    ctrs = g.go_map(f.get("ContainerResources"), f"{what}.ContainerResources", _requirements) or {}
    pod = _requirements(f.get("PodLevelResources"), f"{what}.PodLevelResources")
    unlimited = tuple(sorted(n for n, r in ctrs.items() if not (r and r["limits"].get("cpu") and r["limits"].get("memory"))))
    return PodAllocation(pod_level=bool(pod and (pod["limits"] or pod["requests"])), unlimited=bool(unlimited),
                         unlimited_names=unlimited)


def parse_allocated_pods_state(text: str, source: str, problems: list[Problem]) -> dict[str, PodAllocation] | None:
    """-> {pod uid: PodAllocation}, or None (a problem said) where kubelet would not read it either: not JSON, a
    field of the wrong type, a checksum that does not match."""
    doc = json_object(text, source, problems)
    if doc is None:
        return None
    try:
        f = g.fields(doc, ("data", "checksum"))
        data = g.go_string(f.get("data"), "data") or ""
        if g.go_uint(f.get("checksum"), "checksum") != g.fnv1a32("(string)" + data):
            problems.append(Problem(source, "allocation checkpoint: checksum mismatch (kubelet refuses it): "
                                    "pod-level resources unknown"))
            return None
        inner = g.loads(data) if data else {}
        if not isinstance(inner, dict):
            raise g.GoError("'data' is not a JSON object")
        entries = g.fields(inner, ("entries",)).get("entries")
        return g.go_map(entries, "entries", _pod) or {}
    except ValueError as err:
        problems.append(Problem(source, f"allocation checkpoint cannot be decoded (kubelet refuses it): {err}"))
        return None
