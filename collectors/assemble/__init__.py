"""Assemble one NodeSnapshot from a tick's View (collectors.frames), in stages: kubelet (config and
state files), tasks, pods (cgroups -> pods and containers), devices, roles, IRQs, kernel noise, latency
readiness.

An `Assembler` lives as long as one connection to a node. Each stage keeps what it built last and
re-runs only when its inputs changed: the static parts per static frame, the pod layout while the
directory listing holds, each cgroup's files while their texts hold (only the counters are re-read when
only they changed), tasks per frame that read them, roles while the state file and the names hold, IRQs
per frame that read them. `assemble(...)` is the one-shot form (tests, benchmarks).
"""
from __future__ import annotations

from ..errors import Problem
from ..frames import TOO_LONG, Frame, View
from ..model import NodeSnapshot
from ..naming import node_name
from ..parse.cgroup import driver_of
from ..parse.procfs import parse_numastat, parse_proc_stat, parse_task_status, parse_uptime
from .devices import attach, attach_claims, device_state, dra_state, placements
from .irqs import IrqsStage
from .kubelet import (
    allocated_pods_state,
    cpu_manager_state,
    memory_manager_state,
    static_parts,
    sudo_was_refused,
    unlisted_problems,
)
from .noise import NoiseStage
from .readiness import build as build_readiness
from .pods import CG, PodsStage, pod_dirs, pod_logs
from .roles import RolesStage
from .tasks import TasksStage

__all__ = ["Assembler", "assemble"]


def _frame_problems(static: Frame, tick: Frame) -> list[Problem]:
    warnings = static.warnings + ([] if tick is static else tick.warnings)
    problems: list[Problem] = [Problem("probe", w) for w in dict.fromkeys(warnings)]
    for p, n in sorted((static.truncated | tick.truncated).items()):
        if p in tick.files or p in static.files:
            problems.append(Problem(p, f"larger than {n} bytes: cut at {n} bytes (the rest was not read)"))
        else:  # said before it was opened (probe.sh precheck): nothing of it was read
            problems.append(Problem(p, f"larger than {n} bytes: not read"))
    for p, kind in sorted((static.refused | tick.refused).items()):
        problems.append(Problem(p, f"is a {TOO_LONG}: left out, not parsed" if kind == TOO_LONG
                                else f"is a {kind}, not a regular file: not opened"))
    for p in sorted(static.nonutf8 | tick.nonutf8):
        problems.append(Problem(p, "not UTF-8: undecodable bytes replaced"))
    if not tick.complete:
        problems.append(Problem("probe", "frame ended early: partial data"))
    return problems


def _cpu_times(files: dict, tick: Frame, unreadable, problems: list) -> dict:
    """/proc/stat's cpuN lines; a grid frame without them says so (load is then unknown, never 0)."""
    text = files.get("/proc/stat")
    times = parse_proc_stat(text or "")
    if not times and "g" in tick.letters and "/proc/stat" not in unreadable:
        problems.append(Problem("/proc/stat", "missing: CPU load unknown" if text is None
                                else "has no cpuN lines (empty or not /proc/stat): CPU load unknown"))
    return times


def _numastat(files: dict, topo) -> dict:
    out = {}
    for n in topo.numa_nodes:
        text = files.get(f"/sys/devices/system/node/node{n.id}/numastat")
        if text is not None:
            out[n.id] = parse_numastat(text)
    return out


def _cpuset_files(static: Frame) -> dict:
    """The delegation files the static frame read (probe.sh static), for the cpuset readiness check."""
    out = {p: t for p, t in static.files.items() if p.startswith(CG + "/")
           and p.endswith(("/cgroup.controllers", "/cgroup.subtree_control"))}
    if static.info.get("cgroup-cpuset-mount") == "no":
        out["mount"] = "no"
    return out


def _static(static: Frame):
    """Everything that depends on the static frame only."""
    topo, kubelet, sprobs = static_parts(static)
    memory_state, mprobs = memory_manager_state(static.files, kubelet, static.truncated)
    pod_level, aprobs = allocated_pods_state(static.files, kubelet, static.truncated)
    text = static.files.get("/proc/1/status")
    init_allowed = parse_task_status(text).get("allowed") if text else None
    node = (static.files.get("/proc/sys/kernel/hostname") or "").strip()
    return (topo, kubelet, sprobs, (memory_state, pod_level), mprobs + aprobs, init_allowed, node,
            _cpuset_files(static))


def _layout(tick: Frame, info: dict, kubelet):
    """-> (cgroup version, base dir, cgroup dirs, pods' dirs, driver): from the tick's directory listing."""
    cgv = int(info["cgroup-version"]) if info.get("cgroup-version", "").isdecimal() else None
    base = f"{CG}/cpuset" if cgv == 1 else CG
    cg_dirs = [d for d in dict.fromkeys(tick.dirs) if d.startswith(base + "/")]
    driver = kubelet.cgroup_driver if kubelet.sources.get("cgroup_driver") else driver_of(cg_dirs)
    return cgv, base, set(cg_dirs), pod_dirs(cg_dirs), driver


class _Last:
    """The last (key, value) of one stage: `get(key, make, *args)` calls make only when the key changed.
    Keys hold frames (compared by identity) and texts (compared by value): never id() numbers."""

    __slots__ = ("key", "value")

    def __init__(self) -> None:
        self.key = self.value = None

    def get(self, key, make, *args):
        if self.key is None or key != self.key:
            self.key, self.value = key, make(*args)
        return self.value


