"""kubelet's PodResources API (collectors/podresources.py): its answers decoded from the protobuf wire format
(a real kubelet's bytes, and messages encoded here from api.proto's field numbers), what cannot be asked
said and never raised, and the disagreements of kubelet's in-memory state with its checkpoint given with all three
values (memory, checkpoint, kernel), exited init containers spared. The real socket of the real kubelet is
asked in tests/cluster/test_fit_real.py."""
from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time

import pytest
from helpers import need, read_sim
from podresources_server import ld, packed, s, varint  # the stand-in's encoder, from api.proto's numbers

from pinscope.collectors import podresources as pr
from pinscope.collectors.assemble.live import compare
from pinscope.collectors.sim.demo import demo_specs

# GetAllocatableResources as kubelet v1.37.2 answered it on tests/cluster's node (2 CPUs, reservedSystemCPUs
# 0, the Static memory manager): cpu_ids [1], one ContainerMemory ("memory", 24.7 GB, NUMA 0), no devices
REAL_ALLOCATABLE = bytes.fromhex("1201011a120a066d656d6f72791080e0cf945c1a020a00")


def unpacked(num: int, xs: list[int]) -> bytes:
    return b"".join(varint(num << 3) + varint(x) for x in xs)


def device(resource: str, ids: list[str], numa: list[int]) -> bytes:
    # ContainerDevices: resource_name 1, device_ids 2, topology 3 (TopologyInfo.nodes 1, NUMANode.ID 1)
    return s(1, resource) + b"".join(s(2, i) for i in ids) + ld(3, b"".join(ld(1, varint(1 << 3) + varint(n)) for n in numa))


def test_a_real_kubelets_allocatable_answer():
    cpus, devices = pr.decode_allocatable(REAL_ALLOCATABLE)
    assert cpus == {1} and devices == ()


@pytest.mark.parametrize("ints", [packed, unpacked], ids=["packed", "unpacked"])
def test_pods_containers_cpus_and_devices_with_their_numa_nodes(ints):
    ctr = s(1, "triton") + ld(2, device("nvidia.com/gpu", ["GPU-3f6c"], [3])) + ints(3, [16, 17, 300])
    shared = s(1, "sidecar")  # a shared-pool container: no cpu_ids
    pod = s(1, "triton-0") + s(2, "ml") + ld(3, ctr) + ld(3, shared)
    (got,) = pr.decode_list(ld(1, pod))
    assert (got.namespace, got.name) == ("ml", "triton-0")
    assert [(c.name, c.cpus) for c in got.containers] == [("triton", {16, 17, 300}), ("sidecar", frozenset())]
    assert got.containers[0].devices == (pr.Device("nvidia.com/gpu", ("GPU-3f6c",), (3,)),)
    assert pr.decode_list(b"") == ()  # no pod: kubelet sends an empty message


def test_numa_node_zero_as_go_sends_it():
    """proto3 leaves the zero out: a device on NUMA node 0 is an empty NUMANode (kubelet's encoder sends
    `topology { nodes {} }`). It was read as a device with no NUMA node."""
    dev = s(1, "nvidia.com/gpu") + s(2, "GPU-0") + ld(3, ld(1, b""))
    (got,) = pr.decode_list(ld(1, ld(3, s(1, "c") + ld(2, dev))))
    assert got.containers[0].devices[0].numa_nodes == (0,)


@pytest.mark.parametrize("bad", [b"\x0a\x05ab", b"\x0a", b"\x0b\x00", b"\xff" * 11])
def test_a_cut_or_foreign_answer_is_a_wire_error(bad):
    with pytest.raises(pr.WireError):
        pr.decode_list(bad)


def test_what_cannot_be_asked_is_said(tmp_path):
    assert "no such socket" in pr.read_live(str(tmp_path / "kubelet.sock")).error
    (tmp_path / "file").write_text("x")
    assert pr.read_live(str(tmp_path / "file")).error.endswith("not a socket")
    assert pr.socket_path("/var/lib/kubelet", "/host") == "/host/var/lib/kubelet/pod-resources/kubelet.sock"


