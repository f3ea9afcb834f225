"""Devices per NUMA node: kubelet's device-manager checkpoint (parser), the probe's reads, the findings.

Checkpoints are real ones (tests/device_samples.py says where each comes from); their checksums are
verified as kubelet verifies them (k/k pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go VerifyChecksum:
checksum.New(cp.Data), FNV-1a 32 over go-spew %#v with dump.ForHash settings).
"""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinscope.collectors.errors import Problem
from pinscope.collectors.parse.devices import (device_checkpoint_checksum, parse_device_checkpoint, parse_numa_node,
                                      parse_nvidia_information)

from device_samples import KIND_TEGRA, NODE2_SPLIT, REAL_V1_35_4, REAL_V1_35_4_NO_POD, REAL_V1_37_2, kubelet_checksum

SRC = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def _parse(text):
    probs: list[Problem] = []
    return parse_device_checkpoint(text, SRC, probs), probs


def test_kind_gpu_without_numa_affinity_checksum_as_kubelet_computes_it():
    cp, probs = _parse(KIND_TEGRA)
    assert probs == [] and cp.checksum == 3660592824 and cp.checksum_ok is True
    (a,) = cp.allocations
    assert (a.pod_uid, a.container, a.resource, a.device, a.numa_node) == (
        "bf52b2cd-b611-4e79-86b1-280b283185c3", "check", "nvidia.com/gpu", "tegra", None)  # "-1": no NUMA
    assert cp.registered == (("nvidia.com/gpu", ("tegra",)),)


def test_nvidia_uuids_keyed_by_numa_node_checksum_matches():
    cp, probs = _parse(NODE2_SPLIT)
    assert probs == [] and cp.checksum_ok is True
    got = {(a.pod_uid[:8], a.device[:8], a.numa_node) for a in cp.allocations}
    assert got == {("f21fe02b", "GPU-c1e9", 1), ("9388acc6", "GPU-77a7", 0)}
    assert len(cp.registered[0][1]) == 3


@pytest.mark.parametrize("text, uid, device", [
    (REAL_V1_37_2, "da7d0c2f-f625-4009-90c0-0e2df8208c7f", "widget-1"),
    (REAL_V1_35_4, "2d84432c-62f5-473c-b4a1-c3c4ca017d30", "widget-0"),
    (REAL_V1_35_4_NO_POD, None, None),
], ids=["kubelet-1.37.2", "kubelet-1.35.4", "kubelet-1.35.4-no-pod"])
def test_real_kubelets_checkpoints_read_and_verified(text, uid, device):
    """What the real kubelets of tests/cluster wrote (both releases: the same shape), checksums as they computed
    them; a node whose plugin's devices no pod holds writes PodDeviceEntries null."""
    cp, probs = _parse(text)
    assert probs == [] and cp.checksum_ok is True
    assert cp.registered == (("example.com/widget", ("widget-0", "widget-1")),)
    want = [] if uid is None else [(uid, "work", "example.com/widget", device, 0)]
    assert [(a.pod_uid, a.container, a.resource, a.device, a.numa_node) for a in cp.allocations] == want


def _sriov(checksum=None):
    data = {"PodDeviceEntries": [
        {"PodUID": "0f2b7c1e-5a8d-4e2f-9c3b-1d4e5f6a7b8c", "ContainerName": "dpdk",
         "ResourceName": "intel.com/intel_sriov_netdevice",
         "DeviceIDs": {"1": ["0000:af:02.1", "0000:af:02.3"], "-1": ["0000:3b:0a.0"]}, "AllocResp": "EgA="}],
        "RegisteredDevices": {"intel.com/intel_sriov_netdevice": ["0000:af:02.1", "0000:af:02.3", "0000:3b:0a.0"],
                              "nvidia.com/gpu": None}}
    return json.dumps({"Data": data, "Checksum": device_checkpoint_checksum(data) if checksum is None else checksum})


def test_sriov_pci_addresses_several_numa_keys_and_a_null_list():
    cp, probs = _parse(_sriov())
    assert probs == [] and cp.checksum_ok is True
    assert [(a.device, a.numa_node) for a in cp.allocations] == [
        ("0000:3b:0a.0", None), ("0000:af:02.1", 1), ("0000:af:02.3", 1)]  # spew's order: -1 first


