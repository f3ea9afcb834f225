"""kubelet's live view in the report (issue 36 item 2), against a real gRPC server of ours speaking the
PodResources proto on a unix socket in a node tree (tests/podresources_server.py): read through --root (the
socket found inside the root only, links resolved as the node would), compared with the checkpoint and the
kernel each tick, a disagreement a finding only when it holds over two rounds, unreachable said as a note."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import os

import pytest
from podresources_server import StandIn, agreeing, changed

from pinscope.collectors import podresources as pr
from pinscope.collectors.collect import FULL, NodeCollector, Options
from pinscope.collectors.sim.demo import demo_specs
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport

SOCK = "var/lib/kubelet/pod-resources/kubelet.sock"


def spec(host: str):
    (sp,) = [x for x in demo_specs() if x.hostname == host]
    return sp


class Node:
    """A simulated node's tree, read by the real probe with --root, kubelet's stand-in in it."""

    def __init__(self, root, host: str) -> None:
        self.root = root
        SimNode(spec(host), root).write()
        self.col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
        self.server: StandIn | None = None

    def serve(self, pods, allocatable=()) -> StandIn:
        (self.root / SOCK).parent.mkdir(parents=True, exist_ok=True)
        self.server = StandIn(pods, allocatable).start(str(self.root / SOCK))
        return self.server

    async def ticks(self, n: int):
        await self.col.connect()
        try:
            return [await self.col.tick(FULL) for _ in range(n)]
        finally:
            await self.col.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()


@pytest.fixture
def node(tmp_path):
    made: list[Node] = []

    def make(host: str = "trade-xeon-96") -> Node:
        made.append(Node(tmp_path / "node", host))
        return made[-1]

    yield make
    for n in made:
        n.close()


def codes(report) -> list[str]:
    return [f.code for f in report.findings]


def test_the_stand_ins_answer_is_read_whole(tmp_path):
    pods = (pr.LivePod("ml", "triton-0", (pr.LiveContainer("triton", frozenset({16, 17, 300}),
                                                            (pr.Device("nvidia.com/gpu", ("GPU-3f6c",), (0,)),)),
                                          pr.LiveContainer("sidecar", frozenset()))),)
    with StandIn(pods, {1, 2, 3}, (pr.Device("nvidia.com/gpu", ("GPU-3f6c", "GPU-9a1b"), (0,)),)).start() as srv:
        view = pr.read_live(srv.path, timeout=5)
    assert view.error is None and view.pods == pods
    assert view.allocatable_cpus == {1, 2, 3} and view.allocatable_devices[0].ids == ("GPU-3f6c", "GPU-9a1b")
    assert srv.calls == {"List": 1, "GetAllocatableResources": 1}


def test_an_older_kubelet_without_allocatable_answers_list(tmp_path):
    import grpc

    with StandIn((), allocatable_status=grpc.StatusCode.UNIMPLEMENTED).start() as srv:
        view = pr.read_live(srv.path, timeout=5)
    assert view.error is None and view.pods == () and view.notes[0].startswith("GetAllocatableResources: UNIMPLEMENTED")


# --- the socket under --root ----------------------------------------------------------------------------------


def test_a_symlinked_root_dir_is_followed_inside_the_root(tmp_path):
    """kubelet's root-dir a link to /data/kubelet (an absolute path of the node): found under the root; and a
    path longer than a unix address holds (108 bytes) is asked all the same."""
    root = tmp_path / ("deep-" + "x" * 100) / "host"
    (root / "data/kubelet/pod-resources").mkdir(parents=True)
    (root / "var/lib").mkdir(parents=True)
    os.symlink("/data/kubelet", root / "var/lib/kubelet")
    assert len(str(root / SOCK)) > 108
    with StandIn((), {5}).start(str(root / "data/kubelet/pod-resources/kubelet.sock")) as srv:
        view = pr.read_live_in_root(str(root), "/" + SOCK, timeout=5)
    assert view.error is None and view.allocatable_cpus == {5} and srv.calls["List"] == 1
    assert view.socket == "/var/lib/kubelet/pod-resources/kubelet.sock"


@pytest.mark.parametrize("link", ["../../../../outside", "/../../outside", "{outside}"],
                         ids=["relative", "absolute-climbing", "absolute"])
def test_a_link_out_of_the_root_is_not_followed(tmp_path, link):
    """A kubelet socket outside the root, a link in the tree pointing to it: refused where it climbs above the
    root with '..'; an absolute target is the node's own path, looked for inside the root: never asked."""
    root = tmp_path / "host"
    (root / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(link.format(outside=tmp_path / "outside"), root / "var/lib/kubelet/pod-resources")
    with StandIn((), {5}).start(str(tmp_path / "outside/kubelet.sock")) as srv:
        view = pr.read_live_in_root(str(root), "/" + SOCK, timeout=5)
        assert srv.calls == {}
    if link == "{outside}":
        assert "no such socket" in view.error
    else:
        assert "climbs out of the root" in view.error and "refused" in view.error


def test_a_link_loop_is_said(tmp_path):
    root = tmp_path / "host"
    (root / "var/lib").mkdir(parents=True)
    os.symlink("/var/lib/kubelet", root / "var/lib/kubelet")
    assert "a loop" in pr.read_live_in_root(str(root), "/" + SOCK).error


# --- one report per tick --------------------------------------------------------------------------------------


def test_kubelet_agreeing_says_nothing_and_is_in_the_json(node):
    n = node()
    first = asyncio.run(n.ticks(1))[0]
    n.serve(agreeing(first.snapshot), {3, 4})
    a, b = asyncio.run(n.ticks(2))
    o = b.to_json()["podresources"]
    assert o["asked"] is True and o["socket"] == "/" + SOCK and o["allocatable_cpus"] == "3-4"
    assert {"namespace": "trading", "pod": "md-feed-0", "container": "feed", "cpus": "2-3,50-51", "devices": []} \
        in o["containers"]
    # the demo's fix-gw runs where another writer put it: kubelet's in-memory state agrees with its checkpoint, so the
    # drift is STATE_CGROUP_DRIFT's, and the live view adds no finding of its own
    assert [(d["container"], d["podresources"], d["checkpoint"], d["kernel"], d["held"]) for d in o["disagreements"]] \
        == [("fix-gw", "28,76", "28,76", "28-29,76-77", True)]
    assert "PODRESOURCES_DISAGREES" not in codes(a) + codes(b) and "STATE_CGROUP_DRIFT" in codes(b)
    json.dumps(b.to_json())


def test_memory_against_checkpoint_is_a_finding_once_it_holds(node):
    n = node()
    first = asyncio.run(n.ticks(1))[0]
    n.serve(changed(agreeing(first.snapshot), "feed", cpus=frozenset({2, 3})))
    a, b = asyncio.run(n.ticks(2))
    (d,) = [d for d in a.to_json()["podresources"]["disagreements"] if d["container"] == "feed"]
    assert d == {"namespace": "trading", "pod": "md-feed-0", "container": "feed", "what": "cpus",
                 "podresources": "2-3", "checkpoint": "2-3,50-51", "kernel": "2-3,50-51", "held": False,
                 "odd_one": "kubelet's in-memory state differs from its checkpoint and the kernel"}
    assert "PODRESOURCES_DISAGREES" not in codes(a)  # seen once: a pod admitted between two reads looks the same
    (f,) = [f for f in b.findings if f.code == "PODRESOURCES_DISAGREES"]
    assert str(f.severity) == "warning" and (f.namespace, f.pod, f.container) == ("trading", "md-feed-0", "feed")
    assert f.message == ("trading/md-feed-0/feed: kubelet's in-memory state and its checkpoint and the kernel disagree on its "
                         "CPUs: PodResources 2-3, checkpoint 2-3,50-51, cgroup 2-3,50-51")
    assert f.evidence[0].startswith(f"kubelet's PodResources List (/{SOCK}), asked twice ")
    assert f.evidence[0].endswith(": 2-3") and f.evidence[1].endswith("][feed]: 2-3,50-51")
    assert f.evidence[2].endswith("/cpuset.cpus.effective (the kernel): 2-3,50-51")
    assert f.cpus == (2, 3, 50, 51)


async def test_a_disagreement_seen_once_is_never_a_finding(node):
    n = node()
    first = (await n.ticks(1))[0]
    good = agreeing(first.snapshot)
    srv = n.serve(changed(good, "feed", cpus=frozenset({2, 3})))

    await n.col.connect()
    try:
        a = await n.col.tick(FULL)
        srv.set(good)  # kubelet's checkpoint caught up (or the pod went): gone by the next round
        reports = a, await n.col.tick(FULL), await n.col.tick(FULL)
    finally:
        await n.col.close()

    assert all("PODRESOURCES_DISAGREES" not in codes(r) for r in reports)


def test_unreachable_is_a_note_never_an_error(node):
    n = node()
    r = asyncio.run(n.ticks(1))[0]
    o = r.to_json()
    assert o["podresources"]["asked"] is False and "no such socket" in o["podresources"]["note"]
    assert not any("kubelet.sock" in e["message"] for e in o["errors"])
    assert "PODRESOURCES_DISAGREES" not in codes(r)


def test_devices_disagreeing_are_a_finding(node):
    n = node("infer-epyc-64")
    first = asyncio.run(n.ticks(1))[0]
    good = agreeing(first.snapshot)
    pod, gpu = next((p, c) for p in good for c in p.containers if c.devices)
    wrong = (dataclasses.replace(gpu.devices[0], ids=("GPU-elsewhere",)),)
    n.serve(changed(good, gpu.name, pod.name, devices=wrong))
    a, b = asyncio.run(n.ticks(2))
    (f,) = [f for f in b.findings if f.code == "PODRESOURCES_DISAGREES"]
    assert (f.pod, f.container) == (pod.name, gpu.name) and "nvidia.com/gpu devices: PodResources GPU-elsewhere, checkpoint GPU-" in f.message
    assert f.cpus == ()


def test_a_name_two_pods_hold_is_not_compared(node):
    """A StatefulSet's or static pod recreated while the old pod's cgroup or checkpoint entry lingers: two pods
    of one name in the report. kubelet's entry cannot say which it is of, so neither is compared (compared with
    the wrong one, a disagreement held two rounds was a false PODRESOURCES_DISAGREES)."""
    from pinscope.collectors.assemble.live import compare

    n = node()
    snap = asyncio.run(n.ticks(1))[0].snapshot
    view = pr.LiveView("/" + SOCK, changed(agreeing(snap), "feed", cpus=frozenset({2, 3})))
    assert [d.container for d in compare(view, snap) if d.container == "feed"] == ["feed"]  # one pod: compared
    (feed,) = [p for p in snap.pods if p.name == "md-feed-0"]
    twin = feed._replace(uid="0000-old-" + feed.uid[9:])
    twins = dataclasses.replace(snap, pods=(*snap.pods, twin))
    assert [d for d in compare(view, twins) if d.pod == "md-feed-0"] == []


async def test_a_kubelet_that_never_answers_holds_the_tick_a_second(node):
    """A socket that accepts and never answers (a wedged kubelet): the tick waited 3 s a call for it, so at
    --interval 1 the live view marked a healthy node stale (3 ticks); now 1 s a call, and said."""
    import socket
    import time

    n = node()
    (n.root / SOCK).parent.mkdir(parents=True, exist_ok=True)
    wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        here = os.getcwd()
        os.chdir((n.root / SOCK).parent)  # a relative name: the tree's path is longer than a socket address
        try:
            wedged.bind("kubelet.sock")
        finally:
            os.chdir(here)
        wedged.listen(8)  # never accepted: the client's connect succeeds, no answer ever comes
        await n.col.connect()
        try:
            await n.col.tick(FULL)
            t0 = time.monotonic()
            report = await n.col.tick(FULL)
            took = time.monotonic() - t0
        finally:
            await n.col.close()
    finally:
        wedged.close()
    o = report.to_json()["podresources"]
    assert o["asked"] is False or o.get("error"), o
    assert took < 2.5, f"the tick waited {took:.1f} s for a kubelet that never answers"
