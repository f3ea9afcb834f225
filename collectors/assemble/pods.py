"""Assembly stage: pods and containers from the cgroup directories, named by the pod log layout and
joined with kubelet's assignment (cpu_manager_state).

A `PodsStage` lives as long as the node's connection: each cgroup directory's parsed files and each
container's task list are kept between ticks and re-built only when their inputs changed (the counters
in cpu.stat change every tick, so only they are re-read then).
"""
from __future__ import annotations

from ..errors import Problem
from ..frames import Frame
from ..model import CgroupFiles, Container, Pod, replaced
from ..parse.cgroup import (V1_CPU_FILES, V1_CPUSET_FILES, V2_FILES, conmon_id_of, container_id_of, parse_cgroup_dir,
                            parse_numa_stat, parse_procs, pod_uid_of, qos_of, refresh_counters)
from ..parse.podlogs import parse_pod_logs
from .tasks import tid_of

CG = "/sys/fs/cgroup"


def pod_logs(lf: Frame, kubelet=None):
    """The pod log layout listed by `lf` (the last frame that asked for names: "n")."""
    return parse_pod_logs(lf.dirs, kubelet.pod_logs_dir if kubelet else "/var/log/pods",
                          kubelet.root_dir if kubelet else "/var/lib/kubelet")


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


def _file_paths(path: str, version: int, cpu_path: str | None) -> tuple[str, ...]:
    """The files parse_cgroup_dir reads for one directory, counters last (cpu.stat, then v2 cpu.pressure)."""
    if version == 2:
        return tuple(f"{path}/{f}" for f in V2_FILES)
    return (*(f"{path}/{f}" for f in V1_CPUSET_FILES), *(f"{cpu_path or path}/{f}" for f in V1_CPU_FILES))


class CgroupReader:
    """Each cgroup directory's CgroupFiles, kept from one tick to the next: re-parsed when its files'
    texts changed; when only the counters changed (cpu.stat, cpu.pressure) only those are re-read.
    A container's cpu.pressure is stamped here with the uptime of the frame that read it (`pressure_at`:
    it comes at its own cadence), so a directory whose texts and stamp held is the very same object.
    Directories not read in a tick are forgotten (`next_tick()`)."""

    def __init__(self) -> None:
        self._last: dict = {}
        self._now: dict = {}

    def next_tick(self) -> None:
        self._last, self._now = self._now, {}

    def read(self, files: dict, path: str, version: int, problems: list, cpu_path: str | None = None,
             pressure_at: float | None = None) -> CgroupFiles:
        key = (path, version, cpu_path)
        ent = self._now.get(key) or self._last.get(key)
        paths = ent[0] if ent is not None else _file_paths(path, version, cpu_path)
        texts = tuple(map(files.get, paths))
        nfix = 5 if version == 2 else 6  # the files before the counters
        if ent is not None and texts == ent[1] and pressure_at == ent[4]:
            cg, probs = ent[2], ent[3]
        elif ent is not None and texts[:nfix] == ent[1][:nfix] and _same_presence(texts, ent[1], nfix):
            cg = refresh_counters(ent[2], texts[nfix], texts[6] if version == 2 else None, pressure_at)
            probs = ent[3]
        else:
            plist: list[Problem] = []
            cg, probs = parse_cgroup_dir(files, path, version, plist, cpu_path), tuple(plist)
            if pressure_at is not None and cg.pressure_some_total_us is not None:
                cg = cg._replace(pressure_at=pressure_at)
        self._now[key] = (paths, texts, cg, probs, pressure_at)
        problems.extend(probs)
        return cg

    def recount(self, files: dict, path: str, version: int, cpu_path: str | None = None,
                pressure_at: float | None = None) -> CgroupFiles | None:
        """The directory's last CgroupFiles with its counters brought up to date, for a caller that knows
        its other texts held (the pod's reuse key compared them); None when the directory is not known."""
        key = (path, version, cpu_path)
        ent = self._now.get(key) or self._last.get(key)
        if ent is None:
            return None
        paths, texts, cg, probs, at = ent
        nfix = 5 if version == 2 else 6
        counters = tuple(map(files.get, paths[nfix:]))
        if counters != texts[nfix:] or pressure_at != at:
            cg = refresh_counters(cg, counters[0], counters[1] if version == 2 else None, pressure_at)
            texts = (*texts[:nfix], *counters)
        self._now[key] = (paths, texts, cg, probs, pressure_at)
        return cg


