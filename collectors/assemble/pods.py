"""Assembly stage: pods and containers from the cgroup directories, named by the pod log layout and
joined with kubelet's assignment (cpu_manager_state)."""
from __future__ import annotations

from ..errors import Problem
from ..frames import Frame
from ..model import Container, Pod
from ..parse.cgroup import (conmon_id_of, container_id_of, parse_cgroup_dir, parse_numa_stat, parse_procs,
                            pod_uid_of, qos_of)
from ..parse.podlogs import parse_pod_logs
from .tasks import tid_of

CG = "/sys/fs/cgroup"


def pod_logs(tick: Frame, names: Frame | None, kubelet=None):
    lf = tick if "n" in tick.letters or names is None else names
    if "logs" not in lf.cache:
        lf.cache["logs"] = parse_pod_logs(lf.dirs, kubelet.pod_logs_dir if kubelet else "/var/log/pods",
                                          kubelet.root_dir if kubelet else "/var/lib/kubelet")
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
                 "problems", "focus")

    def __init__(self, files, tick_files, cgv, base, dirset, logs, state, by_pid, problems, focus=""):
        self.files, self.tick_files, self.cgv, self.base, self.dirset = files, tick_files, cgv, base, dirset
        self.focus = focus
        self.logs, self.by_pid, self.problems = logs, by_pid, problems
        self.entries = state.entries if state else {}
        self.v1_by_id = self.entries.get("", {}) if state and state.version == 1 else {}

    def cgfiles(self, path: str):
        cpu_path = f"{CG}/cpu{path[len(self.base):]}" if self.cgv == 1 else None
        return parse_cgroup_dir(self.files, path, self.cgv or 2, self.problems, cpu_path)


def _is_pause(procs, by_pid) -> bool:
    """The pod sandbox: its one process is the pause binary (containerd, CRI-O, Docker all run it)."""
    ts = [t for pid in procs for t in by_pid.get(pid, ())]
    return bool(ts) and all(t.comm == "pause" for t in ts)


def _pod(x: _Ctx, uid: str, pdir: str, leaves: list[str]) -> Pod:
    """One pod: each leaf below its cgroup is joined to a name from every source the node has (the
    /var/log/containers link names by container id, the pod log dirs and kubelet's pods dir by pod uid, a
    pre-1.18 checkpoint by container id); the sandbox and CRI-O's conmon are the pod's, not containers."""
    files, logs, entries, by_pid = x.files, x.logs, x.entries, x.by_pid
    ns, pname = logs.pods.get(uid, (None, None))
    sources = ["cgroup"] + [n for n, m in (("pod-logs", logs.pods), ("kubelet-pods", logs.kubelet)) if uid in m]
    pod_pids = set(parse_procs(files.get(f"{pdir}/cgroup.procs")))
    found = []  # (leaf path, id, runtime, name from the link names)
    for leaf in sorted(leaves):
        lname = leaf.rpartition("/")[2]
        path = f"{leaf}/container" if f"{leaf}/container" in x.dirset else leaf
        if conmon_id_of(lname):
            pod_pids.update(parse_procs(files.get(f"{path}/cgroup.procs")))
            continue
        cid, runtime = container_id_of(lname)
        if cid is None:
            continue
        ident = logs.ids.get(cid)
        if ident is not None:
            if ns is None:
                ns, pname = ident[0], ident[1]
            if "container-logs" not in sources:
                sources.append("container-logs")
        found.append((path, cid, runtime, ident[2] if ident else None))
    by_id = any(n for _, _, _, n in found)  # this pod's containers are named by id: the rest is the sandbox
    known = list(dict.fromkeys([*logs.containers.get(uid, ()), *logs.kubelet.get(uid, ())]))
    rest = []
    sandboxes = 0
    containers: list[Container] = []
    named = set()
    for path, cid, runtime, cname in found:
        procs = parse_procs(files.get(f"{path}/cgroup.procs"))  # v1: in the cpuset hierarchy too
        pod_pids.update(procs)
        if cname is None and cid not in x.v1_by_id and (by_id or _is_pause(procs, by_pid)):
            sandboxes += 1
            continue  # the pod sandbox (pause): it has no log and no name
        if cname is None and cid not in x.v1_by_id:
            rest.append((path, cid, runtime, procs))
            continue
        containers.append(_container(x, uid, path, cid, runtime, cname, procs))
        if cname:
            named.add(cname)
    # leaves no link names: with the sandbox found, one name left and one leaf left are a match;
    # otherwise say why, and do not guess
    left = [n for n in known if n not in named]
    for path, cid, runtime, procs in rest:
        if len(rest) == 1 and len(left) == 1 and sandboxes == 1:
            containers.append(_container(x, uid, path, cid, runtime, left[0], procs))
            named.add(left[0])
            continue
        why = ("no /var/log/containers link names container " + cid[:12]
               + (f"; the pod has {', '.join(left)}" if left else "; no source names the pod's containers"))
        containers.append(_container(x, uid, path, cid, runtime, None, procs)._replace(unresolved=why))
    for cname, cs in sorted(entries.get(uid, {}).items()):
        if cname not in named:  # e.g. a finished init container: kubelet keeps its entry
            containers.append(Container(cname, None, uid, None, None, cs))
    if uid in entries:
        sources.append("state")
    # the pod-level cgroup: parsed when this tick read it (cgroup detail), not from carried frames
    tf = x.tick_files
    pod_cg = x.cgfiles(pdir) if (f"{pdir}/cpuset.cpus" in tf or f"{pdir}/cpuset.effective_cpus" in tf) else None
    if ns is None:
        x.problems.append(Problem(pdir, f"pod {uid} has no log directory and no /var/log/containers link: "
                                        "its name is unknown"))
    return Pod(uid, ns, pname, qos_of(pdir), pdir, tuple(containers), pod_cg, frozenset(pod_pids), tuple(sources))


