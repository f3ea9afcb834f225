"""Kubelet's v3+/v4 checkpoints end to end, through the real probe over a fixture node tree (collectors.sim):
pod-level CPUs (podEntries, pod-level resources) are exclusive to their pod in the roles, `snapshot --json`
and the exporter, with no finding about them; a corrupt v4 is a checksum warning, never silent; a valid
checkpoint larger than pinscope reads is "not read whole", never critical, never "delete the file".
"""
from __future__ import annotations

import json

from helpers import read_sim, read_sim_async, run_cli

from pinscope.collectors.exporter.metrics import node_samples
from pinscope.collectors.findings import evaluate
from pinscope.collectors.jsonout import to_json
from pinscope.collectors.parse.kubelet import fnv1a32
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

RT = "11111111-2222-3333-4444-555555555555"
WHOLE = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
# kubelet 1.37's v4 (k/k state/checkpoint.go CPUManagerCheckpointData): the state is the JSON string in data
DATA = json.dumps({"policyName": "static", "defaultCpuSet": "0,3-4,7", "entries": {RT: {"app": "1,5"}},
                   "podEntries": {WHOLE: {"cpuSet": "2,6"}}}, separators=(",", ":"))


def v4(data_checksum: int | None = None) -> str:
    """The outer (legacy) fields name other CPUs on purpose: a reader that takes podEntries or entries from
    the outer document instead of from data gets 3,7 as the pod's and 2,6 as nobody's."""
    return json.dumps({"policyName": "static", "defaultCpuSet": "0,2,4,6", "entries": {RT: {"app": "1,5"}},
                       "podEntries": {WHOLE: {"cpuSet": "3,7"}}, "checksum": 0, "data": DATA,
                       "dataChecksum": fnv1a32("(string)" + DATA) if data_checksum is None else data_checksum})


def spec(state_text: str) -> NodeSpec:
    """1 socket, 4 cores x 2 threads (siblings N, N+4); reserved 0,4; rt/app pinned to 1,5; the pod
    'whole' holds 2,6 as a pod (its container, with a 2-CPU limit, runs there and has no entry of its own)."""
    return NodeSpec(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", init_affinity="0,4",
                    state_text=state_text,
                    pods=[PodSpec("rt", "prod", uid=RT, containers=[CtrSpec("app", cpus="1,5")]),
                          PodSpec("whole", "prod", uid=WHOLE,
                                  containers=[CtrSpec("worker", effective="2,6", quota_cores=2)])])


def test_v4_pod_level_cpus_are_the_pods_everywhere(tmp_path):
    r = read_sim(spec(v4()), tmp_path, samples=1)
    snap = r.snapshot
    assert (snap.state.version, snap.state.checksum_ok) == (4, True)
    roles = {c.id: c for c in snap.roles}
    assert [roles[c].role for c in range(8)] == ["reserved", "exclusive", "exclusive", "shared",
                                                  "reserved", "exclusive", "exclusive", "shared"]
    for c in (2, 6):
        (o,) = roles[c].owners
        assert (o.pod_uid, o.pod, o.container, o.pod_level) == (WHOLE, "whole", None, True)
    (o,) = roles[1].owners
    assert (o.pod, o.container, o.pod_level) == ("rt", "app", False)
    # nothing cries wolf: the container runs in its pod's CPUs, not "drifted" from the shared pool, not
    # "Guaranteed but unpinned", and the pod's core is not "split"
    assert [f"{f.code}: {f.message}" for f in r.findings if f.severity != "info"] == []
    assert list(r.findings) == evaluate(snap, r.rates)

    js = to_json(snap, r.rates, r.findings)
    cpus = {c["id"]: c for c in js["cpus"]}
    assert cpus[2]["role"] == "exclusive" and cpus[2]["owners"] == [
        {"pod_uid": WHOLE, "namespace": "prod", "pod": "whole", "container": None, "pod_level": True}]
    assert cpus[1]["owners"] == [{"pod_uid": RT, "namespace": "prod", "pod": "rt", "container": "app"}]
    assert js["kubelet"]["state"]["pod_entries"] == {WHOLE: [2, 6]}
    assert {p["name"]: p["pod_cpus"] for p in js["pods"]} == {"rt": None, "whole": [2, 6]}

    s = node_samples("t", r)
    info = {x.labels["cpu"]: x.labels for x in s["pinscope_cpu_info"]}
    assert {k: info["2"][k] for k in ("role", "namespace", "pod", "container", "owner_level")} == {
        "role": "exclusive", "namespace": "prod", "pod": "whole", "container": "", "owner_level": "pod"}
    assert info["1"]["owner_level"] == "container" and info["3"]["owner_level"] == ""
    assert [(x.labels["pod"], x.value) for x in s["pinscope_pod_exclusive_cpus"]] == [("whole", 2.0)]
    assert {x.labels["role"]: x.value for x in s["pinscope_cpus"]}["exclusive"] == 4


def test_snapshot_json_cli_shows_the_pod_level_owner(tmp_path):
    from pinscope.collectors.sim.node import SimNode

    SimNode(spec(v4()), tmp_path).write()
    out = run_cli("snapshot", "--json", "--samples", "1", "--root", str(tmp_path), "local")
    assert out.returncode == 0, out.stderr
    cpus = {c["id"]: c for c in json.loads(out.stdout)["cpus"]}
    assert [(o["pod"], o["container"], o.get("pod_level")) for o in cpus[6]["owners"]] == [("whole", None, True)]
    assert cpus[3]["role"] == "shared" and cpus[3]["owners"] == []


