"""Rates as pure functions of two snapshots of the same node.

The clock is the node's own /proc/uptime (10 ms resolution), so network delay does not skew rates;
a caller may pass wall-clock seconds when uptime is missing. Counters that went backwards (a task
reused its tid, a cgroup was recreated) give None, never a negative rate.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from .model import Lazy, NodeSnapshot


@dataclass(frozen=True, slots=True)
class ContainerRates:
    throttled_per_s: float | None = None
    throttled_us_per_s: float | None = None
    migrations_per_s: float | None = None
    migrations_source: str | None = None  # "sched" (se.nr_migrations) | "observed" (last-CPU changes)
    ctx_switches_per_s: float | None = None
    cpu_usage: float | None = None  # CPUs used (from tasks' utime+stime)
    runq_wait_ms_per_s: float | None = None  # its threads' run-queue wait (schedstat), summed
    runq_worst: tuple | None = None  # (tid, comm, ms/s, last CPU) of the thread that waited most
    pressure_some_ms_per_s: float | None = None  # cpu.pressure "some" (v2): ms/s with a thread waiting


@dataclass(frozen=True, slots=True)
class TaskRates:
    migrations_per_s: float | None = None
    voluntary_per_s: float | None = None
    involuntary_per_s: float | None = None
    moved: bool = False
    wait_ms_per_s: float | None = None  # run-queue wait (schedstat run_delay, or wait_sum)
    run_ms_per_s: float | None = None  # on CPU (schedstat sum_exec_runtime)


@dataclass(frozen=True, slots=True)
class Rates:
    dt: float
    util: dict = field(default_factory=dict)  # cpu -> 0..1
    containers: dict = field(default_factory=dict)  # (pod uid, container id) -> ContainerRates
    tasks: dict = field(default_factory=dict)  # tid -> TaskRates
    numa: dict = field(default_factory=dict)  # node -> {"numa_miss_per_s", "numa_hit_per_s", "miss_ratio"}
    noise: dict = field(default_factory=dict)  # cpu -> CpuNoise (shares of the CPU's time)
    # cpu -> {kind: per second}: a model.Lazy, worked out on first use (2,560 rates a tick on 256 CPUs that only
    # the CPU pane, a noise finding's evidence, the softirqs query and --json read)
    softirqs: Mapping = field(default_factory=dict)
    ipis: Mapping = field(default_factory=dict)  # cpu -> {"LOC"|"RES": per second} (the same)
    cpu_wait: dict = field(default_factory=dict)  # cpu -> ms/s waited there by the threads read with schedstat
    task_busy: dict = field(default_factory=dict)  # tid -> CPUs used (utime+stime), every-task scan over the window
    task_first_cpu: dict = field(default_factory=dict)  # tid -> its last CPU at the window's start (same scan)


class CpuNoise(NamedTuple):
    """Kernel time on one CPU over the window, as shares of all its time (/proc/stat)."""

    irq: float
    softirq: float
    steal: float

    @property
    def total(self) -> float:
        return self.irq + self.softirq + self.steal


def _d(a, b):
    if a is None or b is None or b < a:
        return None
    return b - a


def compute(prev: NodeSnapshot, cur: NodeSnapshot, wall_dt: float | None = None, clk_tck: int = 100,
            carry: Rates | None = None) -> Rates | None:
    """`carry`: the previous tick's rates. A task's rates and a container's cpu.pressure, read at a slower
    cadence than the tick, keep the rate of their last window until they are read again (so findings on
    them do not flicker between reads)."""
    dt = None
    if prev.uptime is not None and cur.uptime is not None and cur.uptime > prev.uptime:
        dt = cur.uptime - prev.uptime
    elif wall_dt and wall_dt > 0:
        dt = wall_dt
    if not dt:
        return None
    util, noise = _cpu_util(prev, cur)
    prev_tasks = {}
    for _, c in prev.containers():
        for t in c.tasks:
            prev_tasks[t.tid] = t
    if prev.all_tasks:
        for t in prev.all_tasks:
            prev_tasks.setdefault(t.tid, t)
    trates: dict[int, TaskRates] = {}
    crates = {}
    prev_cg = {(p.uid, c.id): c for p, c in prev.containers()}
    for p, c in cur.containers():
        key = (p.uid, c.id)
        pc = prev_cg.get(key)
        crates[key] = _container_rates(c, pc, prev_tasks, dt, clk_tck, carry, trates, key)
    _focus_task_rates(cur, prev_tasks, dt, carry, trates)
    softirqs, ipis = _noise_counts(prev, cur)
    return Rates(dt, util, crates, trates, _numa(prev, cur, dt), noise, softirqs, ipis, _cpu_wait(cur, trates),
                 *_task_busy(prev_tasks, cur, prev, dt, clk_tck, carry))


def _cpu_util(prev: NodeSnapshot, cur: NodeSnapshot) -> tuple[dict, dict]:
    """Per CPU: busy share and kernel noise (irq, softirq, steal shares) over the window. Runs for every CPU
    every tick: the CpuTimes fields are unpacked once."""
    util = {}
    noise = {}
    new = tuple.__new__  # CpuNoise(...) without its argument handling: one per CPU every tick
    before = prev.cpu_times
    for cpu, t2 in cur.cpu_times.items():
        t1 = before.get(cpu)
        if t1 is None:
            continue
        busy2, tot2, irq2, soft2, steal2 = t2
        busy1, tot1, irq1, soft1, steal1 = t1
        tot = tot2 - tot1
        busy = busy2 - busy1
        if tot > 0 and busy >= 0:
            util[cpu] = min(1.0, max(0.0, busy / tot))
            irq, soft, steal = irq2 - irq1, soft2 - soft1, steal2 - steal1
            if irq >= 0 and soft >= 0 and steal >= 0:
                noise[cpu] = new(CpuNoise, (min(1.0, irq / tot), min(1.0, soft / tot), min(1.0, steal / tot)))
    return util, noise


def _container_rates(c, pc, prev_tasks: dict, dt: float, clk_tck: int, carry, trates: dict, key) -> ContainerRates:
    """One container's rates; its tasks' rates go into `trates`."""
    thr = thr_us = None
    if c.cgroup and pc is not None and pc.cgroup:
        d = _d(pc.cgroup.nr_throttled, c.cgroup.nr_throttled)
        thr = d / dt if d is not None else None
        d = _d(pc.cgroup.throttled_usec, c.cgroup.throttled_usec)
        thr_us = d / dt if d is not None else None
    mig = ctx = use = wait = worst = None
    source = None
    if c.tasks and pc is not None:
        mig = ctx = use = 0.0
        fresh = stale = 0
        for t in c.tasks:
            t0 = prev_tasks.get(t.tid)
            if t0 is None or t0.pid != t.pid:
                continue
            tdt = (t.at - t0.at) if (t.at is not None and t0.at is not None) else dt
            if tdt <= 0:  # not re-read since the previous sample: no new rate from it
                stale += 1
                if carry is not None and t.tid in carry.tasks:
                    trates[t.tid] = carry.tasks[t.tid]
                continue
            fresh += 1
            tr = _task_rate(t0, t, tdt)
            trates[t.tid] = tr
            if t.nr_migrations is not None and t0.nr_migrations is not None:
                source = source or "sched"
                mig += tr.migrations_per_s or 0.0
            else:
                source = "observed"
                mig += 1.0 / tdt if tr.moved else 0.0
            ctx += (tr.voluntary_per_s or 0.0) + (tr.involuntary_per_s or 0.0)
            du = _d(t0.utime + t0.stime, t.utime + t.stime)
            use += (du / clk_tck / tdt) if du is not None else 0.0
            if tr.wait_ms_per_s is not None:
                wait = (wait or 0.0) + tr.wait_ms_per_s
                if worst is None or tr.wait_ms_per_s > worst[2]:
                    worst = (t.tid, t.comm, tr.wait_ms_per_s, t.last_cpu)
        if not fresh:
            mig = ctx = use = None
            if stale and carry is not None and key in carry.containers:
                # its tasks were not read again (the task scan runs every few ticks): the container keeps
                # the rates of their last window, as its tasks do
                k = carry.containers[key]
                mig, source, ctx, use, wait, worst = (k.migrations_per_s, k.migrations_source, k.ctx_switches_per_s,
                                                      k.cpu_usage, k.runq_wait_ms_per_s, k.runq_worst)
    psi = _pressure(pc, c)
    if psi is None and carry is not None and key in carry.containers and _same_read(pc, c):
        psi = carry.containers[key].pressure_some_ms_per_s
    return ContainerRates(thr, thr_us, mig, source, ctx, use, wait, worst, psi)


def _focus_task_rates(cur: NodeSnapshot, prev_tasks: dict, dt: float, carry, trates: dict) -> None:
    """The every-task scan with a CPU in focus: those tasks' run-queue wait too."""
    for t in cur.all_tasks or ():
        if t.runq is None or t.tid in trates:
            continue
        t0 = prev_tasks.get(t.tid)
        if t0 is None or t0.pid != t.pid or t0.runq is None:
            continue
        tdt = (t.at - t0.at) if (t.at is not None and t0.at is not None) else dt
        if tdt > 0:
            trates[t.tid] = _task_rate(t0, t, tdt)
        elif carry is not None and t.tid in carry.tasks:
            trates[t.tid] = carry.tasks[t.tid]


