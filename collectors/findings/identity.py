"""What pinscope could not tie to a pod or container, said plainly (never more than info), and the
readiness of the cgroup tree itself: the cpuset controller must reach the pods for any pin to hold.

A critical finding needs positive evidence; where identity is unknown, this is where the reason goes.
"""
from __future__ import annotations

from ..model import Severity
from .base import check, finding, who
from .tasks import placed


@check({"IDENTITY_UNRESOLVED": ("info", "a container, task or state entry could not be tied to a pod or container: no source on the node names it",
                                "Names come from /var/log/containers link names, <podLogsDir>/<ns>_<pod>_<uid>/, kubelet's <root-dir>/pods/ and the cgroup leaf; with --kube the API adds containerStatuses. Check podLogsDir, cgroupRoot and that the probe runs as root.")},
       needs="ga")
def identity_unresolved(ctx):
    snap = ctx.snap
    for p in snap.pods:
        unres = [c for c in p.containers if c.unresolved]
        if unres:
            yield finding("IDENTITY_UNRESOLVED", f"{who(p, None)}: {len(unres)} cgroup leaf(s) not tied to a container name",
                          [f"{c.cgroup_path}: {c.unresolved}" for c in unres[:5]], (), p)
        if p.cgroup_path is None and any(s != "state" for s in p.sources) and "cgroups" not in ctx.unread:
            # (a cgroup directory this user may not list: its pods' cgroups are unknown, READ_PARTIAL says so)
            yield finding("IDENTITY_UNRESOLVED", f"{who(p, None)}: known to {', '.join(s for s in p.sources if s != 'state')}, "
                          "but no pod cgroup was found",
                          [f"cgroupRoot = {snap.kubelet.cgroup_root or '(none)'}", "searched: kubepods[.slice] at the cgroup root, "
                           "below cgroupRoot, and two levels down"], (), p)
    if snap.all_tasks is None or not ctx.exclusive:
        return
    owner_pids = {p.uid: p.pids for p in snap.pods}
    lost = [t for t in snap.all_tasks if not t.kthread and t.last_cpu in ctx.exclusive
            and placed(t, ctx.roles[t.last_cpu].owners, owner_pids) is None]
    if lost:
        yield finding("IDENTITY_UNRESOLVED", f"{len(lost)} task(s) on exclusive CPUs could not be placed: their cgroup is unknown",
                      [f"{t.comm} (pid {t.pid}, tid {t.tid}) on CPU {t.last_cpu}: " + _why_lost(ctx, t) for t in lost[:5]],
                      sorted({t.last_cpu for t in lost}))


def _why_lost(ctx, t) -> str:
    """Why task `t` could not be placed: its cgroup not read, or (its pod known) the CPU's owner's pod unknown."""
    home = ctx.pid_home.get(t.pid)
    if home is not None:  # in a pod's cgroup.procs: the owner is a checkpoint entry no pod was matched to
        return f"in {who(home[0], home[1])}'s cgroup.procs; the owning pod is unknown"
    if t.cgroup is None:
        return f"/proc/{t.pid}/cgroup not read (the process may have exited)"
    return f"in {t.cgroup}; the owning pod is unknown"


@check({"CPUSET_NOT_ENABLED": ("critical", "the cpuset controller does not reach kubepods (cgroup v2 subtree_control, or no v1 cpuset mount): pins are not applied (warning when the policy is none)",
                               "v2: enable it on the way down (echo +cpuset > <parent>/cgroup.subtree_control; with systemd, Delegate=yes for kubelet's slice or a systemd ≥ 244); v1: mount the cpuset hierarchy. Then restart kubelet.")},
       reads=("cgroups",))
def cpuset_not_enabled(ctx):
    snap = ctx.snap
    sev = None if ctx.policy == "static" else Severity.WARNING
    if snap.cgroup_version == 1 and snap.cpuset_files.get("mount") == "no":
        yield finding("CPUSET_NOT_ENABLED", "no cgroup v1 cpuset hierarchy is mounted: kubelet cannot pin CPUs",
                      ["/sys/fs/cgroup/cpuset: absent"], severity=sev)
        return
    for path, text in sorted(snap.cpuset_files.items()):
        if not path.endswith("/cgroup.controllers") or "cpuset" in text.split():
            continue
        k = path.rpartition("/")[0]
        parent = k.rpartition("/")[0]
        yield finding("CPUSET_NOT_ENABLED", f"{k}: the cpuset controller is not enabled for kubepods",
                      [f"{path} = {text.strip() or '(empty)'}",
                       f"{parent}/cgroup.subtree_control = " + (snap.cpuset_files.get(f"{parent}/cgroup.subtree_control", "?").strip() or "(empty)")],
                      severity=sev)
    for path, text in sorted(snap.cpuset_files.items()):
        k = path.rpartition("/")[0]
        if (path.endswith("/cgroup.subtree_control") and "cpuset" not in text.split()
                and "cpuset" in snap.cpuset_files.get(f"{k}/cgroup.controllers", "").split()):
            yield finding("CPUSET_NOT_ENABLED", f"{k}: cpuset is available but not passed down to the pods",
                          [f"{path} = {text.strip() or '(empty)'}"], severity=sev)
