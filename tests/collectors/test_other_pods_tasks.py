"""Another pod's task on an exclusive CPU: critical only on positive evidence of harm (collectors/findings/tasks.py).

Built as the real node showed it (issue 33; kubelet 1.35.4 and 1.37.2, cgroup v1, cgroupfs): every pod's sandbox
(pause) sits in its pod's cgroup, allowed every CPU (kubelet's CPU manager sets only the containers' cpusets),
asleep, its last CPU the one it started on, an exclusive CPU given away since (PodSpec.sandbox_cpu). Such a
sandbox is no intruder, on a confined node (PID 1 kept off the exclusive CPUs) or not; a busy task of another
pod (a measured share, or pinned there: a drifted container's) is, and the finding says whose task it is.
"""
import dataclasses

import pytest

from helpers import read_sim
from nodes import trouble_512
from pinscope.collectors.findings.identity import identity_unresolved
from pinscope.collectors.findings.tasks import outsiders, placed
from pinscope.collectors.findings.base import Context
from pinscope.collectors.model import CpuRole, Owner, Task
from pinscope.collectors.sim import layout
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

WEB = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"  # the other pod's uid (its cgroup path below)
CONFINED = {"confined": "0,4", "unconfined": None}  # PID 1's Cpus_allowed_list (None: every online CPU)


def node(init_affinity, sandbox_cpu=None, other_tasks=()) -> NodeSpec:
    """4 cores x 2 threads, reserved 0,4, cgroup v1 cgroupfs (the real node's): prod/rt/app holds CPUs 1 and 5;
    prod/web (Burstable) has its sandbox last on `sandbox_cpu`."""
    return NodeSpec(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=1, driver="cgroupfs",
                    init_affinity=init_affinity, other_tasks=list(other_tasks),
                    pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5")]),
                          PodSpec("web", "prod", qos="Burstable", uid=WEB, sandbox_cpu=sandbox_cpu,
                                  containers=[CtrSpec("a")])])


# a process whose /proc/<pid>/cgroup is read and names prod/web (its pid in none of the cgroup.procs the probe read)
WEB_CGROUP = layout.pod_cgroup("cgroupfs", "", "Burstable", WEB) + "/" + "e" * 64


def crit(r, code="INTRUDER_TASK"):
    return [f for f in r.findings if f.code == code and f.severity == "critical"]


@pytest.mark.parametrize("samples", [1, 2])
@pytest.mark.parametrize("system", sorted(CONFINED))
def test_another_pods_sleeping_sandbox_on_an_exclusive_cpu_is_no_intruder(tmp_path, system, samples):
    """prod/web's pause last ran on CPU 1 (prod/rt's), allowed every CPU, asleep: an outsider with no evidence.
    On the confined node a65e6e3 called it critical ("the system is confined away from exclusive CPUs, so this
    task's affinity was widened"): false of a pod's task, whose affinity is its pod's cpuset, not PID 1's."""
    r = read_sim(node(CONFINED[system], sandbox_cpu=1), tmp_path, samples)
    (pause,) = [t for t in r.snapshot.all_tasks if t.comm == "pause" and t.last_cpu == 1]
    web = next(p for p in r.snapshot.pods if p.name == "web")
    assert pause.pid in web.pids and pause.cgroup is None  # in its pod's cgroup.procs: its cgroup not read
    assert [(t.pid, ev) for t, ev in outsiders(Context(r.snapshot, r.rates))] == [(pause.pid, [])]  # a passer-by
    assert not [f for f in r.findings if f.code == "INTRUDER_TASK"], [f.message for f in r.findings]
    assert not [f for f in r.findings if f.severity == "critical"], [f.message for f in r.findings]


