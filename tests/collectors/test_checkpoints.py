"""The checkpoints read as kubelet 1.36+ reads them: kubelet's own test vectors (same acceptance, same refusal).

Vectors from kubernetes/kubernetes:
- pkg/kubelet/cm/cpumanager/state/state_checkpoint_test.go (commit 0411cc704533ed25a1bfc6e21a3195d9c6a2f0f2):
  TestCheckpointStateRestore, TestCPUManagerCheckpointV3_VerifyChecksum_Compatibility;
- pkg/kubelet/cm/cpumanager/state/checkpoint.go (VerifyChecksum of V1-V4) and state_checkpoint.go (the order:
  V4, then V3, then V2; a file with data or dataChecksum is V4, no fallback);
- pkg/kubelet/cm/memorymanager/state/state_checkpoint_test.go (commit 121460defea7874f50c64bb8de51018a86c6eef3)
  and memorymanager/state/checkpoint.go.
A checksum kubelet rejects is a mismatch (the content is still shown); a file it cannot decode is refused.
"""
from __future__ import annotations

import json

import pytest

from pinscope.collectors.errors import Problem
from pinscope.collectors.parse.kubelet import parse_cpu_manager_state, parse_memory_manager_state

V2_BODY = '"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6","container2":"1-3"}}'
V3_BODY = ('"policyName":"static","defaultCPUSet":"1-2","entries":{"pod1":{"container1":"5-6","container2":"3-4"}},'
           '"podEntries":{"pod2":{"cpuSet":"7-9"}}')


def cpu(text: str):
    probs: list[Problem] = []
    return parse_cpu_manager_state(text, "s", probs), [p.message for p in probs]


@pytest.mark.parametrize("body, checksum, version, as_", [
    # a v2 file under the legacy name (what every kubelet writes) and under CPUManagerCheckpointV2
    ('"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"1-3"}}',
     3610638499, 2, "CPUManagerCheckpoint"),
    ('"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"1-3"}}',
     3415933391, 2, "CPUManagerCheckpointV2"),
    # "Restore checkpoint from v2 (migration)": kubelet's v2 file verified as v3 (empty PodEntries)
    (V2_BODY, 1942532442, 2, "CPUManagerCheckpointV3"),
    # "Restore checkpoint from v3 (migration)" and the V3 compatibility test: legacy and current v3 names
    (V3_BODY, 766259872, 3, "CPUManagerCheckpoint"),
    (V3_BODY, 2284712151, 3, "CPUManagerCheckpointV3"),
    ('"policyName":"none","defaultCpuSet":""', 1353318690, 2, "CPUManagerCheckpoint"),
])
def test_cpu_checkpoint_hashes_kubelet_accepts(body, checksum, version, as_):
    st, probs = cpu("{" + body + f',"checksum":{checksum}' + "}")
    assert (st.version, st.checksum_ok, st.checksum_as, probs) == (version, True, as_, [])


def test_v3_pod_entries_are_read():
    st, _ = cpu("{" + V3_BODY + ',"checksum":766259872}')
    assert st.pod_entries == {"pod2": {7, 8, 9}}
    assert st.entries == {"pod1": {"container1": {5, 6}, "container2": {3, 4}}}
    assert st.pod_level("pod2") == {7, 8, 9} and st.pod_level("pod1") == frozenset()


def test_v4_reads_inside_data_never_the_outer_document():
    """'Restore valid v4 checkpoint …' (1032795074): the outer fields are "intentionally corrupted to verify
    that it is not used"; the pod's podEntries live inside data only."""
    data = ('{"policyName":"static","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"7-9"}},'
            '"podEntries":{"pod":{"cpuSet":"4-10"}},"baselines":{"pod":{"container1":{"baseline":"4-5"},'
            '"container2":{"baseline":"7-8"}}}}')
    doc = {"policyName": "other", "defaultCPUSet": "1-9", "checksum": 1234,
           "podEntries": {"decoy": {"cpuSet": "0"}}, "entries": {"decoy": {"c": "0"}},
           "data": data, "dataChecksum": 1032795074}
    st, probs = cpu(json.dumps(doc))
    assert (st.version, st.checksum_ok, st.policy, probs) == (4, True, "static", [])
    assert st.default_cpuset == {1, 2, 3}
    assert st.entries == {"pod": {"container1": {4, 5, 6}, "container2": {7, 8, 9}}}
    assert st.pod_entries == {"pod": frozenset(range(4, 11))}
    assert st.pod_level("pod") == {10}  # the pod's CPU no container of it holds


@pytest.mark.parametrize("data, checksum", [
    ('{"policyName":"none","defaultCPUSet":"4-6"}', 657950972),
    ('{"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6","container2":"1-3"}}}', 1420829534),
    ('{"policyName":"none","defaultCPUSet":"4-6","unknownField":"value"}', 3492408555),
])
def test_v4_data_checksums(data, checksum):
    st, probs = cpu(json.dumps({"policyName": "other", "defaultCPUSet": "1-9", "checksum": 1234, "data": data,
                                "dataChecksum": checksum}))
    assert (st.version, st.checksum_ok, st.checksum_as, probs) == (4, True, "data", [])


