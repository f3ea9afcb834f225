"""Tasks on exclusive CPUs that do not belong there, on positive evidence only.

A task is an outsider when it is known to lie outside the pod that owns the CPU it last ran on: its pid is in
another pod's cgroup.procs (the probe then does not read its /proc/<pid>/cgroup), or its process's cgroup
(/proc/<pid>/cgroup, read in the same scan as its last CPU) is known and lies outside that pod. Never flagged:
kernel threads (per-CPU kworker/N, ksoftirqd/N, migration/N, cpuhp/N ...), the pod's own tasks (its sandbox
and CRI-O's conmon included), and a task whose cgroup could not be read (identity.py notes it, at info).

An outsider is a critical INTRUDER_TASK only on positive evidence of harm or of a deliberate placement:
- its allowed CPUs (Cpus_allowed_list) lie inside exclusive CPUs: someone pinned it there (taskset, or a
  cpuset written over another container's CPUs: a drifted container's tasks);
- it used a measurable share of a CPU over the window while on that exclusive CPU at both ends of it
  (Thresholds.intruder_pct, default 10 %: see jitter.py);
- it is outside every pod and the node is confined (PID 1's Cpus_allowed_list has no exclusive CPU): it
  reached the CPU only because its affinity was widened (taskset, a service's CPUAffinity=).
Being another pod's task is no evidence by itself, and a confined system says nothing of it: its affinity is
its own pod's cpuset (kubelet's), not PID 1's. On a real node every pod's sandbox (pause) may run on every CPU,
exclusive ones too (kubelet's CPU manager sets only the containers' cpusets: kubelet 1.35.4 and 1.37.2, cgroup
v1, cgroupfs), and pause, asleep since its pod started, keeps as last CPU the one it started on, which may be
a CPU given away since. So another pod's task is critical when it is pinned there or takes a measured share (a
busy container whose cpuset drifted over another's CPUs: pinned there, and measured where it stayed), and is
otherwise a passer-by.
Any other outsider only last ran there: a passer-by, listed in the one per-node SYSTEM_NOT_CONFINED finding
(cpus.py; another pod's named with its pod) where the system may run anywhere, never critical. On a real node
the scheduler puts PID 1, shells and daemons on every CPU it may: naming each as an intruder cried wolf.
Every INTRUDER_TASK names whose task it is (the pod, and container where known) beside the CPU's owner.
"""
from __future__ import annotations

from typing import Iterator

from ..model import Pod, Task
from ..parse.cgroup import pod_uid_in_path
from ..parse.cpuset import format_cpuset as fmt
from .base import Context, check, finding, who


def placed(t, owners, owner_pids) -> bool | None:
    """Is task `t` (on a CPU these owners hold) their own? True / False (positive evidence) / None
    (unknown: its cgroup was not read, or the owner's pod is unknown and the task is in some pod)."""
    if any(t.pid in owner_pids.get(o.pod_uid, ()) for o in owners):
        return True
    if any(t.pid in pids for pids in owner_pids.values()):
        # another pod's (its pid is in that pod's cgroup.procs, so the probe did not read its /proc/<pid>/cgroup):
        # on a real node every pod's sandbox (pause) runs on all CPUs, exclusive ones too: kubelet's CPU manager
        # sets the containers' cpusets only (seen on kubelet 1.35 and 1.37, cgroup v1). Placed, not unknown;
        # unless an owner's pod is unknown (a v1 entry keyed by a container id no pod matched): the task's pod
        # may be that owner's own, so unknown.
        return None if any(not o.pod_uid for o in owners) else False
    if t.cgroup is None:
        return None
    tuid = pod_uid_in_path(t.cgroup)
    for o in owners:
        if o.pod_uid and tuid == o.pod_uid:
            return True
        if not o.pod_uid and o.container and o.container in t.cgroup:  # a v1 entry: keyed by container id
            return True
    if tuid is not None and any(not o.pod_uid for o in owners):
        return None
    return False


def whose(ctx: Context, t: Task) -> tuple[Pod | None, str | None, str | None] | None:
    """The pod outsider `t` belongs to: (its pod if the report knows it, its container where known, the pod uid
    its cgroup names), or None when it is outside every pod (or its cgroup is unknown)."""
    home = ctx.pid_home.get(t.pid)
    if home is not None:
        return home[0], home[1], home[0].uid
    uid = pod_uid_in_path(t.cgroup) if t.cgroup is not None else None
    if uid is None:
        return None
    p = ctx.pods_by_uid.get(uid)
    cname = next((c.name for c in p.containers if c.id and c.id in t.cgroup), None) if p and t.cgroup else None
    return p, cname, uid


