"""The CPU pane: role, owners, siblings, socket/NUMA/L3, load, kernel noise and run-queue wait sparklines,
softirqs and timer/IPIs per second, IRQs, and the tasks that last ran on it (with their run-queue wait).

While it is open the collector reads this CPU deeper every tick (the every-task scan, schedstat for the
tasks that last ran here, /proc/interrupts): depth follows the view."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display
from pinscope.tui.cells import cells
from pinscope.tui.evidence import finding_text
from pinscope.tui.human import value, yes_no
from pinscope.tui.screens.drill import DrillScreen
from pinscope.tui.state import NodeView
from pinscope.tui.widgets.readiness import cpu_block
from pinscope.tui.widgets.sparkbar import sparkbar


class CpuScreen(DrillScreen):
    def __init__(self, view: NodeView, cpu: int) -> None:
        super().__init__(view)
        self.cpu = cpu

    def title_text(self) -> str:
        return f"CPU {self.cpu}"

    def body(self) -> ComposeResult:
        yield Static("", id="cpu-info")
        yield Static("load, last 60 samples (scale 0-100 %)", classes="pane-title")
        yield Static("", id="cpu-load")
        yield Static("kernel noise (irq + softirq + steal share), last 60 samples", classes="pane-title")
        yield Static("", id="cpu-noise")
        yield Static("run-queue wait of the threads that last ran here (schedstat), ms per second", classes="pane-title")
        yield Static("", id="cpu-wait")
        yield Static("softirqs on this CPU", classes="pane-title")
        yield DataTable(id="cpu-softirqs", cursor_type="row")
        yield Static("IRQs whose effective affinity includes this CPU", classes="pane-title")
        yield DataTable(id="cpu-irqs", cursor_type="row")
        yield Static("tasks that last ran on this CPU", classes="pane-title")
        yield DataTable(id="cpu-tasks", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#cpu-irqs", DataTable).add_columns("irq", "device", "affinity", "count here")
        self.query_one("#cpu-tasks", DataTable).add_columns("tid", "pid", "comm", "state", "owner", "wait ms/s",
                                                            "on-CPU ms/s")
        self.query_one("#cpu-softirqs", DataTable).add_columns("kind", "per second", "since boot")
        self.nav.set_focus_cpu(self.view.target, self.cpu)
        # DrillScreen.on_mount runs next: Textual calls every class's on_mount along the MRO

    def on_unmount(self) -> None:
        self.nav.set_focus_cpu(self.view.target, None)

    def render_body(self) -> None:
        v = self.view
        if v.snap is None:
            return
        self.query_one("#cpu-info", Static).update(cpu_info(v, self.cpu))
        load, noise, wait = cpu_history(v, self.cpu)
        self.query_one("#cpu-load", Static).update(load)
        self.query_one("#cpu-noise", Static).update(noise)
        self.query_one("#cpu-wait", Static).update(wait)
        soft = self.query_one("#cpu-softirqs", DataTable)
        soft.clear()
        for row in softirq_rows(v, self.cpu):
            soft.add_row(*cells(row))
        irqs = self.query_one("#cpu-irqs", DataTable)
        irqs.clear()
        rows = irq_rows(v, self.cpu)
        if rows is None:
            irqs.add_row("-", "IRQs are read every 10th tick: not yet", "", "")
        for row in rows or ():
            irqs.add_row(*cells(row))
        tasks = self.query_one("#cpu-tasks", DataTable)
        tasks.clear()
        for row in task_rows(v, self.cpu):
            tasks.add_row(*cells(row))


# ---------------------------------------------------------------- the pane's text, pure (no Textual, no Pilot)

def cpu_info(v: NodeView, cpu: int) -> Text:
    """Role, place, owners, load and noise now, timer and IPIs, readiness and the findings naming the CPU."""
    snap = v.snap
    assert snap is not None
    c = snap.topology.cpu(cpu)
    r = snap.role_of(cpu)
    t = Text()
    t.append(f"CPU {cpu}: {r.role if r else '?'}\n", style="bold")
    if c:
        t.append(f"socket {value(c.socket)}  die {value(c.die)}  core {value(c.core)}  NUMA node {value(c.numa_node)}  "
                 f"L3 group {value(c.l3)}\n")
        t.append(f"SMT siblings {format_cpuset(c.siblings)}  online {yes_no(c.online)}\n")
    if snap.topology.isolated and cpu in snap.topology.isolated:
        t.append("isolcpus: yes (no load balancing)\n")
    if r and r.owners:
        t.append("owners (kubelet's cpu_manager_state):\n" if snap.assignment_known
                 else "owners (inferred from the cgroups: kubelet's assignment unknown):\n")
        for o in r.owners:
            t.append(display(f"  {o.namespace or '?'}/{o.pod or o.pod_uid}  {'held by the pod as a whole (pod-level)' if o.pod_level else f'container {o.container or chr(63)}'}  (uid {o.pod_uid})") + "\n")
    u = v.rates.util.get(cpu) if v.rates else None
    t.append(f"load now: {'-' if u is None else f'{u * 100:.1f}%'}")
    nz = v.rates.noise.get(cpu) if v.rates else None
    if nz is not None:
        t.append(f"   kernel noise {nz.total * 100:.1f}%  (irq {nz.irq * 100:.1f}  softirq {nz.softirq * 100:.1f}"
                 f"  steal {nz.steal * 100:.1f})")
    ipi = v.ipis.get(cpu)
    t.append("\ntimer (LOC) " + (f"{ipi.get('LOC', 0):.0f}/s" if ipi else "-")
             + "   rescheduling IPIs (RES) " + (f"{ipi.get('RES', 0):.0f}/s" if ipi else "-") + "\n")
    t.append_text(cpu_block(snap.readiness, cpu))
    for f in v.findings:
        if cpu in f.cpus:
            t.append_text(finding_text(f))
    return t


def cpu_history(v: NodeView, cpu: int) -> tuple[str, str, str]:
    """The load, kernel noise and run-queue wait sparklines, each with its latest and highest value."""
    hist = list(v.util_hist.get(cpu, ()))
    load = sparkbar(hist, 60, top=1.0) + (
        f"  now {hist[-1] * 100:.0f} %, max {max(hist) * 100:.0f} %" if hist else "  (no samples yet)")
    nh = list(v.noise_hist.get(cpu, ()))
    noise = sparkbar(nh, 60, top=max(0.1, max(nh, default=0))) + (
        f"  now {nh[-1] * 100:.1f} %, max {max(nh) * 100:.1f} %" if nh else "  (no samples yet)")
    wh = list(v.cpu_wait_hist.get(cpu, ()))
    wait = sparkbar(wh, 60, top=max(100.0, max(wh, default=0))) + (
        f"  now {wh[-1]:.0f} ms/s, max {max(wh):.0f} ms/s" if wh else "  (no samples yet: two ticks)")
    return load, noise, wait


def softirq_rows(v: NodeView, cpu: int) -> list[tuple[str, str, str]]:
    """(kind, per second, since boot) of each softirq on the CPU."""
    snap = v.snap
    assert snap is not None
    per_s = v.rates.softirqs.get(cpu, {}) if v.rates else {}
    since = snap.noise.softirqs if snap.noise else {}
    rows = []
    for kind, cpus in since.items():
        r = per_s.get(kind)
        rows.append((kind, "-" if r is None else f"{r:.0f}", str(cpus.get(cpu, 0))))
    return rows


def irq_rows(v: NodeView, cpu: int) -> list[tuple] | None:
    """(irq, device, affinity, count here) of the IRQs whose effective affinity holds the CPU; None: not read yet."""
    snap = v.snap
    assert snap is not None
    if snap.irqs is None:
        return None
    return [(q.irq, q.name, format_cpuset(q.cpus), str(q.per_cpu.get(cpu, 0))) for q in snap.irqs if cpu in q.cpus]


def task_rows(v: NodeView, cpu: int) -> list[tuple]:
    """The tasks that last ran on the CPU, the ones that waited most first: tid, pid, comm, state, owner,
    wait and on-CPU ms per second."""
    snap = v.snap
    assert snap is not None
    owner = {}
    sandbox = {}
    for p in snap.pods:
        for pid in p.pids:
            sandbox[pid] = f"{p.namespace or '?'}/{p.name or p.uid[:8]} (sandbox)"
    for p, ctr in snap.containers():
        for tk in ctr.tasks:
            owner[tk.tid] = f"{p.namespace or '?'}/{p.name or p.uid[:8]}/{ctr.name or '?'}"
    src = snap.all_tasks if snap.all_tasks is not None else [tk for _, ctr in snap.containers() for tk in ctr.tasks]
    tr = v.rates.tasks if v.rates else {}
    rows = []
    for tk in src:
        if tk.last_cpu == cpu:
            r = tr.get(tk.tid)
            w = r.wait_ms_per_s if r else None
            rows.append((-(w or 0), tk.tid, (str(tk.tid), str(tk.pid), tk.comm, tk.state,
                         owner.get(tk.tid) or sandbox.get(tk.pid) or ("kernel thread" if tk.kthread else "(not a pod)"),
                         "-" if w is None else f"{w:.0f}",
                         "-" if r is None or r.run_ms_per_s is None else f"{r.run_ms_per_s:.0f}")))
    return [row for *_, row in sorted(rows)]  # the threads that waited most first
