"""Every finding fires on a fixture built for it, and stays silent on each legitimate setup.

Each case is a small node description (collectors.sim.node) read through the real probe; cases that
need a rate are sampled twice with the simulated counters advanced in between.
"""
import json
import zlib

import pytest

from pinscope.collectors.findings import CODES, evaluate
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from helpers import read_sim

ALWAYS_INFO = {"SAMPLES_NEEDED", "SYSTEM_NOT_CONFINED"}
ORPHAN_CLAIM = ('{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","Entries":[{"ClaimUID":'
                '"067798be-454e-4be4-9047-1aa06aea63f7","ClaimName":"gpu-claim","Namespace":"ml","PodUIDs":'
                '{"139cdb46-f989-4f17-9561-ca10cfb509a6":{}},"DriverState":{"gpu.example.com":{"Devices":'
                '[{"PoolName":"t","DeviceName":"gpu-0","RequestNames":["gpu"],"CDIDeviceIDs":null}]}}}]}')


def run(tmp_path, spec: NodeSpec, samples: int = 1):
    r = read_sim(spec, tmp_path, samples)
    assert list(r.findings) == evaluate(r.snapshot, r.rates)  # the report's findings are the registry's
    return r.snapshot, list(r.findings)


def codes(findings, at_least="warning"):
    keep = {"critical": ("critical",), "warning": ("critical", "warning"), "info": ("critical", "warning", "info")}[at_least]
    return sorted({f.code for f in findings if f.severity in keep})


def base(**kw) -> NodeSpec:
    """1 socket, 4 cores x 2 threads (siblings N, N+4), static, reserved 0,4, one pinned pod on a whole core."""
    d = dict(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=2, driver="systemd",
             pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5")])])
    d.update(kw)
    return NodeSpec(**d)


def test_healthy_node_has_no_warnings(tmp_path):
    snap, fs = run(tmp_path, base(init_affinity="0,2-4,6-7"), samples=2)
    assert codes(fs, "info") == []


# ------------------------------------------------------------------ one planted fault each

CASES = {
    "STATE_UNREADABLE": dict(state_text='{"policyName": "static", "defaultCpuSet": "0-'),
    "KUBELET_CONFIG_UNREADABLE": dict(config_text="cpuManagerPolicy: [static\n"),
    "STATE_POLICY_MISMATCH": dict(state_text='{"policyName":"none","defaultCpuSet":"","checksum":1353318690}', pods=[]),
    "STATE_CGROUP_DRIFT": dict(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", effective="1-2,5-6")])]),
    "EXCLUSIVE_OVERLAP": dict(pods=[PodSpec("a", containers=[CtrSpec("x", cpus="1,5")]),
                                    PodSpec("b", containers=[CtrSpec("y", cpus="1,5")])]),
    "OFFLINE_ASSIGNED": dict(offline="3", pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="3,7")])]),
    "INTRUDER_TASK": dict(other_tasks=[("backup.sh", 1, False)]),
    "GUARANTEED_NOT_PINNED": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5")]),
                                        PodSpec("big", containers=[CtrSpec("java", quota_cores=2)])]),
    "EXCLUSIVE_CROSS_NUMA": dict(sockets=2, cores=2, reserved="0,4", pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1-2,5-6")])]),
    "MEMS_NOT_LOCAL": dict(sockets=2, cores=2, reserved="0,4", pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", mems="1")])]),
    "SMT_SIBLING_SHARED": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1")])]),
    "IRQ_ON_EXCLUSIVE": dict(irqs={40: "0", 41: "1"}),
    # the pinned 1,5 isolated too: else the node isolates others than the pinned (EXCLUSIVE_NOT_ISOLATED)
    "ISOLATED_IN_SHARED_POOL": dict(isolated="1,3,5,7"),
    "THROTTLED_EXCLUSIVE": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", quota_cores=2, throttled=20)])]),
    "SHARED_POOL_STARVED": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1-3,5-7")])]),
    "NUMA_MISS_HIGH": dict(numa_miss_per_tick=2000),
    "ORPHAN_STATE_ENTRY": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5")]),
                                     PodSpec("gone", cgroup=False, logs=False, containers=[CtrSpec("old", cpus="2,6")])]),
    "STATE_CHECKSUM_MISMATCH": dict(state_text='{"policyName":"static","defaultCpuSet":"0-7","checksum":42}',
                                    pods=[]),
    # a valid checkpoint larger than pinscope reads (1 MiB): not read whole, never "invalid"
    "STATE_NOT_READ_WHOLE": dict(state_text='{"policyName":"static","defaultCpuSet":"0,2-4,6-7","pad":"'
                                 + "x" * (1 << 20) + '","checksum":0}'),
    "KUBELET_NOT_FOUND": dict(kubelet_running=False),
    # v2: systemd did not delegate cpuset to kubepods (the containers then have no cpuset files)
    "CPUSET_NOT_ENABLED": dict(cpuset_delegated=False),
    # a process on an exclusive CPU that exited before its cgroup was read: no evidence either way
    "IDENTITY_UNRESOLVED": dict(other_tasks=[("short-lived", 1, False, None)]),
    "RUNQUEUE_WAIT_EXCLUSIVE": dict(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", runq_wait=0.2)])]),
    "KERNEL_NOISE_EXCLUSIVE": dict(noise={5: 0.15}),
    # an SR-IOV VF on NUMA 1 for a container pinned on NUMA 0 (sysfs says so; the plugin keyed it -1)
    "DEVICE_CROSS_NUMA": dict(sockets=2, cores=2, reserved="0,4", pci_numa={"0000:af:02.1": 1},
                              pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", devices=[
                                  ("intel.com/sriov_netdevice", "0000:af:02.1", -1)])])]),
    "DEVICE_CHECKPOINT_ORPHAN": dict(orphan_devices=[("0d0e0f10-1112-4314-9516-171819202122", "trainer",
                                                      "nvidia.com/gpu", "GPU-0a1b2c3d", 0)]),
    # a claim kubelet prepared (its 1.32+ checkpoint, real checksum) for a pod the node no longer has
    # NUMA 0 and 1 keep 2 free CPUs each, the largest pinned request is 4: single-numa-node cannot place it
    "EXCLUSIVE_FRAGMENTED": dict(sockets=2, cores=3, reserved="0,6", topology_policy="single-numa-node",
                                 pods=[PodSpec("a", containers=[CtrSpec("app", cpus="3-4,9-10")]),
                                       PodSpec("b", containers=[CtrSpec("app", cpus="1,7")])]),
    "DRA_CLAIM_ORPHAN": dict(dra_text=json.dumps({"Data": ORPHAN_CLAIM, "Checksum": zlib.crc32(ORPHAN_CLAIM.encode())})),
}
NEEDS_RATES = {"THROTTLED_EXCLUSIVE", "NUMA_MISS_HIGH", "RUNQUEUE_WAIT_EXCLUSIVE", "KERNEL_NOISE_EXCLUSIVE"}