def test_v4_checksum_beside_data_is_accepted_too():
    data = '{"policyName":"none","defaultCPUSet":"4-6"}'
    st, probs = cpu(json.dumps({"data": data, "checksum": 657950972}))
    assert (st.version, st.checksum_ok, probs) == (4, True, [])


def test_v4_without_data_checksum_is_a_mismatch():
    """'Fail to restore checkpoint without dataChecksum section': the legacy checksum beside data is not
    data's hash, so kubelet says 'checkpoint is corrupted'."""
    data = '{"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6","container2":"1-3"}}}'
    st, probs = cpu("{" + V2_BODY + ',"checksum":1942532442,"data":' + json.dumps(data) + "}")
    assert (st.version, st.checksum_ok) == (4, False) and "computed 1420829534" in probs[0]


def test_corrupt_v4_is_a_mismatch_not_silence():
    """'Fail to restore checkpoint with invalid checksum': kubelet says 'checkpoint is corrupted'."""
    st, probs = cpu("{" + V2_BODY + ',"checksum":1942532442,"data":' + json.dumps(
        '{"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6","container2":"1-3"}}}')
        + ',"dataChecksum":1234}')
    assert st.version == 4 and st.checksum_ok is False
    assert any("dataChecksum 1234 does not match" in m for m in probs)


@pytest.mark.parametrize("text, said", [
    # "Fail to restore checkpoint without data section": dataChecksum set, no data: v4, and undecodable
    ("{" + V2_BODY + ',"checksum":1942532442,"dataChecksum":1234}', "'data' is empty"),
    ('{"data":"{","dataChecksum":1}', "cannot be decoded"),
    ('{"policyName":5,"defaultCPUSet":"1"}', "cannot unmarshal"),
    ('{"policyName":"static","defaultCPUSet":"1","podEntries":{"p":{"cpuSet":"x"}},"checksum":1.5}', "cannot"),
    ("{", "not valid JSON"), ('{"policyName":"none","checksum":NaN}', "NaN is not JSON"),
    # valid JSON Python's int() refuses (4300 digits); Go refuses it too (not a uint64)
    ('{"policyName":"static","defaultCpuSet":"0-3","checksum":' + "1" * 5000 + "}", "integer string conversion"),
])
def test_what_kubelet_cannot_decode_is_refused(text, said):
    st, probs = cpu(text)
    assert st is None and any(said in m for m in probs), probs


@pytest.mark.parametrize("text, said", [
    # "Fail to restore checkpoint from checkpoint with v1 checksum": kubelet 1.36+ no longer accepts it
    ('{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}', "v1 rendering"),
    ("{" + V2_BODY + ',"checksum":1234}', "does not match"),
    ("{" + V3_BODY + ',"checksum":1234}', "does not match"),
])
def test_cpu_checksum_mismatches_are_said_content_kept(text, said):
    st, probs = cpu(text)
    assert st is not None and st.checksum_ok is False and any(said in m for m in probs), probs
    assert st.default_cpuset


def test_v3_body_read_as_v2_drops_pod_entries_as_kubelet_does():
    """Checksum 0 is accepted only by the v2 struct, which has no podEntries: kubelet loads no pod-level CPUs."""
    st, probs = cpu("{" + V3_BODY + ',"checksum":0}')
    assert (st.version, st.checksum_ok, st.pod_entries) == (2, None, {})
    assert any("podEntries ignored" in m for m in probs)


def test_v1_file_is_read_and_said_old():
    """'Fail to restore checkpoint from v1 (migration)' in 1.36+: kubelets up to 1.35 migrated it."""
    st, probs = cpu('{"policyName":"static","defaultCPUSet":"7-9","entries":{"containerID1":"4-6","containerID2":"1-3"},'
                    '"checksum":2026311253}')
    assert (st.version, st.checksum_ok) == (1, True) and st.entries == {"": {"containerID1": {4, 5, 6}, "containerID2": {1, 2, 3}}}
    assert probs == []  # no fault of the node: the kubelet <= 1.17 that wrote it reads it


def test_keys_fold_as_go_does_and_the_last_match_wins():
    st, _ = cpu('{"POLICYNAME":"x","policyname":"static","DefaultCpuSet":"1","checkſum":0}')
    assert (st.policy, st.default_cpuset, st.checksum_ok) == ("static", {1}, None)


# --------------------------------------------------------------------------------------- memory manager

MS = ('"machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,'
      '"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}}')
ENT = '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}}'
MEM_DATA = ('{"policyName":"static",' + MS + ',' + ENT + '}')


def mem(text: str):
    probs: list[Problem] = []
    return parse_memory_manager_state(text, "m", probs), [p.message for p in probs]


