"""What the core grid shows of a node, as plain data: a NodeView in, a state per CPU out.

Pure functions, no Textual (nor Rich): the grid (tui/widgets/coregrid.py) lays the cells out and paints
what it is given; what each CPU is — its role, the share its shade shows (load or kernel noise), the tag of
the pod that owns it, its mark — is worked out here once per view and shade, and tested without Pilot
(tests/tui/test_presenter.py).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from pinscope.collectors.text import display
from pinscope.tui.state import NodeView

NOISE_FULL = 0.10  # the noise shade is full at 10 % of a CPU's time in irq + softirq + steal
# a core cell shows its most telling role: exclusive > isolated > reserved > unassigned > shared > offline
ROLE_ORDER = {"exclusive": 0, "isolated": 1, "reserved": 2, "unassigned": 3, "shared": 4, "offline": 5}
# a cell's mark, the worst of its CPUs': a finding's "!" (critical, warning), then "~" (pinned, not latency-ready)
MARK_RANK = {"critical": 0, "warning": 1, "notready": 2}


class CpuState(NamedTuple):
    """What one cell of the grid shows: a CPU's, or in the "cores" density a core's (merge).
    A NamedTuple, not a frozen dataclass: one is built per CPU per tick (collectors/model.py says why)."""

    role: str = "unassigned"  # a Role's word ("exclusive", "reserved", ...)
    share: float | None = None  # what the shade shows, 0-1 (load, or noise full at NOISE_FULL); None: unknown
    tag: str | None = None  # the owning pod's tag ("A"; lower case: held by the pod as a whole); None: no pod
    mark: str | None = None  # "critical" | "warning" ("!": a finding names it) | "notready" ("~") | None


UNASSIGNED = CpuState()  # a CPU no role names


@dataclass(frozen=True, slots=True)
class GridState:
    """Everything the grid draws of one view in one shade (besides the layout, a function of the topology)."""

    cpus: Mapping[int, CpuState]  # cpu -> its state (a CPU no role names: UNASSIGNED)
    devices: Mapping[int, str]  # NUMA node -> what its subheader adds: "  devices: gpu 0000:3b:00.0→A, ..."
    stale: bool  # the node stopped answering: the last frame shown, in the stale colour, marks left out


EMPTY = GridState({}, {}, False)


def present(view: NodeView | None, shade: str = "load") -> GridState:
    """The grid's plain data for `view` (EMPTY before the node's first frame)."""
    if view is None or view.snap is None:
        return EMPTY
    return GridState(cpu_states(view, shade), numa_devices(view), stale(view))


def stale(view: NodeView | None) -> bool:
    """The last frame is shown but the node is no longer up (stale or down)."""
    return view is not None and view.state != "up" and view.snap is not None


def shares(view: NodeView, shade: str = "load") -> Mapping[int, float]:
    """cpu -> the share its shade shows: "load" (busy share) or "noise" (irq + softirq + steal share, full at
    NOISE_FULL: a few per cent of kernel time is already the jitter an exclusive CPU is for)."""
    rates = view.rates
    if rates is None:
        return {}
    if shade == "noise":
        return {c: min(1.0, n.total / NOISE_FULL) for c, n in rates.noise.items()}
    return rates.util


def cpu_states(view: NodeView, shade: str = "load") -> dict[int, CpuState]:
    """cpu -> its state, for every CPU a role names (the grid shows the others UNASSIGNED)."""
    snap = view.snap
    if snap is None:
        return {}
    share = shares(view, shade)
    marks = view.cpu_marks()
    tags = view.tags
    out: dict[int, CpuState] = {}
    # tuple.__new__ builds the same CpuState without NamedTuple's Python-level __new__: half the cost, every CPU of
    # every tick (measured at 256 CPUs: 0.26 ms against 0.41 ms, the grid's whole update being ~3 ms)
    make = tuple.__new__
    for r in snap.roles:
        tag = tags.get(r.owners[0].pod_uid, "") if r.owners else None
        if tag and r.owners[0].pod_level:  # held by the pod as a whole: its tag in lower case
            tag = tag.lower()
        out[r.id] = make(CpuState, (r.role, share.get(r.id), tag, marks.get(r.id)))
    return out


def merge(members: Iterable[int], cpus: Mapping[int, CpuState]) -> CpuState:
    """The state of a cell that stands for several CPUs (a core, in the "cores" density): the most telling role
    (ROLE_ORDER), the highest share, the tag of the first member a pod owns, the worst mark (MARK_RANK)."""
    members = tuple(members)
    if len(members) == 1:
        return cpus.get(members[0], UNASSIGNED)
    role, share, tag, mark = None, None, None, None
    for m in members:
        st = cpus.get(m, UNASSIGNED)
        if role is None or ROLE_ORDER.get(st.role, 99) < ROLE_ORDER.get(role, 99):
            role = st.role
        if st.share is not None and (share is None or st.share > share):
            share = st.share
        if tag is None:
            tag = st.tag
        if st.mark in MARK_RANK and (mark is None or MARK_RANK[st.mark] < MARK_RANK[mark]):
            mark = st.mark
    return CpuState(role or "unassigned", share, tag, mark)


def numa_devices(view: NodeView) -> dict[int, str]:
    """NUMA node -> what its subheader adds: the devices kubelet handed out there and the pod tag holding
    each (ids come from the node: made safe for the terminal, long ones cut)."""
    if view.snap is None:
        return {}
    out: dict[int, list[str]] = {}
    for p, c in view.snap.containers():
        for d in c.devices:
            if d.numa_node is not None:
                who = view.tags.get(p.uid) or display(p.name or p.uid[:8])
                dev = display(d.device if len(d.device) <= 16 else d.device[:15] + "\u2026")
                out.setdefault(d.numa_node, []).append(f"{display(d.resource.rsplit('/', 1)[-1])} {dev}\u2192{who}")
    return {n: "  devices: " + ", ".join(sorted(items)) for n, items in out.items()}


def waiting_note(view: NodeView | None) -> str:
    """What the grid says before the node's first frame: why it is down, what it waits for, or that it waits."""
    if view is not None and view.state in ("down", "connecting") and view.message:
        return display(f"{view.target}: {view.message}")  # down: why; connecting: what it waits for
    return "waiting for the first frame from " + (display(view.target) if view else "the node") + " ..."