NOT_AS_ROOT = {"READ_PARTIAL"}  # root reads every file: test_read_partial_is_not_a_fault below, and e2e as a user


def test_every_code_has_a_case():
    from pinscope.collectors.findings.base import API_CODES  # the API's: tests/collectors/test_findings_api.py
    from pinscope.collectors.findings.base import LIVE_CODES  # kubelet's socket's: collectors/test_podresources_live.py

    # CHECK_FAILED: no node makes it (a check's own defect): test_a_check_that_raises_is_said_and_the_rest_stands
    # the latency-readiness codes need node files NodeSpec does not write: each is tested both ways in
    # tests/collectors/test_readiness_findings.py
    from test_readiness_findings import READINESS

    assert set(CASES) | ALWAYS_INFO | NOT_AS_ROOT | API_CODES | LIVE_CODES | READINESS | {"CHECK_FAILED"} == set(CODES)
    assert LIVE_CODES == {"PODRESOURCES_DISAGREES"}
    assert API_CODES == {"ADMISSION_REJECTED", "ALLOCATABLE_FRACTIONAL", "KUBELET_PINNING_ERRORS"}


def test_read_partial_is_not_a_fault(tmp_path):
    """A state file and config this user may not read: READ_PARTIAL (info) names them and the fix; no
    STATE_UNREADABLE or KUBELET_CONFIG_UNREADABLE (the node is not at fault, the view is)."""
    import dataclasses

    from pinscope.collectors.errors import UNREAD, Problem

    snap, _ = run(tmp_path, base())
    sf = snap.state_file
    cfg = snap.kubelet.config_path
    fix = "run with --sudo, or as root or a user in a group that may read it"
    unread = dataclasses.replace(snap, state=None, state_status="unreadable", problems=snap.problems + (
        Problem(sf, f"cpu_manager_state is not readable by this user (root-only): {fix}", UNREAD),
        Problem(cfg, f"kubelet config is not readable by this user (root-only): {fix}", UNREAD)))
    fs = evaluate(unread, None)
    (f,) = [f for f in fs if f.code == "READ_PARTIAL"]
    assert f.severity == "info"
    assert f.message == (f"read only in part: config.yaml, cpu_manager_state not readable by this user; {fix}; "
                         "checks not run: " + ", ".join(NOT_RUN_UNREAD))
    assert codes(fs) == []