def test_a_socket_that_is_not_kubelet_is_said_within_the_deadline(tmp_path):
    """Something listens there but speaks no gRPC (it closes every connection): an error, in time."""
    path = str(tmp_path / "kubelet.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(8)
    stop = threading.Event()

    def close_all() -> None:
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                srv.accept()[0].close()
            except OSError:
                pass

    t = threading.Thread(target=close_all, daemon=True)
    t.start()
    try:
        t0 = time.monotonic()
        view = pr.read_live(path, timeout=1.0)
        assert view.error and "PodResources API" in view.error and view.pods == ()
        assert time.monotonic() - t0 < 10
    finally:
        stop.set()
        t.join(2)
        srv.close()


def test_a_socket_this_user_may_not_use_is_said(tmp_path):
    """kubelet's socket is root's (0600 in a root-owned directory): another user is told to run as root."""
    import shutil
    import subprocess

    need(os.geteuid() == 0 and shutil.which("runuser") is not None, "root and runuser (to ask as nobody)")
    # a Python that nobody may run: the system's (a pyenv build under /root is not); the module needs none
    # of the venv's packages to find that the socket is not its to open
    python = "/usr/bin/python3"
    need(os.access(python, os.X_OK), python)
    path = tmp_path / "kubelet.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    try:
        os.chmod(path, 0o600)
        os.chmod(tmp_path, 0o755)
        code = ("import sys; sys.path[:0] = sys.argv[2:]; from pinscope.collectors.podresources import read_live; "
                "print(read_live(sys.argv[1]).error)")
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(pr.__file__))))
        out = subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", code, str(path), root],
                             capture_output=True, text=True, timeout=60)
        assert "run pinscope as root" in out.stdout, out.stdout + out.stderr
    finally:
        srv.close()


@pytest.fixture(scope="module")
def trading(tmp_path_factory):
    (spec,) = [x for x in demo_specs() if x.hostname == "trade-xeon-96"]
    return read_sim(spec, tmp_path_factory.mktemp("t"), samples=1).snapshot


def _live_from(snap) -> pr.LiveView:
    """What kubelet's in-memory state would say of the node if it agreed with its checkpoint (running containers)."""
    pods = tuple(pr.LivePod(p.namespace, p.name, tuple(pr.LiveContainer(c.name, c.assigned or frozenset())
                                                        for c in p.containers if c.cgroup is not None))
                 for p in snap.pods if p.namespace and p.name)
    return pr.LiveView("/x", pods)


def test_memory_and_checkpoint_agreeing_say_nothing_but_the_kernels_drift(trading):
    # matcher-7d9f's init-tune has an entry in the checkpoint (4-5,52-53) and no cgroup: spared
    assert any(c.name == "init-tune" and c.assigned and c.cgroup is None for p in trading.pods for c in p.containers)
    # the demo's gateway-5f/fix-gw runs on CPUs another writer gave it (STATE_CGROUP_DRIFT): the one entry
    (d,) = compare(_live_from(trading), trading)
    assert (d.pod, d.container, d.values()) == ("gateway-5f", "fix-gw", ("28,76", "28,76", "28-29,76-77"))


def test_a_disagreement_gives_memory_checkpoint_and_kernel(trading):
    live = _live_from(trading)
    pods = tuple(dataclasses.replace(p, containers=tuple(
        dataclasses.replace(c, cpus=frozenset({2, 3})) if c.name == "feed" else c for c in p.containers))
        for p in live.pods)
    (d,) = [d for d in compare(dataclasses.replace(live, pods=pods), trading) if d.container != "fix-gw"]
    assert (d.namespace, d.pod, d.container, d.what) == ("trading", "md-feed-0", "feed", "cpus")
    assert d.values() == ("2-3", "2-3,50-51", "2-3,50-51")


def test_a_pod_level_container_is_not_compared_with_its_checkpoint_entry(trading):
    """kubelet lists a container of a pod with pod-level CPUs that has none of its own with no CPUs (it is said
    at the pod level: cm/container_manager_linux.go GetCPUs), while its checkpoint names the pod's CPUs."""
    live = _live_from(trading)
    pods = tuple(dataclasses.replace(p, cpus=frozenset({2, 3, 50, 51}), containers=tuple(
        dataclasses.replace(c, cpus=frozenset()) if c.name == "feed" else c for c in p.containers))
        if p.name == "md-feed-0" else p for p in live.pods)
    assert [d.container for d in compare(dataclasses.replace(live, pods=pods), trading)] == ["fix-gw"]
