"""Dynamic Resource Allocation: kubelet's DRA manager checkpoint (<root-dir>/dra_manager_state), read as kubelet
reads it, through the real probe, into pods' claims, JSON and the orphan finding.

The checkpoints and checksums below are kubelet's own test vectors (k/k pkg/kubelet/cm/dra/state/
checkpointer_test.go, commit 59555c6: TestCheckpointGetOrCreate), copied byte for byte; their claims were
written down by hand from the test's expected ClaimInfoStateList.
"""
import json
import zlib

import pytest

from pinscope.collectors.errors import Problem
from pinscope.collectors.jsonout import to_json
from pinscope.collectors.parse.dra import dra_checksum, parse_dra_checkpoint
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from helpers import read_sim

SRC = "/var/lib/kubelet/dra_manager_state"
POD = "139cdb46-f989-4f17-9561-ca10cfb509a6"
DEV = r'{\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-%d\",\"RequestNames\":[\"test request\"],\"CDIDeviceIDs\":[\"example.com/example=cdi-example\"]}'
HEAD = r'{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"Entries\":['
ENTRY = (r'{\"ClaimUID\":\"%s\",\"ClaimName\":\"%s\",\"Namespace\":\"default\",\"PodUIDs\":{\"' + POD +
         r'\":{}},\"DriverState\":{\"test-driver.cdi.k8s.io\":{\"Devices\":[%s]}}}')
C1 = "067798be-454e-4be4-9047-1aa06aea63f7"
C2 = "4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"
DEV2_NULLS = r'{\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-2\",\"RequestNames\":null,\"CDIDeviceIDs\":null}'
SINGLE = HEAD + ENTRY % (C1, "example", DEV % 1) + r']}","Checksum":1597924435}'
MULTI = HEAD + ENTRY % (C1, "example", DEV % 1 + "," + DEV % 2) + r']}","Checksum":1812303514}'
TWO = HEAD + ENTRY % (C1, "example-1", DEV % 1) + "," + ENTRY % (C2, "example-2", DEV2_NULLS) + r']}","Checksum":3633532417}'
CORRUPT = TWO.replace("3633532417", "2930258365")  # kubelet: "checkpoint is corrupted"


def _parse(text):
    probs: list[Problem] = []
    return parse_dra_checkpoint(text, SRC, probs), probs


def test_kubelets_own_vectors_verify_and_read_as_its_test_expects():
    for text, want in ((SINGLE, [("example", ("dev-1",))]), (MULTI, [("example", ("dev-1", "dev-2"))]),
                       (TWO, [("example-1", ("dev-1",)), ("example-2", ("dev-2",))])):
        cp, probs = _parse(text)
        assert probs == [] and cp.checksum_ok is True and cp.version == "checkpoint.dra.kubelet.k8s.io/v1"
        assert [(c.name, tuple(d.device for d in c.devices)) for c in cp.claims] == want
        assert all(c.pod_uids == (POD,) and c.namespace == "default" for c in cp.claims)
    cp, _ = _parse(TWO)
    d1, d2 = cp.claims[0].devices[0], cp.claims[1].devices[0]
    assert (d1.driver, d1.pool, d1.requests, d1.cdi_ids) == ("test-driver.cdi.k8s.io", "worker-1", ("test request",),
                                                             ("example.com/example=cdi-example",))
    assert (d2.requests, d2.cdi_ids) == ((), ())  # null in the file


def test_the_checksum_kubelet_calls_corrupt_is_said_and_the_claims_still_shown():
    cp, probs = _parse(CORRUPT)
    assert cp.checksum_ok is False and len(cp.claims) == 2
    (p,) = probs
    assert "2930258365" in p.message and "3633532417" in p.message and "kubelet would refuse" in p.message


def test_the_checksum_is_crc32_of_datas_bytes():
    data = json.loads(SINGLE)["Data"]
    assert dra_checksum(data) == 1597924435 == zlib.crc32(data.encode())
    assert dra_checksum("\ud800") == zlib.crc32("\ufffd".encode())  # Go decodes a lone surrogate to U+FFFD


def test_the_alpha_layout_is_read_its_checksum_unverified_not_corrupt():
    text = json.dumps({"version": "v1", "entries": [{
        "DriverName": "gpu.resource.example.com", "ClassName": "gpu", "ClaimUID": C1, "ClaimName": "gpu-a",
        "Namespace": "ml", "PodUIDs": {POD: {}}, "CDIDevices": {"gpu.resource.example.com": ["example.com/gpu=0"]}}],
        "checksum": 12345})
    cp, probs = _parse(text)
    assert probs == [] and cp.checksum_ok is None and cp.version == "v1-alpha"
    (c,) = cp.claims
    assert (c.name, c.namespace, c.pod_uids) == ("gpu-a", "ml", (POD,))
    assert [(d.driver, d.cdi_ids) for d in c.devices] == [("gpu.resource.example.com", ("example.com/gpu=0",))]


@pytest.mark.parametrize("text,words", [
    ("", "not valid JSON"), ("{", "not valid JSON"), ("[]", "not a JSON object"), ('{"x":1}', "neither Data"),
    ('{"Data":"{","Checksum":1}', "not valid JSON"),
    ('{"Data":"{\\"Entries\\":{}}"}', "not a list"),
    ('{"Data":"{\\"Entries\\":[7]}"}', "not an object"),
    ('{"Data":"{\\"Entries\\":[{\\"ClaimName\\":1}]}"}', "not a string"),
    ('{"Data":"{\\"kind\\":\\"Pod\\"}"}', "not DRACheckpoint"),
    ('{"Data":"' + "[" * 50000 + '"}', "JSON"),
])
def test_garbage_is_a_stated_problem_never_a_traceback(text, words):
    cp, probs = _parse(text)
    assert any(words in p.message for p in probs), probs
    assert all(p.source.startswith(SRC) for p in probs)


