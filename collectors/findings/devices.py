"""Checks on devices (kubelet's device manager): a pinned container's devices on another NUMA node than its
exclusive CPUs, and allocations for pods nothing else on the node knows.

Positive evidence only: a device whose NUMA node is unknown (platform "-1", an id neither PCI nor a known GPU
UUID, the plugin's "-1") is never called far; a container without exclusive CPUs makes no claim to locality.
"""
from __future__ import annotations

from ..assemble.devices import NV_DIR, PCI_DIR, checkpoint_path, dra_path
from ..parse.cpuset import format_cpuset as fmt
from .base import check, finding, who


def _placed_by(d) -> str:
    """Where a device's NUMA node came from, as evidence."""
    if d.numa_from == "pci":
        return f"{PCI_DIR}{d.pci}/numa_node = {d.numa_node}"
    if d.numa_from == "nvidia":
        return f"{NV_DIR}{d.pci}/information: GPU UUID {d.device}; {PCI_DIR}{d.pci}/numa_node = {d.numa_node}"
    return f"the checkpoint keys {d.device} by NUMA node {d.numa_node} (the device plugin's topology)"


@check({"DEVICE_CROSS_NUMA": ("warning", "a container's exclusive CPUs and its devices (GPU, NIC VF) sit on different NUMA nodes",
                              "Set topologyManagerPolicy: single-numa-node (or restricted) with the static CPU manager so kubelet "
                              "admits a pod only where its CPUs and devices share a NUMA node; then recreate the pod. "
                              "best-effort and none do not align.")})
def device_cross_numa(ctx):
    cp_file = checkpoint_path(ctx.k.root_dir)
    for p, c in ctx.snap.containers():
        if not c.devices or not c.assigned:
            continue
        nodes = {ctx.cpu_node.get(x) for x in c.assigned} - {None}
        far = [d for d in c.devices if d.numa_node is not None and nodes and d.numa_node not in nodes]
        if not far:
            continue
        names = ", ".join(f"{d.resource} {d.device} (NUMA {d.numa_node})" for d in far)
        yield finding("DEVICE_CROSS_NUMA",
                      f"{who(p, c.name)}: CPUs {fmt(c.assigned)} on NUMA {fmt(nodes)}, but {names}",
                      [f"{ctx.sf}: entries[{p.uid}][{c.name}] = {fmt(c.assigned)}",
                       f"{cp_file}: {p.uid}/{c.name} holds {', '.join(d.device for d in far)}",
                       *[_placed_by(d) for d in far],
                       f"topologyManagerPolicy = {ctx.k.topology_manager_policy}"], c.assigned, p, c.name)


# kubelet writes its device checkpoint only when it hands out devices or a plugin's devices change
# (devicemanager/manager.go writeCheckpoint); a deleted pod leaves its memory at the next UpdateAllocatedDevices (an
# admission's topology hints, a PodResources List, any allocation first), not the file: seen on 1.35.4 and 1.37.2
@check({"DEVICE_CHECKPOINT_ORPHAN": ("info", "kubelet's device checkpoint still names devices of a pod no other source on the node knows",
                                     "Usually a pod deleted since kubelet last wrote this file: kubelet rewrites it only when it hands out "
                                     "devices or a device plugin's devices change, and frees a gone pod's devices before it hands any "
                                     "out. Nothing to do; kubelet's PodResources API (List) says what it holds now.")},
       reads=("pods",))
def device_orphan(ctx):
    snap = ctx.snap
    if not snap.device_orphans or not snap.pods:
        return  # no pod known at all (cgroups unread): nothing to compare with, no claim
    cp_file = checkpoint_path(ctx.k.root_dir)
    by_pod: dict = {}
    for a in snap.device_orphans:
        by_pod.setdefault(a.pod_uid, []).append(a)
    for uid, allocs in sorted(by_pod.items()):
        held = ", ".join(f"{a.container}: {a.resource} {a.device}" for a in allocs)
        yield finding("DEVICE_CHECKPOINT_ORPHAN", f"pod {uid}: kubelet's device checkpoint still names {held}; no cgroup, "
                      "log or kubelet pod directory knows this pod",
                      [f"{cp_file}: PodDeviceEntries[PodUID={uid}]",
                       f"pods on the node: {len(snap.pods)} (from {', '.join(sorted({s for p in snap.pods for s in p.sources}))})"])


@check({"DRA_CLAIM_ORPHAN": ("info", "kubelet's DRA checkpoint holds a prepared claim for pods no other source on the node knows",
                             "Usually a pod deleted while kubelet was down: kubelet unprepares the claim when it next "
                             "reconciles. If it stays, check the ResourceClaim with kubectl and the DRA driver's logs.")},
       reads=("pods",))
def dra_claim_orphan(ctx):
    snap = ctx.snap
    cp = snap.dra_state
    if cp is None or not cp.claims or not snap.pods:
        return  # no pod known at all (cgroups unread): nothing to compare with, no claim
    known = {p.uid for p in snap.pods}
    path = dra_path(ctx.k.root_dir)
    for c in cp.claims:
        if not c.pod_uids or known.intersection(c.pod_uids):
            continue
        devs = ", ".join(f"{d.driver}/{d.pool}/{d.device}" for d in c.devices) or "no device"
        yield finding("DRA_CLAIM_ORPHAN", f"claim {c.namespace}/{c.name} ({devs}) is prepared for pod(s) "
                      f"{', '.join(c.pod_uids)}; no cgroup, log or kubelet pod directory knows them",
                      [f"{path}: Entries[ClaimName={c.name}].PodUIDs = {', '.join(c.pod_uids)}",
                       f"pods on the node: {len(snap.pods)} (from {', '.join(sorted({s for p in snap.pods for s in p.sources}))})"])
