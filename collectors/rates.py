"""Rates as pure functions of two snapshots of the same node.

The clock is the node's own /proc/uptime (10 ms resolution), so network delay does not skew rates;
a caller may pass wall-clock seconds when uptime is missing. Counters that went backwards (a task
reused its tid, a cgroup was recreated) give None, never a negative rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .model import NodeSnapshot


@dataclass(frozen=True, slots=True)
class ContainerRates:
    throttled_per_s: float | None = None
    throttled_us_per_s: float | None = None
    migrations_per_s: float | None = None
    migrations_source: str | None = None  # "sched" (se.nr_migrations) | "observed" (last-CPU changes)
    ctx_switches_per_s: float | None = None
    cpu_usage: float | None = None  # CPUs used (from tasks' utime+stime)


@dataclass(frozen=True, slots=True)
class TaskRates:
    migrations_per_s: float | None = None
    voluntary_per_s: float | None = None
    involuntary_per_s: float | None = None
    moved: bool = False


@dataclass(frozen=True, slots=True)
class Rates:
    dt: float
    util: dict = field(default_factory=dict)  # cpu -> 0..1
    containers: dict = field(default_factory=dict)  # (pod uid, container id) -> ContainerRates
    tasks: dict = field(default_factory=dict)  # tid -> TaskRates
    numa: dict = field(default_factory=dict)  # node -> {"numa_miss_per_s", "numa_hit_per_s", "miss_ratio"}


def _d(a, b):
    if a is None or b is None or b < a:
        return None
    return b - a


def compute(prev: NodeSnapshot, cur: NodeSnapshot, wall_dt: float | None = None, clk_tck: int = 100) -> Rates | None:
    dt = None
    if prev.uptime is not None and cur.uptime is not None and cur.uptime > prev.uptime:
        dt = cur.uptime - prev.uptime
    elif wall_dt and wall_dt > 0:
        dt = wall_dt
    if not dt:
        return None
    util = {}
    for cpu, t2 in cur.cpu_times.items():
        t1 = prev.cpu_times.get(cpu)
        if t1 is None:
            continue
        tot = t2.total - t1.total
        busy = t2.busy - t1.busy
        if tot > 0 and busy >= 0:
            util[cpu] = min(1.0, max(0.0, busy / tot))
    prev_tasks = {}
    for _, c in prev.containers():
        for t in c.tasks:
            prev_tasks[t.tid] = t
    if prev.all_tasks:
        for t in prev.all_tasks:
            prev_tasks.setdefault(t.tid, t)
    trates = {}
    crates = {}
    prev_cg = {(p.uid, c.id): c for p, c in prev.containers()}
    for p, c in cur.containers():
        key = (p.uid, c.id)
        thr = thr_us = None
        pc = prev_cg.get(key)
        if c.cgroup and pc is not None and pc.cgroup:
            d = _d(pc.cgroup.nr_throttled, c.cgroup.nr_throttled)
            thr = d / dt if d is not None else None
            d = _d(pc.cgroup.throttled_usec, c.cgroup.throttled_usec)
            thr_us = d / dt if d is not None else None
        mig = ctx = use = None
        source = None
        if c.tasks and pc is not None:
            mig = ctx = use = 0.0
            fresh = 0
            for t in c.tasks:
                t0 = prev_tasks.get(t.tid)
                if t0 is None or t0.pid != t.pid:
                    continue
                tdt = (t.at - t0.at) if (t.at is not None and t0.at is not None) else dt
                if tdt <= 0:
                    continue  # not re-read since the previous sample: no rate from it
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
            if not fresh:
                mig = ctx = use = None
        crates[key] = ContainerRates(thr, thr_us, mig, source, ctx, use)
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
    return Rates(dt, util, crates, trates, numa)


def _task_rate(t0, t, dt) -> TaskRates:
    m = _d(t0.nr_migrations, t.nr_migrations)
    v = _d(t0.voluntary, t.voluntary)
    i = _d(t0.involuntary, t.involuntary)
    return TaskRates(m / dt if m is not None else None, v / dt if v is not None else None,
                     i / dt if i is not None else None, moved=t0.last_cpu != t.last_cpu)
