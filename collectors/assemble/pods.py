"""Assembly stage: pods and containers from the cgroup directories, named by the pod log layout and
joined with kubelet's assignment (cpu_manager_state)."""
from __future__ import annotations

from ..errors import Problem
from ..frames import Frame
from ..model import Container, Pod
from ..parse.cgroup import container_id_of, parse_cgroup_dir, parse_procs, pod_uid_of, qos_of
from ..parse.podlogs import parse_pod_logs
from .tasks import tid_of

CG = "/sys/fs/cgroup"


def pod_logs(tick: Frame, names: Frame | None):
    lf = tick if "n" in tick.letters or names is None else names
    if "logs" not in lf.cache:
        lf.cache["logs"] = parse_pod_logs(lf.dirs)
    return lf.cache["logs"]


def pod_dirs(cg_dirs: list[str]) -> dict[str, tuple[str, list[str]]]:
    """Pods from cgroup dirs: a pod dir's name holds the uid; a leaf is a dir right below one."""
    pods_cg: dict[str, tuple[str, list[str]]] = {}
    for d in cg_dirs:
        parent, _, name = d.rpartition("/")
        uid = pod_uid_of(name)
        pname = parent.rpartition("/")[2]
        if uid and pod_uid_of(pname) is None:
            pods_cg.setdefault(uid, (d, []))
        elif uid is None and name != "container":
            puid = pod_uid_of(pname)
            if puid:
                pods_cg.setdefault(puid, (parent, []))[1].append(d)
    return pods_cg


class _Ctx:
    """What every pod of one tick is assembled from."""

    __slots__ = ("files", "tick_files", "cgv", "base", "dirset", "logs", "entries", "v1_by_id", "by_pid",
                 "problems")

    def __init__(self, files, tick_files, cgv, base, dirset, logs, state, by_pid, problems):
        self.files, self.tick_files, self.cgv, self.base, self.dirset = files, tick_files, cgv, base, dirset
        self.logs, self.by_pid, self.problems = logs, by_pid, problems
        self.entries = state.entries if state else {}
        self.v1_by_id = self.entries.get("", {}) if state and state.version == 1 else {}

    def cgfiles(self, path: str):
        cpu_path = f"{CG}/cpu{path[len(self.base):]}" if self.cgv == 1 else None
        return parse_cgroup_dir(self.files, path, self.cgv or 2, self.problems, cpu_path)


def _pod(x: _Ctx, uid: str, pdir: str, leaves: list[str]) -> Pod:
    files, logs, entries, by_pid = x.files, x.logs, x.entries, x.by_pid
    ns, pname = logs.pods.get(uid, (None, None))
    has_logs = uid in logs.pods
    if not has_logs:
        x.problems.append(Problem(pdir, f"pod {uid} has no log directory: names unknown"))
    containers: list[Container] = []
    named = set()
    pod_pids = set(parse_procs(files.get(f"{pdir}/cgroup.procs")))
    for leaf in sorted(leaves):
        cid, runtime = container_id_of(leaf.rpartition("/")[2])
        if cid is None:
            continue
        path = f"{leaf}/container" if f"{leaf}/container" in x.dirset else leaf
        ident = logs.ids.get(cid)
        if ident is None and has_logs:
            pod_pids.update(parse_procs(files.get(f"{path}/cgroup.procs")))
            continue  # the pod sandbox (pause): it has no log
        cname = ident[2] if ident else None
        cgf = x.cgfiles(path)
        assigned = entries.get(uid, {}).get(cname) if cname else None
        if assigned is None and cid in x.v1_by_id:
            assigned = x.v1_by_id[cid]
        procs = parse_procs(files.get(f"{path}/cgroup.procs"))  # v1: in the cpuset hierarchy too
        ctasks = tuple(sorted((t for pid in procs for t in by_pid.get(pid, ())), key=tid_of)) if by_pid and procs else ()
        containers.append(Container(cname, cid, uid, path, cgf, assigned, ctasks, procs, runtime))
        pod_pids.update(procs)
        if cname:
            named.add(cname)
    for cname, cs in sorted(entries.get(uid, {}).items()):
        if cname not in named:  # e.g. a finished init container: kubelet keeps its entry
            containers.append(Container(cname, None, uid, None, None, cs))
    # the pod-level cgroup: parsed when this tick read it (cgroup detail), not from carried frames
    tf = x.tick_files
    pod_cg = x.cgfiles(pdir) if (f"{pdir}/cpuset.cpus" in tf or f"{pdir}/cpuset.effective_cpus" in tf) else None
    return Pod(uid, ns, pname, qos_of(pdir), pdir, tuple(containers), pod_cg, frozenset(pod_pids))


def pods_stage(files: dict, tick: Frame, cgv: int | None, base: str, cg_dirs: list[str], logs, state,
               by_pid: dict, problems: list) -> tuple[Pod, ...]:
    x = _Ctx(files, tick.files, cgv, base, set(cg_dirs), logs, state, by_pid, problems)
    pods: list[Pod] = []
    seen_uids = set()
    for uid, (pdir, leaves) in sorted(pod_dirs(cg_dirs).items()):
        seen_uids.add(uid)
        pods.append(_pod(x, uid, pdir, leaves))
    for uid, ctrs in sorted(x.entries.items()):
        if uid == "" or uid in seen_uids:
            continue
        ns, pname = logs.pods.get(uid, (None, None))
        pods.append(Pod(uid, ns, pname, None, None,
                        tuple(Container(n, None, uid, None, None, cs) for n, cs in sorted(ctrs.items()))))
    return tuple(pods)
