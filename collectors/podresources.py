"""Kubelet's live view through its PodResources API (k/k pkg/kubelet/apis/podresources, v1; its messages:
k8s.io/kubelet pkg/apis/podresources/v1/api.proto): `List` (every pod's containers with their exclusive CPUs
and devices, devices with their NUMA nodes) and `GetAllocatableResources` (the CPUs and devices kubelet may
hand out), on the unix socket
`<root-dir>/pod-resources/kubelet.sock`. No authentication: the socket's file mode (root's) is the gate.

gRPC comes from grpcio; the few messages are decoded here from the protobuf wire format (field numbers
of kubelet's api.proto, quoted below): no generated stubs, no protobuf runtime. What cannot be reached
(no socket, not root, grpcio absent, kubelet not answering within the deadline) is said in `error`,
never raised: the live view is a second opinion, the node's files stay the first.

Under --root the socket is found inside the root only: the path is walked one component at a time from a
descriptor of the root, each symlink resolved as the node would resolve it (an absolute target from the
root), and one that climbs out of the root is refused. gRPC then connects through /proc/self/fd/N of the
socket found, so nothing can swap the path between the walk and the connect (and a deep --root never
overflows a unix socket address's 108 bytes). Over SSH the socket is forwarded (transport/ssh.py).
"""
from __future__ import annotations

import errno
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
    """What kubelet says in memory now; `error` set: it could not be asked (the rest is empty). `socket`: the
    socket's path on the node (under --root: without the prefix)."""

    socket: str
    pods: tuple[LivePod, ...] = ()
    allocatable_cpus: frozenset[int] = frozenset()
    allocatable_devices: tuple[Device, ...] = ()
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # with `error`: its cause in a few plain words, one of WHY ("no socket", "not root", ...), for a line a user
    # in an incident reads first (the TUI's fit pane); `error` says the rest
    why: str = ""

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
    """kubelet's socket under its root-dir, as seen from a tree mounted at fs_root (--root). Only for a
    path one trusts: open_in_root() is the confined way to reach it under a root."""
    return os.path.join(fs_root, root_dir.lstrip("/"), SOCKET)


def node_socket(root_dir: str) -> str | None:
    """The socket's path on the node for kubelet's --root-dir; None when that climbs (not absolute, or '..')."""
    if not root_dir.startswith("/") or ".." in root_dir.split("/"):
        return None
    return os.path.join(root_dir, SOCKET)


class Refused(ValueError):
    """The path leads out of the root (or loops): not followed."""


_MAX_LINKS = 40  # as the kernel's path walk (ELOOP)


def open_in_root(root: str, path: str) -> int:
    """An O_PATH descriptor of `path` (a node path) found inside the tree at `root`, every symlink on the
    way resolved inside it: an absolute target from the root, '..' never above it (Refused). OSError as
    the kernel says it (FileNotFoundError, PermissionError)."""
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    try:
        return _walk(fd, path)
    finally:
        os.close(fd)


def _walk(root_fd: int, path: str) -> int:
    """open_in_root's walk: a stack of descriptors from the root (dirs[0]); returns the last one opened."""
    dirs = [root_fd]
    todo = [p for p in path.split("/") if p not in ("", ".")]
    links = 0
    try:
        while todo:
            name = todo.pop(0)
            if name == "..":
                if len(dirs) == 1:
                    raise Refused(f"{path}: climbs out of the root through '..'")
                os.close(dirs.pop())
                continue
            st = os.stat(name, dir_fd=dirs[-1], follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > _MAX_LINKS:
                    raise Refused(f"{path}: more than {_MAX_LINKS} symlinks (a loop)")
                target = os.readlink(name, dir_fd=dirs[-1])
                if target.startswith("/"):  # the node's absolute path: from the root again
                    while len(dirs) > 1:
                        os.close(dirs.pop())
                todo[:0] = [p for p in target.split("/") if p not in ("", ".")]
                continue
            if todo and not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name)
            dirs.append(os.open(name, os.O_PATH | os.O_NOFOLLOW | (os.O_DIRECTORY if todo else 0), dir_fd=dirs[-1]))
        if len(dirs) == 1:
            raise Refused(f"{path}: the root itself")
        return dirs.pop()
    finally:
        for d in dirs[1:]:
            os.close(d)


