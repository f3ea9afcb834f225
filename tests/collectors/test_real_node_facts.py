"""What the real node showed (issue 33, tests/cluster) that no fixture had, kept as tests that run anywhere.

- Every pod's sandbox (pause) runs on every CPU, the exclusive ones too: kubelet's CPU manager sets only the
  containers' cpusets (kubelet 1.35.4 and 1.37.2, cgroup v1, cgroupfs: `Cpus_allowed_list: 0-1` on a node whose
  CPU 1 was exclusive to another pod). Its pid is in its pod's cgroup.procs, so the probe does not read its
  /proc/<pid>/cgroup: pinscope said IDENTITY_UNRESOLVED "/proc/<pid>/cgroup not read (the process may have
  exited)" of a live process it had placed itself.
"""
from pinscope.collectors.findings.tasks import placed
from pinscope.collectors.model import Owner, Task

OWNER = Owner("uid-guaranteed", "default", "g", "work")
PIDS = {"uid-guaranteed": frozenset({100, 101}), "uid-burstable": frozenset({200, 201})}


def test_another_pods_sandbox_on_an_exclusive_cpu_is_placed_not_unknown():
    pause = Task(tid=200, pid=200, comm="pause", last_cpu=1)  # cgroup not read: a pod's pid
    assert placed(pause, [OWNER], PIDS) is False  # another pod's: an outsider, not "unknown" (None before)


def test_the_owning_pods_own_and_an_unknown_task_stay_as_they_were():
    assert placed(Task(tid=101, pid=101, comm="sleep", last_cpu=1), [OWNER], PIDS) is True
    assert placed(Task(tid=300, pid=300, comm="x", last_cpu=1), [OWNER], PIDS) is None


def test_the_debug_pod_asks_no_cpu_a_full_node_would_refuse():
    """A node whose allocatable CPU is all requested (a fully pinned node, what one inspects) refused the debug
    pod's 10m: "OutOfcpu ... requested: 10, used: 1000, capacity: 1000" (kubelet 1.37.2; the pod is bound with
    nodeName, so kubelet's admission alone judges it)."""
    from pinscope.collectors.transport.kube import debug_pod

    (c,) = debug_pod("node-1")["spec"]["containers"]
    assert "cpu" not in c["resources"].get("requests", {}), c["resources"]
    assert "cpu" not in c["resources"].get("limits", {}), c["resources"]


def test_no_empty_mount_over_a_directory_a_real_kubelet_may_not_make():
    """kubelet makes pods/ and plugins/ at its start; pki/ only when it manages its certificates. An empty mount
    over pki/ inside the read-only root-dir failed every debug pod on a kubelet given its certificates (runc:
    "mkdir .../host/var/lib/kubelet/pki: read-only file system"; 1.37.2 and 1.35.4)."""
    from pinscope.collectors.transport.kube import HIDDEN_PATHS, debug_pod

    assert set(HIDDEN_PATHS) <= {"/var/lib/kubelet/pods", "/var/lib/kubelet/plugins"}
    (c,) = debug_pod("node-1")["spec"]["containers"]
    assert "/host/var/lib/kubelet/pki" not in [m["mountPath"] for m in c["volumeMounts"]]


def test_the_device_checkpoint_is_read_where_kubelet_writes_it_whatever_its_root_dir(tmp_path):
    """kubelet's device manager keeps kubelet.sock and kubelet_internal_checkpoint in /var/lib/kubelet/device-plugins/
    whatever --root-dir says (k8s.io/kubelet deviceplugin/v1beta1 DevicePluginPath, a constant; 1.35.4 and 1.37.2:
    a kubelet under --root-dir /var/lib/pinscope-cluster/kubelet made /var/lib/kubelet/device-plugins/kubelet.sock).
    pinscope read <root-dir>/device-plugins/ and found no device on such a node."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from device_samples import gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(kubelet_root="/data/kubelet"), tmp_path, samples=1)
    assert (tmp_path / "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint").exists()
    assert rep.snapshot.kubelet.root_dir == "/data/kubelet"
    assert rep.snapshot.device_state is not None
    held = {d.device for p in rep.snapshot.pods for c in p.containers for d in c.devices}
    assert "0000:af:02.1" in held, held


def test_the_local_nodes_api_name_is_the_one_kubelet_registered():
    """kubelet registers its node as --hostname-override says (lowercased), else as the hostname lowercased
    (nodeutil.GetHostname). `check --kube local` on the real node asked the API for "vm", the hostname, and got
    'nodes "vm" not found': the kubelet ran with --hostname-override pinscope-node."""
    from types import SimpleNamespace

    from pinscope.collectors.errors import Problem
    from pinscope.collectors.parse.kubelet import parse_kubelet_config
    from pinscope.cli import local_api_name

    probs: list[Problem] = []
    cfg = parse_kubelet_config(None, None, [], ["kubelet", "--hostname-override", " Pinscope-Node "], probs)
    assert cfg.node_name == "pinscope-node" and probs == []
    assert local_api_name(SimpleNamespace(kubelet=cfg, node="vm")) == "pinscope-node"
    plain = parse_kubelet_config(None, None, [], ["kubelet", "--config", "/etc/k.yaml"], [])
    assert plain.node_name is None
    assert local_api_name(SimpleNamespace(kubelet=plain, node="Worker-7")) == "worker-7"
