"""Assemble one NodeSnapshot from a static frame and a tick frame: pods, containers, roles, owners, QoS.

Truth rules:
- kubelet's view (cpu_manager_state) and the kernel's (cpuset effective) are both kept per container;
  roles come from kubelet's view when the state file is readable, else they are inferred from the
  cgroups and the snapshot says so (`roles_from`, and a problem).
- an entry of one pod that overlaps another entry of the same pod is legit (init containers' CPUs are
  reused by app containers: k/k policy_static.go cpusToReuse); every owner is listed.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache

from .errors import Problem
from .frames import Frame
from .model import Container, CpuRole, NodeSnapshot, Owner, Pod, Task
from .parse.cgroup import container_id_of, driver_of, parse_cgroup_dir, parse_procs, pod_uid_of, qos_of
from .parse.kubelet import parse_cpu_manager_state, parse_kubelet_config, parse_memory_manager_state
from .parse.podlogs import parse_pod_logs
from .parse.procfs import (build_irqs, make_task, parse_numastat, parse_proc_stat, parse_task_sched,
                           parse_task_stat, parse_task_status, parse_uptime)
from .parse.topology import parse_topology

_TASK_FILES = frozenset(("stat", "status", "sched"))
CG = "/sys/fs/cgroup"


def _frame_tasks(fr: Frame):
    """The tasks of one frame (files under /proc/<pid>/task/<tid>/), stamped with its uptime."""
    at = parse_uptime(fr.files.get("/proc/uptime"))
    parts_by_tid: dict[int, dict] = {}
    for p, text in fr.files.items():
        if not p.startswith("/proc/"):
            continue
        parts = p.split("/")  # ['', 'proc', pid, 'task', tid, name]
        if len(parts) != 6 or parts[3] != "task" or parts[5] not in _TASK_FILES:
            continue
        try:
            tid = int(parts[4])
        except ValueError:
            continue
        d = parts_by_tid.get(tid)
        if d is None:
            d = parts_by_tid[tid] = {"pid": int(parts[2]) if parts[2].isdigit() else 0}
        d[parts[5]] = text
    out: dict[int, Task] = {}
    probs: list[Problem] = []
    missing = 0
    for tid, d in parts_by_tid.items():
        st = parse_task_stat(d.get("stat", ""))
        if st is None:
            if "stat" in d:
                probs.append(Problem(f"/proc/{d['pid']}/task/{tid}/stat", "not a stat line"))
            continue
        if "sched" not in d and f"/proc/{d['pid']}/task/{tid}/sched" in fr.unreadable:
            missing += 1
        out[tid] = make_task(tid, d["pid"], st, parse_task_status(d["status"]) if "status" in d else None,
                             parse_task_sched(d["sched"]) if "sched" in d else None, at)
    return out, tuple(probs), missing


def _tid(t: Task) -> int:
    return t.tid


def _has_tasks(request: str) -> bool:
    """Did this frame read tasks: letters t/T/a, or a focused container (a second word)?"""
    letters, _, focus = request.partition(" ")
    return bool(focus.strip()) or any(c in letters for c in "tTa")


@lru_cache(maxsize=1024)  # one text per node of a fleet; it changes when pods come and go
def _state_cached(text: str, source: str):
    """The state file changes when pods come and go, not every tick: parse each text once."""
    probs: list[Problem] = []
    return parse_cpu_manager_state(text, source, probs), tuple(probs)


def _dropin_dir(argv: list[str] | None) -> str | None:
    if not argv:
        return None
    for i, a in enumerate(argv):
        if a.startswith("--config-dir="):
            return a.split("=", 1)[1]
        if a == "--config-dir" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _unreadable(problems: list, frame_unreadable: set, path: str, what: str) -> None:
    if path in frame_unreadable:
        problems.append(Problem(path, f"{what} exists but is not readable (root-only: run with --sudo)"))


def assemble(static: Frame, tick: Frame, target: str = "node", names: Frame | None = None,
             carry: tuple[Frame, ...] = ()) -> NodeSnapshot:
    """`names`: the last frame that listed the pod log layout ("n"), if `tick` did not.
    `carry`: older frames with deeper data (cgroup detail, tasks, IRQs), oldest first; `tick` wins."""
    # dynamic files: deeper frames carried from earlier ticks, then this tick's (the static frame's
    # files are looked up on their own: merging its thousands of topology files every tick is waste)
    if carry:
        ck = ("files", tuple(id(fr) for fr in carry))
        base_files = carry[-1].cache.get(ck)
        if base_files is None:
            base_files = {}
            for fr in carry:
                base_files.update(fr.files)
            carry[-1].cache[ck] = base_files
        files = {**base_files, **tick.files}
    else:
        files = tick.files
    unreadable = static.unreadable | tick.unreadable
    warnings = static.warnings + ([] if tick is static else tick.warnings)
    problems: list[Problem] = [Problem("probe", w) for w in dict.fromkeys(warnings)]
    for p in sorted(static.truncated | tick.truncated):
        problems.append(Problem(p, "file too large: truncated by the probe"))
    for p in sorted(static.nonutf8 | tick.nonutf8):
        problems.append(Problem(p, "not UTF-8: undecodable bytes replaced"))
    if not tick.complete:
        problems.append(Problem("probe", "frame ended early: partial data"))

    # what depends on the static frame only is parsed once per static frame
    if "parts" not in static.cache:
        sprobs: list[Problem] = []
        topo = parse_topology(static.files, sprobs)
        sinfo = static.info
        root_dir = sinfo.get("kubelet-root", "/var/lib/kubelet")
        cfg_path = sinfo.get("kubelet-config") or None
        pid = int(sinfo["kubelet-pid"]) if sinfo.get("kubelet-pid", "").isdigit() else None
        ddir = _dropin_dir(static.argv)
        dropins = [(p, t) for p, t in static.files.items()
                   if ddir and p.startswith(ddir.rstrip("/") + "/") and p.endswith(".conf")]
        if cfg_path:
            _unreadable(sprobs, static.unreadable, cfg_path, "kubelet config")
            if cfg_path not in static.files and cfg_path not in static.unreadable and pid is not None:
                sprobs.append(Problem(cfg_path, "kubelet config named by --config is missing"))
        kubelet = parse_kubelet_config(static.files.get(cfg_path) if cfg_path else None, cfg_path, dropins,
                                       static.argv, sprobs, pid=pid, root_dir=root_dir)
        static.cache["parts"] = (topo, kubelet, tuple(sprobs))
    topo, kubelet, sprobs = static.cache["parts"]
    problems[:0] = sprobs
    nmax = max(topo.possible) if topo.possible else None
    info = {**static.info, **tick.info}
    node = (static.files.get("/proc/sys/kernel/hostname") or "").strip() or target
    root_dir = kubelet.root_dir
    state_file = f"{root_dir.rstrip('/')}/cpu_manager_state"
    state = None
    if state_file in files:
        state, sp = _state_cached(files[state_file], state_file)
        problems.extend(sp)
        state_status = "ok" if state is not None else "invalid"
    else:
        _unreadable(problems, unreadable, state_file, "cpu_manager_state")
        state_status = "unreadable" if state_file in unreadable else "missing"
        if state_status == "missing" and kubelet.cpu_manager_policy == "static":
            problems.append(Problem(state_file, "missing, but the configured policy is static"))
    mm_file = f"{root_dir.rstrip('/')}/memory_manager_state"
    mm_text = static.files.get(mm_file)
    memory_state = parse_memory_manager_state(mm_text, mm_file, problems) if mm_text is not None else None

    # cgroups
    cgv = int(info["cgroup-version"]) if info.get("cgroup-version", "").isdigit() else None
    base = f"{CG}/cpuset" if cgv == 1 else CG
    bpre = base + "/"
    cg_dirs = [d for d in dict.fromkeys(tick.dirs) if d.startswith(bpre)]
    driver = kubelet.cgroup_driver if kubelet.sources.get("cgroup_driver") else driver_of(cg_dirs)
    dirset = set(cg_dirs)
    lf = tick if "n" in tick.letters or names is None else names
    if "logs" not in lf.cache:
        lf.cache["logs"] = parse_pod_logs(lf.dirs)
    logs = lf.cache["logs"]

    # tasks: parsed once per frame (frames are carried for several ticks), newest layer wins; the
    # allowed list (status) comes at a slower cadence than stat/sched and is kept from older layers
    all_tasks = None
    layers = [fr for fr in (*carry, tick) if _has_tasks(fr.request)]
    want_all = any("a" in fr.letters for fr in layers)
    key = tuple(id(fr) for fr in layers)
    merged = layers[-1].cache.get(("merged", key)) if layers else None
    if not layers:
        merged = ({}, (), 0, {}, ())
    if merged is None:
        tasks: dict[int, Task] = {}
        lprobs: list[Problem] = []
        sched_missing = 0
        for fr in layers:
            parsed = fr.cache.get("tasks")
            if parsed is None:
                parsed = fr.cache["tasks"] = _frame_tasks(fr)
            ftasks, fprobs, fmissing = parsed
            lprobs.extend(fprobs)
            sched_missing = max(sched_missing, fmissing)
            for tid, t in ftasks.items():
                old = tasks.get(tid)
                if t.allowed is None and old is not None and old.allowed is not None and old.pid == t.pid:
                    t = t._replace(allowed=old.allowed)
                tasks[tid] = t
        by_pid: dict[int, list[Task]] = {}
        for t in tasks.values():
            by_pid.setdefault(t.pid, []).append(t)
        merged = (tasks, tuple(lprobs), sched_missing, by_pid, tuple(sorted(tasks.values(), key=_tid)))
        if layers:
            layers[-1].cache[("merged", key)] = merged  # the same layers next tick: no work
    tasks, lprobs, sched_missing, by_pid, sorted_tasks = merged
    problems.extend(lprobs)
    if sched_missing:
        problems.append(Problem("/proc/<pid>/task/<tid>/sched",
                                f"missing for {sched_missing} tasks (kernel without CONFIG_SCHED_DEBUG, before 6.15): "
                                "migrations are counted from observed last-CPU changes instead"))
    if want_all:
        all_tasks = sorted_tasks

    # pods from cgroup dirs: a pod dir's name holds the uid; a leaf is a dir right below one
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

    def cgfiles(path: str):
        cpu_path = f"{CG}/cpu{path[len(base):]}" if cgv == 1 else None
        return parse_cgroup_dir(files, path, cgv or 2, problems, cpu_path)

    entries = state.entries if state else {}
    v1_by_id = entries.get("", {}) if state and state.version == 1 else {}
    pods: list[Pod] = []
    seen_uids = set()
    for uid, (pdir, leaves) in sorted(pods_cg.items()):
        seen_uids.add(uid)
        ns, pname = logs.pods.get(uid, (None, None))
        has_logs = uid in logs.pods
        if not has_logs:
            problems.append(Problem(pdir, f"pod {uid} has no log directory: names unknown"))
        containers: list[Container] = []
        named = set()
        pod_pids = set(parse_procs(files.get(f"{pdir}/cgroup.procs")))
        for leaf in sorted(leaves):
            cid, runtime = container_id_of(leaf.rpartition("/")[2])
            if cid is None:
                continue
            path = f"{leaf}/container" if f"{leaf}/container" in dirset else leaf
            ident = logs.ids.get(cid)
            if ident is None and has_logs:
                pod_pids.update(parse_procs(files.get(f"{path}/cgroup.procs")))
                continue  # the pod sandbox (pause): it has no log
            cname = ident[2] if ident else None
            cgf = cgfiles(path)
            assigned = entries.get(uid, {}).get(cname) if cname else None
            if assigned is None and cid in v1_by_id:
                assigned = v1_by_id[cid]
            procs = parse_procs(files.get(f"{path}/cgroup.procs"))  # v1: in the cpuset hierarchy too
            ctasks = tuple(sorted((t for pid in procs for t in by_pid.get(pid, ())), key=_tid)) if by_pid and procs else ()
            containers.append(Container(cname, cid, uid, path, cgf, assigned, ctasks, procs, runtime))
            pod_pids.update(procs)
            if cname:
                named.add(cname)
        for cname, cs in sorted(entries.get(uid, {}).items()):
            if cname not in named:  # e.g. a finished init container: kubelet keeps its entry
                containers.append(Container(cname, None, uid, None, None, cs))
        # the pod-level cgroup: parsed when this tick read it (cgroup detail), not from carried frames
        pod_cg = cgfiles(pdir) if (f"{pdir}/cpuset.cpus" in tick.files or f"{pdir}/cpuset.effective_cpus" in tick.files) else None
        pods.append(Pod(uid, ns, pname, qos_of(pdir), pdir, tuple(containers), pod_cg, frozenset(pod_pids)))
    for uid, ctrs in sorted(entries.items()):
        if uid == "" or uid in seen_uids:
            continue
        ns, pname = logs.pods.get(uid, (None, None))
        pods.append(Pod(uid, ns, pname, None, None,
                        tuple(Container(n, None, uid, None, None, cs) for n, cs in sorted(ctrs.items()))))

    roles, shared, roles_from = _roles(topo, kubelet, state, pods, problems, state_file)
    if (state.policy if state else kubelet.cpu_manager_policy) == "static" and not kubelet.reserved_cpus:
        n = _reserved_count(kubelet)
        problems.append(Problem(kubelet.config_path or "kubelet",
                                "reservedSystemCPUs is not set: kubelet reserves "
                                + (f"{n} CPU{'s' if n != 1 else ''}" if n else "CPUs")
                                + " of its own choosing (whole cores from the lowest-numbered, policy_static.go"
                                " takeByTopology); they are shown as shared"))
    cpu_times = parse_proc_stat(files.get("/proc/stat", ""))
    numastat = {}
    for n in topo.numa_nodes:
        text = files.get(f"/sys/devices/system/node/node{n.id}/numastat")
        if text is not None:
            numastat[n.id] = parse_numastat(text)
    irq_fr = next((fr for fr in (tick, *reversed(carry)) if "i" in fr.letters), None)
    irqs = None
    if irq_fr is not None:
        if "irqs" not in irq_fr.cache:
            irq_fr.cache["irqs"] = build_irqs(irq_fr.files, nmax)
        irqs = irq_fr.cache["irqs"]
    return NodeSnapshot(
        node=node, uptime=parse_uptime(files.get("/proc/uptime")), cgroup_version=cgv, cgroup_driver=driver,
        topology=topo, kubelet=kubelet, state=state, state_file=state_file if (state_file in files or state_file in unreadable) else None,
        memory_state=memory_state, pods=tuple(pods), roles=roles, shared_pool=shared, cpu_times=cpu_times,
        numastat=numastat, irqs=irqs, all_tasks=all_tasks, roles_from=roles_from, problems=tuple(problems),
        request=tick.request, state_status=state_status, init_allowed=_init_allowed(static.files),
    )


def _roles(topo, kubelet, state, pods, problems, state_file):
    online = topo.online
    owners: dict[int, list[Owner]] = {}
    names = {p.uid: (p.namespace, p.name) for p in pods}
    shared = None
    roles_from = "state"
    policy = state.policy if state else kubelet.cpu_manager_policy
    if state is not None and policy == "static":
        shared = state.default_cpuset
        for uid, ctrs in state.entries.items():
            for cname, cs in ctrs.items():
                if uid == "":  # v1 keys by container id: find its pod through the cgroups
                    uid2, ns, pn, cn = _by_id(pods, cname)
                    o = Owner(uid2, ns, pn, cn or cname)
                else:
                    ns, pn = names.get(uid, (None, None))
                    o = Owner(uid, ns, pn, cname)
                for c in cs:
                    owners.setdefault(c, []).append(o)
    elif policy == "none":
        shared = online
        roles_from = "policy-none"
    else:
        # static policy but no readable state: infer from what the kernel shows, and say so
        roles_from = "cgroups"
        problems.append(Problem(state_file, "roles inferred from cgroups: kubelet's assignment is unknown"))
        sets = [c.cgroup.cpus_effective for _, c in _iter(pods) if c.cgroup and c.cgroup.cpus_effective]
        if sets:
            common = Counter(sets).most_common()
            shared = max((s for s, n in common if n == common[0][1]), key=len)
        for p in pods:
            if p.qos != "Guaranteed":
                continue
            for c in p.containers:
                eff = c.cgroup.cpus_effective if c.cgroup else None
                if eff and shared is not None and not (eff & shared):
                    for cpu in eff:
                        owners.setdefault(cpu, []).append(Owner(p.uid, p.namespace, p.name, c.name))
    reserved = kubelet.reserved_cpus or frozenset()
    out = []
    for cpu in sorted(topo.possible | online):
        if cpu not in online:
            role = "offline"
        elif cpu in owners:
            role = "exclusive"
        elif cpu in reserved:
            role = "reserved"
        elif cpu in topo.isolated:
            role = "isolated"
        elif shared is not None and cpu in shared:
            role = "shared"
        else:
            role = "unassigned"
        out.append(CpuRole(cpu, role, tuple(owners.get(cpu, ()))))
    return tuple(out), shared, roles_from


def _reserved_count(kubelet) -> int | None:
    """ceil(kubeReserved.cpu + systemReserved.cpu), as the static policy counts it; None if unknown."""
    import math

    total = 0.0
    seen = False
    for m in (kubelet.kube_reserved, kubelet.system_reserved):
        v = str(m.get("cpu", "")).strip()
        if not v:
            continue
        try:
            total += float(v[:-1]) / 1000 if v.endswith("m") else float(v)
            seen = True
        except ValueError:
            return None
    return math.ceil(total - 1e-9) if seen else None


def _init_allowed(sfiles) -> frozenset[int] | None:
    text = sfiles.get("/proc/1/status")
    return parse_task_status(text).get("allowed") if text else None


def _iter(pods):
    for p in pods:
        for c in p.containers:
            yield p, c


def _by_id(pods, cid):
    for p, c in _iter(pods):
        if c.id == cid:
            return p.uid, p.namespace, p.name, c.name
    return "", None, None, None
