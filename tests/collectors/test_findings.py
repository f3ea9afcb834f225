"""Every finding fires on a fixture built for it, and stays silent on each legitimate setup.

Each case is a small node description (collectors.sim.node) read through the real probe; cases that
need a rate are sampled twice with the simulated counters advanced in between.
"""
import json

import pytest

from collectors.findings import CODES, evaluate
from collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from helpers import read_sim

ALWAYS_INFO = {"SAMPLES_NEEDED", "SYSTEM_NOT_CONFINED"}


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
    "ISOLATED_IN_SHARED_POOL": dict(isolated="3,7"),
    "THROTTLED_EXCLUSIVE": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5", quota_cores=2, throttled=20)])]),
    "SHARED_POOL_STARVED": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1-3,5-7")])]),
    "NUMA_MISS_HIGH": dict(numa_miss_per_tick=2000),
    "ORPHAN_STATE_ENTRY": dict(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="1,5")]),
                                     PodSpec("gone", cgroup=False, logs=False, containers=[CtrSpec("old", cpus="2,6")])]),
    "STATE_CHECKSUM_MISMATCH": dict(state_text='{"policyName":"static","defaultCpuSet":"0-7","checksum":42}',
                                    pods=[]),
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
}
NEEDS_RATES = {"THROTTLED_EXCLUSIVE", "NUMA_MISS_HIGH", "RUNQUEUE_WAIT_EXCLUSIVE", "KERNEL_NOISE_EXCLUSIVE"}


NOT_AS_ROOT = {"READ_PARTIAL"}  # root reads every file: test_read_partial_is_not_a_fault below, and e2e as a user


def test_every_code_has_a_case():
    assert set(CASES) | ALWAYS_INFO | NOT_AS_ROOT == set(CODES)


def test_read_partial_is_not_a_fault(tmp_path):
    """A state file and config this user may not read: READ_PARTIAL (info) names them and the fix; no
    STATE_UNREADABLE or KUBELET_CONFIG_UNREADABLE (the node is not at fault, the view is)."""
    import dataclasses

    from collectors.errors import UNREAD, Problem

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
    assert f.message == f"read only in part: config.yaml, cpu_manager_state not readable by this user; {fix}"
    assert codes(fs) == []


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