def _same_presence(a: tuple, b: tuple, start: int) -> bool:
    return all((x is None) == (y is None) for x, y in zip(a[start:], b[start:]))


class _Ctx:
    """What every pod of one tick is assembled from."""

    __slots__ = ("stage", "files", "tick_files", "cgv", "base", "dirset", "logs", "entries", "v1_by_id",
                 "by_pid", "tasks", "problems", "focus", "frames", "uptime_of")

    def __init__(self, stage, files, tick_files, cgv, base, dirset, logs, state, tasks, problems, focus="",
                 frames=(), uptime_of=None):
        self.stage, self.files, self.tick_files, self.cgv, self.base = stage, files, tick_files, cgv, base
        self.frames, self.uptime_of = frames, uptime_of
        self.dirset, self.focus, self.tasks = dirset, focus, tasks
        self.logs, self.by_pid, self.problems = logs, tasks[0], problems
        self.entries = state.entries if state else {}
        self.v1_by_id = self.entries.get("", {}) if state and state.version == 1 else {}

    def cgfiles(self, path: str, problems: list | None = None, container: bool = False):
        """A directory's CgroupFiles; a container's with its cpu.pressure stamped (pressure_at)."""
        cpu_path = f"{CG}/cpu{path[len(self.base):]}" if self.cgv == 1 else None
        return self.stage.cgroups.read(self.files, path, self.cgv or 2,
                                       self.problems if problems is None else problems, cpu_path,
                                       self.pressure_at(path) if container else None)

    def recount(self, path: str, scratch: list):
        """A container's CgroupFiles when only its counters may have moved (see CgroupReader.recount)."""
        cpu_path = f"{CG}/cpu{path[len(self.base):]}" if self.cgv == 1 else None
        cg = self.stage.cgroups.recount(self.files, path, self.cgv or 2, cpu_path, self.pressure_at(path))
        return cg if cg is not None else self.cgfiles(path, scratch, container=True)

    def pressure_at(self, path: str) -> float | None:
        """The node uptime of the newest frame that read the directory's cpu.pressure (v2), else None."""
        if self.cgv != 2 or self.uptime_of is None:
            return None
        f = path + "/cpu.pressure"
        for fr in self.frames:  # the tick's frames that read some cpu.pressure, newest first
            if f in fr.files:
                return self.uptime_of(fr)
        return None


def _key_paths(x: _Ctx, pdir: str, leaves: tuple[str, ...]) -> tuple:
    """The paths `_pod_key` looks up for one pod under this layout: (the dirset it holds for, cgroup version,
    base, which leaves have a "container" dir, the files compared by text, the counters (compared by
    presence only))."""
    version = x.cgv or 2
    nfix = 5 if version == 2 else 6
    inners = tuple(f"{leaf}/container" in x.dirset for leaf in leaves)
    fixed: list[str] = [f"{pdir}/cgroup.procs"]
    counters: list[str] = []
    for leaf, inner in zip(leaves, inners):
        path = f"{leaf}/container" if inner else leaf
        paths = _file_paths(path, version, f"{CG}/cpu{path[len(x.base):]}" if x.cgv == 1 else None)
        fixed += [f"{path}/cgroup.procs", *paths[:nfix]]
        counters += paths[nfix:]
    return x.dirset, x.cgv, x.base, inners, tuple(fixed), tuple(counters)


def _pod_key(x: _Ctx, uid: str, pdir: str, leaves: list[str]) -> tuple:
    """Everything `_pod` reads of the tick but the counters (cpu.stat, cpu.pressure) and the pod-level
    cgroup: the texts of the pod's cgroup.procs and its containers' cgroup files, which leaves have a
    "container" dir, kubelet's assignment. The log layout and the tasks are compared apart (by identity and
    generation). While the key holds, the pod is the last one with its counters brought up to date and its
    pod-level cgroup as this tick read it (`_pod_level`: read on cgroup-detail ticks only, so it came and
    went every 5th tick and every pod was assembled anew twice in 5 ticks)."""
    get = x.files.get
    lt = tuple(leaves)
    kp = x.stage.key_paths
    ent = kp.get((pdir, lt))
    if ent is None or ent[0] is not x.dirset or ent[1] != x.cgv or ent[2] != x.base:
        if kp and next(iter(kp.values()))[0] is not x.dirset:
            kp.clear()  # a new layout: the pods of the old one go
        ent = kp[(pdir, lt)] = _key_paths(x, pdir, lt)
    return (pdir, lt, x.cgv, x.base, x.entries.get(uid), x.v1_by_id or None, ent[3], tuple(map(get, ent[4])),
            tuple([get(q) is None for q in ent[5]]))