async def read_as_user(spec: NodeSpec, root, hide: tuple[str, ...], samples: int = 1):
    """`spec` read through the real probe and pipeline (`samples` times, a simulated second apart), the
    files `hide` (node paths) said unreadable by the probe, as they are for a user without --sudo
    (cpu_manager_state is 0600)."""
    import dataclasses

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    sim = SimNode(spec, root).write()

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        for i in range(samples):
            if i:
                sim.tick(1.0)
            frame, _ = await col.read()
            gone = set(hide) & (frame.files.keys() | frame.unreadable)
            frame = dataclasses.replace(frame, files={k: v for k, v in frame.files.items() if k not in gone},
                                        unreadable=frame.unreadable | gone)
            report = col.pipeline.feed(frame)
        return report
    finally:
        await col.close()



NOT_RUN_UNREAD = ["EXCLUSIVE_CROSS_NUMA", "EXCLUSIVE_FRAGMENTED", "EXCLUSIVE_OVERLAP", "GUARANTEED_NOT_PINNED", "MEMS_NOT_LOCAL",
                  "OFFLINE_ASSIGNED", "ORPHAN_STATE_ENTRY", "SHARED_POOL_STARVED", "STATE_CGROUP_DRIFT",
                  "STATE_CHECKSUM_MISMATCH", "STATE_NOT_READ_WHOLE", "STATE_POLICY_MISMATCH", "STATE_UNREADABLE",
                  "THROTTLED_EXCLUSIVE"]


@pytest.mark.parametrize("hide", [("/var/lib/kubelet/cpu_manager_state",),
                                  ("/var/lib/kubelet/cpu_manager_state", "/var/lib/kubelet/config.yaml")])
async def test_unread_state_cries_no_wolf(tmp_path, hide):
    """Issue 22 item 1: without --sudo, a pinned Guaranteed container (CFS quota kept: kubelet < 1.33) was
    called GUARANTEED_NOT_PINNED while the same report showed its CPUs exclusive to it. The checks that
    judge by kubelet's assignment are not run; READ_PARTIAL names them; nothing above info is left."""
    spec = base(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", quota_cores=2)]),
                      PodSpec("web", "prod", qos="Burstable", containers=[CtrSpec("a")])], init_affinity="0,4")
    r = await read_as_user(spec, tmp_path, hide)
    snap, fs = r.snapshot, list(r.findings)
    assert snap.roles_from == "cgroups" and snap.state_status == "unreadable"
    reserved = "shared" if len(hide) == 2 else "reserved"  # reservedSystemCPUs is in the config
    assert {c.id: str(c.role) for c in snap.roles} == {0: reserved, 4: reserved, 1: "exclusive", 5: "exclusive",
                                                       2: "shared", 3: "shared", 6: "shared", 7: "shared"}
    assert [(o.pod, o.container) for o in dict((c.id, c) for c in snap.roles)[1].owners] == [("rt", "app")]
    assert codes(fs) == [], [f"{f.code}: {f.message}" for f in fs]
    assert "GUARANTEED_NOT_PINNED" not in codes(fs, "info")
    (f,) = [f for f in fs if f.code == "READ_PARTIAL"]
    assert f.message.endswith("; checks not run: " + ", ".join(NOT_RUN_UNREAD))
    assert "not run: STATE_UNREADABLE, STATE_POLICY_MISMATCH, STATE_CHECKSUM_MISMATCH, STATE_NOT_READ_WHOLE, EXCLUSIVE_OVERLAP, " \
           "OFFLINE_ASSIGNED, ORPHAN_STATE_ENTRY, STATE_CGROUP_DRIFT, GUARANTEED_NOT_PINNED, EXCLUSIVE_CROSS_NUMA, MEMS_NOT_LOCAL, " \
           "THROTTLED_EXCLUSIVE, SHARED_POOL_STARVED, EXCLUSIVE_FRAGMENTED (they judge by kubelet's CPU assignment " \
           "(cpu_manager_state))" \
           in f.evidence
    if len(hide) == 2:  # an unread config is an unknown policy, never kubelet's default "none"
        assert snap.kubelet.cpu_manager_policy is None and snap.roles_from == "cgroups"


