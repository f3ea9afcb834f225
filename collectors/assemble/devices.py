"""Assembly stage: devices per container (kubelet's device-manager checkpoint), each placed on a NUMA node;
and the DRA claims kubelet prepared, per pod (its DRA manager checkpoint).

Where a device sits, best evidence first: the kernel's `/sys/bus/pci/devices/<addr>/numa_node` when the id is a
PCI address (SR-IOV VFs) or an NVIDIA GPU UUID whose bus location `/proc/driver/nvidia/gpus/*/information` gives;
else the NUMA node the checkpoint keyed it by (what the plugin reported); else unknown (never guessed).
The checkpoint changes when pods come and go: each text is parsed once; the placement is rebuilt per static frame.
"""
from __future__ import annotations

from collections.abc import Container
from functools import lru_cache

from ..errors import Problem
from ..model import ContainerDevice, DeviceAllocation, DeviceCheckpoint, DraCheckpoint, Pod
from ..parse.devices import PCI_ADDR, parse_device_checkpoint, parse_numa_node, parse_nvidia_information
from ..parse.dra import parse_dra_checkpoint
from .kubelet import unreadable_problem

PCI_DIR = "/sys/bus/pci/devices/"
NV_DIR = "/proc/driver/nvidia/gpus/"


DEVICE_CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def checkpoint_path(root_dir: str) -> str:
    """Where kubelet's device manager keeps its checkpoint: /var/lib/kubelet/device-plugins/ whatever --root-dir
    (`root_dir`) says -- k8s.io/kubelet pkg/apis/deviceplugin/v1beta1 DevicePluginPath is a constant (seen on
    kubelet 1.35.4 and 1.37.2 under another --root-dir, tests/cluster)."""
    return DEVICE_CHECKPOINT


@lru_cache(maxsize=64)  # one text per node of a fleet; texts up to the probe's 1 MB budget: keep few
def _parsed(text: str, source: str) -> tuple[DeviceCheckpoint | None, tuple[Problem, ...]]:
    probs: list[Problem] = []
    return parse_device_checkpoint(text, source, probs), tuple(probs)


def placements(sfiles: dict) -> tuple[dict, dict]:
    """(PCI address -> NUMA node or None, GPU UUID -> PCI address) from the static frame's files."""
    pci: dict = {}
    gpus: dict = {}
    for path, text in sfiles.items():
        if path.startswith(PCI_DIR) and path.endswith("/numa_node"):
            pci[path[len(PCI_DIR):-len("/numa_node")]] = parse_numa_node(text)
        elif path.startswith(NV_DIR) and path.endswith("/information"):
            uuid, bus = parse_nvidia_information(text)
            if uuid:
                gpus[uuid] = bus or path[len(NV_DIR):-len("/information")].lower()
    return pci, gpus


def place(a: DeviceAllocation, pci: dict, gpus: dict) -> ContainerDevice:
    """One allocation -> the device with its NUMA node and where that came from."""
    addr = a.device.lower() if PCI_ADDR.fullmatch(a.device.lower()) else None
    how = "pci"
    if addr is None and a.device in gpus:
        addr, how = gpus[a.device], "nvidia"
    numa = pci.get(addr) if addr is not None else None
    if numa is not None:
        return ContainerDevice(a.resource, a.device, numa, how, addr)
    if a.numa_node is not None:
        return ContainerDevice(a.resource, a.device, a.numa_node, "checkpoint")
    return ContainerDevice(a.resource, a.device, None, "")


def device_state(files: dict, unreadable: set, root_dir: str, problems: list, refused=(),
                 sudo_refused: bool = False) -> DeviceCheckpoint | None:
    """The checkpoint of this tick (None when absent: a node without device plugins has none)."""
    path = checkpoint_path(root_dir)
    text = files.get(path)
    if text is None:
        unreadable_problem(problems, unreadable, path, "the device-manager checkpoint", refused, sudo_refused)
        return None
    cp, probs = _parsed(text, path)
    problems.extend(probs)
    return cp


def attach(pods: tuple[Pod, ...], cp: DeviceCheckpoint | None, pci: dict, gpus: dict
           ) -> tuple[tuple[Pod, ...], tuple[DeviceAllocation, ...]]:
    """Pods with each container's devices, and the allocations of pods no source knows (orphans)."""
    if cp is None or not cp.allocations:
        return pods, ()
    per: dict = {}
    for a in cp.allocations:
        per.setdefault((a.pod_uid, a.container), []).append(place(a, pci, gpus))
    known = {p.uid for p in pods}
    orphans = tuple(a for a in cp.allocations if a.pod_uid not in known)
    out = []
    for p in pods:
        if not any((p.uid, c.name) in per for c in p.containers):
            out.append(p)
            continue
        ctrs = tuple(c._replace(devices=tuple(per[(p.uid, c.name)])) if (p.uid, c.name) in per else c
                     for c in p.containers)
        out.append(p._replace(containers=ctrs))
    return tuple(out), orphans


def dra_path(root_dir: str) -> str:
    return f"{root_dir.rstrip('/')}/dra_manager_state"


@lru_cache(maxsize=64)
def _dra_parsed(text: str, source: str) -> tuple[DraCheckpoint | None, tuple[Problem, ...]]:
    probs: list[Problem] = []
    return parse_dra_checkpoint(text, source, probs), tuple(probs)


def dra_state(files: dict, unreadable: set, truncated: Container[str], root_dir: str, problems: list, refused=(),
              sudo_refused: bool = False) -> DraCheckpoint | None:
    """The DRA checkpoint of this tick (None when absent: a node that does not use DRA has none)."""
    path = dra_path(root_dir)
    text = files.get(path)
    if text is None:
        unreadable_problem(problems, unreadable, path, "the DRA manager checkpoint", refused, sudo_refused)
        return None
    if path in truncated:
        problems.append(Problem(path, "DRA checkpoint not read whole (larger than pinscope's read bound): its "
                                      "claims are not shown"))
        return None
    cp, probs = _dra_parsed(text, path)
    problems.extend(probs)
    return cp


def attach_claims(pods: tuple[Pod, ...], cp: DraCheckpoint | None) -> tuple[Pod, ...]:
    """Pods with the claims kubelet prepared for them."""
    if cp is None or not cp.claims:
        return pods
    per: dict = {}
    for claim in cp.claims:
        for uid in claim.pod_uids:
            per.setdefault(uid, []).append(claim)
    return tuple(p._replace(claims=tuple(per[p.uid])) if p.uid in per else p for p in pods)
