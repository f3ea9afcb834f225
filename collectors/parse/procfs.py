"""/proc: per-CPU times, uptime, per-task stat/status/sched, numastat, interrupts.

/proc/stat (man proc_stat(5)): cpuN lines only for online CPUs; guest/guest_nice are already inside
user/nice, so they are not added again. /proc/<pid>/stat (man proc_pid_stat(5)): comm is in parentheses
and may hold spaces and ')', so split after the LAST ')'; field 39 is the CPU last run on, field 9 the
flags (PF_KTHREAD = 0x00200000). <tid>/sched exists before Linux 6.15 only with CONFIG_SCHED_DEBUG.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..model import CpuTimes, Irq, Task
from .cpuset import CpusetError, parse_cpuset

PF_KTHREAD = 0x00200000


_CPULINE = re.compile(r"^cpu(\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)", re.M)


def parse_proc_stat(text: str) -> dict[int, CpuTimes]:
    """cpuN lines -> busy/total ticks. One regex pass; lines it does not fit go the slow way."""
    out: dict[int, CpuTimes] = {}
    new = tuple.__new__  # CpuTimes(...) without its keyword handling: 256 of them every tick
    for cpu, user, nice, system, idle, iowait, irq, softirq, steal in _CPULINE.findall(text):
        irq_, soft, st = int(irq), int(softirq), int(steal)
        busy = int(user) + int(nice) + int(system) + irq_ + soft + st
        out[int(cpu)] = new(CpuTimes, (busy, busy + int(idle) + int(iowait), irq_, soft, st))
    if len(out) >= text.count("\ncpu"):
        return out
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        parts = line.split()
        name = parts[0][3:]
        if not name.isdecimal() or len(parts) < 5:
            continue
        try:
            v = [int(x) for x in parts[1:11]]
        except ValueError:
            continue
        v += [0] * (10 - len(v))
        user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
        idle_all = idle + iowait
        busy = user + nice + system + irq + softirq + steal
        out[int(name)] = CpuTimes(busy, busy + idle_all, irq, softirq, steal)
    return out


def parse_uptime(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def parse_numastat(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        v = v.strip()
        if v.isdecimal():
            out[k] = int(v)
    return out


def parse_task_stat(text: str) -> dict | None:
    """-> {comm, state, last_cpu, flags, utime, stime, pid?} or None if it is not a stat line."""
    text = text.rstrip("\n")
    lp, rp = text.find("("), text.rfind(")")
    if lp < 0 or rp < lp:
        return None
    comm = text[lp + 1:rp]  # exact (any byte but NUL): collectors.text escapes it for display
    rest = text[rp + 1:].split()
    # rest[0] is field 3 (state): field N is rest[N-3]
    if len(rest) < 37:
        return None
    try:
        return {
            "pid": int(text[:lp].strip() or 0),
            "comm": comm,
            "state": rest[0],
            "flags": int(rest[6]),
            "utime": int(rest[11]),
            "stime": int(rest[12]),
            "last_cpu": int(rest[36]),
        }
    except ValueError:
        return None


@lru_cache(maxsize=16384)
def parse_task_status(text: str) -> dict:
    """Tgid and Cpus_allowed_list (the probe sends only those: they change rarely, so this is cached;
    the switch counters come from sched, every task tick). Callers must not mutate the result."""
    out: dict = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        v = v.strip()
        if k == "Cpus_allowed_list":
            try:
                out["allowed"] = parse_cpuset(v)
            except CpusetError:
                pass
        elif k in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches", "Tgid"):
            if v.isdecimal():
                out[k] = int(v)
    return out


_SCHED_KEYS = frozenset(("se.nr_migrations", "nr_voluntary_switches", "nr_involuntary_switches", "nr_switches"))


def parse_task_sched(text: str) -> dict:
    """'key : value' lines (the probe squeezes the padding) -> the counters we use."""
    out: dict = {}
    w = text.split()
    for i in range(len(w) - 2):
        if w[i + 1] == ":" and w[i] in _SCHED_KEYS:
            v = w[i + 2]
            if v.isdecimal():
                out[w[i]] = int(v)
            else:
                try:
                    out[w[i]] = int(float(v))
                except ValueError:
                    pass
    if not out:  # unsqueezed layout ("key     :    value" without spaces around ':' is not a thing, but be safe)
        for line in text.splitlines():
            k, _, v = line.partition(":")
            k = k.strip()
            if k in _SCHED_KEYS:
                try:
                    out[k] = int(float(v.strip()))
                except ValueError:
                    pass
    return out


def make_task(tid: int, pid: int, stat: dict, status: dict | None, sched: dict | None,
              at: float | None = None, runq=None) -> Task:
    status = status or {}
    sched = sched or {}
    return Task(
        tid=tid, pid=status.get("Tgid", pid), comm=stat["comm"], state=stat["state"],
        last_cpu=stat["last_cpu"], kthread=bool(stat["flags"] & PF_KTHREAD),
        utime=stat["utime"], stime=stat["stime"], allowed=status.get("allowed"),
        nr_migrations=sched.get("se.nr_migrations"),
        # sched is read every task tick, status only every few: prefer sched's counters (fresher)
        voluntary=sched.get("nr_voluntary_switches", status.get("voluntary_ctxt_switches")),
        involuntary=sched.get("nr_involuntary_switches", status.get("nonvoluntary_ctxt_switches")),
        at=at, runq=runq,
    )


def parse_interrupts(text: str) -> dict[str, tuple[int, str, dict]]:
    """/proc/interrupts -> {irq: (total, device names, {cpu: count})}. The header names one column per
    ONLINE CPU (not necessarily consecutive): counts are mapped to CPU ids through it."""
    lines = text.splitlines()
    if not lines:
        return {}
    cols = [int(w[3:]) for w in lines[0].split() if w.startswith("CPU") and w[3:].isdecimal()]
    ncpu = len(cols)
    out = {}
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        name = name.strip()
        if not name.isdecimal():
            continue
        parts = rest.split()
        counts = []
        for w in parts[:ncpu]:
            if w.isdecimal():
                counts.append(int(w))
            else:
                break
        desc = " ".join(parts[len(counts):][2:]) if len(parts) > len(counts) + 2 else " ".join(parts[len(counts):])
        out[name] = (sum(counts), desc, dict(zip(cols, counts)))
    return out


def build_irqs(files: dict, nmax: int | None) -> tuple[Irq, ...]:
    inter = parse_interrupts(files.get("/proc/interrupts", ""))
    out = []
    for path, text in files.items():
        if not path.startswith("/proc/irq/"):
            continue
        parts = path.split("/")
        if len(parts) != 5 or parts[4] not in ("effective_affinity_list", "smp_affinity_list"):
            continue
        irq = parts[3]
        try:
            cpus = parse_cpuset(text, nmax)
        except CpusetError:
            continue
        cnt, desc, per = inter.get(irq, (0, "", {}))
        out.append(Irq(irq, cpus, desc, cnt, per))
    out.sort(key=lambda i: int(i.irq) if i.irq.isdecimal() else 1 << 30)
    return tuple(out)
