"""Kubelet's device manager as the topology manager's hint provider, ported from its Go code (pure functions).

Sources (k8s.io/kubernetes v1.35.4 and v1.37.2, pkg/kubelet/cm/devicemanager):
  topology_hints.go  GetTopologyHints, GetPodTopologyHints, deviceHasTopologyAlignment, getAvailableDevices,
                     generateDeviceTopologyHints (1.37 iterates only the NUMA nodes that hold the resource's
                     devices, deviceNUMANodes; 1.35 every NUMA node of the machine)
  manager.go         UpdateAllocatedDevices, isDevicePluginResource, devicesToAllocate, filterByAffinity
kubelet adds the device manager first (container_manager_linux.go), before the CPU and memory managers.
A resource whose devices carry no NUMA node has no preference (hints nil: any NUMA node, preferred); a request
larger than the free devices has no possible affinity (hints []: not preferred); a resource no plugin registered
and no pod holds is not a device resource, and the device manager ignores it.

Which devices kubelet gives is drawn from Go sets (map order): where more devices qualify than are needed, the
port names the pool and how many come from it (`Tier`), and takes the lowest ids itself; kubelet asks the
plugin's GetPreferredAllocation first when the plugin offers one, which no file on the node says (assumed: not).

A case's "devices" (tests/kubeletsim/main.go `DevCase`):
  resources   {resource: {device id: [NUMA node, ...] or null (no topology)}}
  unhealthy   {resource: [device id, ...]}
  allocated   {pod uid: {container: {resource: [device id, ...]}}} (the device checkpoint's entries)
  containers  [{resource: count}, ...] the next pod's device requests per container
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

NO_TOPOLOGY = -1  # nodeWithoutTopology


@dataclass(frozen=True)
class Tier:
    """`take` devices of `pool` (kubelet picks which, in Go's map order)."""

    pool: frozenset[str]
    take: int
    numa_nodes: tuple[int, ...]  # the pool's devices' NUMA nodes; empty: they have none


@dataclass
class DeviceManager:
    release: str
    numa_nodes: list[int]  # the machine's (cadvisor's) NUMA nodes
    devices: dict[str, dict[str, tuple[int, ...] | None]]  # resource -> id -> its NUMA nodes (None: no topology)
    healthy: dict[str, set[str]]
    allocated: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_case(cls, dev: dict, numa_nodes: list[int], inactive=(), release: str = "1.37") -> DeviceManager:
        """The manager after UpdateAllocatedDevices: the inactive pods' devices freed."""
        devices: dict[str, dict[str, tuple[int, ...] | None]] = {}
        healthy: dict[str, set[str]] = {}
        for res, devs in (dev.get("resources") or {}).items():
            bad = set((dev.get("unhealthy") or {}).get(res) or ())
            devices[res] = {d: None if nodes is None else tuple(int(n) for n in nodes) for d, nodes in devs.items()}
            healthy[res] = {d for d in devs if d not in bad}
        allocated: dict[str, set[str]] = {}
        gone = set(inactive)
        for pod, ctrs in (dev.get("allocated") or {}).items():
            if pod in gone:
                continue
            for by_res in ctrs.values():
                for res, ids in by_res.items():
                    allocated.setdefault(res, set()).update(ids)
        return cls(release, sorted(numa_nodes), devices, healthy, allocated)

    def copy(self) -> DeviceManager:
        return DeviceManager(self.release, self.numa_nodes, self.devices, self.healthy,
                             {r: set(s) for r, s in self.allocated.items()})

    def is_device_resource(self, res: str) -> bool:
        """isDevicePluginResource: registered by a plugin, or held by a pod."""
        return res in self.healthy or res in self.allocated

    def has_alignment(self, res: str) -> bool:
        """deviceHasTopologyAlignment: any device of the resource names a NUMA node."""
        return any(nodes for nodes in self.devices.get(res, {}).values())

    def available(self, res: str) -> set[str]:
        return self.healthy.get(res, set()) - self.allocated.get(res, set())

    def hints(self, request: dict[str, int]) -> dict:
        """GetTopologyHints (and GetPodTopologyHints, given the pod's summed request): resource -> hints, None
        (no preference) or [] (no possible affinity). The next pod holds no devices yet and has no init
        containers, so nothing is regenerated and nothing reused."""
        from .kubelet import Hint

        out: dict = {}
        for res, n in request.items():
            if not self.is_device_resource(res):
                continue
            if not self.has_alignment(res):
                out[res] = None
                continue
            available = self.available(res)
            if len(available) < n:
                out[res] = []
                continue
            out[res] = [Hint(mask, pref) for mask, pref in self._generate(res, available, n)]
        return out

    def _nodes_of(self, res: str) -> list[int]:
        """The NUMA nodes generateDeviceTopologyHints iterates: 1.37's deviceNUMANodes (those holding the
        resource's devices, known to cadvisor; none: every node), 1.35's every node."""
        if self.release == "1.35":
            return self.numa_nodes
        known = set(self.numa_nodes)
        held = sorted({n for nodes in self.devices[res].values() for n in nodes or () if n in known})
        return held or self.numa_nodes

    def _generate(self, res: str, available: set[str], request: int) -> list[tuple[int, bool]]:
        """generateDeviceTopologyHints with no reusable devices: every NUMA mask (IterateBitMasks' order)
        holding enough free devices; preferred, the masks as narrow as the fewest nodes whose devices, free
        or not, could hold the request."""
        nodes = self._nodes_of(res)
        masks_of = {d: sum(1 << n for n in nodes_ or () if 0 <= n < 64) for d, nodes_ in self.devices[res].items()}
        min_size = len(nodes)
        found: list[tuple[int, int]] = []
        for size in range(1, len(nodes) + 1):
            for combo in itertools.combinations(nodes, size):
                mask = sum(1 << n for n in combo)
                in_mask = sum(1 for m in masks_of.values() if m & mask)
                if in_mask >= request and size < min_size:
                    min_size = size
                if sum(1 for d in available if masks_of[d] & mask) >= request:
                    found.append((mask, size))
        return [(mask, size == min_size) for mask, size in found]

    def refusal(self, res: str, needed: int) -> str | None:
        """devicesToAllocate's errors before any device is taken, in its words; None: it can allocate."""
        if res not in self.healthy:
            return f"cannot allocate unregistered device {res}"
        if not self.healthy[res]:
            return f"no healthy devices present; cannot allocate unhealthy devices {res}"
        available = self.available(res)
        if needed and len(available) < needed:
            return f"requested number of devices unavailable for {res}. Requested: {needed}, Available: {len(available)}"
        return None

    def allocate(self, request: dict[str, int], mask: int | None) -> dict[str, list[Tier]]:
        """Allocate for one container under the merged hint's NUMA mask (None: no affinity): per device
        resource, the tiers its devices come from; raises KubeletError("alloc", …) as kubelet's Allocate fails.
        Resources are taken in name order (kubelet's is Go map order: with two refused, either is said)."""
        from .kubelet import KubeletError

        out: dict[str, list[Tier]] = {}
        for res in sorted(request):
            needed = request[res]
            if not self.is_device_resource(res):
                continue
            why = self.refusal(res, needed)
            if why is not None:
                raise KubeletError("alloc", why)
            if needed == 0:
                continue
            tiers = self._tiers(res, needed, mask)
            taken = self.allocated.setdefault(res, set())
            for t in tiers:
                taken.update(sorted(t.pool)[: t.take])
            out[res] = tiers
        return out

    def refusals(self, request: dict[str, int]) -> list[str]:
        """Every message Allocate could give for this container (one per refused resource)."""
        return [w for res in sorted(request) if self.is_device_resource(res) and (w := self.refusal(res, request[res]))]

    def _tiers(self, res: str, needed: int, mask: int | None) -> list[Tier]:
        """filterByAffinity, then devicesToAllocate's order without a preferred allocation: the aligned
        devices first, then the others with a NUMA node, then those without."""
        available = self.available(res)
        if not self.has_alignment(res) or not mask:
            groups = [available]
        else:
            nodes = {d: self.devices[res][d] or () for d in available}
            groups = [{d for d in available if nodes[d] and any(0 <= n < 64 and mask >> n & 1 for n in nodes[d])},
                      {d for d in available if nodes[d] and not any(0 <= n < 64 and mask >> n & 1 for n in nodes[d])},
                      {d for d in available if not nodes[d]}]
        tiers = []
        for pool in groups:
            take = min(needed, len(pool))
            if take:
                numa = sorted({n for d in pool for n in self.devices[res][d] or ()})
                tiers.append(Tier(frozenset(pool), take, tuple(numa)))
                needed -= take
        return tiers


def numa_of(tiers: list[Tier]) -> list[int] | None:
    """The NUMA nodes the devices come from: every tier's (None: some come from devices without one)."""
    nodes: set[int] = set()
    for t in tiers:
        if not t.numa_nodes:
            return None
        nodes.update(t.numa_nodes)
    return sorted(nodes)


UNHEALTHY_UNSEEN = ("devices kubelet holds unhealthy that no pod uses (PodResources lists neither): left out, though "
                    "kubelet counts them when it picks the narrowest NUMA nodes it prefers")


def devices_case(view) -> dict:
    """The case's "devices" from kubelet's PodResources view (collectors/podresources.py LiveView): the
    allocatable (healthy) devices with their NUMA nodes, and the devices its List gives each container (a held
    device not allocatable is unhealthy). Pods are keyed namespace/name: all are active."""
    resources: dict[str, dict] = {}
    for d in view.allocatable_devices:
        for i in d.ids:
            resources.setdefault(d.resource, {})[i] = list(d.numa_nodes) or None
    unhealthy: dict[str, list[str]] = {}
    allocated: dict = {}
    for p in view.pods:
        for c in p.containers:
            for d in c.devices:
                devs = resources.setdefault(d.resource, {})
                for i in d.ids:
                    if i not in devs:
                        devs[i] = list(d.numa_nodes) or None
                        unhealthy.setdefault(d.resource, []).append(i)
                by_res = allocated.setdefault(f"{p.namespace}/{p.name}", {}).setdefault(c.name, {})
                by_res.setdefault(d.resource, []).extend(d.ids)
    return {"resources": resources, "unhealthy": unhealthy, "allocated": allocated, "containers": []}


def device_answer(request: dict[str, int], placed: dict | None, error: dict | None) -> dict:
    """`fit --json`'s "devices": per asked resource how many, and where kubelet's device manager would take them
    from (admitted): the NUMA nodes (None: some from devices without one) and the pools."""
    out: dict = {"request": dict(request), "per_resource": {}, "note": None}
    if placed is None:
        out["note"] = "not placed: kubelet would refuse the container" if error else "no device resource asked"
        if error:  # what kubelet's hints said for each (the refusal may come from them)
            out["per_resource"] = {r: {"count": n, "numa_nodes": None, "tiers": [], "note": "not placed: kubelet would "
                                       "refuse the container"} for r, n in request.items()}
        return out
    for res, n in request.items():
        tiers = placed.get(res)
        if tiers is None:
            out["per_resource"][res] = {"count": n, "numa_nodes": None, "tiers": [],
                                        "note": "no device plugin registered it: kubelet's device manager ignores it"}
            continue
        out["per_resource"][res] = {"count": n, "numa_nodes": numa_of(tiers), "tiers": [
            {"devices": sorted(t.pool), "take": t.take, "numa_nodes": list(t.numa_nodes)} for t in tiers]}
    return out


def checkpoint_case(cp, request: dict[str, int], holding: set[str]) -> dict | None:
    """The case's "devices" from kubelet's device checkpoint alone (PodResources not reached), only where it is
    positive evidence of a refusal: an asked resource of fewer registered devices free than asked. The checkpoint's
    registeredDevices are the healthy devices when kubelet last wrote it (manager.go writeCheckpoint, on each
    plugin update): a device unhealthy since leaves fewer free, never more. A device is held when a pod of
    `holding` (pods the node shows running, none known gone) holds it; others may be freed by kubelet first
    (UpdateAllocatedDevices), so they are counted free. The free devices' NUMA nodes are not in it: None (the
    held ones carry theirs). None: no such evidence (enough free, resource not registered, checkpoint not read
    or its checksum wrong) — nothing is said of the devices then."""
    if cp is None or cp.checksum_ok is False:
        return None
    registered = {r: set(ids) for r, ids in cp.registered}
    held = [a for a in cp.allocations if a.pod_uid in holding and a.resource in registered]
    taken = {r: {a.device for a in held if a.resource == r} for r in registered}
    if not any(r in registered and len(registered[r] - taken[r]) < n for r, n in request.items()):
        return None
    numa = {(a.resource, a.device): [a.numa_node] for a in held if a.numa_node is not None and a.numa_node >= 0}
    resources = {r: {d: numa.get((r, d)) for d in ids | taken[r]} for r, ids in registered.items() if r in request}
    allocated: dict = {}
    for a in held:
        if a.resource in resources:
            allocated.setdefault(a.pod_uid, {}).setdefault(a.container, {}).setdefault(a.resource, []).append(a.device)
    unhealthy = {r: sorted(taken[r] - registered[r]) for r in resources if taken[r] - registered[r]}
    containers = [{r: n for r, n in request.items() if r in resources}]
    return {"resources": resources, "unhealthy": unhealthy, "allocated": allocated, "containers": containers}