def test_checksum_mismatch_is_said_and_the_content_still_shown():
    cp, probs = _parse(_sriov(checksum=12345))
    assert cp.checksum_ok is False and len(cp.allocations) == 3
    assert "does not match" in probs[0].message and "kubelet would refuse" in probs[0].message


def test_an_edited_device_id_breaks_the_real_checksum():
    cp, probs = _parse(NODE2_SPLIT.replace("GPU-77a702db", "GPU-77a702dc", 1))
    assert cp.checksum_ok is False and probs


def test_keys_are_matched_as_go_decodes_them_the_last_match_winning():
    """Go's encoding/json folds keys (EqualFold: "ſ" is "s") and the last key that matches a field wins. The
    parser used to take an exact "Data" over a later "data", and missed "Regiſtered...": so it showed
    allocations kubelet does not have, and called a valid checksum wrong."""
    real = json.loads(_sriov())
    other = {"PodDeviceEntries": [], "RegisteredDevices": None}
    text = json.dumps({"Data": other, "data": real["Data"], "Checksum": real["Checksum"]})
    cp, probs = _parse(text)
    assert probs == [] and cp.checksum_ok is True and len(cp.allocations) == 3  # kubelet decodes the second
    data = real["Data"]
    text = json.dumps({"Data": {"PodDeviceEntries": data["PodDeviceEntries"],
                                "Regi\u017fteredDevices": data["RegisteredDevices"]}, "Checksum": real["Checksum"]})
    cp, probs = _parse(text.replace("\\u017f", "\u017f"))
    assert probs == [] and cp.checksum_ok is True and len(cp.registered) == 2


def test_pre_1_20_list_form_is_read_numa_unknown_not_called_corrupt():
    text = ('{"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r",'
            '"DeviceIDs":["d1","d2"],"AllocResp":""}],"RegisteredDevices":{"r":["d1","d2"]}},"Checksum":7}')
    cp, probs = _parse(text)
    assert [(a.device, a.numa_node) for a in cp.allocations] == [("d1", None), ("d2", None)]
    assert cp.checksum_ok is None and probs == []


@pytest.mark.parametrize("text,words", [
    ("", "not valid JSON"), ('{"Data":', "not valid JSON"), ("[]", "not a JSON object"),
    ('{"Checksum":1}', "no Data"), ('{"Data":{"PodDeviceEntries":{}}}', "not a list"),
    ('{"Data":{"PodDeviceEntries":[{"PodUID":1}]}}', "not a string"),
    ('{"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","DeviceIDs":{"x":["a"]}}]}}',
     "NUMA node"),
    ('{"Data":{"PodDeviceEntries":[{"PodUID":"u","ContainerName":"c","ResourceName":"r","AllocResp":"%%%"}]},'
     '"Checksum":5}', "not base64"),
    ("[" * 100000 + "]" * 100000, "JSON"),
    ('{"Data":{},"Checksum":' + "9" * 5000 + "}", "JSON"),
])
def test_garbage_is_a_stated_problem_never_a_traceback(text, words):
    cp, probs = _parse(text)
    assert any(words in p.message for p in probs), probs
    assert all(p.source == SRC for p in probs)


def test_oversized_checkpoint_is_refused_unread():
    cp, probs = _parse('{"Data":{"PodDeviceEntries":[]},"x":"' + "a" * (5 * 1024 * 1024) + '"}')
    assert cp is None and "too large" in probs[0].message


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(
                        st.sampled_from(["Data", "PodDeviceEntries", "PodUID", "ContainerName", "ResourceName",
                                         "DeviceIDs", "AllocResp", "RegisteredDevices", "Checksum", "-1", "0"]),
                        c, max_size=5), max_leaves=20))
def test_any_json_shape_never_raises(doc):
    _parse(json.dumps(doc))


def test_numa_node_and_nvidia_information():
    assert parse_numa_node("1\n") == 1 and parse_numa_node("-1\n") is None and parse_numa_node("x") is None
    info = ("Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 190\nGPU UUID: \t GPU-9b341c59-f96b-ba85-c137-78c3652fea65\n"
            "Video BIOS: \t 92.00.36.00.01\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nBus Location: \t 0000:AF:00.0\n")
    assert parse_nvidia_information(info) == ("GPU-9b341c59-f96b-ba85-c137-78c3652fea65", "0000:af:00.0")
    assert parse_nvidia_information("garbage") == (None, None)