async def test_unread_state_still_finds_runqueue_wait_on_the_cpus_the_report_shows(tmp_path):
    """Without kubelet's assignment the roles are inferred from the cgroups; the run-queue wait on the
    container the report shows pinned is still found (it judges by what the report shows)."""
    spec = base(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", runq_wait=0.2, tasks=1)]),
                      PodSpec("web", "prod", qos="Burstable", containers=[CtrSpec("a")])], init_affinity="0,4")
    r = await read_as_user(spec, tmp_path, ("/var/lib/kubelet/cpu_manager_state",), samples=2)
    assert r.snapshot.roles_from == "cgroups"
    (f,) = [f for f in r.findings if f.code == "RUNQUEUE_WAIT_EXCLUSIVE"]
    assert (f.pod, f.container) == ("rt", "app") and set(f.cpus) <= {1, 5} and "waited 200 ms/s" in f.message


async def test_unread_state_under_policy_none_still_says_guaranteed_not_pinned(tmp_path):
    """Under policy none kubelet assigns nothing: the state file is not needed to know it (info)."""
    spec = base(policy="none", reserved=None, pods=[PodSpec("big", containers=[CtrSpec("java", quota_cores=2)])])
    r = await read_as_user(spec, tmp_path, ("/var/lib/kubelet/cpu_manager_state",))
    (g,) = [f for f in r.findings if f.code == "GUARANTEED_NOT_PINNED"]
    assert g.severity == "info" and g.message == "default/big/java: Guaranteed with a 2-CPU limit, but on the shared pool (policy none)"
    (f,) = [f for f in r.findings if f.code == "READ_PARTIAL"]
    assert "checks not run" not in f.message


async def test_guaranteed_not_pinned_agrees_with_the_roles_shown(tmp_path):
    """Static, the state file missing (STATE_UNREADABLE, roles inferred from the cgroups): a container the
    report shows on CPUs exclusive to it is not also called unpinned."""
    spec = base(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", quota_cores=2)]),
                      PodSpec("web", "prod", qos="Burstable", containers=[CtrSpec("a")])], init_affinity="0,4")
    sf = tmp_path / "var/lib/kubelet/cpu_manager_state"
    from pinscope.collectors.sim.node import SimNode
    SimNode(spec, tmp_path).write()
    sf.unlink()
    r = await read_sim_written(tmp_path)
    assert r.snapshot.roles_from == "cgroups" and r.snapshot.state_status == "missing"
    assert codes(r.findings) == ["STATE_UNREADABLE"], [f"{f.code}: {f.message}" for f in r.findings]


async def read_sim_written(root):

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.transport.local import LocalTransport

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        return await col.tick()
    finally:
        await col.close()



def test_guaranteed_not_pinned_counts_a_one_cpu_limit(tmp_path):
    """Issue 22 item 8 (mutant `cores >= 1` -> `> 1`): a Guaranteed container with a 1-CPU limit on the
    shared pool is named; half a CPU is not (only integer limits get exclusive CPUs)."""
    spec = base(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5")]),
                      PodSpec("one", "prod", containers=[CtrSpec("a", quota_cores=1)]),
                      PodSpec("half", "prod", containers=[CtrSpec("b", quota_cores=0.5)])], init_affinity="0,4")
    snap, fs = run(tmp_path, spec)
    got = [(f.severity, f.pod, f.container, f.message, f.cpus) for f in fs if f.code == "GUARANTEED_NOT_PINNED"]
    assert got == [("warning", "one", "a", "prod/one/a: Guaranteed with a 1-CPU limit, but on the shared pool", (0, 2, 3, 4, 6, 7))]


@pytest.mark.parametrize("code", sorted(CASES))
def test_finding_fires_alone(tmp_path, code):
    kw = dict(CASES[code])
    kw.setdefault("init_affinity", "0,4")
    snap, fs = run(tmp_path, base(**kw), samples=2 if code in NEEDS_RATES else 1)
    got = [f for f in fs if f.code == code]
    assert got, [f"{f.code}: {f.message}" for f in fs]
    sev = CODES[code][0]
    assert {f.severity for f in got} == {sev}
    # exactly the planted fault, nothing else above info
    assert set(codes(fs)) <= {code}, [f"{f.code}: {f.message}" for f in fs if f.severity != "info"]
    f = got[0]
    assert f.message and f.hint and f.evidence
    json.dumps(f.to_json())