def _pod_level(x: _Ctx, pdir: str, problems: list | None = None):
    """The pod-level cgroup's files: parsed when this tick read it (cgroup detail), not from carried frames."""
    tf = x.tick_files
    return x.cgfiles(pdir, problems) if (f"{pdir}/cpuset.cpus" in tf or f"{pdir}/cpuset.effective_cpus" in tf) else None


def _counters_moved(x: _Ctx, pod: Pod, pod_cg) -> Pod:
    """A pod whose inputs but its counters held: its containers' CgroupFiles re-read through the
    CgroupReader (the counters only), the rest shared with the last tick's pod, its pod-level cgroup
    `pod_cg` (this tick's). The problems are the pod's kept ones (the reader's are the same while the texts
    but the counters hold)."""
    scratch: list[Problem] = []
    ctrs = []
    for c in pod.containers:
        cg = x.recount(c.cgroup_path, scratch) if c.cgroup is not None and c.cgroup_path else c.cgroup
        ctrs.append(c if cg is c.cgroup else replaced(c, cgroup=cg))
    if pod_cg is pod.cgroup and all(a is b for a, b in zip(ctrs, pod.containers)):
        return pod
    return replaced(pod, containers=tuple(ctrs), cgroup=pod_cg)


def _is_pause(procs, by_pid) -> bool:
    """The pod sandbox: its one process is the pause binary (containerd, CRI-O, Docker all run it)."""
    ts = [t for pid in procs for t in by_pid.get(pid, ())]
    return bool(ts) and all(t.comm == "pause" for t in ts)


def _pod(x: _Ctx, uid: str, pdir: str, leaves: list[str]) -> tuple[Pod, int, int]:
    """One pod: each leaf below its cgroup is joined to a name from every source the node has (the
    /var/log/containers link names by container id, the pod log dirs and kubelet's pods dir by pod uid, a
    pre-1.18 checkpoint by container id); the sandbox and CRI-O's conmon are the pod's, not containers.
    -> (the pod, and where in x.problems its pod-level cgroup's problems begin and end)."""
    files, logs, entries = x.files, x.logs, x.entries
    ns, pname = logs.pods.get(uid, (None, None))
    sources = ["cgroup"] + [n for n, m in (("pod-logs", logs.pods), ("kubelet-pods", logs.kubelet)) if uid in m]
    pod_pids = set(parse_procs(files.get(f"{pdir}/cgroup.procs")))
    found, by_link = _leaves(x, leaves, pod_pids)
    if by_link is not None:
        if ns is None:
            ns, pname = by_link
        sources.append("container-logs")
    containers, named, rest, sandboxes = _named_containers(x, uid, found, pod_pids)
    containers += _unnamed_containers(x, uid, rest, named, sandboxes)
    for cname, cs in sorted(entries.get(uid, {}).items()):
        if cname not in named:  # e.g. a finished init container: kubelet keeps its entry
            containers.append(Container(cname, None, uid, None, None, cs))
    if uid in entries:
        sources.append("state")
    n1 = len(x.problems)
    pod_cg = _pod_level(x, pdir)
    n2 = len(x.problems)
    if ns is None:
        x.problems.append(Problem(pdir, f"pod {uid} has no log directory and no /var/log/containers link: "
                                        "its name is unknown"))
    return (Pod(uid, ns, pname, qos_of(pdir), pdir, tuple(containers), pod_cg, frozenset(pod_pids), tuple(sources)),
            n1, n2)