# ----------------------------------------------------------------------------- through the real probe (--root)

def _devices(rep):
    return {(p.name, c.name): [(d.resource.split("/")[0], d.device, d.numa_node, d.numa_from) for d in c.devices]
            for p, c in rep.snapshot.containers() if c.devices}


def test_probe_reads_checkpoint_sysfs_and_nvidia_procfs_under_root(tmp_path):
    from device_samples import GPU_FAR, GPU_NEAR, ORPHAN_UID, gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(), tmp_path, samples=1)
    snap = rep.snapshot
    assert snap.device_state is not None and snap.device_state.checksum_ok is True
    assert _devices(rep) == {
        ("infer-far", "triton"): [("nvidia.com", GPU_FAR, 1, "nvidia")],  # -1 in the checkpoint: procfs + sysfs
        ("infer-near", "triton"): [("nvidia.com", GPU_NEAR, 0, "nvidia")],
        ("dpdk-fwd", "fwd"): [("intel.com", "0000:3b:0a.2", None, ""), ("intel.com", "0000:af:02.1", 1, "pci")],
    }
    assert [a.pod_uid for a in snap.device_orphans] == [ORPHAN_UID]
    assert not [p for p in snap.problems if "device" in p.source]


def test_probe_states_a_corrupt_checkpoint_and_reads_the_rest(tmp_path):
    from device_samples import gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(device_text='{"Data":{"PodDeviceEntries":[{"PodUID":'), tmp_path, samples=1)
    snap = rep.snapshot
    assert snap.device_state is None and not _devices(rep)
    probs = [p.message for p in snap.problems if p.source.endswith("kubelet_internal_checkpoint")]
    assert probs and "not valid JSON" in probs[0]
    assert len(list(snap.containers())) == 3  # the node is still read


def test_probe_cuts_an_oversized_checkpoint_and_says_so(tmp_path):
    from device_samples import gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(device_text='{"Data":{"x":"' + "A" * (2 * 1024 * 1024) + '"}}'), tmp_path, samples=1)
    msgs = [p.message for p in rep.snapshot.problems if p.source.endswith("kubelet_internal_checkpoint")]
    assert any("larger than" in m for m in msgs) and rep.snapshot.device_state is None


def test_probe_refuses_a_fifo_checkpoint(tmp_path):
    import os

    from device_samples import gpu_node_spec
    from helpers import read_sim

    d = tmp_path / "var/lib/kubelet/device-plugins"
    d.mkdir(parents=True)
    os.mkfifo(d / "kubelet_internal_checkpoint")
    rep = read_sim(gpu_node_spec(orphan_devices=[], pods=[]), tmp_path, samples=1)
    msgs = [p.message for p in rep.snapshot.problems if p.source.endswith("kubelet_internal_checkpoint")]
    assert any("fifo" in m for m in msgs)


# ----------------------------------------------------------------------------- the simulator writes what kubelet writes

# The real kubelets' file as tests/cluster's node had it (device_samples.py): one pod's container `work` holding
# widget-1 (REAL_V1_37_2) or none (REAL_V1_35_4_NO_POD), our plugin's two widgets on NUMA node 0.
_REAL_UID = "da7d0c2f-f625-4009-90c0-0e2df8208c7f"
_WIDGETS = [("example.com/widget", "widget-0"), ("example.com/widget", "widget-1")]


def _sim_checkpoint(tmp_path, pods, free, orphans=()):
    from pinscope.collectors.sim.node import NodeSpec, SimNode

    SimNode(NodeSpec(pods=pods, free_devices=list(free), orphan_devices=list(orphans)), tmp_path).write()
    f = tmp_path / "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
    return f.read_text() if f.exists() else None


def _widget_pod(uid, device):
    from pinscope.collectors.sim.node import CtrSpec, PodSpec

    return PodSpec("dev", uid=uid, containers=[CtrSpec("work", cpus="1", devices=[("example.com/widget", device, 0)])])


