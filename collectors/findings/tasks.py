"""Tasks on exclusive CPUs that do not belong there, on positive evidence only.

A task is an intruder when its process's cgroup (/proc/<pid>/cgroup, read in the same scan as its last
CPU) is known and lies outside the pod that owns the CPU. Never flagged: kernel threads (per-CPU
kworker/N, ksoftirqd/N, migration/N, cpuhp/N ...), the pod's own tasks (its sandbox and CRI-O's conmon
included), and a task whose cgroup could not be read (identity.py notes it, at info)."""
from __future__ import annotations

from ..parse.cgroup import pod_uid_in_path
from .base import check, finding, who


def placed(t, owners, owner_pids) -> bool | None:
    """Is task `t` (on a CPU these owners hold) their own? True / False (positive evidence) / None
    (unknown: its cgroup was not read, or the owner's pod is unknown and the task is in some pod)."""
    if any(t.pid in owner_pids.get(o.pod_uid, ()) for o in owners):
        return True
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


@check({"INTRUDER_TASK": ("critical", "a task outside the owning container last ran on an exclusive CPU",
                          "Pin system services away from exclusive CPUs (systemd CPUAffinity=, the reserved set), or move the process; kubelet does not confine non-pod processes.")},
       needs="ga")
def intruder_task(ctx):
    snap, exclusive = ctx.snap, ctx.exclusive
    if snap.all_tasks is None or not exclusive:
        return
    owner_pids = {p.uid: p.pids for p in snap.pods}
    for t in snap.all_tasks:
        if t.kthread or t.last_cpu not in exclusive:
            continue
        r = ctx.roles[t.last_cpu]
        if placed(t, r.owners, owner_pids) is not False:
            continue
        o = r.owners[0]
        p = ctx.pods_by_uid.get(o.pod_uid)
        yield finding("INTRUDER_TASK", f"{t.comm} (pid {t.pid}, tid {t.tid}) last ran on CPU {t.last_cpu}, exclusive to "
                      f"{who(p, o.container) if p else o.pod_uid}",
                      [f"/proc/{t.pid}/task/{t.tid}/stat: processor = {t.last_cpu}, state {t.state}",
                       f"/proc/{t.pid}/cgroup: {t.cgroup} (outside that pod); not a kernel thread",
                       "every task's last CPU is scanned at the slow cadence (each 10th tick live; each sample in snapshot/check)"],
                      [t.last_cpu], p, o.container)
