"""Assemble one NodeSnapshot from a static frame and a tick frame, in stages: kubelet (config and state
files), tasks, pods (cgroups -> pods and containers), roles, IRQs.

`carry` holds older frames with deeper data (cgroup detail, tasks, IRQs), oldest first; the tick wins.
"""
from __future__ import annotations

from ..errors import Problem
from ..frames import Frame
from ..model import NodeSnapshot
from ..parse.cgroup import driver_of
from ..parse.procfs import parse_numastat, parse_proc_stat, parse_task_status, parse_uptime
from .irqs import irqs_stage
from .noise import noise_stage, stamp_pressure
from .kubelet import cpu_manager_state, memory_manager_state, static_parts
from .pods import CG, pod_logs, pods_stage
from .roles import roles_stage
from .tasks import tasks_stage

__all__ = ["assemble"]


def _merged_files(tick: Frame, carry: tuple[Frame, ...]) -> dict:
    """Dynamic files: deeper frames carried from earlier ticks, then this tick's (the static frame's files
    are looked up on their own: merging its thousands of topology files every tick is waste)."""
    if not carry:
        return tick.files
    ck = ("files", tuple(id(fr) for fr in carry))
    base_files = carry[-1].cache.get(ck)
    if base_files is None:
        base_files = {}
        for fr in carry:
            base_files.update(fr.files)
        carry[-1].cache[ck] = base_files
    return {**base_files, **tick.files}


def _frame_problems(static: Frame, tick: Frame) -> list[Problem]:
    warnings = static.warnings + ([] if tick is static else tick.warnings)
    problems: list[Problem] = [Problem("probe", w) for w in dict.fromkeys(warnings)]
    for p, n in sorted((static.truncated | tick.truncated).items()):
        problems.append(Problem(p, f"larger than {n} bytes: cut at {n} bytes (the rest was not read)"))
    for p, kind in sorted((static.refused | tick.refused).items()):
        problems.append(Problem(p, f"is a {kind}, not a regular file: not opened"))
    for p in sorted(static.nonutf8 | tick.nonutf8):
        problems.append(Problem(p, "not UTF-8: undecodable bytes replaced"))
    if not tick.complete:
        problems.append(Problem("probe", "frame ended early: partial data"))
    return problems


def _numastat(files: dict, topo) -> dict:
    out = {}
    for n in topo.numa_nodes:
        text = files.get(f"/sys/devices/system/node/node{n.id}/numastat")
        if text is not None:
            out[n.id] = parse_numastat(text)
    return out


def _init_allowed(sfiles) -> frozenset[int] | None:
    text = sfiles.get("/proc/1/status")
    return parse_task_status(text).get("allowed") if text else None


def assemble(static: Frame, tick: Frame, target: str = "node", names: Frame | None = None,
             carry: tuple[Frame, ...] = ()) -> NodeSnapshot:
    """`names`: the last frame that listed the pod log layout ("n"), if `tick` did not."""
    files = _merged_files(tick, carry)
    refused = static.refused | tick.refused
    unreadable = static.unreadable | tick.unreadable | refused.keys()
    problems = _frame_problems(static, tick)
    topo, kubelet, sprobs = static_parts(static)
    problems[:0] = sprobs
    info = {**static.info, **tick.info}
    state, state_status, state_file = cpu_manager_state(files, unreadable, kubelet, problems, refused)
    memory_state = memory_manager_state(static.files, kubelet, problems)
    cgv = int(info["cgroup-version"]) if info.get("cgroup-version", "").isdigit() else None
    base = f"{CG}/cpuset" if cgv == 1 else CG
    cg_dirs = [d for d in dict.fromkeys(tick.dirs) if d.startswith(base + "/")]
    driver = kubelet.cgroup_driver if kubelet.sources.get("cgroup_driver") else driver_of(cg_dirs)
    logs = pod_logs(tick, names, kubelet)
    by_pid, all_tasks = tasks_stage(tick, carry, problems)
    pods = pods_stage(files, tick, cgv, base, cg_dirs, logs, state, by_pid, problems)
    if cgv == 2:
        pods = stamp_pressure(pods, tick, carry)
    roles, shared, roles_from = roles_stage(topo, kubelet, state, pods, problems, state_file)
    return NodeSnapshot(
        node=(static.files.get("/proc/sys/kernel/hostname") or "").strip() or target,
        uptime=parse_uptime(files.get("/proc/uptime")), cgroup_version=cgv, cgroup_driver=driver,
        topology=topo, kubelet=kubelet, state=state,
        state_file=state_file if (state_file in files or state_file in unreadable) else None,
        memory_state=memory_state, pods=pods, roles=roles, shared_pool=shared,
        cpu_times=parse_proc_stat(files.get("/proc/stat", "")), numastat=_numastat(files, topo),
        irqs=irqs_stage(tick, carry, max(topo.possible) if topo.possible else None), all_tasks=all_tasks,
        roles_from=roles_from, problems=tuple(problems), request=tick.request, state_status=state_status,
        init_allowed=_init_allowed(static.files), noise=noise_stage(tick, carry),
        cpuset_files=_cpuset_files(static),
    )


def _cpuset_files(static: Frame) -> dict:
    """The delegation files the static frame read (probe.sh static), for the cpuset readiness check."""
    if "cpuset_files" not in static.cache:
        out = {p: t for p, t in static.files.items() if p.startswith(CG + "/")
               and p.endswith(("/cgroup.controllers", "/cgroup.subtree_control"))}
        if static.info.get("cgroup-cpuset-mount") == "no":
            out["mount"] = "no"
        static.cache["cpuset_files"] = out
    return static.cache["cpuset_files"]
