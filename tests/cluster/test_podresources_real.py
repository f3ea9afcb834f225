"""kubelet's PodResources API, the real one against our stand-in (tests/podresources_server.py), for each pinned
release: with a Guaranteed pod of 1 CPU running, the real kubelet's own bytes for List, GetAllocatableResources
and Get are read on its socket; pinscope's reader decodes them, and the stand-in's encoding of what was decoded
must be those very bytes, field for field (field numbers, wire types, nesting, values), but the fields pinscope
does not model (memory, dynamic resources: listed when the real answer has them) and the order of a packed
cpu_ids list (kubelet sends a set's unsorted list). So the unit tests, which ask the stand-in, ask what kubelet
would answer. Then the report of two ticks has kubelet's live view, agreeing with its checkpoint: no finding.
"""
from __future__ import annotations

import asyncio
import json
import uuid

from cluster.pytest_cluster import Cluster
from podresources_server import StandIn, encode_allocatable, encode_list, ld, pod, s

from pinscope.collectors import podresources as pr
from pinscope.collectors.collect import Options, snapshot

# message -> {field: (kind, message)}; kind: "str", "ints" (packed int64), "int", "msg"; None: not modelled
NUMA = {1: ("int", None)}
TOPO = {1: ("msg", NUMA)}
DEVICES = {1: ("str", None), 2: ("str", None), 3: ("msg", TOPO)}
CONTAINER = {1: ("str", None), 2: ("msg", DEVICES), 3: ("ints", None), 4: None, 5: None}
POD = {1: ("str", None), 2: ("str", None), 3: ("msg", CONTAINER), 4: ("ints", None), 5: None}
LIST = {1: ("msg", POD)}
ALLOCATABLE = {1: ("msg", DEVICES), 2: ("ints", None), 3: None}
GET = {1: ("msg", POD)}


def tree(buf: bytes, schema: dict, path: str = "", skipped: list | None = None) -> list:
    """The message as [(field, wire type, value or subtree)] in the order sent, the unmodelled fields left out
    (their paths added to `skipped`); a field the schema does not know at all fails."""
    out = []
    for num, wt, v in pr.fields(buf):
        assert num in schema, f"{path}/{num}: a field pinscope's schema does not know (wire type {wt})"
        kind = schema[num]
        if kind is None:
            if skipped is not None:
                skipped.append(f"{path}/{num}")
            continue
        if kind[0] == "msg":
            assert isinstance(v, bytes)
            out.append((num, wt, tree(v, kind[1], f"{path}/{num}", skipped)))
        elif kind[0] == "ints":
            out.append((num, wt, sorted(pr._ints([(num, wt, v)], num))))
        else:
            out.append((num, wt, v))
    return out


def raw(path: str, method: str, request: bytes = b"") -> bytes:
    import grpc

    with grpc.insecure_channel(f"unix:{path}") as ch:
        rpc = ch.unary_unary(pr.SERVICE + method, request_serializer=lambda r: r, response_deserializer=bytes)
        return rpc(request, timeout=10)


def _pod(c: Cluster, name: str) -> dict:
    res = {"cpu": "1", "memory": "64Mi"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"pinscope-test": "podresources-real"}},
            "spec": {"nodeName": c.node_name, "automountServiceAccountToken": False,
                     "terminationGracePeriodSeconds": 1, "restartPolicy": "Never",
                     "containers": [{"name": "app", "image": c.busybox_image, "command": ["sleep", "3600"],
                                     "resources": {"requests": res, "limits": res}}]}}


def _checkpoint_cpus(c: Cluster, uid: str) -> str | None:
    doc = json.loads((c.kubelet_root / "cpu_manager_state").read_text())
    if "data" in doc:
        doc = json.loads(doc["data"])
    return (doc.get("entries") or {}).get(uid, {}).get("app")


def test_the_stand_in_answers_as_the_real_kubelet(cluster: Cluster) -> None:
    name = f"pr-{uuid.uuid4().hex[:8]}"
    cluster.apply(_pod(cluster, name))
    uid = None
    try:
        uid = cluster.wait_pod(name)["metadata"]["uid"]
        path = pr.socket_path(str(cluster.kubelet_root))
        skipped: list[str] = []

        got = raw(path, "List")
        pods = pr.decode_list(got)
        (mine,) = [p for p in pods if (p.namespace, p.name) == ("default", name)]
        assert [(c.name, pr.fmt(c.cpus)) for c in mine.containers] == [("app", _checkpoint_cpus(cluster, uid))]
        assert tree(got, LIST, "", skipped) == tree(encode_list(pods), LIST)

        got = raw(path, "GetAllocatableResources")
        cpus, devices = pr.decode_allocatable(got)
        assert tree(got, ALLOCATABLE, "", skipped) == tree(encode_allocatable(cpus, devices), ALLOCATABLE)

        got = raw(path, "Get", s(1, name) + s(2, "default"))  # GetPodResourcesRequest: pod_name 1, pod_namespace 2
        assert tree(got, GET, "", skipped) == tree(ld(1, pod(mine)), GET)

        with StandIn(pods, cpus, devices).start() as standin:  # and read back through pinscope's reader
            assert pr.read_live(standin.path, timeout=10).pods == pods
        print(f"kubelet {cluster.version}: List, GetAllocatableResources and Get as the stand-in encodes them; "
              f"fields not modelled: {sorted(set(skipped)) or 'none'}")

        rep = asyncio.run(snapshot("local", Options(), samples=2, interval=1.0, timeout=90))
        live = rep.to_json()["podresources"]
        assert live["asked"] and live["socket"] == path
        assert {"namespace": "default", "pod": name, "container": "app", "cpus": _checkpoint_cpus(cluster, uid),
                "devices": []} in live["containers"]
        assert live["disagreements"] == [] and "PODRESOURCES_DISAGREES" not in [f.code for f in rep.findings]
    finally:
        cluster.delete_pod(name)
        if uid is not None:
            _gone_from_checkpoint(cluster, uid)


def _gone_from_checkpoint(c: Cluster, uid: str, timeout: float = 60) -> None:
    """kubelet drops a deleted pod's entry from its checkpoint at its next reconcile (removeStaleState, every
    reconcilePeriod) or admission: until then the node's files show its CPUs taken, and the next test's
    prediction from them (tests/cluster/test_fit_real.py) would see a node that is not the one kubelet admits on."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        doc = json.loads((c.kubelet_root / "cpu_manager_state").read_text())
        if "data" in doc:
            doc = json.loads(doc["data"])
        if uid not in (doc.get("entries") or {}):
            return
        time.sleep(0.2)
    raise AssertionError(f"kubelet kept pod {uid}'s checkpoint entry {timeout:g} s after its deletion")
