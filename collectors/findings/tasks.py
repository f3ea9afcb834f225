"""Tasks on exclusive CPUs that do not belong there, on positive evidence only.

A task is an outsider when its process's cgroup (/proc/<pid>/cgroup, read in the same scan as its last
CPU) is known and lies outside the pod that owns the CPU. Never flagged: kernel threads (per-CPU
kworker/N, ksoftirqd/N, migration/N, cpuhp/N ...), the pod's own tasks (its sandbox and CRI-O's conmon
included), and a task whose cgroup could not be read (identity.py notes it, at info).

An outsider is a critical INTRUDER_TASK only on positive evidence of harm or of a deliberate placement:
- its allowed CPUs (Cpus_allowed_list) lie inside exclusive CPUs: someone pinned it there;
- it used a measurable share of a CPU over the window while on that exclusive CPU at both ends of it
  (Thresholds.intruder_pct, default 10 %: see jitter.py);
- it runs in another pod's cgroup: its cpuset (kubelet's, or a writer's) lets it there;
- the node is confined (PID 1's Cpus_allowed_list has no exclusive CPU): it reached the CPU only because
  its affinity was widened (taskset, a service's CPUAffinity=).
Any other outsider only last ran there, on a node whose system processes may run anywhere: a passer-by,
listed in the one per-node SYSTEM_NOT_CONFINED warning (cpus.py), never critical. On a real node the
scheduler puts PID 1, shells and daemons on every CPU it may: naming each as an intruder cried wolf.
"""
from __future__ import annotations

from typing import Iterator

from ..model import Task
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
        # sets the containers' cpusets only (seen on kubelet 1.35 and 1.37, cgroup v1). Placed, not unknown.
        return False
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
            yield t, harm(ctx, t)


def harm(ctx: Context, t: Task) -> list[str]:
    """The positive evidence that outsider `t` on an exclusive CPU is an intruder (see the docstring)."""
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
    if t.cgroup is not None and pod_uid_in_path(t.cgroup) is not None:
        ev.append(f"/proc/{t.pid}/cgroup: {t.cgroup}: another pod's, whose cpuset lets it on CPU {t.last_cpu}")
    allowed = ctx.snap.init_allowed
    if allowed is not None and not allowed & ctx.exclusive:
        ev.append(f"/proc/1/status: Cpus_allowed_list = {fmt(allowed)}: the system is confined away from "
                  "exclusive CPUs, so this task's affinity was widened to reach it")
    return ev


@check({"INTRUDER_TASK": ("critical", "a task outside the owning pod is on an exclusive CPU, on positive evidence: pinned to exclusive CPUs, a measured share of one, another pod's, or on a confined node",
                          "Pin system services away from exclusive CPUs (systemd CPUAffinity=, the reserved set), or move the process; kubelet does not confine non-pod processes.")},
       needs="ga")
def intruder_task(ctx):
    for t, ev in outsiders(ctx):
        if not ev:
            continue  # a passer-by: SYSTEM_NOT_CONFINED lists it
        o = ctx.roles[t.last_cpu].owners[0]
        p = ctx.pods_by_uid.get(o.pod_uid)
        yield finding("INTRUDER_TASK", f"{t.comm} (pid {t.pid}, tid {t.tid}) last ran on CPU {t.last_cpu}, exclusive to "
                      f"{who(p, o.container) if p else o.pod_uid}",
                      [f"/proc/{t.pid}/task/{t.tid}/stat: processor = {t.last_cpu}, state {t.state}",
                       f"/proc/{t.pid}/cgroup: {t.cgroup} (outside that pod); not a kernel thread", *ev,
                       "every task's last CPU is scanned at the slow cadence (each 10th tick live; each sample in snapshot/check)"],
                      [t.last_cpu], p, o.container)