def test_on_an_unconfined_node_the_sandbox_is_listed_with_its_pod(tmp_path):
    """The passer-by list (SYSTEM_NOT_CONFINED) names whose pause it is: it is no system service."""
    r = read_sim(node(None, sandbox_cpu=1), tmp_path, 2)
    (pause,) = [t for t in r.snapshot.all_tasks if t.comm == "pause" and t.last_cpu == 1]
    (w,) = [f for f in r.findings if f.code == "SYSTEM_NOT_CONFINED"]
    assert w.severity == "warning" and w.cpus == (1,)
    (seen,) = [e for e in w.evidence if e.startswith("last ran there: ")]
    assert seen == f"last ran there: pause (pid {pause.pid}, tid {pause.tid}, of prod/web) on CPU 1", seen
    assert "belongs to another pod" not in " ".join(w.evidence)


@pytest.mark.parametrize("system", sorted(CONFINED))
def test_another_pods_sleeping_task_whose_cgroup_was_read_is_no_intruder(tmp_path, system):
    """The same sandbox seen through its /proc/<pid>/cgroup: being another pod's is no evidence of harm
    (a65e6e3 and before: critical, "another pod's, whose cpuset lets it on CPU 1")."""
    r = read_sim(node(CONFINED[system], other_tasks=[("pause", 1, False, WEB_CGROUP, 0.0)]), tmp_path, 2)
    (t,) = [t for t in r.snapshot.all_tasks if t.comm == "pause" and t.last_cpu == 1]
    assert t.cgroup == WEB_CGROUP and len(t.allowed or ()) == 8
    assert not [f for f in r.findings if f.code == "INTRUDER_TASK"], [f.message for f in r.findings]
    if system == "unconfined":
        (w,) = [f for f in r.findings if f.code == "SYSTEM_NOT_CONFINED"]
        assert f"pause (pid {t.pid}, tid {t.tid}, of prod/web) on CPU 1" in " ".join(w.evidence)


@pytest.mark.parametrize("system", sorted(CONFINED))
def test_a_busy_or_pinned_task_of_another_pod_is_critical_and_named(tmp_path, system):
    """Another pod's task with a measured share of CPU 1 (two samples), or pinned to it (one sample): critical,
    its message and evidence say whose task it is, and never that the system widened it."""
    busy = ("worker", 1, False, WEB_CGROUP, 0.5)
    pinned = ("pinned", 1, False, WEB_CGROUP, 0.0, "1")
    for task, samples, why in [(busy, 2, "% of a CPU over "), (pinned, 1, "exclusive CPUs only: pinned there")]:
        r = read_sim(node(CONFINED[system], other_tasks=[task]), tmp_path / f"{task[0]}", samples)
        (t,) = [t for t in r.snapshot.all_tasks if t.comm == task[0]]
        (i,) = crit(r)
        assert i.message == f"{task[0]} (pid {t.pid}, tid {t.tid}) of prod/web last ran on CPU 1, exclusive to prod/rt/app"
        assert (i.pod, i.container, i.cpus) == ("rt", "app", (1,))
        assert f"/proc/{t.pid}/cgroup: {WEB_CGROUP}: prod/web's, not the owning pod's; not a kernel thread" in i.evidence
        assert any(why in e for e in i.evidence), i.evidence
        assert not any("widened" in e or "None" in e for e in i.evidence), i.evidence