_AS_ROOT = "kubelet's socket is root's: run pinscope as root"

# LiveView.why: every cause an unreachable view gives, in plain words
WHY = ("no socket", "not root", "not a socket", "refused", "kubelet not listening", "not answering",
       "answer not understood", "API error", "grpcio not installed", "not forwarded over SSH", "not connected",
       "not through this transport")


def _why_not(fd: int, shown: str) -> LiveView | None:
    """Why the socket behind `fd` cannot be asked (a LiveView saying it), or None."""
    st = os.fstat(fd)
    if not stat.S_ISSOCK(st.st_mode):
        return LiveView(shown, error=f"{shown}: not a socket", why="not a socket")
    if not os.access(f"/proc/self/fd/{fd}", os.R_OK | os.W_OK):
        return LiveView(shown, error=f"{shown}: not writable by this user ({_AS_ROOT})", why="not root")
    return None


def read_live_in_root(root: str, path: str, timeout: float = 3.0) -> LiveView:
    """Ask kubelet on its socket at node path `path` inside the tree at `root` ("/": this machine)."""
    try:
        fd = open_in_root(root, path)
    except Refused as err:
        return LiveView(path, error=f"{err}: refused (under --root only paths inside the root are followed)",
                        why="refused")
    except FileNotFoundError:
        return LiveView(path, error=f"{path}: no such socket (kubelet not running here, or its root-dir not mounted)",
                        why="no socket")
    except PermissionError:
        return LiveView(path, error=f"{path}: not reachable by this user ({_AS_ROOT})", why="not root")
    except OSError as err:
        return LiveView(path, error=f"{path}: {err.strerror}", why="no socket")
    try:
        why = _why_not(fd, path)
        if why is not None:
            return why
        return ask(f"unix:/proc/self/fd/{fd}", path, timeout)
    finally:
        os.close(fd)


def read_live(path: str, timeout: float = 3.0) -> LiveView:
    """Ask kubelet on the socket at `path` on this machine (every symlink followed)."""
    return read_live_in_root("/", os.path.abspath(path), timeout)


def ask(address: str, shown: str, timeout: float = 3.0) -> LiveView:
    """List, then GetAllocatableResources, on a gRPC `address` (unix:PATH), each within `timeout`; `shown`:
    the socket's path on the node, as the view says it."""
    try:
        import grpc  # type: ignore[import-untyped]
    except ImportError:
        return LiveView(shown, error="grpcio is not installed: kubelet's PodResources API was not asked",
                        why="grpcio not installed")
    opts = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.enable_http_proxy", 0)]
    try:
        with grpc.insecure_channel(address, options=opts) as ch:
            def call(method: str) -> bytes:
                rpc = ch.unary_unary(SERVICE + method, request_serializer=lambda _: b"", response_deserializer=bytes)
                return rpc(None, timeout=timeout)

            pods = decode_list(call("List"))
            try:
                cpus, devices = decode_allocatable(call("GetAllocatableResources"))
            except grpc.RpcError as err:  # GA in 1.28; an older kubelet answers List only
                return LiveView(shown, pods, notes=[f"GetAllocatableResources: {err.code().name}: {err.details()}"])
    except grpc.RpcError as err:
        return LiveView(shown, error=f"kubelet's PodResources API: {err.code().name}: {err.details()}",
                        why=_GRPC_WHY.get(err.code().name, "API error"))
    except WireError as err:
        return LiveView(shown, error=f"kubelet's PodResources answer not understood: {err}", why="answer not understood")
    return LiveView(shown, pods, cpus, devices)


# a socket that nobody listens on (kubelet stopped) fails to connect: UNAVAILABLE; one that accepts and never
# answers runs out the deadline
_GRPC_WHY = {"UNAVAILABLE": "kubelet not listening", "DEADLINE_EXCEEDED": "not answering"}


def fmt(cpus) -> str:
    from .parse.cpuset import format_cpuset

    return format_cpuset(cpus) or "none"
