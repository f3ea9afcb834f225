"""The jitter counters the kernel already keeps: run-queue wait per thread, softirqs and IPIs per CPU.

- `/proc/<pid>/task/<tid>/schedstat` (fs/proc/base.c proc_pid_schedstat): `sum_exec_runtime run_delay
  pcount`, ns, ns, timeslices. `run_delay` is the time the thread waited on a run queue while runnable.
  It is kept by sched_info (CONFIG_SCHED_INFO, selected by SCHEDSTATS or TASK_DELAY_ACCT), NOT by the
  `kernel.sched_schedstats` sysctl; a kernel without sched_info prints `0 0 0` (before 5.14 also when
  delay accounting was off at run time: commit c5895d3f06cb "sched: Simplify sched_info_on()").
- `/proc/<pid>/task/<tid>/sched` (kernel/sched/debug.c): `wait_sum` (`se.statistics.wait_sum` on older
  kernels, before struct sched_statistics left struct sched_entity) only while schedstats are on; ns
  values are printed as `ms.nnnnnn` (SPLIT_NS). The fallback when schedstat reads `0 0 0`.
- `/proc/schedstat` (per-CPU run_delay) exists only with CONFIG_SCHEDSTATS (kernel/sched/stats.c): not on
  this project's 6.18 machine (SCHED_INFO=y, SCHEDSTATS unset), so it is not relied on.
- `/proc/softirqs` (fs/proc/softirqs.c): one column per POSSIBLE CPU (offline ones too, unlike
  /proc/interrupts, which has one per online CPU), one row per softirq kind, counts since boot.
- `/proc/interrupts` arch rows: x86 `LOC` (local timer) and `RES` (rescheduling IPIs); arm64 spells
  them `IPIn: ... Rescheduling interrupts` and the per-CPU `arch_timer` IRQ.
"""
from __future__ import annotations

from typing import NamedTuple


class SchedStat(NamedTuple):
    """One thread's sched_info counters (ns), or its schedstats' wait_sum when sched_info is off."""

    run_ns: int | None  # on-CPU time (se.sum_exec_runtime)
    wait_ns: int  # time runnable but waiting on a run queue
    slices: int | None = None
    source: str = "schedstat"  # "schedstat" | "wait_sum"


def parse_schedstat(text: str | None) -> SchedStat | None:
    """`187623569 8094205 395` -> SchedStat. None when absent, garbage, or `0 0 0` (no sched_info)."""
    if not text:
        return None
    w = text.split()
    if len(w) < 3 or not all(x.isdecimal() for x in w[:3]):
        return None
    run, wait, slices = int(w[0]), int(w[1]), int(w[2])
    if run == 0 and wait == 0 and slices == 0:
        return None  # sched_info disabled: the kernel prints zeros, not an absence
    return SchedStat(run, wait, slices)


def _ms_to_ns(v: str) -> int | None:
    """`187.623569` (SPLIT_NS: ms, then 6 digits of ns) -> 187623569, without float rounding."""
    whole, _, frac = v.partition(".")
    if not (whole[1:] if whole[:1] == "-" else whole).isdecimal() or (frac and not frac.isdecimal()):  # one "-"
        return None
    ns = int(whole) * 1_000_000 + int((frac + "000000")[:6])
    return ns if ns >= 0 else None


def parse_sched_wait(text: str | None) -> SchedStat | None:
    """The `wait_sum` (or `se.statistics.wait_sum`) and `se.sum_exec_runtime` lines of a sched file,
    squeezed by the probe or not. None when schedstats are off (the line is then absent)."""
    if not text:
        return None
    wait = run = None
    for line in text.splitlines():
        k, sep, v = line.partition(":")
        if not sep:
            continue
        k = k.strip()
        if k in ("wait_sum", "se.statistics.wait_sum"):
            wait = _ms_to_ns(v.strip())
        elif k == "se.sum_exec_runtime":
            run = _ms_to_ns(v.strip())
    if wait is None:
        return None
    return SchedStat(run, wait, None, "wait_sum")


def _header_cpus(line: str) -> list[int]:
    return [int(w[3:]) for w in line.split() if w.startswith("CPU") and w[3:].isdecimal()]


def parse_softirqs(text: str | None) -> dict[str, dict[int, int]]:
    """/proc/softirqs -> {kind: {cpu: count since boot}}, columns mapped through the header."""
    if not text:
        return {}
    lines = text.splitlines()
    cols = _header_cpus(lines[0])
    out: dict[str, dict[int, int]] = {}
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        ws = rest.split()[:len(cols)]
        if all(map(str.isdecimal, ws)):  # the usual line: one C-level pass per step
            counts = dict(zip(cols, map(int, ws)))
        else:
            counts = {}
            for cpu, w in zip(cols, ws):
                if not w.isdecimal():
                    break
                counts[cpu] = int(w)
        out[name.strip()] = counts
    return out


# arm64 names its IPIs by number; the description says which is which (arch/arm64/kernel/smp.c ipi_types)
_IPI_BY_DESC = {"Local timer interrupts": "LOC", "Rescheduling interrupts": "RES",
                "Function call interrupts": "CAL", "TLB shootdowns": "TLB"}
IPI_KINDS = ("LOC", "RES")


def parse_ipis(text: str | None, kinds=IPI_KINDS) -> dict[str, dict[int, int]]:
    """The per-CPU timer and IPI rows of /proc/interrupts -> {"LOC": {cpu: n}, "RES": {cpu: n}}.
    x86 names the rows; arm64 has `IPIn:` rows named by their description, and its local timer is the
    per-CPU `arch_timer` IRQ."""
    if not text:
        return {}
    lines = text.splitlines()
    cols = _header_cpus(lines[0])
    out: dict[str, dict[int, int]] = {}
    for line in lines[1:]:
        name, sep, rest = line.partition(":")
        if not sep:
            continue
        name = name.strip()
        parts = rest.split()
        counts = {}
        for cpu, w in zip(cols, parts):
            if not w.isdecimal():
                break
            counts[cpu] = int(w)
        desc = " ".join(parts[len(counts):])
        if name.isdecimal():
            kind = "LOC" if desc.endswith("arch_timer") else None
        elif name.startswith("IPI"):
            kind = _IPI_BY_DESC.get(desc)
        else:
            kind = name
        if kind is not None and kind in kinds and counts:
            have = out.setdefault(kind, {})
            for cpu, n in counts.items():
                have[cpu] = have.get(cpu, 0) + n
    return out