def _leaves(x: _Ctx, leaves: list[str], pod_pids: set) -> tuple[list[tuple], tuple | None]:
    """The pod's container leaves as (path, id, runtime, name from the link names), and the (namespace,
    pod) the first link name gives (None when no link names one); CRI-O's conmon pids go to the pod."""
    found = []
    first = None
    for leaf in sorted(leaves):
        lname = leaf.rpartition("/")[2]
        path = f"{leaf}/container" if f"{leaf}/container" in x.dirset else leaf
        if conmon_id_of(lname):
            pod_pids.update(parse_procs(x.files.get(f"{path}/cgroup.procs")))
            continue
        cid, runtime = container_id_of(lname)
        if cid is None:
            continue
        ident = x.logs.ids.get(cid)
        if ident is not None and first is None:
            first = (ident[0], ident[1])
        found.append((path, cid, runtime, ident[2] if ident else None))
    return found, first


def _named_containers(x: _Ctx, uid: str, found: list[tuple], pod_pids: set):
    """-> (containers a source names, their names, leaves no source names, sandboxes seen)."""
    by_id = any(n for _, _, _, n in found)  # this pod's containers are named by id: the rest is the sandbox
    rest, containers, named = [], [], set()
    sandboxes = 0
    for path, cid, runtime, cname in found:
        procs = parse_procs(x.files.get(f"{path}/cgroup.procs"))  # v1: in the cpuset hierarchy too
        pod_pids.update(procs)
        if cname is None and cid not in x.v1_by_id and (by_id or _is_pause(procs, x.by_pid)):
            sandboxes += 1
            continue  # the pod sandbox (pause): it has no log and no name
        if cname is None and cid not in x.v1_by_id:
            rest.append((path, cid, runtime, procs))
            continue
        containers.append(_container(x, uid, path, cid, runtime, cname, procs))
        if cname:
            named.add(cname)
    return containers, named, rest, sandboxes


def _unnamed_containers(x: _Ctx, uid: str, rest: list[tuple], named: set, sandboxes: int) -> list[Container]:
    """Leaves no link names: with the sandbox found, one name left and one leaf left are a match;
    otherwise say why, and do not guess. Adds the name it matched to `named`."""
    known = list(dict.fromkeys([*x.logs.containers.get(uid, ()), *x.logs.kubelet.get(uid, ())]))
    left = [n for n in known if n not in named]
    out = []
    for path, cid, runtime, procs in rest:
        if len(rest) == 1 and len(left) == 1 and sandboxes == 1:
            out.append(_container(x, uid, path, cid, runtime, left[0], procs))
            named.add(left[0])
            continue
        why = ("no /var/log/containers link names container " + cid[:12]
               + (f"; the pod has {', '.join(left)}" if left else "; no source names the pod's containers"))
        out.append(_container(x, uid, path, cid, runtime, None, procs)._replace(unresolved=why))
    return out


def _container(x: _Ctx, uid: str, path: str, cid: str, runtime, cname, procs) -> Container:
    assigned = x.entries.get(uid, {}).get(cname) if cname else None
    if assigned is None and cid in x.v1_by_id:
        assigned = x.v1_by_id[cid]
    ctasks = x.stage.container_tasks(path, procs, x.tasks)
    numa = None
    if x.focus and cid.startswith(x.focus):
        mp = f"{CG}/memory{path[len(x.base):]}/memory.numa_stat" if x.cgv == 1 else f"{path}/memory.numa_stat"
        numa = parse_numa_stat(x.tick_files.get(mp), x.cgv or 2)
    return Container(cname, cid, uid, path, x.cgfiles(path, container=True), assigned, ctasks, procs, runtime, None,
                     numa)