def test_sim_writes_the_real_kubelets_file_byte_for_byte_but_the_plugins_answer(tmp_path):
    """kubelet lists every healthy device of a plugin in RegisteredDevices, held or free (manager.go writeCheckpoint:
    healthyDevices). The simulator listed only the held ones. Its file for the real node's state is the real file,
    byte for byte, once the plugin's own answer (AllocResp, and so the Checksum) is put in."""
    import base64

    real = json.loads(REAL_V1_37_2)
    text = _sim_checkpoint(tmp_path, [_widget_pod(_REAL_UID, "widget-1")], [_WIDGETS[0]])
    sim = json.loads(text)
    assert sim["Checksum"] == kubelet_checksum(sim["Data"])  # the checksum kubelet computes of what it wrote
    (entry,) = sim["Data"]["PodDeviceEntries"]
    base64.b64decode(entry["AllocResp"], validate=True)
    mine, theirs = entry["AllocResp"], real["Data"]["PodDeviceEntries"][0]["AllocResp"]
    text = text.replace(f'"AllocResp":"{mine}"', f'"AllocResp":"{theirs}"', 1)
    text = text.replace(f'"Checksum":{sim["Checksum"]}}}', f'"Checksum":{real["Checksum"]}}}', 1)
    assert text == REAL_V1_37_2


def test_sim_writes_null_entries_when_no_pod_holds_a_device_as_kubelet_does(tmp_path):
    """A plugin registered, no device handed out: kubelet writes its checkpoint with PodDeviceEntries null (a nil
    slice), the devices in RegisteredDevices: the real file exactly, checksum included. The simulator wrote no file."""
    assert _sim_checkpoint(tmp_path, [], _WIDGETS) == REAL_V1_35_4_NO_POD


def test_sim_with_no_device_plugin_writes_no_checkpoint(tmp_path):
    """No plugin ever registered and no device handed out: kubelet never writes the file (it only reads it at start)."""
    assert _sim_checkpoint(tmp_path, [], []) is None


def test_sim_sorts_map_keys_as_gos_encoding_json_writes_them(tmp_path):
    """encoding/json writes a map's keys sorted as strings ("-1" < "0" < "1" < "10" < "2"), a struct's fields in
    their order: DeviceIDs (map[int64][]string) and RegisteredDevices (map[string][]string). The simulator wrote
    DeviceIDs in the order its devices were listed."""
    from pinscope.collectors.sim.node import CtrSpec, PodSpec

    vfs = [("intel.com/sriov", f"0000:af:02.{i}", n) for i, n in enumerate((1, -1, 10, 2, 0))]
    pod = PodSpec("dpdk", uid="0f2b7c1e-5a8d-4e2f-9c3b-1d4e5f6a7b8c",
                  containers=[CtrSpec("fwd", cpus="1", devices=[*vfs, ("amd.com/gpu", "gpu-0", 0)])])
    text = _sim_checkpoint(tmp_path, [pod], [("amd.com/gpu", "gpu-1"), ("intel.com/sriov", "0000:af:03.0")])
    doc = json.loads(text)
    entries = doc["Data"]["PodDeviceEntries"]
    assert [list(e) for e in entries] == [["PodUID", "ContainerName", "ResourceName", "DeviceIDs", "AllocResp"]] * 2
    sriov = next(e for e in entries if e["ResourceName"] == "intel.com/sriov")
    assert list(sriov["DeviceIDs"]) == ["-1", "0", "1", "10", "2"]
    assert list(doc["Data"]["RegisteredDevices"]) == ["amd.com/gpu", "intel.com/sriov"]
    assert doc["Data"]["RegisteredDevices"]["amd.com/gpu"] == ["gpu-0", "gpu-1"]
    assert doc["Checksum"] == kubelet_checksum(doc["Data"])
    assert text == json.dumps(doc, separators=(",", ":"))  # compact, as Go writes it