# --- kubelet's live view (its PodResources API), as the "what fits" pane shows it ----------------------------


class Line(NamedTuple):
    """One line of a pane's text: what it says (made safe for the terminal) and how it looks: "" plain, "bold",
    "warn" (a held disagreement: bold, "▲" before it so it reads in monochrome), "dim" (what backs a line)."""

    text: str
    style: str = ""


LABELS = ("PodResources", "checkpoint", "cgroup")  # the three values of a container, in this order everywhere


def live_summary(report, width: int = 60) -> Line:
    """The one line: was kubelet's live view reached (if not, why, in plain words), when was it read, does it agree
    with its checkpoint and the kernel on the containers all three name. `report`: a NodeReport, or None. Said in
    full when it fits `width`, else in short."""
    live = report.live if report is not None else None
    if live is None:
        return Line("kubelet's live view: not asked for this report (a replay or a recording has none)", "dim")
    now = live.now
    if now.view.error:
        return Line(f"kubelet's live view: not reached: {now.view.why or 'see below'}", "bold")
    cpus = sum(d.what == "cpus" for d in now.disagreements)
    if report.snapshot.state_status != "ok":  # named() is 0: only memory and the kernel were compared
        long = short = shortest = (f"checkpoint not read; disagrees with the kernel on {cpus} container{_s(cpus)}" if cpus else
                        "checkpoint not read; agrees with the kernel")
    elif not now.disagreements:
        long = (f"agrees with its checkpoint and the kernel on {_all(now.named)} all three name" if now.named
                else "no container with exclusive CPUs for all three to name")
        short = shortest = f"agrees on {_all(now.named)}" if now.named else "nothing to compare"
    else:
        long, short, shortest = _differ(now.disagreements, now.named)
    mark = "▲ " if live.held() else ""
    for text in (f"{mark}kubelet's live view: read {_when(now.wall, report.t)}; {long}",
                 f"{mark}kubelet's live view (read {_when(now.wall, None)}): {short}",
                 f"{mark}kubelet's live view: {short}"):  # the time is in the details below
        if len(text) <= width:
            break
    else:
        text = f"{mark}kubelet's live view: {shortest}"
    return Line(text, "warn" if mark else "")


def _differ(disagreements, named: int) -> tuple[str, str, str]:
    """(long, short, shortest): how many containers differ, and where. kubelet is not said to disagree on a container
    where only the kernel differs (its in-memory state and checkpoint agree: STATE_CGROUP_DRIFT's, not
    PODRESOURCES_DISAGREES')."""
    cpu = [d for d in disagreements if d.what == "cpus"]
    kernel = sum(d.checkpoint is not None and d.kernel is not None and d.podresources == d.checkpoint for d in cpu)
    devs = len(disagreements) - len(cpu)
    long = short = shortest = ""
    if cpu:
        n, verb = len(cpu), "differs" if len(cpu) == 1 else "differ"
        of = f" of the {named}" if n <= named else ""
        ctrs = f"container{_s(named if of else n)}"
        where = [f"{n - kernel} where kubelet's in-memory state differs from its checkpoint" if n - kernel else "",
                 f"{kernel} where only the kernel differs" if kernel else ""]
        long = f"{n}{of} {ctrs} all three name {verb}: {', '.join(w for w in where if w)}"
        shortest = f"{n}{of.replace(' the', '')} {ctrs} {verb}"
        short = shortest + ("" if not kernel else ", only in the kernel" if kernel == n else f", {kernel} only in the kernel")
    if devs:
        long += f"{'; ' if cpu else ''}kubelet's in-memory state differs from its device checkpoint on {devs} container{_s(devs)}"
        short += f", {devs} on devices" if cpu else f"{devs} container{_s(devs)} {'differs' if devs == 1 else 'differ'} on devices"
        shortest += f", {devs} on devices" if cpu else f"{devs} on devices"
    return long, short, shortest


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _all(n: int) -> str:
    """"the 1 container", "both containers", "all 4 containers"."""
    return "the 1 container" if n == 1 else "both containers" if n == 2 else f"all {n} containers"


