"""The CPU pane: role, owners, siblings, socket/NUMA/L3, load sparkline, IRQs, tasks that last ran on it."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from collectors.parse.cpuset import format_cpuset
from tui.screens.drill import DrillScreen
from tui.widgets.sparkbar import sparkbar


class CpuScreen(DrillScreen):
    def __init__(self, target: str, cpu: int) -> None:
        super().__init__(target)
        self.cpu = cpu

    def title_text(self) -> str:
        return f"CPU {self.cpu}"

    def body(self) -> ComposeResult:
        yield Static("", id="cpu-info")
        yield Static("load, last 60 samples (scale 0-100 %)", classes="pane-title")
        yield Static("", id="cpu-load")
        yield Static("IRQs whose effective affinity includes this CPU", classes="pane-title")
        yield DataTable(id="cpu-irqs", cursor_type="row")
        yield Static("tasks that last ran on this CPU", classes="pane-title")
        yield DataTable(id="cpu-tasks", cursor_type="row")

    def on_mount(self) -> None:
        self.query_one("#cpu-irqs", DataTable).add_columns("irq", "device", "affinity", "count here")
        self.query_one("#cpu-tasks", DataTable).add_columns("tid", "pid", "comm", "state", "owner")
        super().on_mount()

    def render_body(self) -> None:
        v = self.view
        snap = v.snap
        if snap is None:
            return
        c = snap.topology.cpu(self.cpu)
        r = snap.role_of(self.cpu)
        t = Text()
        t.append(f"CPU {self.cpu}: {r.role if r else '?'}\n", style="bold")
        if c:
            t.append(f"socket {c.socket}  die {c.die}  core {c.core}  NUMA node {c.numa_node}  L3 group {c.l3}\n")
            t.append(f"SMT siblings {format_cpuset(c.siblings)}  online {c.online}\n")
        if snap.topology.isolated and self.cpu in snap.topology.isolated:
            t.append("isolcpus: yes (no load balancing)\n")
        if r and r.owners:
            t.append("owners (kubelet's cpu_manager_state):\n")
            for o in r.owners:
                t.append(f"  {o.namespace or '?'}/{o.pod or o.pod_uid}  container {o.container or '?'}  (uid {o.pod_uid})\n")
        u = v.rates.util.get(self.cpu) if v.rates else None
        t.append(f"load now: {'-' if u is None else f'{u * 100:.1f}%'}\n")
        for f in v.findings:
            if self.cpu in f.cpus:
                t.append(f"{f.severity}: {f.code}: {f.message}\n", style="bold")
        self.query_one("#cpu-info", Static).update(t)
        hist = list(v.util_hist.get(self.cpu, ()))
        self.query_one("#cpu-load", Static).update(
            sparkbar(hist, 60, top=1.0) + (f"  now {hist[-1] * 100:.0f} %, max {max(hist) * 100:.0f} %" if hist else "  (no samples yet)"))
        irqs = self.query_one("#cpu-irqs", DataTable)
        irqs.clear()
        if snap.irqs is None:
            irqs.add_row("-", "IRQs are read every 10th tick: not yet", "", "")
        else:
            for q in snap.irqs:
                if self.cpu in q.cpus:
                    irqs.add_row(q.irq, q.name, format_cpuset(q.cpus), str(q.per_cpu.get(self.cpu, 0)))
        tasks = self.query_one("#cpu-tasks", DataTable)
        tasks.clear()
        owner = {}
        sandbox = {}
        for p in snap.pods:
            for pid in p.pids:
                sandbox[pid] = f"{p.namespace or '?'}/{p.name or p.uid[:8]} (sandbox)"
        for p, ctr in snap.containers():
            for tk in ctr.tasks:
                owner[tk.tid] = f"{p.namespace or '?'}/{p.name or p.uid[:8]}/{ctr.name or '?'}"
        src = snap.all_tasks if snap.all_tasks is not None else [tk for _, ctr in snap.containers() for tk in ctr.tasks]
        for tk in src:
            if tk.last_cpu == self.cpu:
                tasks.add_row(str(tk.tid), str(tk.pid), tk.comm, tk.state,
                              owner.get(tk.tid) or sandbox.get(tk.pid) or ("kernel thread" if tk.kthread else "(not a pod)"))