class PodsStage:
    """Pods of one tick: `run(...)`; what it keeps between ticks is in the CgroupReader and the task lists."""

    def __init__(self) -> None:
        self.cgroups = CgroupReader()
        self._tasks_last: dict = {}
        self._tasks_now: dict = {}
        # uid -> (key, log layout, tasks generation, pod, its problems before and after its pod-level cgroup's)
        self._pods_last: dict = {}
        self._pods_now: dict = {}
        self.pods_built = 0  # pods assembled anew (not reused): what a test counts
        self.key_paths: dict = {}  # (pod dir, leaves) -> _key_paths(...) under the current layout
        self._pressure: dict = {}  # id(frame) -> (frame, does it hold some cpu.pressure)

    def run(self, files: dict, tick: Frame, cgv: int | None, base: str, pods_cg: dict, dirset: set, logs, state,
            tasks, problems: list, carry: tuple[Frame, ...] = (), uptime_of=None) -> tuple[Pod, ...]:
        """`pods_cg`: pod_dirs() of the tick's cgroup dirs; `tasks`: (tasks by pid, their generation);
        `carry`: the older frames carried (oldest first), `uptime_of(frame)`: its node uptime (the stamp of
        the cpu.pressure it read); without it nothing is stamped."""
        self.cgroups.next_tick()
        self._tasks_last, self._tasks_now = self._tasks_now, {}
        x = _Ctx(self, files, tick.files, cgv, base, dirset, logs, state, tasks, problems,
                 tick.request.partition(" ")[2].strip(), self._pressure_frames((tick, *reversed(carry))), uptime_of)
        pods: list[Pod] = []
        seen_uids = set()
        self._pods_last, self._pods_now = self._pods_now, {}
        for uid, (pdir, leaves) in sorted(pods_cg.items()):
            seen_uids.add(uid)
            pods.append(self._pod(x, uid, pdir, leaves))
        for uid, ctrs in sorted(x.entries.items()):
            if uid == "" or uid in seen_uids:
                continue
            ns, pname = logs.pods.get(uid, (None, None))
            sources = tuple(n for n, m in (("pod-logs", logs.pods), ("kubelet-pods", logs.kubelet)) if uid in m)
            pods.append(Pod(uid, ns, pname, None, None,
                            tuple(Container(n, None, uid, None, None, cs) for n, cs in sorted(ctrs.items())),
                            sources=(*sources, "state")))
        return tuple(pods)

    def _pod(self, x: _Ctx, uid: str, pdir: str, leaves: list[str]) -> Pod:
        """One pod: the last tick's (its counters re-read) while its inputs held, else assembled anew. A
        focused container reads its memory.numa_stat: its pods are always assembled anew."""
        key = _pod_key(x, uid, pdir, leaves) if not x.focus else None
        ent = self._pods_last.get(uid)
        if key is not None and ent is not None and ent[0] == key and ent[1] is x.logs and ent[2] == x.tasks[1]:
            before, after = ent[4], ent[5]
            x.problems.extend(before)
            pod = _counters_moved(x, ent[3], _pod_level(x, pdir))
            x.problems.extend(after)
            for c in pod.containers:  # their task lists hold too (same procs, same tasks): keep them
                if c.cgroup_path in self._tasks_last:
                    self._tasks_now[c.cgroup_path] = self._tasks_last[c.cgroup_path]
        else:
            n = len(x.problems)
            pod, n1, n2 = _pod(x, uid, pdir, leaves)
            before, after = tuple(x.problems[n:n1]), tuple(x.problems[n2:])
            self.pods_built += 1
        if key is not None:
            self._pods_now[uid] = (key, x.logs, x.tasks[1], pod, before, after)
        return pod

    def _pressure_frames(self, frames: tuple[Frame, ...]) -> tuple[Frame, ...]:
        """The frames that read some cpu.pressure (cgroup detail, a focused container): each frame's files
        looked through once, not once per container and tick."""
        last, self._pressure = self._pressure, {}
        out = []
        for fr in frames:
            ent = last.get(id(fr))
            if ent is None or ent[0] is not fr:
                ent = (fr, any(p.endswith("/cpu.pressure") for p in fr.files))
            self._pressure[id(fr)] = ent
            if ent[1]:
                out.append(fr)
        return tuple(out)

    def container_tasks(self, path: str, procs: frozenset, tasks) -> tuple:
        """The tasks of a container's processes, sorted by tid: kept while its procs and the tasks hold."""
        by_pid, gen = tasks
        ent = self._tasks_now.get(path) or self._tasks_last.get(path)
        if ent is not None and ent[0] == gen and ent[1] == procs:
            ctasks = ent[2]
        else:
            ctasks = tuple(sorted((t for pid in procs for t in by_pid.get(pid, ())), key=tid_of)) if by_pid and procs else ()
        self._tasks_now[path] = (gen, procs, ctasks)
        return ctasks