def _when(wall: float | None, frame: float | None) -> str:
    """"12:03:05, with this frame" / "..., 10 s before this frame" (`frame` None: the clock only): the local
    clock, as replay shows it."""
    if wall is None:
        return "with an earlier frame"
    import time

    at = time.strftime("%H:%M:%S", time.localtime(wall))
    if frame is None:
        return at
    if abs(frame - wall) < 0.5:
        return f"{at}, with this frame"
    return f"{at}, {frame - wall:.0f} s before this frame"


def live_lines(report, width: int = 60) -> list[Line]:
    """What the pane shows of kubelet's live view below its one line: why it was not reached (kubelet's words),
    each disagreement with its three values side by side (one under another when they do not fit `width`), what
    the live view adds that the node's files do not (allocatable CPUs, devices with their NUMA node)."""
    live = report.live if report is not None else None
    if live is None:
        return []
    v = live.now.view
    out = [Line("kubelet's live view (its PodResources API)", "bold")]
    if v.error:
        return out + [Line("  " + display(v.error)),
                      Line("  what fits is worked out from the node's files alone", "dim")]
    when, on = f"  read {_when(live.now.wall, report.t)}", f"on {display(v.socket)}"
    out += [Line(f"{when}, {on}", "dim")] if len(when) + len(on) + 2 <= width else [Line(when, "dim"), Line("  " + on, "dim")]
    held = set(live.held())
    for d in live.now.disagreements:
        out += _disagreement(d, d in held, live.seconds, width)
    if live.now.disagreements:
        out.append(Line("  what fits is worked out from the checkpoint; kubelet decides by its in-memory state", "dim"))
    out += _adds(v)
    out += [Line("  " + display(n), "dim") for n in v.notes]
    return out


def _disagreement(d, held: bool, seconds: float | None, width: int) -> list[Line]:
    from pinscope.tui.elide import elide_middle

    who = elide_middle(display(f"{d.namespace}/{d.pod}/{d.container}"), max(20, width - 2), keep_tail=len(display(d.container)))
    pr, cp, k = d.values()
    if held:
        state = f"held two rounds{f', {seconds:.0f} s apart' if seconds is not None else ''}"
    else:
        state = "seen once: a finding if the next round sees it again"
    head = [Line(f"▲ {who}" if held else f"  {who}", "warn" if held else "bold")]
    odd = d.odd_one()
    if len(odd) + len(state) + 6 <= width:
        head.append(Line(f"    {odd}; {state}"))
    else:
        head += [Line(f"    {odd}"), Line(f"    {state}")]
    labels = LABELS if d.what == "cpus" else ("PodResources", "device checkpoint")
    vals = (pr, cp, k) if d.what == "cpus" else (pr, cp)
    side = "    " + ("" if d.what == "cpus" else display(d.what) + ": ") + "  ".join(
        f"{lab} {display(x)}" for lab, x in zip(labels, vals))
    if len(side) <= width:
        return head + [Line(side)]
    pad = max(len(lab) for lab in labels)
    return head + [Line(f"    {lab:<{pad}}  {display(x)}") for lab, x in zip(labels, vals)]


def _adds(v) -> list[Line]:
    """What kubelet's live view adds to the node's files: the CPUs it may hand out, its devices' NUMA nodes."""
    from pinscope.collectors.podresources import fmt

    out = []
    if v.allocatable_cpus:
        out.append(Line(f"  kubelet may hand out CPUs {fmt(v.allocatable_cpus)} (GetAllocatableResources)"))
    elif not v.notes:  # a kubelet that does not serve GetAllocatableResources: its note says so
        out.append(Line("  kubelet lists no CPUs it may hand out exclusively (GetAllocatableResources)"))
    holder: dict[tuple[str, str], str] = {}
    devices: dict[tuple[str, str], tuple[int, ...]] = {}
    for p in v.pods:
        for c in p.containers:
            for dev in c.devices:
                for i in dev.ids:
                    holder[(dev.resource, i)] = f"{p.namespace}/{p.name}/{c.name}"
                    devices[(dev.resource, i)] = dev.numa_nodes
    for dev in v.allocatable_devices:
        for i in dev.ids:
            devices.setdefault((dev.resource, i), dev.numa_nodes)
    if not devices:
        return out + [Line("  devices: none listed by kubelet", "dim")]
    # the device checkpoint keys a held device by its NUMA node, but lists the others (RegisteredDevices) without
    out.append(Line("  devices with their NUMA node, free ones too (the checkpoint's free devices have none):"))
    for (res, i), numa in sorted(devices.items(), key=lambda kv: (kv[1] or (1 << 30,), kv[0])):
        where = "NUMA " + ",".join(map(str, numa)) if numa else "no NUMA"  # kubelet knows none for it
        out.append(Line(f"    {where:<7} {display(res)} {display(i)}"))
        who = holder.get((res, i))
        out.append(Line("            " + (f"held by {display(who)}" if who else "free"), "" if who else "dim"))
    return out