@pytest.mark.parametrize("system", ["confined", "unconfined"])
def test_a_busy_drifted_container_on_another_pods_cpus_is_critical_and_named(tmp_path, system):
    """trouble_512: shard-30's engine, its cpuset drifted onto 128-135, runs on shard-31's CPUs 133 and 135:
    two critical INTRUDER_TASKs beside STATE_CGROUP_DRIFT, each saying it is shard-30's engine (its pid in that
    container's cgroup.procs), not printing its unread cgroup as None, nor (confined) calling it widened."""
    spec = trouble_512()
    if system == "confined":
        spec = dataclasses.replace(spec, init_affinity="0-7")
    r = read_sim(spec, tmp_path, 2)
    got = sorted((f.code, f.cpus, f.pod, f.container) for f in r.findings if f.severity == "critical")
    assert got == [("INTRUDER_TASK", (133,), "shard-31", "engine"), ("INTRUDER_TASK", (135,), "shard-31", "engine"),
                   ("STATE_CGROUP_DRIFT", (132, 133, 134, 135), "shard-30", "engine")], got
    shard30 = next(p for p in r.snapshot.pods if p.name == "shard-30")
    (engine,) = shard30.containers
    for i in crit(r):
        if i.code != "INTRUDER_TASK":
            continue
        cpu = i.cpus[0]
        (t,) = [t for t in r.snapshot.all_tasks if t.pid in engine.pids and t.last_cpu == cpu]
        assert i.message == (f"engine (pid {t.pid}, tid {t.tid}) of trading/shard-30/engine last ran on CPU {cpu}, "
                             "exclusive to trading/shard-31/engine")
        assert (f"{engine.cgroup_path}/cgroup.procs holds pid {t.pid}: trading/shard-30/engine's, not the owning pod's; "
                "not a kernel thread") in i.evidence, i.evidence
        assert f"/proc/{t.pid}/task/{t.tid}/status: Cpus_allowed_list = 128-135, exclusive CPUs only: pinned there" in i.evidence
        assert not any("None" in e or "widened" in e for e in i.evidence), i.evidence


def test_a_pod_task_on_a_cpu_whose_owners_pod_is_unknown_is_unknown_not_an_outsider():
    """A v1 checkpoint entry keyed by a container id no pod was matched to (Owner with pod_uid ""): a task in some
    pod's cgroup.procs may be the owner's own (its pod is unknown), so placed() says None (unknown), never False
    (a65e6e3: False, and pinned to its own exclusive CPUs it became a critical INTRUDER_TASK)."""
    t = Task(tid=101, pid=101, comm="x", last_cpu=1)
    unmatched = Owner("", None, None, "abc123")
    assert placed(t, [unmatched], {"uid-a": frozenset({101})}) is None
    # one known owner beside it: still unknown (the unmatched one may be the task's pod's container)
    assert placed(t, [Owner("uid-b", "ns", "p", "c"), unmatched], {"uid-a": frozenset({101}), "uid-b": frozenset()}) is None
    # every owner's pod known and the pid in another pod's cgroup.procs: an outsider, as before
    assert placed(t, [Owner("uid-b", "ns", "p", "c")], {"uid-a": frozenset({101}), "uid-b": frozenset()}) is False
    assert placed(t, [Owner("uid-a", "ns", "p", "c")], {"uid-a": frozenset({101})}) is True


def test_a_pod_task_on_a_cpu_an_unmatched_entry_owns_is_named_unplaced_not_an_intruder(tmp_path):
    """prod/web's pause last on CPU 1, which a v1 entry no pod was matched to owns (CPU 1's owner swapped for
    Owner("", None, None, "abc123") in the snapshot): no outsider, and IDENTITY_UNRESOLVED says where the task
    is and what is unknown (not "/proc/<pid>/cgroup not read (the process may have exited)")."""
    r = read_sim(node(None, sandbox_cpu=1), tmp_path, 1)
    (pause,) = [t for t in r.snapshot.all_tasks if t.comm == "pause" and t.last_cpu == 1]
    roles = tuple(CpuRole(x.id, x.role, (Owner("", None, None, "abc123"),)) if x.id == 1 else x for x in r.snapshot.roles)
    ctx = Context(dataclasses.replace(r.snapshot, roles=roles), r.rates)
    assert [t.pid for t, _ in outsiders(ctx) if t.pid == pause.pid] == []
    (f,) = [f for f in identity_unresolved(ctx) if "could not be placed" in f.message]
    assert f"pause (pid {pause.pid}, tid {pause.tid}) on CPU 1: in prod/web's cgroup.procs; the owning pod is unknown" in f.evidence, f.evidence