@pytest.mark.parametrize("text, version, as_", [
    ('{"policyName":"static",' + MS + ',' + ENT + ',"checksum":4215593881}', 1, "MemoryManagerCheckpoint"),
    ('{"policyName":"static",' + MS + ',' + ENT + ',"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],'
     '"type":"memory","size":512}]}},"checksum":1278640530}', 2, "MemoryManagerCheckpoint"),
    ('{"policyName":"other","checksum":1234,"data":' + json.dumps(MEM_DATA) + ',"dataChecksum":1849615440}', 3, "data"),
])
def test_memory_checkpoint_versions(text, version, as_):
    st, probs = mem(text)
    assert (st.version, st.checksum_ok, st.checksum_as, st.policy, probs) == (version, True, as_, "static", [])
    assert st.entries["pod"]["container1"][0].numa_nodes == (0,) and st.entries["pod"]["container1"][0].size == 512
    if version == 2:
        assert st.pod_entries["pod"][0].size == 512


def test_memory_checksum_zero_and_mismatch():
    st, probs = mem('{"policyName":"static",' + MS + ',' + ENT + ',"checksum":0}')
    assert (st.version, st.checksum_ok, probs) == (1, None, [])
    # "Fail to restore checkpoint from v1 with invalid checksum"
    st, probs = mem('{"policyName":"static",' + MS + ',"entries":{"pod":{"container1":[{"affinity":[0],'
                    '"type":"memory","size":512}]}},"checksum":101010}')
    assert st.checksum_ok is False and "does not match" in probs[0]
    st, probs = mem('{"policyName":"static","checksum":1,"data":' + json.dumps(MEM_DATA) + ',"dataChecksum":1234}')
    assert (st.version, st.checksum_ok) == (3, False) and "dataChecksum 1234" in probs[0]


def test_memory_v3_is_read_inside_data():
    st, _ = mem('{"policyName":"other",' + MS + ',"entries":{"pod":{"containerX":[{"numaAffinity":[0],"type":"memory",'
                '"size":128}]}},"checksum":1234,"data":' + json.dumps(MEM_DATA) + ',"dataChecksum":1849615440}')
    assert st.policy == "static" and list(st.entries["pod"]) == ["container1"]


def test_a_memory_checkpoint_kubelet_would_reject_is_a_checksum_warning(tmp_path):
    """The same treatment as cpu_manager_state: STATE_CHECKSUM_MISMATCH (warning) names the file."""
    import dataclasses

    from helpers import read_sim

    from pinscope.collectors.findings import evaluate
    from pinscope.collectors.sim.node import NodeSpec

    snap = read_sim(NodeSpec(hostname="t", reserved="0,4", init_affinity="0,4"), tmp_path, samples=1).snapshot
    probs: list[Problem] = []
    mm = parse_memory_manager_state('{"policyName":"static",' + MS + ',' + ENT + ',"checksum":101010}',
                                    "/var/lib/kubelet/memory_manager_state", probs)
    fs = evaluate(dataclasses.replace(snap, memory_state=mm, problems=snap.problems + tuple(probs)), None)
    (f,) = [f for f in fs if f.code == "STATE_CHECKSUM_MISMATCH"]
    assert f.severity == "warning" and f.message.startswith("/var/lib/kubelet/memory_manager_state: checksum 101010")
    assert f.evidence and "does not match" in f.evidence[0]


@pytest.mark.parametrize("data, said", [
    # "Fail to restore checkpoint with unparsable default CPU set" (dataChecksum 3033143655)
    ('{"policyName":"none","defaultCPUSet":"1.3"}', "defaultCpuSet"),
    # "Fail to restore checkpoint with unparsable assignment entry" (dataChecksum 3794806925)
    ('{"policyName":"static","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"asd"}}}',
     "entry pod/container2"),
])
def test_cpusets_kubelet_cannot_parse_are_refused(data, said):
    from pinscope.collectors.parse.kubelet import fnv1a32

    st, probs = cpu(json.dumps({"data": data, "dataChecksum": fnv1a32("(string)" + data)}))
    assert st is None and any(m.startswith(said) for m in probs) and "refuses it" in probs[-1]


def test_go_atoi_forms_kubelet_accepts():
    st, probs = cpu('{"policyName":"static","defaultCpuSet":"+1-003","checksum":0}')
    assert st.default_cpuset == {1, 2, 3} and probs == []


@pytest.mark.parametrize("extra", ['"dataChecksum":"x"', '"dataChecksum":-1', '"data":5', '"data":""'])
def test_a_data_field_go_cannot_set_falls_back_to_the_older_versions(extra):
    """json.Unmarshal leaves Data/DataChecksum zero when their value has the wrong type: kubelet then reads
    the file as v3/v2 (state_checkpoint.go: 'not falling back' only when one of them is set)."""
    st, probs = cpu("{" + V2_BODY + f',"checksum":1942532442,{extra}' + "}")
    assert (st.version, st.checksum_ok, st.checksum_as, probs) == (2, True, "CPUManagerCheckpointV3", [])


def test_deeply_nested_json_is_refused_not_a_crash():
    st, probs = cpu("[" * 100_000 + "]" * 100_000)
    assert st is None and "nested too deeply" in probs[0]
    data = "[" * 100_000
    st, probs = cpu(json.dumps({"data": data, "dataChecksum": 1}))
    assert st is None and "nested too deeply" in probs[0]
    m, probs = mem('{"policyName":' + "[" * 100_000 + "}")
    assert m is None and probs