def test_finding_details(tmp_path):
    snap, fs = run(tmp_path / "a", base(**CASES["STATE_CGROUP_DRIFT"]))
    (d,) = [f for f in fs if f.code == "STATE_CGROUP_DRIFT"]
    assert d.pod == "rt" and d.container == "app" and d.cpus == (2, 6)
    assert any("cpuset.cpus.effective = 1-2,5-6" in e for e in d.evidence)
    snap, fs = run(tmp_path / "b", base(**CASES["INTRUDER_TASK"], init_affinity="0,4"))
    (i,) = [f for f in fs if f.code == "INTRUDER_TASK"]
    assert "backup.sh" in i.message and i.cpus == (1,) and i.pod == "rt"
    snap, fs = run(tmp_path / "c", base(**CASES["IRQ_ON_EXCLUSIVE"]))
    (q,) = [f for f in fs if f.code == "IRQ_ON_EXCLUSIVE"]
    assert q.message.startswith("IRQ 41") and q.cpus == (1,)


def test_rate_findings_say_they_need_two_samples(tmp_path):
    snap, fs = run(tmp_path, base(**CASES["NUMA_MISS_HIGH"]))
    assert "NUMA_MISS_HIGH" not in codes(fs) and "SAMPLES_NEEDED" in codes(fs, "info")


def test_guaranteed_not_pinned_is_info_under_policy_none(tmp_path):
    snap, fs = run(tmp_path, base(policy="none", reserved=None, pods=[PodSpec("big", containers=[CtrSpec("java", quota_cores=2)])]))
    (g,) = [f for f in fs if f.code == "GUARANTEED_NOT_PINNED"]
    assert g.severity == "info"


# ------------------------------------------------------------------ legitimate setups: silent

LEGIT = {
    "init container CPUs reused by the app": dict(pods=[PodSpec("rt", containers=[
        CtrSpec("init", cpus="1,5", init=True), CtrSpec("app", cpus="1-2,5-6")])]),
    "reserved CPUs inside the shared pool": dict(),
    "exclusive container with cpu.max max": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", quota_cores=None)])]),
    "per-CPU kernel threads on exclusive CPUs": dict(other_tasks=[("kworker/1:0", 1, True), ("ksoftirqd/1", 1, True),
                                                                   ("migration/5", 5, True), ("cpuhp/1", 1, True)]),
    "the pod's own tasks": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", tasks=6)])]),
    "kubelet and daemons on reserved and shared CPUs": dict(other_tasks=[("kubelet", 0, False), ("containerd", 4, False),
                                                                          ("sshd", 2, False), ("journald", 7, False)]),
    "shared containers on the pool": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5"), CtrSpec("side")]),
                                                PodSpec("web", qos="Burstable", containers=[CtrSpec("a", quota_cores=0.5)])]),
    "device IRQs on reserved CPUs": dict(irqs={40: "0,4", 41: "0"}),
    "kernel noise on reserved and shared CPUs": dict(noise={0: 0.3, 2: 0.3}, steal={4: 0.2}),
    "run-queue wait of a shared container": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5")]),
                                                       PodSpec("web", qos="Burstable", containers=[CtrSpec("a", runq_wait=0.5)])]),
    "run-queue wait below the threshold": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", runq_wait=0.03)])]),
}


@pytest.mark.parametrize("case", sorted(LEGIT))
def test_legit_is_silent(tmp_path, case):
    snap, fs = run(tmp_path, base(**LEGIT[case], init_affinity="0,4"), samples=2)
    assert codes(fs, "info") == [], [f"{f.code}: {f.message}" for f in fs]


