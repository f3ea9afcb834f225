"""kubelet's allocation checkpoint (<root-dir>/allocated_pods_state) and what it tells the findings: a pod with
pod-level resources (spec.resources) is not one kubelet's static policy pins by default, and its containers
without a CPU limit of their own run under the pod's as their CFS quota. On the real kubelets (v1.35.4,
v1.37.2; tests/cluster/test_real_podlevel.py) such a pod was called GUARANTEED_NOT_PINNED, a warning, for a
container of it: kubelet had done exactly what it does with such a pod.

REAL_1_37 and REAL_1_35 are the files kubelet v1.37.2 and v1.35.4 wrote for tests/cluster/test_real_podlevel.py's
pod, byte for byte (v1.35.4 records no PodLevelResources: InPlacePodLevelResourcesVerticalScaling is alpha, off,
there); the others have the shape json.Marshal gives k/k pkg/kubelet/allocation/state's Checkpoint, with the
checksum kubelet computes (checksum.New(Data): FNV-1a 32 over "(string)" + data), computed here by its own
small code.
"""
from __future__ import annotations

import json

import pytest

from pinscope.collectors.model import PodAllocation
from pinscope.collectors.parse.allocstate import parse_allocated_pods_state
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from helpers import read_sim

POD_LEVEL = "26ef72b2-95f7-439b-bc17-f37fe576d03e"
CONTAINER_LEVEL = "5b0c4a9e-1f7d-4a51-9a0b-0c2d6e8f9a11"
ONE = {"limits": {"cpu": "1", "memory": "32Mi"}, "requests": {"cpu": "1", "memory": "32Mi"}}
POD = {"limits": {"cpu": "1", "memory": "96Mi"}, "requests": {"cpu": "1", "memory": "96Mi"}}
REAL_1_35 = ('{"data":"{\\"entries\\":{\\"845ec305-9e60-4357-adcc-fe6c0a6e6aaf\\":{\\"ContainerResources\\":{\\"app\\":{\\"limits\\":{\\"cpu\\":\\"1\\",\\"memory\\":\\"32Mi\\"},\\"requests\\":{\\"cpu\\":\\"1\\",\\"memory\\":\\"32Mi\\"}},\\"side\\":{}},\\"PodLevelResources\\":null}}}","checksum":1397373285}')
REAL_1_37 = ('{"data":"{\\"entries\\":{\\"921d9a39-85f1-47d0-9cb5-4df82ec8a014\\":{\\"ContainerResources\\":{\\"app\\":{\\"limits\\":{\\"cpu\\":\\"1\\",\\"memory\\":\\"32Mi\\"},\\"requests\\":{\\"cpu\\":\\"1\\",\\"memory\\":\\"32Mi\\"}},\\"init\\":{},\\"side\\":{}},\\"PodLevelResources\\":{\\"limits\\":{\\"cpu\\":\\"1\\",\\"memory\\":\\"96Mi\\"},\\"requests\\":{\\"cpu\\":\\"1\\",\\"memory\\":\\"96Mi\\"}},\\"EmptyDirVolumeLimits\\":null}}}","checksum":310019740}')


def fnv1a32(b: bytes) -> int:
    h = 0x811C9DC5
    for x in b:
        h = ((h ^ x) * 0x01000193) & 0xFFFFFFFF
    return h


def checkpoint(entries: dict, checksum: int | None = None) -> str:
    data = json.dumps({"entries": entries}, separators=(",", ":"))
    return json.dumps({"data": data, "checksum": fnv1a32(b"(string)" + data.encode()) if checksum is None
                       else checksum})


TWO = {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "2", "memory": "1Gi"}}
ENTRIES = {
    POD_LEVEL: {"ContainerResources": {"app": ONE, "init": {}, "side": {}}, "PodLevelResources": POD},
    CONTAINER_LEVEL: {"ContainerResources": {"java": TWO}, "PodLevelResources": None},
}
# what v1.35.4 writes of the same pods: no PodLevelResources
ENTRIES_1_35 = {POD_LEVEL: {"ContainerResources": {"app": ONE, "init": {}, "side": {}}},
                CONTAINER_LEVEL: {"ContainerResources": {"java": TWO}}}