def theirs(home: tuple[Pod | None, str | None, str | None]) -> str:
    """Another pod's task as words: namespace/pod[/container], or the pod uid its cgroup names."""
    p, cname, uid = home
    return who(p, cname) if p is not None else f"pod {uid}"


def outsiders(ctx: Context) -> Iterator[tuple[Task, list[str]]]:
    """Every task outside the pod that owns the exclusive CPU it last ran on, with the evidence that makes
    it an intruder (empty: a passer-by)."""
    snap, exclusive = ctx.snap, ctx.exclusive
    if snap.all_tasks is None or not exclusive:
        return
    owner_pids = {p.uid: p.pids for p in snap.pods}
    for t in snap.all_tasks:
        if t.kthread or t.last_cpu not in exclusive:
            continue
        if placed(t, ctx.roles[t.last_cpu].owners, owner_pids) is False:
            yield t, harm(ctx, t, whose(ctx, t) is not None)


def harm(ctx: Context, t: Task, pods: bool) -> list[str]:
    """The positive evidence that outsider `t` on an exclusive CPU is an intruder (see the docstring);
    `pods`: it is another pod's task (its affinity is its pod's cpuset, not the system's)."""
    from .jitter import thresholds  # imported here: jitter registers its checks after this module's

    ev = []
    if t.allowed and t.allowed <= ctx.exclusive:
        ev.append(f"/proc/{t.pid}/task/{t.tid}/status: Cpus_allowed_list = {fmt(t.allowed)}, exclusive CPUs only: "
                  "pinned there")
    rates = ctx.rates
    busy = rates.task_busy.get(t.tid) if rates is not None else None
    lim = thresholds().intruder_pct
    if rates is not None and busy is not None and busy * 100 > lim and rates.task_first_cpu.get(t.tid) == t.last_cpu:
        ev.append(f"/proc/{t.pid}/task/{t.tid}/stat: used {busy * 100:.0f} % of a CPU over {rates.dt:.1f} s, on "
                  f"exclusive CPU {t.last_cpu} at both ends (threshold {lim:g} %)")
    allowed = ctx.snap.init_allowed
    if not pods and allowed is not None and not allowed & ctx.exclusive:
        ev.append(f"/proc/1/status: Cpus_allowed_list = {fmt(allowed)}: the system is confined away from "
                  "exclusive CPUs, so this task's affinity was widened to reach it")
    return ev


def identity(ctx: Context, t: Task, home) -> str:
    """The evidence line that says whose task outsider `t` is."""
    if home is None:
        return f"/proc/{t.pid}/cgroup: {t.cgroup} (outside that pod); not a kernel thread"
    if t.pid not in ctx.pid_home:  # its cgroup was read
        return f"/proc/{t.pid}/cgroup: {t.cgroup}: {theirs(home)}'s, not the owning pod's; not a kernel thread"
    p, cname, _ = home
    c = next((c for c in p.containers if c.name == cname and t.pid in c.pids), None) if cname else None
    if c is not None and c.cgroup_path:
        return f"{c.cgroup_path}/cgroup.procs holds pid {t.pid}: {theirs(home)}'s, not the owning pod's; not a kernel thread"
    return (f"a cgroup.procs under {p.cgroup_path or 'its pod cgroup'} holds pid {t.pid}: {theirs(home)}'s (its sandbox, "
            "or a process of no container), not the owning pod's; not a kernel thread")


@check({"INTRUDER_TASK": ("critical", "a task outside the owning pod is on an exclusive CPU, on positive evidence: pinned to exclusive CPUs, a measured share of one, or (outside every pod) on a confined node",
                          "Pin system services away from exclusive CPUs (systemd CPUAffinity=, the reserved set), or move the process; kubelet does not confine non-pod processes. Another pod's task: its container's cpuset (STATE_CGROUP_DRIFT says when it is not kubelet's).")},
       needs="ga")
def intruder_task(ctx):
    for t, ev in outsiders(ctx):
        if not ev:
            continue  # a passer-by: SYSTEM_NOT_CONFINED lists it
        o = ctx.roles[t.last_cpu].owners[0]
        p = ctx.pods_by_uid.get(o.pod_uid)
        home = whose(ctx, t)
        of = f" of {theirs(home)}" if home is not None else ""
        yield finding("INTRUDER_TASK", f"{t.comm} (pid {t.pid}, tid {t.tid}){of} last ran on CPU {t.last_cpu}, exclusive to "
                      f"{who(p, o.container) if p else o.pod_uid}",
                      [f"/proc/{t.pid}/task/{t.tid}/stat: processor = {t.last_cpu}, state {t.state}",
                       identity(ctx, t, home), *ev,
                       "every task's last CPU is scanned at the slow cadence (each 10th tick live; each sample in snapshot/check)"],
                      [t.last_cpu], p, o.container)