@pytest.mark.parametrize("order", ["pinned first", "shared first"])
async def test_inferred_owners_tie_break_takes_the_largest_set_as_the_pool(tmp_path, order):
    """Issue 22 item 8 (the owner tie-break in assemble/roles.py). kubelet's assignment unread, every pod
    Guaranteed: the pinned container's cpuset and the pool (a fractional sidecar's) are each seen once.
    On the tie the larger set is the shared pool, whichever is met first; the pinned one owns its CPUs."""
    ctrs = [CtrSpec("app", cpus="1,5", quota_cores=2), CtrSpec("side", quota_cores=0.5)]
    spec = base(pods=[PodSpec("rt", "prod", containers=ctrs if order == "pinned first" else ctrs[::-1])],
                init_affinity="0,4")
    r = await read_as_user(spec, tmp_path, ("/var/lib/kubelet/cpu_manager_state",))
    snap = r.snapshot
    assert snap.roles_from == "cgroups" and snap.shared_pool == frozenset({0, 2, 3, 4, 6, 7})
    got = {c.id: (str(c.role), tuple((o.pod, o.container) for o in c.owners)) for c in snap.roles}
    assert got == {0: ("reserved", ()), 4: ("reserved", ()), 1: ("exclusive", (("rt", "app"),)),
                   5: ("exclusive", (("rt", "app"),)), 2: ("shared", ()), 3: ("shared", ()), 6: ("shared", ()),
                   7: ("shared", ())}
    assert codes(r.findings) == []


# ------------------------------------------------------------------ intruders: evidence, not presence (issue 22 item 9)

def test_passers_by_on_an_unconfined_node_are_one_warning_never_critical(tmp_path):
    """PID 1 may run anywhere (no CPUAffinity=): tasks outside the pods that merely last ran on exclusive
    CPUs, using next to nothing, are listed in one SYSTEM_NOT_CONFINED warning; no INTRUDER_TASK."""
    spec = base(other_tasks=[("sshd", 1, False, "/system.slice/ssh.service", 0.0),
                             ("python3", 5, False, "/user.slice/user-0.slice/session-1.scope", 0.02)])
    for samples in (1, 2):
        snap, fs = run(tmp_path / str(samples), spec, samples=samples)
        assert "INTRUDER_TASK" not in codes(fs, "info"), [f.message for f in fs]
        (w,) = [f for f in fs if f.code == "SYSTEM_NOT_CONFINED"]
        assert w.severity == "warning" and w.cpus == (1, 5)
        assert w.message == ("2 task(s) of 2 process(es) outside the owning pods last ran on exclusive CPUs 1,5: "
                             "PID 1 (and so system services) may run on 1,5")
        (seen,) = [e for e in w.evidence if e.startswith("last ran there: ")]
        assert "sshd (pid " in seen and ") on CPU 1" in seen and "python3 (pid " in seen and ") on CPU 5" in seen
        assert codes(fs) == ["SYSTEM_NOT_CONFINED"]


def test_a_measured_share_of_an_exclusive_cpu_is_critical(tmp_path):
    """Two samples: a task burning half a CPU on CPU 1 at both ends of the window is an INTRUDER_TASK
    (critical), with the share in the evidence; an idle one beside it stays a passer-by."""
    spec = base(other_tasks=[("backup.sh", 1, False, "/system.slice/backup.service", 0.5),
                             ("sshd", 5, False, "/system.slice/ssh.service", 0.0)])
    snap, fs = run(tmp_path, spec, samples=2)
    (i,) = [f for f in fs if f.code == "INTRUDER_TASK"]
    assert i.severity == "critical" and i.cpus == (1,) and i.message.startswith("backup.sh (pid ")
    assert any(" % of a CPU over " in e and "on exclusive CPU 1 at both ends (threshold 10 %)" in e for e in i.evidence), i.evidence
    (w,) = [f for f in fs if f.code == "SYSTEM_NOT_CONFINED"]
    assert w.severity == "warning" and w.cpus == (5,) and "sshd (pid " in " ".join(w.evidence)
    assert "backup.sh" not in " ".join(w.evidence)
    # one sample: no window, no share measured: a passer-by
    snap, fs = run(tmp_path / "one", spec, samples=1)
    assert "INTRUDER_TASK" not in codes(fs, "info")


