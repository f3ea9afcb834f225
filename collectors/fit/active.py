"""Which pods of kubelet's CPU checkpoint kubelet still counts when it admits the next pod (issue 36).

Right after a pod is deleted (or reaches Succeeded/Failed), cpu_manager_state still lists its exclusive CPUs
until kubelet's next reconcile (cpuManagerReconcilePeriod, 10 s by default). But kubelet's CPU manager begins
GetTopologyHints, GetPodTopologyHints, Allocate and AllocatePod with removeStaleState() (k/k v1.35.4 and
v1.37.2 pkg/kubelet/cm/cpumanager/cpu_manager.go): every container of the checkpoint that is not in one of
kubelet's active pods is removed and its CPUs go back to the shared pool (policy_static.go RemoveContainer).
Active (pkg/kubelet/kubelet_pods.go GetActivePods -> filterOutInactivePods -> isPodInactive): in kubelet's
pod manager (the API's pods of the node, and static pods from files), and neither known by its pod worker
to have terminated nor in phase Succeeded/Failed without a termination asked. So at admission a gone pod's
CPUs are free, and the predictor must count them free too.

What pinscope can know of "active", the best evidence first, and only what it supports is freed:
  1. The API's pods on the node, when read after the checkpoint (`api_after`): a pod the list has not is not
     in kubelet's pod manager (a static pod, uid of 32 hex digits, comes from a file: its absence says
     nothing). A pod listed in phase Succeeded/Failed and not being deleted is inactive. A pod listed
     otherwise, not being deleted, is active whatever its cgroups say (admitted a moment ago: kubelet writes
     its checkpoint entry before the pod cgroup exists). A pod being deleted is left to the evidence below.
  2. kubelet's PodResources List, asked after the checkpoint was read (pinscope asks it after the probe's
     frame): since 1.34 (KubeletPodResourcesListUseActivePods, on by default) it lists GetActivePods, before
     every pod of the pod manager. A pod it does not name is inactive; one it names is active.
  3. The node alone: kubelet destroys a pod's cgroup once its pod worker knows the pod terminated
     (kubelet.go SyncTerminatedPod) and makes it first of all the pod's things (SyncPod: the pod cgroup,
     then its directories). A pod without a pod cgroup, while the cgroup tree was listed whole and pinscope
     found other pods' cgroups there, and with its kubelet directory or logs still there, surely ran and was
     torn down: it is gone. With nothing but its checkpoint entry it is as likely one admitted a moment ago
     (kubelet writes the checkpoint first) as one whose traces are cleaned: not freed, its CPUs stay held.
The answer is what pinscope frees, pod by pod, with why (predict.py says it among the assumptions).
"""

from __future__ import annotations

import re

from ..parse.cpuset import cpus_named

_STATIC_UID = re.compile(r"^[0-9a-f]{32}$")  # a static pod: the manifest's hash (kubelet config/common.go)
_TERMINAL = ("Succeeded", "Failed")


def _cgroups_whole(snap) -> bool:
    """Was the cgroup tree listed whole this tick, with pods' cgroups where pinscope looks (so a pod's absent
    cgroup is absent, not unseen: no directory this user may not list, no frame cut short, a cgroupRoot
    pinscope finds)?"""
    if snap.cgroup_version is None:
        return False
    for p in snap.problems:
        if (p.source.startswith("/sys/fs/cgroup") and p.source.endswith("/")) or p.message.startswith("frame ended"):
            return False
    return any(p.cgroup_path is not None for p in snap.pods)


def _from_api(uid: str, pods: dict, after: bool) -> tuple[bool | None, str]:
    """(inactive?, why) from the API's pods on the node; None: the API does not settle it."""
    ap = pods.get(uid)
    if ap is None:
        if after and not _STATIC_UID.match(uid):
            return True, "the API lists no such pod on this node (deleted): kubelet's pod manager has it no more"
        return None, ""
    if ap.deleting:
        return None, ""  # terminating: active until its pod worker knows it terminated
    if getattr(ap, "phase", None) in _TERMINAL:
        return True, f"its phase is {ap.phase} (the API): kubelet counts a finished pod inactive"
    return False, ""


