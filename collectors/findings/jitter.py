"""Jitter on exclusive CPUs, from counters the kernel already keeps: threads waiting on their run queue
(something else runs there) and kernel time (IRQs, softirqs, steal) taken out of the CPU.

Thresholds (`Thresholds`, set once at start by the CLI: --runq-wait-ms, --noise-pct):
- RUNQUEUE_WAIT_EXCLUSIVE: a thread of a container with exclusive CPUs waited on a run queue more than
  `runq_wait_ms` ms per second of the window (schedstat run_delay, or wait_sum), or the container's
  cpu.pressure "some" grew by more than that (cgroup v2, PSI). Default 50 ms/s: 5 % of the thread's time.
- KERNEL_NOISE_EXCLUSIVE: irq + softirq + steal took more than `noise_pct` % of an exclusive CPU over the
  window (/proc/stat). Default 5 %. Without CONFIG_IRQ_TIME_ACCOUNTING the kernel samples irq and softirq
  time at the tick, so small shares are coarse; the softirq and IRQ counts in the evidence are exact.
- INTRUDER_TASK (tasks.py), the measured share: a task outside the owning pod used more than
  `intruder_pct` % of a CPU over the window (utime + stime of the every-task scan, read at both ends) and
  was on the same exclusive CPU at both ends of it. Default 10 %: a busy loop sharing the CPU takes ~50 %,
  an idle daemon or PID 1 well under 1 %.
Both need a rate (two samples); per-thread run-queue wait needs schedstat, which `snapshot`/`check` read
for every pod task and the live views for the container or CPU in focus.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..parse.cpuset import cpus_named, format_cpuset as fmt
from .base import check, finding, who


@dataclass(frozen=True, slots=True)
class Thresholds:
    runq_wait_ms: float = 50.0  # ms waited on a run queue per second, per thread (or per container, PSI)
    noise_pct: float = 5.0  # % of an exclusive CPU's time in irq + softirq + steal
    intruder_pct: float = 10.0  # % of a CPU an outsider used over the window, on one exclusive CPU at both ends


_current = Thresholds()


def set_thresholds(t: Thresholds) -> None:
    """Set once at start (the CLI's --runq-wait-ms and --noise-pct), before any node is evaluated."""
    global _current
    _current = t


def thresholds() -> Thresholds:
    return _current


@check({"RUNQUEUE_WAIT_EXCLUSIVE": (
    "warning", "a thread of a container with exclusive CPUs waits on its run queue above a threshold (default 50 ms/s; "
               "--runq-wait-ms): something else runs there",
    "Find what else runs on those CPUs (the evidence names the tasks last seen there; INTRUDER_TASK, the CPU pane): pin "
    "system services away (systemd CPUAffinity=, the reserved set) and kernel work off (IRQ affinity, rcu_nocbs=, "
    "nohz_full=). If only the container's own threads are named, it runs more busy threads than it has CPUs: size "
    "its CPU count or its thread pools.")},
       needs="wr")
def runqueue_wait_exclusive(ctx):
    rates = ctx.rates
    if rates is None:
        return
    lim = _current.runq_wait_ms
    snap = ctx.snap
    for p, c in snap.containers():
        mine = ctx.exclusive_of(p, c)  # also when kubelet's assignment was not read: the roles inferred
        if not mine or c.cgroup is None:
            continue
        slow = sorted(((rates.tasks[t.tid].wait_ms_per_s, t) for t in c.tasks
                       if t.tid in rates.tasks and (rates.tasks[t.tid].wait_ms_per_s or 0) > lim),
                      key=lambda x: (-x[0], x[1].tid))
        cr = rates.containers.get((p.uid, c.id))
        psi = cr.pressure_some_ms_per_s if cr is not None else None
        if not slow and not (psi is not None and psi > lim):
            continue
        ev = []
        for ms, t in slow[:3]:
            tr = rates.tasks[t.tid]
            on = ("-" if tr.run_ms_per_s is None else f"{tr.run_ms_per_s:.0f}") + " ms/s"
            if t.runq is None:  # a rate kept from the last window that read them (a drill-down closed since)
                ev.append(f"/proc/{t.pid}/task/{t.tid}: {t.comm} waited {ms:.0f} ms/s on CPU {t.last_cpu}, on CPU {on}, "
                          "over the last window its run-queue counters were read in (the drill-down reads them "
                          "every tick; this sample's read of the thread has none)")
                continue
            src = "schedstat run_delay" if t.runq.source == "schedstat" else "sched wait_sum"
            ev.append(f"/proc/{t.pid}/task/{t.tid}/{'schedstat' if t.runq.source == 'schedstat' else 'sched'}: "
                      f"{t.comm} waited {ms:.0f} ms/s on CPU {t.last_cpu} ({src}), on CPU {on}")
        if psi is not None:
            ev.append(f"{c.cgroup.path}/cpu.pressure: some +{psi:.0f} ms/s (time with a thread of it waiting for a CPU)")
        cpus = {t.last_cpu for _, t in slow if t.last_cpu in mine} or set(mine)
        ev.extend(_who_else(ctx, p, c, mine))  # its threads may run on any of its CPUs
        if slow:
            ms, t = slow[0]
            msg = (f"{who(p, c.name)}: thread {t.comm} ({t.tid}) waited {ms:.0f} ms/s on its run queue on exclusive "
                   f"CPU {t.last_cpu}" + (f" (+{len(slow) - 1} more threads)" if len(slow) > 1 else ""))
        else:
            msg = f"{who(p, c.name)}: its threads waited {psi:.0f} ms/s for its exclusive {cpus_named(mine)} (cpu.pressure)"
        ev.append(f"threshold {lim:g} ms/s (--runq-wait-ms)")
        yield finding("RUNQUEUE_WAIT_EXCLUSIVE", msg, ev, cpus, p, c.name)


def _who_else(ctx, p, c, cpus) -> list[str]:
    """The tasks last seen on those CPUs other than the container's own, and its own runnable threads."""
    out = []
    tasks = ctx.snap.all_tasks
    if tasks is None:
        out.append("every task's last CPU was not read in this sample: the CPU pane (or pinscope check) names "
                   "the other tasks that ran there")
    else:
        busy = ctx.rates.task_busy if ctx.rates is not None else {}
        others = [t for t in tasks if t.last_cpu in cpus and t.pid not in p.pids]
        # the busiest first (CPU used over the window, when the scan was read twice), then the runnable
        others.sort(key=lambda t: (-busy.get(t.tid, 0.0), t.state != "R", t.kthread, t.last_cpu, t.tid))

        def one(t) -> str:
            b = busy.get(t.tid)
            return (f"{t.comm} (pid {t.pid}{', kernel thread' if t.kthread else ''}, {t.state}"
                    + (f", {b * 100:.0f} % of a CPU" if b is not None else "") + f") on CPU {t.last_cpu}")

        if others:
            out.append(f"also last ran on CPU {fmt(cpus)}: " + ", ".join(one(t) for t in others[:5])
                       + (f" and {len(others) - 5} more" if len(others) > 5 else ""))
        else:
            out.append(f"no other task was last seen on CPU {fmt(cpus)}")
    runnable = [t for t in c.tasks if t.state == "R"]
    if len(runnable) > len(cpus):
        out.append(f"{len(runnable)} of its own threads were runnable on {len(cpus)} CPUs: they compete with each other")
    return out


@check({"KERNEL_NOISE_EXCLUSIVE": (
    "warning", "irq + softirq + steal take more than a threshold of an exclusive CPU (default 5 %; --noise-pct)",
    "Steer device IRQs and their softirqs off exclusive CPUs (irqbalance banned CPUs, /proc/irq/N/smp_affinity_list, "
    "the irqaffinity= and isolcpus=managed_irq kernel parameters, RPS/XPS masks under /sys/class/net/*/queues); "
    "nohz_full= quiets the timer tick. Steal is the hypervisor running something else on this vCPU: ask for "
    "dedicated (pinned) vCPUs.")},
       needs="gr")
def kernel_noise_exclusive(ctx):
    rates = ctx.rates
    if rates is None:
        return
    lim = _current.noise_pct / 100
    for cpu in sorted(ctx.exclusive):
        n = rates.noise.get(cpu)
        if n is None or n.total <= lim:
            continue
        r = ctx.roles[cpu]
        o = r.owners[0]
        p = ctx.pods_by_uid.get(o.pod_uid)
        ev = [f"/proc/stat cpu{cpu}: irq {n.irq * 100:.1f} %, softirq {n.softirq * 100:.1f} %, "
              f"steal {n.steal * 100:.1f} % of the CPU over {rates.dt:.1f} s"]
        soft = rates.softirqs.get(cpu)
        if soft:
            top = sorted(soft.items(), key=lambda kv: -kv[1])[:3]
            ev.append(f"/proc/softirqs CPU{cpu}: " + ", ".join(f"{k} {v:.0f}/s" for k, v in top))
        fired = sorted(((q.per_cpu.get(cpu, 0), q) for q in ctx.snap.irqs or () if q.per_cpu.get(cpu, 0) > 0),
                       key=lambda x: (-x[0], x[1].irq))
        for cnt, q in fired[:3]:
            ev.append(f"IRQ {q.irq} ({q.name or '?'}): {cnt} on CPU{cpu} since boot, effective affinity {fmt(q.cpus)}")
        ipi = rates.ipis.get(cpu)
        if ipi:
            ev.append(f"/proc/interrupts CPU{cpu}: " + ", ".join(f"{k} {v:.0f}/s" for k, v in sorted(ipi.items())))
        ev.append(f"threshold {_current.noise_pct:g} % (--noise-pct)")
        kind = max((("softirq", n.softirq), ("irq", n.irq), ("steal", n.steal)), key=lambda kv: kv[1])[0]
        what = {"softirq": f"softirqs ({max(soft, key=soft.get)})" if soft else "softirqs",
                "irq": "hard IRQs", "steal": "steal (the hypervisor)"}[kind]
        yield finding("KERNEL_NOISE_EXCLUSIVE",
                      f"CPU {cpu}, exclusive to {who(p, o.container) if p else o.pod_uid}: the kernel takes "
                      f"{n.total * 100:.1f} % of it, mostly {what}", ev, [cpu], p, o.container)