def test_pod_level_resources_are_read_with_the_checksum_kubelet_verifies():
    problems: list = []
    got = parse_allocated_pods_state(REAL_1_37, "s", problems)
    assert problems == [] and got == {"921d9a39-85f1-47d0-9cb5-4df82ec8a014": PodAllocation(True, True, ("init", "side"))}
    got = parse_allocated_pods_state(REAL_1_35, "s", problems)
    assert problems == [] and got == {"845ec305-9e60-4357-adcc-fe6c0a6e6aaf": PodAllocation(False, True, ("side",))}
    assert got["845ec305-9e60-4357-adcc-fe6c0a6e6aaf"].pod_level_in("Guaranteed")
    assert parse_allocated_pods_state(checkpoint(ENTRIES), "s", problems) == {
        POD_LEVEL: PodAllocation(True, True, ("init", "side")), CONTAINER_LEVEL: PodAllocation(False, False)}
    got = parse_allocated_pods_state(checkpoint(ENTRIES_1_35), "s", problems)
    assert got == {POD_LEVEL: PodAllocation(False, True, ("init", "side")), CONTAINER_LEVEL: PodAllocation(False, False)}
    assert problems == []
    # v1.35.4's file: a Guaranteed pod with a container without limits is Guaranteed by its pod-level resources;
    # a Burstable pod's container without limits says nothing of the kind
    assert got[POD_LEVEL].pod_level_in("Guaranteed") and not got[POD_LEVEL].pod_level_in("Burstable")
    assert not got[CONTAINER_LEVEL].pod_level_in("Guaranteed")


def test_a_file_kubelet_would_refuse_says_nothing_of_any_pod():
    for text, said in ((checkpoint(ENTRIES, checksum=42), "checksum mismatch"),
                       (checkpoint({POD_LEVEL: {"PodLevelResources": "1"}}), "cannot be decoded"),
                       (json.dumps({"data": '{"entries": ', "checksum": fnv1a32(b'(string){"entries": ')}),
                        "cannot be decoded"),
                       ("[]", "not a JSON object")):
        problems: list = []
        assert parse_allocated_pods_state(text, "s", problems) is None, text
        assert [p for p in problems if said in p.message], (text, problems)


def _node(alloc: str | None) -> NodeSpec:
    """Static, reserved 0,4; a pod-level pod (two containers, each under the pod's one-CPU limit as its quota, on
    the shared pool) and a container-level Guaranteed pod kubelet did not pin (a two-CPU quota, shared)."""
    pods = [PodSpec("pl", "prod", uid=POD_LEVEL, containers=[CtrSpec("app", quota_cores=1), CtrSpec("side", quota_cores=1)]),
            PodSpec("big", "prod", uid=CONTAINER_LEVEL, containers=[CtrSpec("java", quota_cores=2)])]
    return NodeSpec(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=2, driver="systemd",
                    init_affinity="0,4", pods=pods,
                    extra_files={"/var/lib/kubelet/allocated_pods_state": alloc} if alloc is not None else {})


def _not_pinned(r) -> list[tuple[str | None, str | None]]:
    return sorted((f.pod, f.container) for f in r.findings if f.code == "GUARANTEED_NOT_PINNED")


@pytest.mark.parametrize("entries", [ENTRIES, ENTRIES_1_35], ids=["v1.37", "v1.35"])
def test_a_pod_with_pod_level_resources_is_not_guaranteed_not_pinned(tmp_path, entries):
    r = read_sim(_node(checkpoint(entries)), tmp_path / "a", samples=1)
    assert set(r.snapshot.pod_level or {}) == {POD_LEVEL, CONTAINER_LEVEL}
    assert _not_pinned(r) == [("big", "java")]