def _cpu_wait(cur: NodeSnapshot, trates: dict) -> dict:
    """Run-queue wait per CPU: the waits of the tasks last seen there."""
    cpu_wait: dict = {}
    seen = {}
    for _, c in cur.containers():
        for t in c.tasks:
            seen[t.tid] = t
    for t in cur.all_tasks or ():
        seen.setdefault(t.tid, t)
    for tid, tr in trates.items():
        t = seen.get(tid)
        if tr.wait_ms_per_s is not None and t is not None and t.last_cpu is not None:
            cpu_wait[t.last_cpu] = cpu_wait.get(t.last_cpu, 0.0) + tr.wait_ms_per_s
    return cpu_wait


def _numa(prev: NodeSnapshot, cur: NodeSnapshot, dt: float) -> dict:
    numa = {}
    for n, s2 in cur.numastat.items():
        s1 = prev.numastat.get(n)
        if not s1:
            continue
        miss = _d(s1.get("numa_miss"), s2.get("numa_miss"))
        hit = _d(s1.get("numa_hit"), s2.get("numa_hit"))
        if miss is None or hit is None:
            continue
        numa[n] = {"numa_miss_per_s": miss / dt, "numa_hit_per_s": hit / dt,
                   "miss_ratio": miss / (hit + miss) if hit + miss else 0.0}
    return numa