def _container(x: _Ctx, uid: str, path: str, cid: str, runtime, cname, procs) -> Container:
    assigned = x.entries.get(uid, {}).get(cname) if cname else None
    if assigned is None and cid in x.v1_by_id:
        assigned = x.v1_by_id[cid]
    by_pid = x.by_pid
    ctasks = tuple(sorted((t for pid in procs for t in by_pid.get(pid, ())), key=tid_of)) if by_pid and procs else ()
    numa = None
    if x.focus and cid.startswith(x.focus):
        mp = f"{CG}/memory{path[len(x.base):]}/memory.numa_stat" if x.cgv == 1 else f"{path}/memory.numa_stat"
        numa = parse_numa_stat(x.tick_files.get(mp), x.cgv or 2)
    return Container(cname, cid, uid, path, x.cgfiles(path), assigned, ctasks, procs, runtime, None, numa)


def pods_stage(files: dict, tick: Frame, cgv: int | None, base: str, cg_dirs: list[str], logs, state,
               by_pid: dict, problems: list) -> tuple[Pod, ...]:
    x = _Ctx(files, tick.files, cgv, base, set(cg_dirs), logs, state, by_pid, problems,
             tick.request.partition(" ")[2].strip())
    pods: list[Pod] = []
    seen_uids = set()
    for uid, (pdir, leaves) in sorted(pod_dirs(cg_dirs).items()):
        seen_uids.add(uid)
        pods.append(_pod(x, uid, pdir, leaves))
    for uid, ctrs in sorted(x.entries.items()):
        if uid == "" or uid in seen_uids:
            continue
        ns, pname = logs.pods.get(uid, (None, None))
        sources = tuple(n for n, m in (("pod-logs", logs.pods), ("kubelet-pods", logs.kubelet)) if uid in m)
        pods.append(Pod(uid, ns, pname, None, None,
                        tuple(Container(n, None, uid, None, None, cs) for n, cs in sorted(ctrs.items())),
                        sources=(*sources, "state")))
    return tuple(pods)