def test_sims_checkpoints_have_the_real_files_shape(tmp_path):
    """Every device checkpoint the simulator writes (the demo's nodes, the GPU node of the tests) has the real
    files' keys in their order, RegisteredDevices naming every held device, and kubelet's checksum."""
    from pinscope.collectors.sim.demo import demo_specs

    from device_samples import gpu_node_spec

    def shape(doc):
        data = doc["Data"]
        return (list(doc), list(data), [list(e) for e in data["PodDeviceEntries"] or []][:1])

    want = shape(json.loads(REAL_V1_37_2))
    assert want == shape(json.loads(REAL_V1_35_4))
    written = 0
    for i, spec in enumerate([*demo_specs(), gpu_node_spec()]):
        f = tmp_path / str(i) / "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
        from pinscope.collectors.sim.node import SimNode

        SimNode(spec, tmp_path / str(i)).write()
        if not f.exists():
            continue
        written += 1
        doc = json.loads(f.read_text())
        assert shape(doc) == want, spec.hostname
        held = {(e["ResourceName"], d) for e in doc["Data"]["PodDeviceEntries"] for ds in e["DeviceIDs"].values()
                for d in ds}
        assert held <= {(r, d) for r, ds in doc["Data"]["RegisteredDevices"].items() for d in ds}, spec.hostname
        assert doc["Checksum"] == kubelet_checksum(doc["Data"]), spec.hostname
    assert written >= 2  # at least the demo's inference node and the GPU node


def test_probe_reads_the_sims_free_devices_and_null_entries(tmp_path):
    """pinscope reads what the simulator now writes as it reads the real file: verified, the free devices counted
    as registered, no allocation, no finding."""
    from pinscope.collectors.sim.node import NodeSpec

    from helpers import read_sim

    rep = read_sim(NodeSpec(free_devices=_WIDGETS), tmp_path, samples=1)
    cp = rep.snapshot.device_state
    assert cp is not None and cp.checksum_ok is True and cp.allocations == ()
    assert cp.registered == (("example.com/widget", ("widget-0", "widget-1")),)
    assert not [f for f in rep.findings if f.code.startswith("DEVICE_")]


# ----------------------------------------------------------------------------- findings

def test_gpu_on_the_far_numa_node_is_found_with_evidence_and_the_fix(tmp_path):
    from device_samples import GPU_FAR, ORPHAN_UID, gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(), tmp_path, samples=1)
    cross = [f for f in rep.findings if f.code == "DEVICE_CROSS_NUMA"]
    assert [(f.pod, f.container) for f in cross] == [("infer-far", "triton")]  # near GPU and VFs: silent
    f = cross[0]
    assert str(f.severity) == "warning" and GPU_FAR in f.message and "NUMA 1" in f.message
    assert f.cpus == (1, 2, 9, 10) and "single-numa-node" in f.hint
    ev = "\n".join(f.evidence)
    assert "/proc/driver/nvidia/gpus/0000:af:00.0/information" in ev
    assert "/sys/bus/pci/devices/0000:af:00.0/numa_node = 1" in ev and "topologyManagerPolicy = best-effort" in ev
    orphan = [f for f in rep.findings if f.code == "DEVICE_CHECKPOINT_ORPHAN"]
    assert len(orphan) == 1 and ORPHAN_UID in orphan[0].message and str(orphan[0].severity) == "info"


def test_an_orphan_is_said_as_kubelet_keeps_it_never_as_devices_held(tmp_path):
    """The real kubelets (1.35.4, 1.37.2: cluster/test_real_devices.py) keep a deleted pod's entry in their device
    checkpoint until they next write it (devices handed out, a plugin's devices changed), the devices already free
    for the next pod: the usual orphan. Said so; not as devices held, nor as a kubelet that was down."""
    from device_samples import ORPHAN_UID, gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(), tmp_path, samples=1)
    (f,) = [f for f in rep.findings if f.code == "DEVICE_CHECKPOINT_ORPHAN"]
    assert ORPHAN_UID in f.message and "still names" in f.message and " holds " not in f.message
    assert "kubelet was down" not in f.hint and "restart kubelet" not in f.hint
    assert "rewrites it only when it hands out devices" in f.hint


def test_aligned_node_and_unplaceable_devices_say_nothing(tmp_path):
    """Never cry wolf: the far GPU unplaceable (no NVIDIA procfs, the plugin said -1) is unknown, not far."""
    from device_samples import gpu_node_spec
    from helpers import read_sim

    rep = read_sim(gpu_node_spec(nvidia_gpus={}, orphan_devices=[]), tmp_path, samples=1)
    assert not [f for f in rep.findings if f.code.startswith("DEVICE_")]
    far = next(c for p, c in rep.snapshot.containers() if p.name == "infer-far")
    assert [(d.numa_node, d.numa_from) for d in far.devices] == [(None, "")]