def test_corrupt_v4_is_a_checksum_warning(tmp_path):
    r = read_sim(spec(v4(data_checksum=1234)), tmp_path, samples=1)
    got = [(f.code, f.severity) for f in r.findings if f.severity != "info"]
    assert got == [("STATE_CHECKSUM_MISMATCH", "warning")]
    (f,) = [f for f in r.findings if f.code == "STATE_CHECKSUM_MISMATCH"]
    assert any("dataChecksum 1234 does not match" in e for e in f.evidence)


def big_valid_checkpoint() -> str:
    """A valid v2 checkpoint over 1 MiB (pinscope's bound for kubelet's files): kubelet ignores the
    unknown key, and the checksum (over the known fields) is the one kubelet writes."""
    from pinscope.collectors.parse.kubelet import checksum_v2

    entries = {RT: {"app": "1,5"}}
    return json.dumps({"policyName": "static", "defaultCpuSet": "0,2-4,6-7", "entries": entries,
                       "padding": "x" * (1 << 20), "checksum": checksum_v2("static", "0,2-4,6-7", entries)})


def test_oversize_valid_checkpoint_is_not_read_whole_not_corrupt(tmp_path):
    text = big_valid_checkpoint()
    assert len(text) > (1 << 20)
    sp = spec(text)
    sp.pods = sp.pods[:1]
    r = read_sim(sp, tmp_path, samples=1)
    assert r.snapshot.state_status == "cut" and r.snapshot.state is None
    codes = {f.code: f for f in r.findings}
    assert "STATE_NOT_READ_WHOLE" in codes and codes["STATE_NOT_READ_WHOLE"].severity == "info"
    assert "STATE_UNREADABLE" not in codes
    assert [f.code for f in r.findings if f.severity == "critical"] == []
    for f in r.findings:  # no advice to delete a healthy node's state
        assert "delete" not in (f.message + f.hint).lower(), f
    out = run_cli("check", "--root", str(tmp_path), "local")
    assert out.returncode == 4, (out.returncode, out.stdout, out.stderr)
    assert "not read whole" in out.stdout


async def test_root_dir_and_pod_logs_dir_that_climb_out_of_root_are_refused(tmp_path):
    """kubelet --root-dir /../outside (and podLogsDir /var/../../outside-logs) under --root: a checkpoint
    waits there, outside the prefix; pinscope reads nothing there and says why (no critical either)."""
    root = tmp_path / "root"
    sp = spec(v4())
    sp.kubelet_root = "/../outside"
    sp.config_text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "cpuManagerPolicy: static\nreservedSystemCPUs: \"0,4\"\npodLogsDir: /var/../../outside-logs\n")
    r = await read_sim_async(sp, root, samples=1)
    assert (tmp_path / "outside" / "cpu_manager_state").is_file()  # the sim did plant it there
    snap = r.snapshot
    assert snap.state is None and snap.state_status == "refused"
    said = {p.source: p.message for p in snap.problems}
    assert "'/../outside' refused" in said["/../outside"]
    assert any("podLogsDir '/var/../../outside-logs' refused" in m for m in said.values())
    assert snap.kubelet.pod_logs_dir == "/var/log/pods"
    assert [f.code for f in r.findings if f.severity == "critical"] == []
    assert not any(f.code == "STATE_UNREADABLE" for f in r.findings)

    # the probe itself read nothing there (the client's refusal alone would not keep the node's files in)
    import asyncio

    from pinscope.collectors.transport.local import LocalTransport

    async with asyncio.timeout(60):
        tr = LocalTransport(str(root))
        await tr.connect(10)
        try:
            frames = [await tr.request(req, 15) for req in ("sgn", "gc")]
        finally:
            await tr.close()

    for fr in frames:
        read = set(fr.files) | set(fr.unreadable) | set(fr.dirs) | set(fr.truncated)
        assert not [p for p in read if "outside" in p], read


def test_pod_level_cpus_held_by_another_pod_are_an_overlap(tmp_path):
    """Positive evidence, so critical: the pod's own set takes CPU 1, which rt/app holds."""
    data = json.dumps({"policyName": "static", "defaultCpuSet": "0,3-4,7", "entries": {RT: {"app": "1,5"}},
                       "podEntries": {WHOLE: {"cpuSet": "1-2,6"}}})
    state = json.dumps({"data": data, "dataChecksum": fnv1a32("(string)" + data)})
    r = read_sim(spec(state), tmp_path, samples=1)
    (f,) = [f for f in r.findings if f.code == "EXCLUSIVE_OVERLAP"]
    assert f.cpus == (1,) and f.severity == "critical"
    assert list(f.evidence) == [f"/var/lib/kubelet/cpu_manager_state: entries[{RT}] and podEntries[{WHOLE}] both hold 1"]


def test_a_kubelet_config_not_read_whole_is_not_parsed(tmp_path):
    """Its first MiB could name a policy the rest overrides: the policy is unknown, said so, and the
    checks that need it are not run on a guess (nothing critical)."""
    sp = spec(v4())
    sp.config_text = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "cpuManagerPolicy: none\n" + "# padding\n" * 120_000 + "cpuManagerPolicy: static\n")
    r = read_sim(sp, tmp_path, samples=1)
    k = r.snapshot.kubelet
    assert k.cpu_manager_policy is None and k.parsed is False
    said = [p.message for p in r.snapshot.problems if p.source == k.config_path]
    assert any("not read whole" in m for m in said), said
    assert not [f.code for f in r.findings if f.severity == "critical"]
