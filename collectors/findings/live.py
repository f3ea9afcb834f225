"""PODRESOURCES_DISAGREES: kubelet's in-memory assignment (its PodResources API, List) of a container's exclusive
CPUs or devices differs from its checkpoint or from the container's cgroup cpuset, the same way in two rounds
(collectors/assemble/live.py says what is compared and why a single round is not enough).

Run only where kubelet's socket was asked (evaluate_live): unreachable is a note in the report, never a
finding. Warning, not critical: kubelet's in-memory state is what it acts on, and a container that still runs on the
CPUs it was given harms nobody today; what differs says where the next restart or another writer will lead.
"""
from __future__ import annotations

from .base import check, finding


@check({"PODRESOURCES_DISAGREES": (
    "warning",
    "kubelet's in-memory assignment (PodResources List) of a container's exclusive CPUs or devices differs from its "
    "checkpoint (cpu_manager_state, the device manager's) or, where that was not read, from the container's cgroup "
    "cpuset; the same in two rounds in a row",
    "kubelet acts on its in-memory state. A checkpoint that differs is what kubelet loads at its next restart: look in "
    "its log "
    "(journalctl -u kubelet) for a failed checkpoint write, and for a hand-edited or restored file. A cpuset that "
    "differs was written by something else (kubelet rewrites a container's cpuset only when its own assignment "
    "changes: cpu_manager.go reconcileState): find the writer (an agent, a tuning script), then restart the "
    "container so kubelet sets it again. Until then pinscope's other findings judge by the checkpoint and the kernel.")},
    needs="l")
def podresources_disagrees(ctx):
    w = ctx.live
    for d in w.held():
        if not _news(d):
            continue  # memory and checkpoint agree, the kernel does not: STATE_CGROUP_DRIFT says it already
        pr, cp, k = d.values()
        p = ctx.pods_by_uid.get(d.pod_uid)
        on = "its CPUs" if d.what == "cpus" else f"its {d.what} devices"
        apart = f"{w.seconds:.0f} s apart" if w.seconds is not None else "twice"
        evidence = [f"kubelet's PodResources List ({w.now.view.socket}), asked twice {apart}: {pr}",
                    f"{_checkpoint(ctx, d)}: {cp}"]
        if d.what == "cpus":
            c = next((c for c in p.containers if c.name == d.container), None) if p is not None else None
            where = c.cgroup.path if c is not None and c.cgroup is not None else "the container's cgroup"
            evidence.append(f"{where}/cpuset.cpus.effective (the kernel): {k}")
        cpus = (d.podresources | (d.checkpoint or frozenset()) | (d.kernel or frozenset())) if d.what == "cpus" else ()
        yield finding("PODRESOURCES_DISAGREES",
                      f"{d.namespace}/{d.pod}/{d.container}: kubelet's in-memory state and {_against(d)} disagree on "
                      f"{on}: "
                      f"PodResources {pr}, checkpoint {cp}" + (f", cgroup {k}" if d.what == "cpus" else ""),
                      evidence, cpus, pod=p, container=d.container)


def _news(d) -> bool:
    """What the live view adds: kubelet's in-memory state differs from its checkpoint, or (the checkpoint not read) from
    the kernel."""
    if d.checkpoint is not None:
        return d.checkpoint != d.podresources
    return d.what == "cpus" and bool(d.podresources) and d.kernel is not None and d.kernel != d.podresources


def _against(d) -> str:
    if d.checkpoint is None:
        return "the kernel (its checkpoint not read)"
    if d.what == "cpus" and d.kernel is not None and d.kernel == d.podresources:
        return ("its checkpoint (the kernel agrees with its in-memory state: a drift said from the checkpoint is the "
                "checkpoint's)")
    if d.what == "cpus" and d.podresources and d.kernel is not None:
        return "its checkpoint and the kernel"
    return "its checkpoint"


def _checkpoint(ctx, d) -> str:
    if d.what != "cpus":
        return f"kubelet's device checkpoint (device-plugins/kubelet_internal_checkpoint), {d.what}"
    return f"{ctx.sf}: entries[{d.pod_uid}][{d.container}]"
