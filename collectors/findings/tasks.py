"""Tasks on exclusive CPUs that do not belong there.

Never flagged: kernel threads (per-CPU kworker/N, ksoftirqd/N, migration/N, cpuhp/N ...), the pod's own
tasks (its sandbox included)."""
from __future__ import annotations

from .base import check, finding, who


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
        if any(t.pid in owner_pids.get(o.pod_uid, ()) for o in r.owners):
            continue
        o = r.owners[0]
        p = ctx.pods_by_uid.get(o.pod_uid)
        yield finding("INTRUDER_TASK", f"{t.comm} (pid {t.pid}, tid {t.tid}) last ran on CPU {t.last_cpu}, exclusive to "
                      f"{who(p, o.container) if p else o.pod_uid}",
                      [f"/proc/{t.pid}/task/{t.tid}/stat: processor = {t.last_cpu}, state {t.state}",
                       "not in any cgroup.procs of that pod; not a kernel thread",
                       "every task's last CPU is scanned at the slow cadence (each 10th tick live; each sample in snapshot/check)"],
                      [t.last_cpu], p, o.container)
