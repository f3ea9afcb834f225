"""Parsers: a literal string and an assertion each; hypothesis on the cpuset and frame parsers."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinscope.collectors.errors import Problem
from pinscope.collectors.frames import parse_frame
from pinscope.collectors.assemble import assemble
from pinscope.collectors.parse.cgroup import container_id_of, parse_cgroup_dir, pod_uid_of, qos_of
from pinscope.collectors.parse.cpuset import CpusetError, format_cpuset, parse_cpuset, parse_hexmask
from pinscope.collectors.parse.kubelet import (checksum_v2, fnv1a32, parse_cpu_manager_state, parse_flags,
                                      parse_kubelet_config, parse_memory_manager_state)
from pinscope.collectors.parse.podlogs import parse_pod_logs
from pinscope.collectors.parse.procfs import parse_interrupts, parse_proc_stat, parse_task_sched, parse_task_stat
from pinscope.collectors.parse.topology import parse_topology

# ----------------------------------------------------------------------------- cpusets


@pytest.mark.parametrize("text,want", [
    ("", set()), ("0", {0}), ("0-3", {0, 1, 2, 3}), ("0-5,34,46-48", {0, 1, 2, 3, 4, 5, 34, 46, 47, 48}),
    ("2,0,1", {0, 1, 2}), ("0-1\n", {0, 1}), (" 3 ", {3}),
    ("0-7:2/4", {0, 1, 4, 5}),  # kernel group syntax
])
def test_cpuset_forms(text, want):
    assert parse_cpuset(text) == want


def test_cpuset_kernel_only_forms_need_nmax():
    assert parse_cpuset("N", nmax=7) == {7}
    assert parse_cpuset("all", nmax=3) == {0, 1, 2, 3}
    assert parse_cpuset("4-N", nmax=5) == {4, 5}
    with pytest.raises(CpusetError):
        parse_cpuset("all")


@pytest.mark.parametrize("bad", ["5-3", "a", "1,,2", "1-", "-1", "99999", "0x3", "1 2", "１", "0-3:5/4", "1:1/2"])
def test_cpuset_garbage_is_an_error_quoting_it(bad):
    with pytest.raises(CpusetError) as e:
        parse_cpuset(bad)
    assert repr(bad.strip())[1:-1][:2] in str(e.value) or "range" in str(e.value)


def test_hexmask():
    assert parse_hexmask("ff") == set(range(8))
    assert parse_hexmask("00000001,00000000") == {32}


@given(st.sets(st.integers(0, 8191), max_size=64))
def test_cpuset_roundtrip(ids):
    assert parse_cpuset(format_cpuset(ids)) == ids


@given(st.text(max_size=40))
def test_cpuset_never_raises_anything_else(text):
    try:
        out = parse_cpuset(text, nmax=63)
    except CpusetError:
        return
    assert all(0 <= c <= 8191 for c in out)


# ----------------------------------------------------------------------------- frames


def test_frame_basic():
    fr = parse_frame(b"B3 gt\nF/a\nL1\nL2\nX/b\nF/empty\nD/dir\nIk v w\nWwarn\nT65536 /a\nNfifo /p\nZ3\n")
    assert fr.seq == 3 and fr.request == "gt" and fr.complete
    assert fr.files == {"/a": "1\n2\n", "/empty": ""}
    assert fr.unreadable == {"/b"} and fr.truncated == {"/a": 65536} and fr.dirs == ["/dir"]
    assert fr.refused == {"/p": "fifo"}
    assert fr.info == {"k": "v w"} and fr.warnings == ["warn"]


def test_frame_content_cannot_forge_tags():
    # a file whose content is "Z1" and "F/etc/shadow": every content line is L-prefixed
    fr = parse_frame(b"B1 g\nF/x\nLZ1\nLF/etc/shadow\nZ1\n")
    assert fr.files == {"/x": "Z1\nF/etc/shadow\n"}


def test_frame_escaped_names_and_hex_content():
    # a name with a newline and a backslash arrives escaped; kubelet's files arrive as od's hex
    fr = parse_frame(b"B1 s\nC/var/log/pods/a\\nb\\\\c\nF/k\nH 7b 0a\nH ff\nD/x\\ny\nZ1\n")
    assert fr.dirs == ["/var/log/pods/a\nb\\c", "/x\ny"]
    assert fr.files == {"/k": "{\n\ufffd"} and fr.nonutf8 == {"/k"}
    big = parse_frame(b"F/s\n" + b"".join(b"H " + b" 61" * 16 + b"\n" for _ in range((1 << 16) + 1)) + b"Z1\n")
    assert len(big.files["/s"]) == 1 << 20 and big.truncated == {"/s": 1 << 20}


def test_frame_truncated_and_non_utf8():
    fr = parse_frame(b"B1 g\nF/x\nL\xff\xfeok\nF/y\nLhal")
    assert not fr.complete and fr.files["/y"] == "hal\n" and "/x" in fr.nonutf8 and "\ufffd" in fr.files["/x"]


@settings(max_examples=200)
@given(st.binary(max_size=2000))
def test_frame_parser_takes_any_bytes(data):
    fr = parse_frame(data)
    assert isinstance(fr.files, dict)


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=50).filter(lambda b: b"\n" not in b), max_size=20))
def test_frame_roundtrip_of_file_lines(lines):
    data = b"B1 g\nF/f\n" + b"".join(b"L" + l + b"\n" for l in lines) + b"Z1\n"
    fr = parse_frame(data)
    assert fr.files["/f"].count("\n") == len(lines)


# ----------------------------------------------------------------------------- kubelet


def test_state_v2_case_insensitive_unknown_keys_checksum():
    text = json.dumps({"policyName": "none", "defaultCPUSet": "1-3", "futureField": 1,
                       "entries": {"pod": {"container1": "4-6", "container2": "1-3"}}, "checksum": 3610638499})
    probs = []
    st_ = parse_cpu_manager_state(text, "s", probs)
    assert st_.default_cpuset == {1, 2, 3} and st_.entries["pod"]["container1"] == {4, 5, 6}
    assert st_.checksum_ok is True and probs == []


def test_state_checksums_match_kubernetes_vectors():
    assert checksum_v2("none", "", {}) == 1353318690
    assert checksum_v2("none", "4-6", {}) == 354655845
    probs = []
    v1 = '{"policyName":"static","defaultCPUSet":"7-9","entries":{"containerID1":"4-6","containerID2":"1-3"},"checksum":2026311253}'
    s1 = parse_cpu_manager_state(v1, "s", probs)
    assert s1.version == 1 and s1.checksum_ok and s1.entries[""]["containerID1"] == {4, 5, 6}
    # kubelet 1.36+ refuses a v2-shaped file carrying the v1 hash ("Fail to restore checkpoint from checkpoint
    # with v1 checksum", k/k state_checkpoint_test.go): a mismatch, said with why
    probs = []
    s0 = parse_cpu_manager_state('{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}', "s", probs)
    assert s0.checksum_ok is False and "v1 rendering" in probs[0].message


def test_state_bad_checksum_is_a_warning_not_a_failure():
    probs = []
    s = parse_cpu_manager_state('{"policyName":"none","defaultCpuSet":"","checksum":12345}', "s", probs)
    assert s is not None and s.checksum_ok is False and "checksum" in probs[0].message


def test_state_v3_and_v4():
    probs = []
    v3 = ('{"policyName":"static","defaultCPUSet":"1-2","entries":{"pod1":{"container1":"5-6","container2":"3-4"}},'
          '"podEntries":{"pod2":{"cpuSet":"7-9"}},"checksum":766259872}')  # k/k state_checkpoint_test.go
    s = parse_cpu_manager_state(v3, "s", probs)
    assert s.version == 3 and s.pod_entries == {"pod2": {7, 8, 9}} and probs == []
    data = json.dumps({"policyName": "static", "defaultCpuSet": "0-1", "entries": {"u": {"c": "2-3"}}})
    v4 = json.dumps({"policyName": "static", "defaultCpuSet": "0-1", "checksum": 0, "data": data,
                     "dataChecksum": fnv1a32("(string)" + data)})
    s = parse_cpu_manager_state(v4, "s", probs)
    assert s.version == 4 and s.entries == {"u": {"c": {2, 3}}} and probs == []
    bad = json.dumps({"policyName": "static", "defaultCpuSet": "0-1", "data": data, "dataChecksum": 1})
    parse_cpu_manager_state(bad, "s", probs)
    assert "dataChecksum" in probs[-1].message


@pytest.mark.parametrize("text,needle", [
    ('{"policyName":"static","defaultCpuSet":"0-3","entries":{"abc', "not valid JSON"),
    ("[]", "not a JSON object"), ('{"defaultCpuSet":"0"}', "no policyName"), ("", "not valid JSON"),
    ('{"policyName":"static","defaultCpuSet":"3-1"}', "reversed"),
    ('{"policyName":"static","defaultCpuSet":"0","entries":{"u":{"c":"x"}}}', "entry u/c"),
    # valid JSON that json.loads refuses with a plain ValueError (Python's int digit limit): it crashed
    # snapshot/check ("internal error: AttributeError: 'ValueError' object has no attribute 'msg'")
    ('{"policyName":"static","defaultCpuSet":"0-3","checksum":' + "1" * 5000 + "}", "integer string conversion"),
])
def test_state_garbage(text, needle):
    probs = []
    parse_cpu_manager_state(text, "s", probs)
    assert any(needle in p.message for p in probs), probs


def test_memory_manager_state():
    t = ('{"policyName":"Static","machineState":{},"entries":{"u":{"c":[{"numaAffinity":[0,1],'
         '"type":"memory","size":1073741824}]}},"checksum":1}')
    m = parse_memory_manager_state(t, "m", [])
    assert m.policy == "Static" and m.entries["u"]["c"][0].numa_nodes == (0, 1)


@pytest.mark.parametrize("text, said", [
    ('{"policyName":"Static","entries":{"u', "not valid JSON"), ("[]", "not a JSON object"),
    (None, "too large to be a checkpoint")], ids=["truncated", "array", "huge"])
def test_memory_manager_state_refuses_what_the_cpu_checkpoint_refuses(text, said):
    from pinscope.collectors.parse.kubelet import MAX_JSON

    text = text if text is not None else '{"policyName":"' + "x" * MAX_JSON + '"}'
    probs: list[Problem] = []
    assert parse_memory_manager_state(text, "m", probs) is None
    assert [p.source for p in probs] == ["m"] and said in probs[0].message


def test_kubelet_config_flags_override_file_and_ranges_allowed():
    probs: list[Problem] = []
    cfg = parse_kubelet_config(
        "cpuManagerPolicy: none\nreservedSystemCPUs: 0-1,8-9\ncpuManagerPolicyOptions:\n  full-pcpus-only: 'true'\n",
        "/etc/k.yaml", [], ["/usr/bin/kubelet", "--cpu-manager-policy=static", "--topology-manager-policy",
                             "restricted", "--kube-reserved=cpu=500m,memory=1Gi"], probs)
    assert cfg.cpu_manager_policy == "static" and cfg.sources["cpu_manager_policy"] == "flag --cpu-manager-policy"
    assert cfg.reserved_cpus == {0, 1, 8, 9}  # ranges ARE allowed (myth 10a)
    assert cfg.topology_manager_policy == "restricted" and cfg.kube_reserved == {"cpu": "500m", "memory": "1Gi"}
    assert cfg.cpu_manager_policy_options == {"full-pcpus-only": "true"} and probs == []


def test_kubelet_config_dropins_merge_in_order():
    cfg = parse_kubelet_config("cpuManagerPolicy: none\n", "/c", [("/d/20.conf", "cpuManagerPolicy: static\n"),
                                                                   ("/d/10.conf", "reservedSystemCPUs: '3'\n")], None, [])
    assert cfg.cpu_manager_policy == "static" and cfg.reserved_cpus == {3} and cfg.sources["cpu_manager_policy"] == "/d/20.conf"


def test_flags():
    assert parse_flags(["kubelet", "--a=1", "--b", "2", "--c"]) == {"--a": "1", "--b": "2", "--c": "true"}


# ----------------------------------------------------------------------------- cgroups, logs, procfs


def test_cgroup_names():
    assert pod_uid_of("kubepods-burstable-pod1234abcd_56ef_7890_abcd_ef1234567890.slice") == "1234abcd-56ef-7890-abcd-ef1234567890"
    assert pod_uid_of("pod1234abcd-56ef-7890-abcd-ef1234567890") == "1234abcd-56ef-7890-abcd-ef1234567890"
    assert pod_uid_of("pod-1234abcd-56ef-7890-abcd-ef1234567890") is None  # myth 10f: no dash
    h = "a" * 64
    assert container_id_of(f"cri-containerd-{h}.scope") == (h, "containerd")
    assert container_id_of(f"crio-{h}.scope") == (h, "cri-o")
    assert container_id_of(f"crio-conmon-{h}.scope") == (None, None)
    assert container_id_of(f"docker-{h}.scope") == (h, "docker")
    assert container_id_of(h) == (h, None) and container_id_of("container") == (None, None)
    assert qos_of("/kubepods.slice/kubepods-besteffort.slice/x") == "BestEffort"
    assert qos_of("/kubepods/pod1") == "Guaranteed"


def test_cgroup_v2_files():
    files = {"/c/cpuset.cpus.effective": "2-3\n", "/c/cpu.max": "max 100000\n", "/c/cpu.stat":
             "usage_usec 5\nnr_periods 10\nnr_throttled 4\nthrottled_usec 900\n",
             "/c/cpu.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=77\nfull avg10=0 avg60=0 avg300=0 total=0\n"}
    cg = parse_cgroup_dir(files, "/c", 2, [])
    assert cg.cpus_effective == {2, 3} and cg.quota_us is None and cg.period_us == 100000
    assert (cg.nr_throttled, cg.throttled_usec, cg.pressure_some_total_us) == (4, 900, 77)
    cg = parse_cgroup_dir({"/c/cpu.max": "200000 100000\n"}, "/c", 2, [])
    assert cg.quota_us == 200000


def test_cgroup_v1_files_in_two_hierarchies():
    files = {"/s/c/cpuset.effective_cpus": "1\n", "/u/c/cpu.cfs_quota_us": "-1\n", "/u/c/cpu.stat":
             "nr_periods 1\nnr_throttled 1\nthrottled_time 5000\n"}
    cg = parse_cgroup_dir(files, "/s/c", 1, [], cpu_path="/u/c")
    assert cg.cpus_effective == {1} and cg.quota_us is None and cg.throttled_usec == 5


def test_cgroup_garbage_cpuset_is_a_problem():
    probs = []
    cg = parse_cgroup_dir({"/c/cpuset.cpus.effective": "\xff\xfe\n"}, "/c", 2, probs)
    assert cg.cpus_effective is None and probs[0].source == "/c/cpuset.cpus.effective"


def test_pod_logs_hostile_names():
    uid = "1234abcd-56ef-7890-abcd-ef1234567890"
    h = "b" * 64
    logs = parse_pod_logs([f"/var/log/pods/ns_my-pod.v2_{uid}/", f"/var/log/pods/ns_my-pod.v2_{uid}/app/",
                           "/var/log/pods/garbage/", f"/var/log/pods/a_b_c_{uid}/", "/var/log/pods/x\ny_z_w/",
                           f"/var/log/containers/my-pod.v2_ns_side-car-{h}.log", "/var/log/containers/bad.log"])
    assert logs.pods == {uid: ("ns", "my-pod.v2")}
    assert logs.containers[uid] == ["app"] and logs.ids[h] == ("ns", "my-pod.v2", "side-car")


def test_task_stat_comm_with_paren_and_spaces():
    line = "4242 (evil) R (x) y) S 1 4242 4242 0 -1 4194560 0 0 0 0 7 3 0 0 20 0 1 0 5 1 1 1 1 1 0 0 0 0 0 0 0 0 0 0 17 5 0 0 0 0 0\n"
    t = parse_task_stat(line)
    assert t["comm"] == "evil) R (x) y" and t["state"] == "S" and t["last_cpu"] == 5 and t["utime"] == 7
    assert parse_task_stat("garbage") is None and parse_task_stat("1 (x) R 1 2") is None


def test_task_sched_and_stat_lines():
    s = parse_task_sched("bash (1, #threads: 1)\n---\nse.nr_migrations      :      35\nnr_switches : 150\n")
    assert s == {"se.nr_migrations": 35, "nr_switches": 150}
    st_ = parse_proc_stat("cpu  1 2 3 4\ncpu0 10 0 5 80 5 0 0 0 3 0\ncpu2 1 1 1 1\nintr 5\n")
    assert st_[0].busy == 15 and st_[0].total == 100 and set(st_) == {0, 2}  # guest not added twice


def test_interrupts_header_maps_columns():
    txt = "           CPU0       CPU2\n  24:         5          7   PCI-MSI 1-edge      eth0-rx\nNMI:  1 1 Non-maskable\n"
    assert parse_interrupts(txt) == {"24": (12, "eth0-rx", {0: 5, 2: 7})}


def test_topology_cpuless_numa_node_and_offline():
    files = {
        "/sys/devices/system/cpu/possible": "0-3\n", "/sys/devices/system/cpu/online": "0-2\n",
        "/sys/devices/system/cpu/cpu3/online": "0\n",
        "/sys/devices/system/node/node0/cpulist": "0-3\n", "/sys/devices/system/node/node0/distance": "10 20\n",
        "/sys/devices/system/node/node1/cpulist": "\n", "/sys/devices/system/node/node1/distance": "20 10\n",
    }
    for c in range(3):
        files[f"/sys/devices/system/cpu/cpu{c}/topology/core_id"] = f"{c}\n"
        files[f"/sys/devices/system/cpu/cpu{c}/topology/physical_package_id"] = "-1\n"
        files[f"/sys/devices/system/cpu/cpu{c}/topology/core_cpus_list"] = f"{c}\n"
    probs = []
    t = parse_topology(files, probs)
    assert [n.cpus for n in t.numa_nodes] == [(0, 1, 2, 3), ()]
    assert [c.online for c in t.cpus] == [True, True, True, False] and t.cpus[0].socket is None  # -1: unknown, read as nothing
    assert probs == []


def test_assemble_from_garbage_frame_does_not_crash():
    fr = parse_frame(b"B1 sg\nF/sys/devices/system/cpu/online\nL0-\xff\nF/proc/stat\nLcpu0 x y\nIcgroup-version 9\n"
                     b"D/sys/fs/cgroup/kubepods/pod\xff/\nF/var/lib/kubelet/cpu_manager_state\nL{]\n")
    snap = assemble(fr, fr)
    assert any("online" in p.source for p in snap.problems) and any("frame ended early" in p.message for p in snap.problems)


def test_static_without_reserved_cpus_says_kubelet_chooses(tmp_path):
    import asyncio

    from pinscope.collectors.collect import Options, snapshot
    from pinscope.collectors.sim.node import NodeSpec, SimNode

    SimNode(NodeSpec(reserved=None), tmp_path).write()  # systemReserved cpu: 500m
    snap = asyncio.run(snapshot("local", Options(root=str(tmp_path)))).snapshot
    msg = " ".join(p.message for p in snap.problems)
    assert "reservedSystemCPUs is not set: kubelet reserves 1 CPU of its own choosing" in msg


def test_the_last_file_of_a_frame_that_did_not_end_is_named():
    """What snapshot/check say when their deadline passes: the last file the probe sent (escaped names
    unescaped), from the part of the frame that came."""
    from pinscope.collectors.transport.base import last_path

    assert last_path(b"B4 g\nC/sys/fs/cgroup/a\\nb.scope\nFcpu.stat\nLusage_usec 1\nC/proc\nFstat\nLcpu 1\n") == "/proc/stat"
    assert last_path(b"B4 g\nC/sys/fs/cgroup/a\\nb.scope\nFcpu.stat\nLx\n") == "/sys/fs/cgroup/a\nb.scope/cpu.stat"
    assert last_path(b"B4 g\nNfifo /var/lib/kubelet/cpu_manager_state\n") == "/var/lib/kubelet/cpu_manager_state"
    assert last_path(b"B4 g\n") is None


def test_kubelet_config_nested_too_deeply_is_a_problem_not_a_crash():
    probs: list[Problem] = []
    cfg = parse_kubelet_config("a: " + "[" * 50_000, "/c", [], None, probs)
    assert cfg.parsed is False and cfg.cpu_manager_policy is None and "nested too deeply" in probs[0].message
