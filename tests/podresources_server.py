"""A stand-in for kubelet's PodResources API: a real grpcio server on a unix socket, speaking v1's messages
(k8s.io/kubelet pkg/apis/podresources/v1/api.proto: List, GetAllocatableResources, Get), encoded here from the
proto's field numbers as Go's protobuf encodes them (fields in number order, repeated int64 packed, empty
values left out). What it answers can change between two askings (`set`), as kubelet's in-memory state does.

tests/cluster/test_podresources_real.py checks this encoding against the real kubelet's own answer.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
from concurrent import futures

import grpc

from pinscope.collectors import podresources as pr
from pinscope.collectors.podresources import Device, LiveContainer, LivePod


def varint(n: int) -> bytes:
    out = b""
    while True:
        b, n = n & 0x7F, n >> 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def ld(num: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def s(num: int, text: str) -> bytes:
    return ld(num, text.encode()) if text else b""


def packed(num: int, xs) -> bytes:
    xs = sorted(xs)
    return ld(num, b"".join(varint(x) for x in xs)) if xs else b""


def topology(numa) -> bytes:
    # TopologyInfo: nodes = 1 (NUMANode: ID = 1)
    return ld(3, b"".join(ld(1, varint(1 << 3) + varint(n) if n else b"") for n in numa)) if numa else b""


def device(d: Device) -> bytes:
    # ContainerDevices: resource_name = 1, device_ids = 2, topology = 3
    return s(1, d.resource) + b"".join(s(2, i) for i in d.ids) + topology(d.numa_nodes)


def container(c: LiveContainer) -> bytes:
    # ContainerResources: name = 1, devices = 2, cpu_ids = 3 (memory = 4, dynamic_resources = 5: not modelled)
    return s(1, c.name) + b"".join(ld(2, device(d)) for d in c.devices) + packed(3, c.cpus)


def pod(p: LivePod) -> bytes:
    # PodResources: name = 1, namespace = 2, containers = 3, cpu_ids = 4
    return s(1, p.name) + s(2, p.namespace) + b"".join(ld(3, container(c)) for c in p.containers) + packed(4, p.cpus)


def encode_list(pods) -> bytes:
    """ListPodResourcesResponse: pod_resources = 1."""
    return b"".join(ld(1, pod(p)) for p in pods)


def encode_allocatable(cpus, devices=()) -> bytes:
    """AllocatableResourcesResponse: devices = 1, cpu_ids = 2."""
    return b"".join(ld(1, device(d)) for d in devices) + packed(2, cpus)


def short_socket_path() -> tuple[str, str]:
    """(a directory, a socket path in it) short enough for a unix address (108 bytes): bind there, then move
    the socket where a test wants it (a bound socket keeps working under its new name)."""
    d = tempfile.mkdtemp(prefix="pr-", dir="/tmp")
    return d, os.path.join(d, "s.sock")


def agreeing(snap) -> tuple[pr.LivePod, ...]:
    """What kubelet's in-memory state says of the node when it agrees with its checkpoints: every named pod, its
    running containers with the checkpoint's CPUs and devices."""
    out = []
    for p in snap.pods:
        if not (p.namespace and p.name):
            continue
        ctrs = []
        for c in p.containers:
            if c.cgroup is None or not c.name:
                continue
            devs: dict[str, list[str]] = {}
            for d in c.devices:
                devs.setdefault(d.resource, []).append(d.device)
            ctrs.append(pr.LiveContainer(c.name, c.assigned or frozenset(),
                                         tuple(pr.Device(r, tuple(ids), ()) for r, ids in devs.items())))
        out.append(pr.LivePod(p.namespace, p.name, tuple(ctrs)))
    return tuple(out)


def changed(pods, container: str, pod: str | None = None, **kw):
    """`pods` with one container changed (in every pod, or in pod `pod`)."""
    return tuple(dataclasses.replace(p, containers=tuple(dataclasses.replace(c, **kw) if c.name == container else c
                                                         for c in p.containers)) if pod in (None, p.name) else p
                 for p in pods)


class StandIn:
    """kubelet's PodResources server: `pods` (LivePods) and `allocatable` CPUs, answered until `stop()`.
    `calls` counts the requests by method."""

    def __init__(self, pods=(), allocatable=(), devices=(), allocatable_status: grpc.StatusCode | None = None):
        self.lock = threading.Lock()
        self.pods, self.allocatable, self.devices = tuple(pods), frozenset(allocatable), tuple(devices)
        self.allocatable_status = allocatable_status  # an older kubelet: GetAllocatableResources not served
        self.calls: dict[str, int] = {}
        self.server: grpc.Server | None = None
        self.path = ""
        self._dir = ""

    def set(self, pods=None, allocatable=None) -> None:
        with self.lock:
            if pods is not None:
                self.pods = tuple(pods)
            if allocatable is not None:
                self.allocatable = frozenset(allocatable)

    def _answer(self, method: str, request: bytes, context) -> bytes:
        with self.lock:
            self.calls[method] = self.calls.get(method, 0) + 1
            if method == "List":
                return encode_list(self.pods)
            if method == "GetAllocatableResources":
                if self.allocatable_status is not None:
                    context.abort(self.allocatable_status, "unknown method GetAllocatableResources")
                return encode_allocatable(self.allocatable, self.devices)
            return self._get(request, context)

    def _get(self, request: bytes, context) -> bytes:
        from pinscope.collectors.podresources import _strs, fields

        fs = fields(request)  # GetPodResourcesRequest: pod_name = 1, pod_namespace = 2
        name, ns = (_strs(fs, 1) or [""])[0], (_strs(fs, 2) or [""])[0]
        for p in self.pods:
            if (p.namespace, p.name) == (ns, name):
                return ld(1, pod(p))
        context.abort(grpc.StatusCode.NOT_FOUND, f"pod {name} in namespace {ns} not found")
        return b""

    def start(self, where: str | None = None) -> StandIn:
        """Serve on a unix socket, moved to `where` when given (its directory must exist)."""
        self._dir, bound = short_socket_path()
        me = self

        class Handler(grpc.GenericRpcHandler):
            def service(self, details):
                prefix = "/v1.PodResourcesLister/"
                method = details.method[len(prefix):] if details.method.startswith(prefix) else None
                if method not in ("List", "GetAllocatableResources", "Get"):
                    return None
                return grpc.unary_unary_rpc_method_handler(
                    lambda req, ctx: me._answer(method, req, ctx))

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4), handlers=[Handler()])
        self.server.add_insecure_port(f"unix:{bound}")
        self.server.start()
        self.path = bound
        if where is not None:
            os.rename(bound, where)
            self.path = where
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop(0).wait(5)
            self.server = None
        for p in (self.path, os.path.join(self._dir, "s.sock")):
            if p and os.path.exists(p):
                os.unlink(p)
        if self._dir and os.path.isdir(self._dir):
            os.rmdir(self._dir)

    def __enter__(self) -> StandIn:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