def _task_rate(t0, t, dt) -> TaskRates:
    m = _d(t0.nr_migrations, t.nr_migrations)
    v = _d(t0.voluntary, t.voluntary)
    i = _d(t0.involuntary, t.involuntary)
    wait = run = None
    if t0.runq is not None and t.runq is not None and t0.runq.source == t.runq.source:
        w = _d(t0.runq.wait_ns, t.runq.wait_ns)
        r = _d(t0.runq.run_ns, t.runq.run_ns)
        wait = w / 1e6 / dt if w is not None else None
        run = r / 1e6 / dt if r is not None else None
    return TaskRates(m / dt if m is not None else None, v / dt if v is not None else None,
                     i / dt if i is not None else None, moved=t0.last_cpu != t.last_cpu,
                     wait_ms_per_s=wait, run_ms_per_s=run)


def _task_busy(prev_tasks: dict, cur: NodeSnapshot, prev: NodeSnapshot, dt: float, clk_tck: int,
               carry: Rates | None = None) -> tuple[dict, dict]:
    """CPUs each task of the every-task scan used over its own interval, and its last CPU at the start of
    it: which task ran where (the evidence of run-queue wait and of an intruder's share). Computed when
    the scan was re-read; between scans (a carried scan is the same tuple) the last window's hold, so the
    findings on them do not flicker."""
    out: dict = {}
    first: dict = {}
    if cur.all_tasks and cur.all_tasks is prev.all_tasks and carry is not None:
        return carry.task_busy, carry.task_first_cpu
    if not cur.all_tasks or not prev.all_tasks or cur.all_tasks is prev.all_tasks:
        return out, first
    held, held_first = (carry.task_busy, carry.task_first_cpu) if carry is not None else ({}, {})
    for t in cur.all_tasks:
        t0 = prev_tasks.get(t.tid)
        if t0 is None or t0.pid != t.pid:
            continue
        if t.at is not None and t.at == t0.at:  # the same read, carried (the scan is every 10th tick live)
            if t.tid in held:
                out[t.tid], first[t.tid] = held[t.tid], held_first.get(t.tid)
            continue
        tdt = (t.at - t0.at) if (t.at is not None and t0.at is not None) else dt
        du = (t.utime + t.stime) - (t0.utime + t0.stime)
        if tdt > 0 and du >= 0:
            out[t.tid] = du / clk_tck / tdt
            first[t.tid] = t0.last_cpu
    return out, first


def _same_read(pc, c) -> bool:
    a, b = (pc.cgroup if pc is not None else None), c.cgroup
    return a is not None and b is not None and b.pressure_at is not None and a.pressure_at == b.pressure_at


def _pressure(pc, c) -> float | None:
    """cpu.pressure "some" total (µs) over the interval between the two reads of it."""
    a, b = (pc.cgroup if pc is not None else None), c.cgroup
    if a is None or b is None or a.pressure_at is None or b.pressure_at is None or b.pressure_at <= a.pressure_at:
        return None
    d = _d(a.pressure_some_total_us, b.pressure_some_total_us)
    return d / 1e3 / (b.pressure_at - a.pressure_at) if d is not None else None


def _per_s(a: Mapping, b: Mapping, dt: float) -> dict:
    """{kind: {cpu: count}} twice -> {cpu: {kind: per second}}"""
    out: dict = {}
    for kind, per in b.items():
        old = a.get(kind)
        if old is None:
            continue
        for cpu, n in per.items():  # _d inlined: this runs kinds x CPUs times a tick
            o = old.get(cpu)
            if o is not None and n is not None and n >= o:
                d = out.get(cpu)
                if d is None:
                    d = out[cpu] = {}
                d[kind] = (n - o) / dt
    return out


def _noise_counts(prev: NodeSnapshot, cur: NodeSnapshot) -> tuple[Mapping, Mapping]:
    """Softirqs and IPIs per CPU per second, each over the interval between its own two reads."""
    a, b = prev.noise, cur.noise
    if a is None or b is None:
        return {}, {}
    soft: Mapping = {}
    ipis: Mapping = {}
    if a.softirqs_at is not None and b.softirqs_at is not None and b.softirqs_at > a.softirqs_at:
        soft = Lazy(partial(_per_s, a.softirqs, b.softirqs, b.softirqs_at - a.softirqs_at))
    if a.ipis_at is not None and b.ipis_at is not None and b.ipis_at > a.ipis_at:
        ipis = Lazy(partial(_per_s, a.ipis, b.ipis, b.ipis_at - a.ipis_at))
    return soft, ipis