# ----------------------------------------------------------------------------- exporter

def test_exporter_device_series_bounded_and_promtool_clean(tmp_path):
    import shutil
    import subprocess

    from prometheus_client import CollectorRegistry, generate_latest

    from pinscope.collectors.exporter.metrics import LatestReports, NodeState, node_samples
    from device_samples import GPU_FAR, gpu_node_spec
    from helpers import need, read_sim

    rep = read_sim(gpu_node_spec(), tmp_path / "n", samples=1)
    s = node_samples("gpu-node", rep)
    info = {(x.labels["pod"], x.labels["device"]): x.labels for x in s["pinscope_container_device_info"]}
    assert info[("infer-far", GPU_FAR)] == {"node": "gpu-node", "namespace": "ml", "pod": "infer-far",
                                           "container": "triton", "resource": "nvidia.com/gpu", "device": GPU_FAR,
                                           "numa_node": "1"}
    assert info[("dpdk-fwd", "0000:3b:0a.2")]["numa_node"] == ""  # unknown, said as such
    counts = {(x.labels["numa_node"], x.labels["resource"]): x.value for x in s["pinscope_numa_node_devices"]}
    assert counts == {("0", "nvidia.com/gpu"): 1, ("1", "nvidia.com/gpu"): 1,
                      ("1", "intel.com/intel_sriov_netdevice"): 1, ("", "intel.com/intel_sriov_netdevice"): 1}
    store = LatestReports()
    reg = CollectorRegistry(auto_describe=False)
    reg.register(store)
    store.put(NodeState("gpu-node", s, True, 0.01, 0.002, 1700000000.0))
    text = generate_latest(reg).decode()
    assert 'pinscope_container_device_info{' in text
    need(shutil.which("promtool") is not None, "promtool (Debian package prometheus)")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "" and r.stderr.strip() == "", (r.stdout, r.stderr)


def test_exporter_caps_device_series_per_node(tmp_path):
    from pinscope.collectors.exporter.metrics import MAX_DEVICE_SERIES, node_samples
    from pinscope.collectors.sim.node import CtrSpec, PodSpec
    from device_samples import gpu_node_spec
    from helpers import read_sim

    vfs = [("intel.com/sriov", f"0000:af:{i // 8:02x}.{i % 8}", 1) for i in range(MAX_DEVICE_SERIES + 40)]
    spec = gpu_node_spec(orphan_devices=[], pods=[PodSpec("many", "net", containers=[CtrSpec("x", cpus="4", devices=vfs)])])
    s = node_samples("n", read_sim(spec, tmp_path / "n", samples=1))
    assert len(s["pinscope_container_device_info"]) == MAX_DEVICE_SERIES
    assert [x.value for x in s["pinscope_numa_node_devices"]] == [MAX_DEVICE_SERIES + 40]


# ----------------------------------------------------------------------------- the demo

def test_check_and_snapshot_name_the_demos_far_gpu():
    """`pinscope check demo`: the demo's inference node has a planted GPU on the far NUMA node; the JSON has it
    per container and per NUMA node."""
    from helpers import run_cli

    r = run_cli("check", "demo")
    lines = [ln for ln in r.stdout.splitlines() if "DEVICE_CROSS_NUMA" in ln]
    assert r.returncode == 2 and len(lines) == 1, (r.stdout, r.stderr)  # 2: the trading node's planted criticals
    assert lines[0].startswith("infer-epyc-64: warning") and "ml/triton-0/triton" in lines[0] and "(NUMA 3)" in lines[0]
    r = run_cli("snapshot", "--json", "demo")
    infer = next(o for o in json.loads(r.stdout) if o["node"] == "infer-epyc-64")
    t0 = next(c for p in infer["pods"] if p["name"] == "triton-0" for c in p["containers"])
    assert [(d["resource"], d["numa_node"], d["numa_from"], d["pci"]) for d in t0["devices"]] == [
        ("nvidia.com/gpu", 3, "nvidia", "0000:c1:00.0")]
    n3 = next(n for n in infer["numa_nodes"] if n["id"] == 3)
    assert [(d["pod"], d["container"]) for d in n3["devices"]] == [("triton-0", "triton")]
    assert infer["kubelet"]["device_checkpoint"]["checksum_ok"] is True
