"""Devices over a real OpenSSH sshd: a GPU node's tree (kubelet's device checkpoint, sysfs numa_node, NVIDIA's
procfs) read in one `pinscope snapshot --json` under --root locally and over SSH: the same devices, the same
DEVICE_CROSS_NUMA; a corrupt checkpoint is the same stated problem on both."""
import json


from pinscope.collectors.sim.node import SimNode
from device_samples import GPU_FAR, gpu_node_spec
from helpers import run_cli


def _devices(o):
    return {(p["name"], c["name"]): c["devices"] for p in o["pods"] for c in p["containers"] if c["devices"]}


def test_gpu_node_reads_the_same_over_ssh(server, tmp_path):
    root = tmp_path / "gpu"
    SimNode(gpu_node_spec(), root).write()
    r = run_cli("snapshot", "--json", "--root", str(root), *server.args(), "local", server.target)
    assert r.returncode == 0, r.stderr
    local, remote = json.loads(r.stdout)
    assert _devices(local) == _devices(remote) and len(_devices(remote)) == 3
    far = _devices(remote)[("infer-far", "triton")]
    assert far == [{"resource": "nvidia.com/gpu", "id": GPU_FAR, "numa_node": 1, "numa_from": "nvidia",
                    "pci": "0000:af:00.0"}]
    codes = [(f["code"], f["pod"]) for f in remote["findings"] if f["code"].startswith("DEVICE_")]
    assert sorted(codes) == [("DEVICE_CHECKPOINT_ORPHAN", None), ("DEVICE_CROSS_NUMA", "infer-far")]
    assert remote["kubelet"]["device_checkpoint"]["checksum_ok"] is True


def test_corrupt_checkpoint_is_stated_over_ssh(server, tmp_path):
    root = tmp_path / "bad"
    SimNode(gpu_node_spec(device_text='{"Data":{"PodDeviceEntries":"\x00'), root).write()
    r = run_cli("snapshot", "--json", "--root", str(root), *server.args(), server.target)
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    errs = [e["message"] for e in o["errors"] if e["source"].endswith("kubelet_internal_checkpoint")]
    assert errs and "not valid JSON" in errs[0] and "Traceback" not in r.stderr
    assert o["kubelet"]["device_checkpoint"] is None and not _devices(o)
