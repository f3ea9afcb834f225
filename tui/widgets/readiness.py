"""Latency readiness as text (issue 37): the CPU pane's block and the node pane's checklist with its score.

Pure functions of collectors.assemble.readiness.NodeReadiness -> rich Text; words, not colours, carry the
status ([ok] [NO] [n/a] [?]), so both read in monochrome and in the colour-blind theme."""
from __future__ import annotations

from rich.text import Text

from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display

MARK = {"ok": "[ok] ", "no": "[NO] ", "n/a": "[n/a]", "unknown": "[?]  "}


def _yn(v: bool | None) -> str:
    return "?" if v is None else ("yes" if v else "no")


def _mhz(khz: int | None) -> str:
    return "?" if khz is None else f"{khz // 1000}"


def cpu_block(r, cpu: int) -> Text:
    """The CPU pane's readiness block: what the kernel does to this CPU, and why it is not ready if pinned."""
    t = Text()
    t.append("latency readiness\n", style="bold")
    if r is None:
        t.append("  not read yet\n", style="dim")
        return t
    c = r.cpus.get(cpu)
    if c is None:
        t.append("  offline or unknown\n", style="dim")
        return t
    t.append(f"  isolated {_yn(c.isolated)}   nohz_full {_yn(c.nohz_full)}   rcu_nocb {_yn(c.rcu_nocb)}   "
             f"IRQs allowed {_yn(c.irqs_allowed)}\n")
    if c.governor is None:
        freq = "governor - (no cpufreq: not applicable)"
    else:
        freq = f"governor {display(c.governor)}   {_mhz(c.min_khz)}-{_mhz(c.max_khz)} of {_mhz(c.hw_max_khz)} MHz"
    if c.deepest is None:
        idle = "deepest C-state - (no cpuidle)"
    else:
        qos = "no limit" if c.qos_us is None else f"{c.qos_us} µs"
        idle = f"deepest C-state {display(c.deepest.name)} {c.deepest.latency_us} µs (PM QoS {qos})"
    t.append(f"  {freq}   {idle}\n")
    why = r.reasons.get(cpu)
    if why:
        t.append("  pinned but not ready: " + "; ".join(why) + "\n", style="bold")
    return t


def checklist(r) -> Text:
    """The node pane's checklist: each check with its status, evidence and fix; the score counts only the
    checks that apply (ok and NO)."""
    t = Text()
    if r is None:
        t.append("latency readiness: not read yet\n", style="bold")
        return t
    ok, of = r.score
    judged = (f"exclusive CPUs {format_cpuset(r.target)}" if r.target_from == "exclusive"
              else f"the isolated CPUs {format_cpuset(r.target)}" if r.target else "no pinned or isolated CPU")
    t.append(f"latency readiness: {ok} of {of}", style="bold")
    t.append(f"   (judging {judged})\n")
    for c in r.checks:
        t.append(f"  {MARK.get(c.status, '[?]  ')} {c.title:<40} ")
        t.append(display(c.detail) + "\n", style="dim" if c.status in ("n/a", "unknown") else "")
        if c.status == "no" and c.fix:
            t.append(f"        fix: {display(c.fix)}\n", style="dim")
    raw = r.raw
    extra = []
    if raw.tuned_profile:
        extra.append(f"tuned {display(raw.tuned_profile)}")
    extra.append("irqbalance " + {None: "?", True: "runs", False: "does not run"}[r.irqbalance_running])
    if raw.intel_pstate:
        extra.append(f"intel_pstate {display(raw.intel_pstate)}" + (" no_turbo" if raw.no_turbo else ""))
    for n, size, total, free in raw.hugepages:
        if total:
            extra.append(f"node{n} hugepages-{size}kB {free}/{total} free")
    t.append("  " + "   ".join(extra) + "\n", style="dim")
    return t