class Assembler:
    """One node's assembly between ticks (one per connection): `build(view)` -> NodeSnapshot."""

    def __init__(self, target: str = "node") -> None:
        self.target = target
        self._static, self._logs, self._layout = _Last(), _Last(), _Last()
        self.tasks, self.pods, self.roles, self.irqs = TasksStage(), PodsStage(), RolesStage(), IrqsStage()
        self.noise = NoiseStage()
        self._place = _Last()
        self._ready_raw, self._ready = _Last(), _Last()

    def build(self, view: View) -> NodeSnapshot:
        static, tick, files, carry = view.static, view.tick, view.files, view.carry
        refused = static.refused | tick.refused
        unreadable = static.unreadable | tick.unreadable | refused.keys()
        problems = _frame_problems(static, tick)
        topo, kubelet, sprobs, (memory_state, pod_level), mprobs, init_allowed, node, cpuset_files = \
            self._static.get((static,), _static, static)
        problems[:0] = sprobs
        info = {**static.info, **tick.info} if tick.info else static.info
        state, state_status, state_file = cpu_manager_state(files, unreadable, kubelet, problems, refused,
                                                        sudo_was_refused(static), static.truncated | tick.truncated)
        problems.extend(mprobs)
        cgv, base, dirset, pods_cg, driver = self._layout.get(
            (tick.dirs, info.get("cgroup-version"), kubelet), _layout, tick, info, kubelet)
        lf = tick if "n" in tick.letters or view.names is None else view.names
        logs = self._logs.get((lf, kubelet), pod_logs, lf, kubelet)
        # directories this user may not list (the cgroup tree, kubepods, kubelet's, the pod logs'): unknown
        unlisted_problems(problems, static.unlisted | tick.unlisted | lf.unlisted, sudo_was_refused(static))
        tasks, all_tasks = self.tasks.run(tick, carry, problems)
        self.noise.next_tick(tick, carry)
        pods = self.pods.run(files, tick, cgv, base, pods_cg, dirset, logs, state, tasks, problems, carry,
                             self.noise.at)
        dstate = device_state(files, unreadable, kubelet.root_dir, problems, refused, sudo_was_refused(static))
        pods, orphans = attach(pods, dstate, *self._place.get((static,), placements, static.files))
        rstate = dra_state(files, unreadable, static.truncated | tick.truncated, kubelet.root_dir, problems, refused,
                           sudo_was_refused(static))
        pods = attach_claims(pods, rstate)
        roles, shared, roles_from, rprobs = self.roles.run(topo, kubelet, state, pods, state_file)
        problems.extend(rprobs)
        cpu_times = _cpu_times(files, tick, unreadable, problems)
        readiness = self._readiness(static, topo, kubelet, roles, pods, memory_state, all_tasks, problems)
        return NodeSnapshot(
            node=node_name(None, node, self.target), uptime=parse_uptime(files.get("/proc/uptime")), cgroup_version=cgv,
            cgroup_driver=driver, topology=topo, kubelet=kubelet, state=state,
            state_file=state_file if (state_file in files or state_file in unreadable or state_status == "cut") else None,
            memory_state=memory_state, pods=pods, roles=roles, shared_pool=shared,
            cpu_times=cpu_times, numastat=_numastat(files, topo),
            irqs=self.irqs.run(tick, carry, max(topo.possible) if topo.possible else None),
            all_tasks=all_tasks, roles_from=roles_from, problems=tuple(problems), request=tick.request,
            state_status=state_status, init_allowed=init_allowed, noise=self.noise.run(tick, carry),
            cpuset_files=cpuset_files, device_state=dstate, device_orphans=orphans, dra_state=rstate,
            readiness=readiness, pod_level=pod_level,
        )

    def _readiness(self, static: Frame, topo, kubelet, roles, pods, memory_state, all_tasks, problems):
        """Latency readiness: parsed once per static frame, judged again only when what it judges by changed
        (roles, the pinned containers' cgroup values, the task scan that says whether irqbalance runs, the
        memory manager's assignments)."""
        raw, rprobs = self._ready_raw.get((static,), _readiness_raw, static, topo)
        problems.extend(rprobs)
        ctrs = tuple((p.uid, c.name, c.cgroup_path, c.assigned, c.cgroup.quota_us if c.cgroup else None,
                      c.cgroup.mems_effective if c.cgroup else None,
                      c.cgroup is not None and ("cpu.max" in c.cgroup.raw or "cpu.cfs_quota_us" in c.cgroup.raw))
                     for p in pods for c in p.containers if c.assigned)
        parts = {"topology": topo, "reserved": kubelet.reserved_cpus, "roles": roles, "pods": pods,
                 "memory_state": memory_state, "all_tasks": all_tasks}
        return self._ready.get((raw, roles, ctrs, all_tasks, kubelet.reserved_cpus, memory_state), build_readiness,
                              raw, parts)


def _readiness_raw(static: Frame, topo):
    from ..parse.readiness import parse_readiness

    problems: list[Problem] = []
    nmax = max(topo.possible) if topo.possible else None
    return parse_readiness(static.files, nmax, problems), problems


def assemble(static: Frame, tick: Frame, target: str = "node", names: Frame | None = None,
             carry: tuple[Frame, ...] = ()) -> NodeSnapshot:
    """One snapshot, nothing kept. `names`: the last frame that listed the pod log layout ("n"), if `tick`
    did not; `carry`: older frames with deeper data, oldest first (the tick wins)."""
    files = tick.files
    if carry:
        files = {}
        for fr in (*carry, tick):
            files.update(fr.files)
    return Assembler(target).build(View(static, tick, names, tuple(carry), files))