def _node(**kw) -> NodeSpec:
    d = dict(hostname="dra-1", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=2, driver="systemd",
             pods=[PodSpec("enc", "media", containers=[CtrSpec("ffmpeg", cpus="1,5")],
                           claims=[("enc-nic", "dra.net", "dra-1", "eth1-vf3"), ("enc-gpu", "gpu.example.com", "p0", "gpu-0"),
                                   ("enc-gpu", "gpu.example.com", "p0", "gpu-1")]),
                   PodSpec("web", "web", qos="Burstable", containers=[CtrSpec("nginx")])])
    d.update(kw)
    return NodeSpec(**d)


def test_claims_reach_their_pod_through_the_real_probe_and_json(tmp_path):
    rep = read_sim(_node(), tmp_path, 1)
    snap = rep.snapshot
    assert snap.dra_state is not None and snap.dra_state.checksum_ok is True
    by = {p.name: p for p in snap.pods}
    assert [(c.name, [d.device for d in c.devices]) for c in by["enc"].claims] == [
        ("enc-nic", ["eth1-vf3"]), ("enc-gpu", ["gpu-0", "gpu-1"])]
    assert by["web"].claims == ()
    assert not [p for p in snap.problems if "dra" in p.source]
    assert "DRA_CLAIM_ORPHAN" not in {f.code for f in rep.findings}
    o = to_json(snap)
    (enc,) = [p for p in o["pods"] if p["name"] == "enc"]
    assert enc["claims"][1] == {"name": "enc-gpu", "namespace": "media", "uid": enc["claims"][1]["uid"], "devices": [
        {"driver": "gpu.example.com", "pool": "p0", "device": "gpu-0", "requests": ["dev"], "cdi_ids": ["gpu.example.com/claim=gpu-0"]},
        {"driver": "gpu.example.com", "pool": "p0", "device": "gpu-1", "requests": ["dev"], "cdi_ids": ["gpu.example.com/claim=gpu-1"]}]}
    assert o["kubelet"]["dra_checkpoint"] == {"checksum_ok": True, "version": "checkpoint.dra.kubelet.k8s.io/v1",
                                              "claims": 2, "orphans": []}


def test_a_node_without_dra_has_no_checkpoint_and_says_nothing(tmp_path):
    rep = read_sim(_node(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5")])]), tmp_path, 1)
    assert rep.snapshot.dra_state is None and to_json(rep.snapshot)["kubelet"]["dra_checkpoint"] is None
    assert not [p for p in rep.snapshot.problems if "dra" in p.source]


def test_a_checkpoint_larger_than_the_read_bound_is_said_not_parsed(tmp_path):
    big = json.dumps({"Data": json.dumps({"kind": "DRACheckpoint", "Entries": [], "pad": "x" * (1 << 20)}),
                      "Checksum": 1})
    rep = read_sim(_node(dra_text=big), tmp_path, 1)
    assert rep.snapshot.dra_state is None
    said = [p.message for p in rep.snapshot.problems if p.source.endswith("dra_manager_state")]
    assert said == ["larger than 1048576 bytes: cut at 1048576 bytes (the rest was not read)",
                    "DRA checkpoint not read whole (larger than pinscope's read bound): its claims are not shown"]
    assert all(p.claims == () for p in rep.snapshot.pods)


def test_a_corrupt_checkpoint_on_the_node_is_an_error_line_never_a_traceback(tmp_path):
    rep = read_sim(_node(dra_text='{"Data":"{\\"Entries\\":[{\\"ClaimName\\":\\"x\\"'), tmp_path, 1)
    assert rep.snapshot.dra_state is None
    (p,) = [p for p in rep.snapshot.problems if p.source.startswith("/var/lib/kubelet/dra_manager_state")]
    assert "not valid JSON" in p.message
    assert any("dra_manager_state" in e["source"] for e in to_json(rep.snapshot)["errors"])


@pytest.mark.parametrize("text", [
    # the alpha layout with CDI ids that are not a list (a number, true, an object): a TypeError killed the tick
    '{"version":"v1","entries":[{"DriverName":"d","ClaimName":"c","Namespace":"n","CDIDevices":{"d":5}}]}',
    '{"version":"v1","entries":[{"DriverName":"d","ClaimName":"c","Namespace":"n","CDIDevices":{"d":true}}]}',
    '{"version":"v1","entries":[{"DriverName":"d","ClaimName":"c","Namespace":"n","CDIDevices":{"d":{"x":1}}}]}',
])
def test_odd_alpha_cdi_ids_are_no_traceback(text):
    cp, _ = _parse(text)
    assert [(d.driver, d.cdi_ids) for c in cp.claims for d in c.devices] == [("d", ())]


@pytest.mark.parametrize("checksum", ['', ',"Checksum":1.5', ',"Checksum":"1597924435"', ',"Checksum":-1',
                                      ',"Checksum":4294967296'])
def test_a_checksum_kubelet_cannot_decode_is_said_as_refused(checksum):
    text = SINGLE.replace(',"Checksum":1597924435', checksum)
    cp, probs = _parse(text)
    assert cp.checksum_ok is False and len(cp.claims) == 1
    assert any("kubelet would refuse" in p.message for p in probs), probs