def _from_live(pod, view) -> tuple[bool | None, str]:
    """(inactive?, why) from kubelet's PodResources List; None: not asked, or the pod's name is not known."""
    if pod is None or not pod.name or not pod.namespace:
        return None, ""
    if any(lp.namespace == pod.namespace and lp.name == pod.name for lp in view.pods):
        return False, ""
    return True, "kubelet's PodResources List (its active pods) does not name it"


def _from_node(pod, whole: bool) -> tuple[bool | None, str]:
    if not whole or (pod is not None and pod.cgroup_path is not None):
        return None, ""
    traces = [s for s in (pod.sources if pod is not None else ()) if s not in ("state", "cgroup")]
    if traces:
        return True, (f"its pod cgroup is gone while its {' and '.join(_TRACE.get(s, s) for s in traces)} remain: "
                      "kubelet tore it down")
    # nothing but the checkpoint names it: as likely a pod admitted this very moment (kubelet writes the
    # checkpoint before the pod cgroup, its directories and logs) as a gone one whose traces housekeeping has
    # cleaned already; the node alone does not settle it, so its CPUs stay held, as the checkpoint says
    return None, ""


_TRACE = {"pod-logs": "pod log directory", "kubelet-pods": "kubelet pod directory", "container-logs": "log links"}


def inactive_pods(snap, api_pods: dict | None = None, api_after: bool = False, live=None) -> dict[str, str]:
    """pod uid -> why kubelet no longer counts it, for each pod of cpu_manager_state's entries the evidence
    says is gone. `api_pods`: the API's pods on the node by uid (kube.ApiPod), None when not asked or the list
    failed; `api_after`: that list was read after the checkpoint (then a pod it lacks is gone); `live`: kubelet's
    PodResources view (podresources.LiveView) asked after the checkpoint, None when not asked."""
    st = snap.state
    if st is None or snap.state_status != "ok":
        return {}
    by_uid = {p.uid: p for p in snap.pods}
    view = live if live is not None and getattr(live, "error", None) is None else None
    whole = _cgroups_whole(snap)
    out: dict[str, str] = {}
    for uid in checkpoint_uids(snap):
        pod = by_uid.get(uid)
        for verdict, why in (_from_api(uid, api_pods, api_after) if api_pods is not None else (None, ""),
                             _from_live(pod, view) if view is not None else (None, ""),
                             _from_node(pod, whole)):
            if verdict is not None:
                if verdict:
                    out[uid] = why
                break
    return out


def checkpoint_uids(snap) -> list[str]:
    """The pods kubelet's removeStaleState may free: those holding CPUs in cpu_manager_state, and those holding
    memory in memory_manager_state (the memory manager runs its own removeStaleState on its own entries: a
    Guaranteed pod of fractional CPUs has memory blocks and no CPUs)."""
    uids = [u for u, ctrs in snap.state.entries.items() if ctrs] if snap.state is not None else []
    mem = getattr(snap, "memory_state", None)
    if mem is not None:
        uids += [u for u, ctrs in mem.entries.items() if any(ctrs.values())]
        uids += [u for u, blocks in (mem.pod_entries or {}).items() if blocks]
    return [u for u in dict.fromkeys(uids) if u]


def said(snap, inactive: dict[str, str]) -> list[str]:
    """One line per freed pod, for the answer's `assumed`."""
    by_uid = {p.uid: p for p in snap.pods}
    out = []
    for uid, why in inactive.items():
        p = by_uid.get(uid)
        name = f"{p.namespace}/{p.name}" if p is not None and p.name else f"uid {uid}"
        ctrs = snap.state.entries.get(uid, {}) if snap.state is not None else {}
        cpus = sorted(set().union(*ctrs.values())) if ctrs else []
        what = f"its {cpus_named(cpus)}" if cpus else "its memory (memory_manager_state's blocks)"
        they = "they are" if len(cpus) > 1 else "it is"
        out.append(f"pod {name} is gone ({why}): kubelet frees {what} before it admits the next pod, so {they} "
                   "counted free")
    return out
