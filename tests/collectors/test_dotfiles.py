"""Names that start with "." where the node may really hold one, through the real probe under dash, busybox sh
and bash: a shell glob's "*" skips them, so the probe globs for them too. (Where Kubernetes forbids a leading
"." — namespace, pod and container names, so kubelet's log directories — the probe need not look:
tests/collectors/test_hostile_names_property.py says why.)"""
import asyncio
import os

import pytest

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.sim.node import SimNode
from nodes import hostile
from test_probe_shells import toolbox

SHELLS = ("dash", "busybox", "bash")
DROPINS = "/etc/kubernetes/kubelet.conf.d"


def read(root, path_dir) -> dict:
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{path_dir}:{old}"
    try:
        report = asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=10)), 20))
    finally:
        os.environ["PATH"] = old
    return report.to_json()


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("name", [".90-reserved.conf", ".conf"])
def test_a_kubelet_drop_in_whose_name_starts_with_a_dot_is_merged(tmp_path, shell, name):
    """kubelet merges every file of --config-dir whose filepath.Ext is ".conf", dotfiles too (filepath.WalkDir
    in mergeKubeletConfigurations, k/k cmd/kubelet/app/server.go): the reserved CPUs it says are kubelet's."""
    spec = hostile()
    spec.flags = [f"--config-dir={DROPINS}"]
    root = tmp_path / "node"
    SimNode(spec, root).write()
    (root / DROPINS.lstrip("/")).mkdir(parents=True)
    (root / DROPINS.lstrip("/") / name).write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nreservedSystemCPUs: \"0-1\"\n")
    k = read(root, toolbox(tmp_path, shell))["kubelet"]
    assert k["reserved_cpus"] == [0, 1] and k["sources"]["reserved_cpus"] == f"{DROPINS}/{name}", k


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
def test_a_fifo_below_a_cgroup_root_named_with_a_dot_is_refused_without_hanging(tmp_path, shell, driver):
    """Under --root the precheck (one find) refuses what is not a regular file before anything opens it; a
    kubepods below cgroupRoot "/.pods" (/sys/fs/cgroup/.pods/kubepods, or .pods.slice under systemd: the
    kernel refuses only a "\\n" in a cgroup's name) is checked like any other. Before, the precheck's
    /sys/fs/cgroup/* skipped it and the probe blocked opening the FIFO: no frame within the deadline."""
    spec = hostile()
    spec.cgroup_root, spec.driver = "/.pods", driver
    root = tmp_path / "node"
    sim = SimNode(spec, root).write()
    p = spec.pods[0]
    leaf = sim.cg_dir(p, p.containers[0])
    assert leaf.startswith("/sys/fs/cgroup/.pods")
    f = root / leaf.lstrip("/") / "cpuset.cpus.effective"
    f.unlink()
    os.mkfifo(f)
    o = read(root, toolbox(tmp_path, shell))
    assert f"{leaf}/cpuset.cpus.effective: is a fifo, not a regular file: not opened" in [
        f"{e['source']}: {e['message']}" for e in o["errors"]]
    assert [c["name"] for c in o["pods"][0]["containers"]] == [p.containers[0].name]  # only that file is lost
