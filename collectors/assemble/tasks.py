"""Assembly stage: tasks, parsed once per frame (frames are carried for several ticks), newest layer wins.

The allowed list (status) comes at a slower cadence than stat/sched and is kept from older layers.
"""
from __future__ import annotations

from ..errors import Problem
from ..frames import Frame
from ..model import Task
from ..parse.cgroup import proc_cgroup_path
from ..parse.procfs import make_task, parse_task_sched, parse_task_stat, parse_task_status, parse_uptime
from .noise import runq_of

_TASK_FILES = frozenset(("stat", "status", "sched", "schedstat"))


def _frame_tasks(fr: Frame):
    """The tasks of one frame (files under /proc/<pid>/task/<tid>/), stamped with its uptime, and with
    their process's cgroup when the frame read it (the every-task scan)."""
    at = parse_uptime(fr.files.get("/proc/uptime"))
    own = probe_pids(fr)
    parts_by_tid: dict[int, dict] = {}
    cgroups: dict[int, str] = {}
    for p, text in fr.files.items():
        if not p.startswith("/proc/"):
            continue
        parts = p.split("/")  # ['', 'proc', pid, 'task', tid, name]
        if len(parts) == 4 and parts[3] == "cgroup" and parts[2].isdecimal():
            path = proc_cgroup_path(text)
            if path is not None:
                cgroups[int(parts[2])] = path
            continue
        if len(parts) != 6 or parts[3] != "task" or parts[5] not in _TASK_FILES:
            continue
        try:
            tid = int(parts[4])
        except ValueError:
            continue
        d = parts_by_tid.get(tid)
        if d is None:
            d = parts_by_tid[tid] = {"pid": int(parts[2]) if parts[2].isdecimal() else 0}
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
        if d["pid"] in own and st["comm"] in PROBE_COMMS:
            continue  # the probe itself (its shell, forwarder, awk): never a task of the report
        if "sched" not in d and f"/proc/{d['pid']}/task/{tid}/sched" in fr.unreadable:
            missing += 1
        out[tid] = make_task(tid, d["pid"], st, parse_task_status(d["status"]) if "status" in d else None,
                             parse_task_sched(d["sched"]) if "sched" in d else None, at,
                             runq_of(d) if "schedstat" in d else None)
    if cgroups:
        for tid, t in out.items():
            cg = cgroups.get(t.pid)
            if cg is not None:
                out[tid] = t._replace(cgroup=cg)
    return out, tuple(probs), missing


# what the probe's processes are called: its pids are this machine's, so on a tree that is not this kernel's
# /proc (a fixture, a copy) a task of the same pid is someone else's (a CI run lost a container's tasks so)
PROBE_COMMS = frozenset({"sh", "dash", "bash", "ash", "busybox", "awk", "mawk", "gawk", "original-awk", "od",
                         "find", "taskset", "sudo", "timeout"})


def probe_pids(fr: Frame) -> frozenset[int]:
    """The probe's own processes, as the frame says them (probe.sh: "Iprobe-pids"). Tasks of these pids
    are left out of every task list: the intruder scan (findings) and the containers' tasks never show
    the tool that looks."""
    return frozenset(int(w) for w in fr.info.get("probe-pids", "").split() if w.isdecimal())


def tid_of(t: Task) -> int:
    return t.tid


def _has_tasks(request: str) -> bool:
    """Did this frame read tasks: letters t/T/a, or a focused container (a second word)?"""
    letters, _, focus = request.partition(" ")
    return bool(focus.strip()) or any(c in letters for c in "tTa")


def _merge(parsed: list):
    """Each layer's tasks (oldest first) -> one view: newest wins; an older allowed list and cgroup are kept."""
    tasks: dict[int, Task] = {}
    lprobs: list[Problem] = []
    sched_missing = 0
    for ftasks, fprobs, fmissing in parsed:
        lprobs.extend(fprobs)
        sched_missing = max(sched_missing, fmissing)
        for tid, t in ftasks.items():
            old = tasks.get(tid)
            if old is not None and old.pid == t.pid:
                if t.allowed is None and old.allowed is not None:
                    t = t._replace(allowed=old.allowed)
                if t.cgroup is None and old.cgroup is not None:
                    t = t._replace(cgroup=old.cgroup)
            tasks[tid] = t
    by_pid: dict[int, list[Task]] = {}
    for t in tasks.values():
        by_pid.setdefault(t.pid, []).append(t)
    problems = list(lprobs)
    if sched_missing:
        problems.append(Problem("/proc/<pid>/task/<tid>/sched",
                                f"missing for {sched_missing} tasks (kernel without CONFIG_SCHED_DEBUG, before 6.15): "
                                "migrations are counted from observed last-CPU changes instead"))
    return by_pid, tuple(sorted(tasks.values(), key=tid_of)), tuple(problems)


class TasksStage:
    """Tasks of one tick, from the frames that read them (the tick and the carried ones). Each frame's
    tasks are parsed once, and the merge is kept while the same frames are the layers."""

    def __init__(self) -> None:
        self._parsed: dict[Frame, tuple] = {}  # frame -> its tasks (frames compare by identity)
        self._layers: tuple[Frame, ...] = ()
        self._merged: tuple = ({}, (), ())
        self.gen = 0  # bumped whenever the merged tasks change (containers keep their task lists till then)

    def run(self, tick: Frame, carry: tuple[Frame, ...], problems: list):
        """-> ((tasks by pid, generation), every task sorted by tid when an "a" layer is among them, else None)."""
        layers = tuple(fr for fr in (*carry, tick) if _has_tasks(fr.request))
        if layers != self._layers:
            parsed = {fr: self._parsed.get(fr) or _frame_tasks(fr) for fr in layers}
            self._parsed, self._layers = parsed, layers
            merged = _merge(list(parsed.values())) if layers else ({}, (), ())
            # the same tasks from other layers (the tick after a task scan: the scan's frame is now carried)
            # are the same tasks: the generation holds, so the pods and containers that hold them are kept
            if merged[1] != self._merged[1] or merged[2] != self._merged[2]:
                self._merged = merged
                self.gen += 1
        by_pid, sorted_tasks, lprobs = self._merged
        problems.extend(lprobs)
        want_all = any("a" in fr.letters for fr in layers)
        return (by_pid, self.gen), (sorted_tasks if want_all else None)