def test_pinned_to_exclusive_cpus_is_critical_without_a_window(tmp_path):
    """Cpus_allowed_list inside the exclusive CPUs (someone ran it under taskset -c 1): critical on one
    sample, idle as it is. The every-task scan reads the allowed CPUs of each task outside pods that last ran
    on an exclusive CPU (on one sample, before any report says which those are: of every such task), not of
    the pods' tasks nor of kernel threads; main read none (so a pinned idle task was a mere passer-by)."""
    import dataclasses

    pinned = ("stress", 1, False, "/user.slice/user-0.slice/session-1.scope", 0.0, "1")
    for samples in (1, 2):
        snap, fs = run(tmp_path / f"pinned{samples}", base(other_tasks=[pinned]), samples=samples)
        (i,) = [f for f in fs if f.code == "INTRUDER_TASK"]
        assert i.severity == "critical" and i.cpus == (1,) and i.message.startswith("stress (pid ")
        assert any("Cpus_allowed_list = 1, exclusive CPUs only: pinned there" in e for e in i.evidence), i.evidence
        (t,) = [t for t in snap.all_tasks if t.comm == "stress"]
        assert t.allowed == frozenset({1})
        assert not [t for t in snap.all_tasks if t.kthread and t.allowed is not None]  # never asked
    spec = base(other_tasks=[("stress", 1, False, "/user.slice/user-0.slice/session-1.scope", 0.0)])
    snap, fs = run(tmp_path, spec)
    assert "INTRUDER_TASK" not in codes(fs, "info")  # allowed everywhere: a passer-by
    (t,) = [t for t in snap.all_tasks if t.comm == "stress"]
    assert t.allowed is not None and len(t.allowed) > 1
    tasks = tuple(t._replace(allowed=frozenset({1})) if t.comm == "stress" else t for t in snap.all_tasks)
    fs = evaluate(dataclasses.replace(snap, all_tasks=tasks), None)
    (i,) = [f for f in fs if f.code == "INTRUDER_TASK"]
    assert any("Cpus_allowed_list = 1, exclusive CPUs only: pinned there" in e for e in i.evidence)
    assert not [f for f in fs if f.code == "SYSTEM_NOT_CONFINED" and f.severity == "warning"]
    # allowed on a shared CPU too: the scheduler's choice, not a pin
    tasks = tuple(t._replace(allowed=frozenset({1, 2})) if t.comm == "stress" else t for t in snap.all_tasks)
    fs = evaluate(dataclasses.replace(snap, all_tasks=tasks), None)
    assert "INTRUDER_TASK" not in codes(fs, "info")


def test_a_moving_busy_task_is_no_intruder(tmp_path):
    """Busy, but on another CPU at the window's start: it may have spent the window anywhere."""
    import dataclasses

    spec = base(other_tasks=[("make", 1, False, "/user.slice/user-0.slice/session-1.scope", 0.9)])
    r = read_sim(spec, tmp_path, 2)
    (t,) = [t for t in r.snapshot.all_tasks if t.comm == "make"]
    assert r.rates.task_first_cpu[t.tid] == 1 and r.rates.task_busy[t.tid] > 0.5
    assert "INTRUDER_TASK" in codes(r.findings)
    moved = dataclasses.replace(r.rates, task_first_cpu={**r.rates.task_first_cpu, t.tid: 2})
    fs = evaluate(r.snapshot, moved)
    assert "INTRUDER_TASK" not in codes(fs, "info")
    assert [f.severity for f in fs if f.code == "SYSTEM_NOT_CONFINED"] == ["warning"]


def test_the_intruder_share_threshold_is_configurable(tmp_path):
    """--intruder-pct: half a CPU is an intruder at the default 10 %, not above 80 %; the CLI knows the flag."""
    from pinscope.collectors.findings.jitter import Thresholds, set_thresholds, thresholds
    from pinscope.cli import build_parser

    spec = base(other_tasks=[("backup.sh", 1, False, "/system.slice/backup.service", 0.5)])
    old = thresholds()
    try:
        set_thresholds(Thresholds(intruder_pct=80))
        snap, fs = run(tmp_path / "a", spec, samples=2)
        assert "INTRUDER_TASK" not in codes(fs, "info") and "SYSTEM_NOT_CONFINED" in codes(fs)
    finally:
        set_thresholds(old)
    snap, fs = run(tmp_path / "b", spec, samples=2)
    assert "INTRUDER_TASK" in codes(fs)
    assert build_parser("check").parse_args(["--intruder-pct", "25", "local"]).intruder_pct == 25


async def test_a_measured_intruder_holds_between_task_scans(tmp_path):
    """Live, the every-task scan comes every 10th tick: the share measured over the last two scans holds
    on the ticks between (an INTRUDER_TASK does not flicker with the scan cadence)."""

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    sim = SimNode(base(other_tasks=[("backup.sh", 1, False, "/system.slice/backup.service", 0.5)]), tmp_path).write()

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    try:
        got = []
        for depth in ("gcTaiw", "gcTaiw", "g", "g", "gc"):
            r = await col.tick(depth)
            got.append([f.code for f in r.findings if f.severity == "critical"])
            sim.tick(1.0)
    finally:
        await col.close()

    assert got == [[], ["INTRUDER_TASK"], ["INTRUDER_TASK"], ["INTRUDER_TASK"], ["INTRUDER_TASK"]], got