def test_without_the_checkpoint_nothing_changes(tmp_path):
    """An older kubelet (or InPlacePodVerticalScaling off) writes no allocation checkpoint: unknown, as before."""
    r = read_sim(_node(None), tmp_path / "b", samples=1)
    assert r.snapshot.pod_level is None
    assert _not_pinned(r) == [("big", "java"), ("pl", "app"), ("pl", "side")]


async def test_live_a_pod_started_after_the_static_read_is_read_again(tmp_path):
    """The live view reads the allocation checkpoint on static frames: a Guaranteed pod that starts later is
    unknown to it for one tick, and the next tick reads it anew (one static frame), so the pod-level pod is not
    called GUARANTEED_NOT_PINNED for minutes (the static frame's own cadence, 300 ticks)."""

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    only_big = {CONTAINER_LEVEL: ENTRIES[CONTAINER_LEVEL]}
    before = _node(checkpoint(only_big))
    before.pods = [p for p in before.pods if p.uid == CONTAINER_LEVEL]

    SimNode(before, tmp_path).write()
    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    try:
        first = await col.tick()
        SimNode(_node(checkpoint(ENTRIES)), tmp_path).write()  # the pod-level pod starts
        second = await col.tick()
        wants = col.pipeline.want_static
        third = await col.tick()
        fourth = await col.tick()
        wants_after = col.pipeline.want_static
    finally:
        await col.close()

    assert _not_pinned(first) == [("big", "java")]
    assert POD_LEVEL not in second.snapshot.pod_level and wants  # unknown at the last static read: asked again
    assert _not_pinned(second) == [("big", "java")]  # and, unknown yet, never called unpinned meanwhile
    assert third.snapshot.pod_level[POD_LEVEL].pod_level and _not_pinned(third) == [("big", "java")]
    assert _not_pinned(fourth) == [("big", "java")] and not wants_after  # once: no static frame every tick


def test_an_ephemeral_container_is_no_container_without_limits(tmp_path):
    """Kubelets after 1.37 (k/k master) record a pod's ephemeral containers (kubectl debug) in ContainerResources
    as `{}`. Read as "a container without limits of its own", a Guaranteed container-level pod looked pod-level,
    and its unpinned container was not GUARANTEED_NOT_PINNED (a missed warning). The API names the ephemeral
    containers (spec.ephemeralContainers, status.ephemeralContainerStatuses): with its answer, the warning is
    back; without it, a container without limits stays unknown in kind (no false warning either)."""
    import time

    from pinscope.collectors.kube import ApiNode, ApiPod, ApiWindow, _pod

    debugged = {CONTAINER_LEVEL: {"ContainerResources": {"java": TWO, "debugger-7x2k": {}}, "PodLevelResources": None}}
    r = read_sim(_node(checkpoint({**ENTRIES, **debugged})), tmp_path, samples=1)
    alloc = r.snapshot.pod_level[CONTAINER_LEVEL]
    assert alloc.unlimited_names == ("debugger-7x2k",)
    assert _not_pinned(r) == []  # the node alone cannot tell an ephemeral container from one without limits
    # the API's pod, parsed as pinscope parses the API's pod list
    doc = {"metadata": {"uid": CONTAINER_LEVEL, "namespace": "prod", "name": "big"},
           "spec": {"containers": [{"name": "java", "resources": TWO}],
                    "ephemeralContainers": [{"name": "debugger-7x2k", "image": "busybox"}]},
           "status": {"qosClass": "Guaranteed", "phase": "Running",
                      "ephemeralContainerStatuses": [{"name": "debugger-7x2k"}]}}
    ap, _, _ = _pod(doc)
    assert isinstance(ap, ApiPod) and ap.ephemeral == ("debugger-7x2k",) and ap.phase == "Running"
    api = ApiWindow(ApiNode("t", time.monotonic(), pods={CONTAINER_LEVEL: ap}))
    assert _not_pinned(r.with_api(api)) == [("big", "java")]
    # the pod-level pod keeps its containers without limits (init, side): still pod-level, still silent
    assert ("pl", "app") not in _not_pinned(r.with_api(api))
