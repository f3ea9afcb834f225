"""Kubelet's live view through its PodResources API (k/k pkg/kubelet/apis/podresources, v1; node-files.md §12):
`List` (every pod's containers with their exclusive CPUs and devices, devices with their NUMA nodes) and
`GetAllocatableResources` (the CPUs and devices kubelet may hand out), on the unix socket
`<root-dir>/pod-resources/kubelet.sock`. No authentication: the socket's file mode (root's) is the gate.

gRPC comes from grpcio; the few messages are decoded here from the protobuf wire format (field numbers
of kubelet's api.proto, quoted below): no generated stubs, no protobuf runtime. What cannot be reached
(no socket, not root, grpcio absent, kubelet not answering within the deadline) is said in `error`,
never raised: the live view is a second opinion, the node's files stay the first.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

SOCKET = "pod-resources/kubelet.sock"  # under kubelet's root-dir
SERVICE = "/v1.PodResourcesLister/"
MAX_MESSAGE = 16 << 20  # kubelet's own limit (podresources.DefaultMaxMsgSize)


@dataclass(frozen=True, slots=True)
class Device:
    resource: str
    ids: tuple[str, ...]
    numa_nodes: tuple[int, ...]  # empty: kubelet knows none


@dataclass(frozen=True, slots=True)
class LiveContainer:
    name: str
    cpus: frozenset[int]  # exclusive CPUs only (shared-pool containers list none)
    devices: tuple[Device, ...] = ()


@dataclass(frozen=True, slots=True)
class LivePod:
    namespace: str
    name: str
    containers: tuple[LiveContainer, ...]
    cpus: frozenset[int] = frozenset()  # pod-level resources


@dataclass(frozen=True, slots=True)
class LiveView:
    """What kubelet says in memory now; `error` set: it could not be asked (the rest is empty)."""

    socket: str
    pods: tuple[LivePod, ...] = ()
    allocatable_cpus: frozenset[int] = frozenset()
    allocatable_devices: tuple[Device, ...] = ()
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def exclusive(self) -> dict[tuple[str, str, str], frozenset[int]]:
        """(namespace, pod, container) -> its exclusive CPUs, for the containers that hold some."""
        return {(p.namespace, p.name, c.name): c.cpus for p in self.pods for c in p.containers if c.cpus}


# --- the protobuf wire format (https://protobuf.dev/programming-guides/encoding/) ------------------------


class WireError(ValueError):
    pass


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise WireError("truncated varint")
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, i
        shift += 7


def fields(buf: bytes) -> list[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) in order: an int for varints, bytes for length-delimited fields;
    fixed 32/64-bit fields are skipped (none in this API)."""
    out: list[tuple[int, int, int | bytes]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
            out.append((num, wt, v))
        elif wt == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise WireError("truncated field")
            out.append((num, wt, buf[i:i + n]))
            i += n
        elif wt in (1, 5):
            i += 8 if wt == 1 else 4
        else:
            raise WireError(f"wire type {wt} of field {num}")
    return out


def _ints(fs, num: int) -> list[int]:
    """A repeated int64: packed (proto3's default) or one per field."""
    out: list[int] = []
    for n, wt, v in fs:
        if n != num:
            continue
        if wt == 0 and isinstance(v, int):
            out.append(v)
        elif isinstance(v, bytes):
            i = 0
            while i < len(v):
                x, i = _varint(v, i)
                out.append(x)
    return out


def _strs(fs, num: int) -> list[str]:
    return [v.decode("utf-8", "replace") for n, wt, v in fs if n == num and isinstance(v, bytes)]


def _msgs(fs, num: int) -> list[list]:
    return [fields(v) for n, wt, v in fs if n == num and isinstance(v, bytes)]


def _device(fs) -> Device:
    # ContainerDevices: resource_name = 1, device_ids = 2, topology = 3 (TopologyInfo: nodes = 1; NUMANode: ID = 1).
    # proto3 leaves a zero out: NUMA node 0 is a NUMANode with no field (Go's encoder sends it empty)
    numa = [(_ints(node, 1) or [0])[-1] for topo in _msgs(fs, 3) for node in _msgs(topo, 1)]
    return Device((_strs(fs, 1) or [""])[0], tuple(_strs(fs, 2)), tuple(sorted(set(numa))))


def _pod(fs) -> LivePod:
    # PodResources: name = 1, namespace = 2, containers = 3, cpu_ids = 4;
    # ContainerResources: name = 1, devices = 2, cpu_ids = 3
    ctrs = tuple(LiveContainer((_strs(c, 1) or [""])[0], frozenset(_ints(c, 3)), tuple(_device(d) for d in _msgs(c, 2)))
                 for c in _msgs(fs, 3))
    return LivePod((_strs(fs, 2) or [""])[0], (_strs(fs, 1) or [""])[0], ctrs, frozenset(_ints(fs, 4)))


def decode_list(buf: bytes) -> tuple[LivePod, ...]:
    """ListPodResourcesResponse: pod_resources = 1."""
    return tuple(_pod(p) for p in _msgs(fields(buf), 1))


def decode_allocatable(buf: bytes) -> tuple[frozenset[int], tuple[Device, ...]]:
    """AllocatableResourcesResponse: devices = 1, cpu_ids = 2."""
    fs = fields(buf)
    return frozenset(_ints(fs, 2)), tuple(_device(d) for d in _msgs(fs, 1))


# --- the call ----------------------------------------------------------------------------------------------


def socket_path(root_dir: str, fs_root: str = "/") -> str:
    """kubelet's socket under its root-dir, as seen from a tree mounted at fs_root (--root)."""
    return os.path.join(fs_root, root_dir.lstrip("/"), SOCKET)


def _unreachable(path: str) -> str | None:
    """Why the socket cannot be asked, or None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"{path}: no such socket (kubelet not running here, or its root-dir not mounted)"
    except PermissionError:
        return f"{path}: not readable by this user (kubelet's socket is root's: run pinscope as root)"
    except OSError as err:
        return f"{path}: {err.strerror}"
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path}: not a socket"
    if not os.access(path, os.R_OK | os.W_OK):
        return f"{path}: not writable by this user (kubelet's socket is root's: run pinscope as root)"
    return None


def read_live(path: str, timeout: float = 3.0) -> LiveView:
    """Ask kubelet (List, then GetAllocatableResources) on the socket at `path`, each call within `timeout`."""
    why = _unreachable(path)
    if why:
        return LiveView(path, error=why)
    try:
        import grpc  # type: ignore[import-untyped]
    except ImportError:
        return LiveView(path, error="grpcio is not installed: kubelet's PodResources API was not asked")
    opts = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.enable_http_proxy", 0)]
    try:
        with grpc.insecure_channel(f"unix://{os.path.abspath(path)}", options=opts) as ch:
            def call(method: str) -> bytes:
                rpc = ch.unary_unary(SERVICE + method, request_serializer=lambda _: b"", response_deserializer=bytes)
                return rpc(None, timeout=timeout)

            pods = decode_list(call("List"))
            try:
                cpus, devices = decode_allocatable(call("GetAllocatableResources"))
            except grpc.RpcError as err:  # GA in 1.28; an older kubelet answers List only
                return LiveView(path, pods, notes=[f"GetAllocatableResources: {err.code().name}: {err.details()}"])
    except grpc.RpcError as err:
        return LiveView(path, error=f"kubelet's PodResources API: {err.code().name}: {err.details()}")
    except WireError as err:
        return LiveView(path, error=f"kubelet's PodResources answer not understood: {err}")
    return LiveView(path, pods, cpus, devices)


def fmt(cpus) -> str:
    from .parse.cpuset import format_cpuset

    return format_cpuset(cpus) or "none"


def disagreements(view: LiveView, snap) -> list[str]:
    """Where kubelet's memory (PodResources) and its checkpoint (cpu_manager_state) name different exclusive
    CPUs for a container, each with the kernel's cpuset of it: the three values, one line per container.
    Only pods both name (a pod pinscope could not name is not compared), and only running containers on the
    checkpoint's side: kubelet keeps an exited init container's entry there (its CPUs are reused), while
    List has the pod's app containers only."""
    if view.error or snap.state is None:
        return []
    live = view.exclusive()
    live_pods = {(p.namespace, p.name) for p in view.pods}
    out = []
    for p in snap.pods:
        if not p.namespace or not p.name or (p.namespace, p.name) not in live_pods:
            continue
        for c in p.containers:
            key = (p.namespace, p.name, c.name or "")
            running = c.cgroup is not None
            a, b = live.get(key, frozenset()), c.assigned or frozenset()
            if a == b or (not a and not running):
                continue
            k = c.cgroup.cpus_effective if c.cgroup is not None else None
            out.append(f"{'/'.join(key)}: kubelet's memory (PodResources) {fmt(a)}, its checkpoint {fmt(b)}, "
                       f"the kernel's cpuset {'not read' if k is None else fmt(k)}")
    return out


def summary(view: LiveView, snap) -> dict:
    """The live view as `pinscope fit --json` gives it."""
    if view.error:
        return {"socket": view.socket, "error": view.error}
    return {"socket": view.socket, "error": None, "allocatable_cpus": fmt(view.allocatable_cpus),
            "pods": len(view.pods), "exclusive": {"/".join(k): fmt(v) for k, v in sorted(view.exclusive().items())},
            "disagreements": disagreements(view, snap), "notes": list(view.notes)}