async def test_the_exclusive_cpus_go_with_a_pod_task_scan_only_and_are_unknown_after_a_reconnect(tmp_path):
    """The probe tells a pod's task from an outsider by the cgroup.procs a pod task scan (t, T) reads: the
    exclusive CPUs (whose outsiders' allowed CPUs it reads) go only with such a scan, not with the CPU pane's
    every-tick "a" (it would read the status of the pods' own tasks, every tick); "*" before the first
    report of each connection (a node may have changed while it was away)."""

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    SimNode(base(), tmp_path).write()

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    assert col._request("gta") == "sgtan - - *"  # the first: static, names, and no report yet
    await col.connect()
    try:
        await col.tick("gTa")
        assert col._request("gta") == "gta - 0,4 1,5"  # the CPUs to keep to, once; the exclusive ones
        assert col._request("gTai") == "gTai - - 1,5" and col._request("ga") == "ga"
        col.focus_cpu = 1
        assert col._request("g") == "ga @1"  # the CPU pane: its scan, no list
        col.focus_cpu = None
        await col.close()
        await col.connect()
        assert col._request("gta") == "sgtan - - *"  # a new probe: static and names again, and "*"
    finally:
        await col.close()



def test_a_check_that_raises_is_said_and_the_rest_stands(tmp_path, monkeypatch):
    """A check's own defect met on some node's data (RUNQUEUE_WAIT_EXCLUSIVE raised AttributeError on the tick
    after a drill-down closed: the whole tick failed, the TUI's node stopped) takes neither the report nor
    the other checks' findings with it: CHECK_FAILED (info: no claim about the node) names the check, the
    codes left unknown and the error in one line; what the check found before it failed stands."""
    import dataclasses

    from pinscope.collectors.findings import base as fbase

    spec = base(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1")])])  # SMT_SIBLING_SHARED
    snap, fs = run(tmp_path, spec)
    assert "SMT_SIBLING_SHARED" in codes(fs)
    smt = next(c for c in fbase.REGISTRY if "SMT_SIBLING_SHARED" in c.codes)
    found = next(f for f in fs if f.code == "SMT_SIBLING_SHARED")

    def half(ctx):  # yields its finding, then fails as a defect would
        yield found
        raise KeyError("cpu\x1b[31m7")

    monkeypatch.setattr(fbase, "REGISTRY", [dataclasses.replace(c, fn=half) if c is smt else c for c in fbase.REGISTRY])
    got = evaluate(snap)
    failed = [f for f in got if f.code == "CHECK_FAILED"]
    assert len(failed) == 1 and str(failed[0].severity) == "info"
    assert failed[0].message == "check smt_sibling_shared failed: SMT_SIBLING_SHARED unknown this time"
    (line,) = failed[0].evidence
    assert line.startswith("KeyError: ") and "test_findings.py:" in line and "\n" not in line
    assert found in got  # what it found before it failed
    assert [f for f in got if f.code != "CHECK_FAILED"] == fs  # every other check as before


def test_check_exits_4_when_a_check_failed(tmp_path, monkeypatch, capsys):
    """`pinscope check` on a node one of whose checks failed is not "ok" (0) nor "warnings" (1): what that
    check judges is unknown, as for a node read only in part: 4 (docs/use.md, exit codes)."""
    import dataclasses

    from pinscope.collectors.findings import base as fbase
    from pinscope.collectors.sim.node import SimNode
    from pinscope.cli import main

    SimNode(base(init_affinity="0,2-4,6-7"), tmp_path / "n").write()
    assert main(["check", "--root", str(tmp_path / "n"), "local"]) == 0  # a healthy node: ok

    def broken(ctx):
        raise ValueError("boom")
        yield  # a generator, as every check is

    monkeypatch.setattr(fbase, "REGISTRY", [dataclasses.replace(c, fn=broken) if c.name == "cgroup_drift" else c
                                            for c in fbase.REGISTRY])
    capsys.readouterr()
    assert main(["check", "--root", str(tmp_path / "n"), "local"]) == 4
    out = capsys.readouterr().out
    assert "check cgroup_drift failed: STATE_CGROUP_DRIFT unknown this time" in out
    assert main(["check", "--json", "--root", str(tmp_path / "n"), "local"]) == 4
    (f,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "CHECK_FAILED"]
    assert f["severity"] == "info" and f["evidence"][0].startswith("ValueError: boom (at test_findings.py:")
