"""The container pane: identity, QoS, kubelet's assignment beside the kernel's, run-queue wait beside
on-CPU time (schedstat, every tick while the pane is open) and cpu.pressure, raw cgroup files, tasks."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display
from pinscope.tui.cells import cells
from pinscope.tui.elide import elide_path
from pinscope.tui.evidence import finding_text
from pinscope.tui.human import amounts
from pinscope.tui.screens.drill import DrillScreen
from pinscope.tui.state import NodeView
from pinscope.tui.widgets.sparkbar import sparkbar



_FROM = {"pci": "sysfs", "nvidia": "nvidia procfs", "checkpoint": "plugin", "": "unknown"}


def _devices_text(v: NodeView, p, c) -> Text:
    """Its devices (kubelet's device checkpoint): resource, id, NUMA node and how that is known, against the NUMA
    nodes of its exclusive CPUs; a device on another node is marked (DEVICE_CROSS_NUMA says why)."""
    node_of = {x.id: x.numa_node for x in v.snap.topology.cpus} if v.snap else {}
    nodes = sorted({n for n in (node_of.get(x) for x in c.assigned or ()) if n is not None})
    t = Text("\ndevices" + (f" (its CPUs on NUMA {','.join(map(str, nodes))})" if nodes else "") + ":")
    for d in c.devices:
        numa = "NUMA ?" if d.numa_node is None else f"NUMA {d.numa_node}"
        far = bool(nodes) and d.numa_node is not None and d.numa_node not in nodes
        t.append("\n  " + display(f"{d.resource}  {d.device}") + "  ")
        t.append(numa, style="bold red reverse" if far else "bold")
        t.append(f" ({_FROM.get(d.numa_from, d.numa_from)})" + ("   FAR FROM ITS CPUS" if far else ""),
                 style="bold red" if far else "dim")
    return t


def _claims_text(p) -> Text:
    """The DRA ResourceClaims kubelet prepared for its pod (kubelet's DRA checkpoint names claims per pod; which
    container uses which is in the pod's spec), each with its driver, pool and device."""
    t = Text("\npod's DRA claims:")
    for cl in p.claims:
        devs = ", ".join(f"{d.driver}/{d.pool}/{d.device}" for d in cl.devices) or "no device"
        t.append("\n  " + display(f"{cl.name}  {devs}"))
    return t


class ContainerScreen(DrillScreen):
    def __init__(self, view: NodeView, pod_uid: str, container_id: str | None, name: str | None) -> None:
        super().__init__(view)
        self.pod_uid, self.cid, self.cname = pod_uid, container_id, name

    def title_text(self) -> str:
        return display(f"container {self.cname or self.cid}")

    def body(self) -> ComposeResult:
        yield Static("", id="ctr-info")
        yield Static("run-queue wait of its threads (schedstat), ms per second, last 60 samples", classes="pane-title")
        yield Static("", id="ctr-runq")
        yield Static("tasks", classes="pane-title")
        yield DataTable(id="ctr-tasks", cursor_type="row")
        yield Static("cgroup files", classes="pane-title")
        yield Static("", id="ctr-files", classes="raw")

    def on_mount(self) -> None:
        self.query_one("#ctr-tasks", DataTable).add_columns(
            "tid", "comm", "last CPU", "allowed", "wait ms/s", "on-CPU ms/s", "migr/s", "vol/s", "invol/s",
            "migrations (60)")
        self.nav.set_focus_container(self.view.target, self.cid)
        # DrillScreen.on_mount runs next: Textual calls every class's on_mount along the MRO

    def on_resize(self) -> None:
        self.render_body()

    def on_unmount(self) -> None:
        self.nav.set_focus_container(self.view.target, None)

    def _find(self):
        snap = self.view.snap
        if snap is None:
            return None, None
        for p in snap.pods:
            if p.uid == self.pod_uid:
                for c in p.containers:
                    if (self.cid and c.id == self.cid) or (not self.cid and c.name == self.cname):
                        return p, c
                return p, None
        return None, None

    def render_body(self) -> None:
        v = self.view
        p, c = self._find()
        info = self.query_one("#ctr-info", Static)
        if p is None or c is None:
            info.update(Text("this container is gone from the node (or not read yet)", style="bold"))
            return
        info.update(container_info(v, p, c))
        self.query_one("#ctr-runq", Static).update(runq_line(v, p, c))
        tasks = self.query_one("#ctr-tasks", DataTable)
        tasks.clear()
        for row in task_rows(v, c):
            tasks.add_row(*cells(row))
        width = max(20, self.size.width - 4)  # the pane's padding and scrollbar
        self.query_one("#ctr-files", Static).update(files_text(c.cgroup, width))


# ---------------------------------------------------------------- the pane's text, pure (no Textual, no Pilot)

def container_info(v: NodeView, p, c) -> Text:
    """Who it is, kubelet's assignment beside the kernel's, the findings about it, its cgroup's limits,
    memory per NUMA node, devices and claims, and its rates."""
    t = _identity_text(v, p, c)
    t.append_text(_assignment_text(v, p, c))
    for f in v.findings:  # the findings about this container, whole (the node screen's pane wraps them)
        if f.pod_uid == p.uid and f.container == c.name:
            t.append_text(finding_text(f))
    t.append_text(_cgroup_text(c))
    t.append_text(_hugepages_text(v, p, c))
    if c.devices:
        t.append_text(_devices_text(v, p, c))
    if p.claims:
        t.append_text(_claims_text(p))
    if c.unresolved:
        t.append(f"\nunresolved: {c.unresolved}", style="dim")
    cr = v.crates.get((p.uid, c.id))
    if cr:
        t.append_text(_rates_text(cr))
    return t


def _identity_text(v: NodeView, p, c) -> Text:
    """Names, uid, QoS, runtime and id; what the API says of its pod (owner, QoS, requests and limits)."""
    t = Text()
    t.append(display(f"{p.namespace or '?'}/{p.name or '?'}  container {c.name or '?'}") + "\n", style="bold")
    t.append(display(f"pod uid {p.uid}   QoS {p.qos or '?'}   runtime {c.runtime or '?'}   id {c.id or '-'}") + "\n")
    ap = v.api_pods.get(p.uid)
    if ap is not None:
        ac = next((x for x in ap.containers if x.name == c.name), None)
        t.append(display(f"API: owner {ap.owner or '-'}   QoS {ap.qos or '?'}"
                         + (f"   requests {amounts(ac.requests)}   limits {amounts(ac.limits)}" if ac else "")) + "\n")
    elif v.api_error:
        t.append(display(f"API: {v.api_error}") + "\n", style="dim")
    return t


def _assignment_text(v: NodeView, p, c) -> Text:
    """kubelet's assignment beside the kernel's effective cpuset, marked when they differ (STATE_CGROUP_DRIFT)."""
    t = Text()
    eff = c.cgroup.cpus_effective if c.cgroup else None
    asg = c.assigned
    t.append("kubelet assignment: ")
    if asg is None and v.snap is not None and not v.snap.assignment_known:  # its state file was not read
        t.append("unknown", style="bold")
        t.append(" (cpu_manager_state not read)")
    else:
        t.append(format_cpuset(asg) if asg is not None else "shared pool", style="bold")
    t.append("    kernel cpuset.cpus.effective: ")
    mismatch = any(f.code == "STATE_CGROUP_DRIFT" and f.pod_uid == p.uid and f.container == c.name
                   for f in v.findings)
    t.append(format_cpuset(eff) if eff is not None else "-", style="bold red reverse" if mismatch else "bold")
    if mismatch:
        t.append("   MISMATCH", style="bold red")
    t.append("\n")
    return t


def _cgroup_text(c) -> Text:
    """Its cgroup's mems, quota and throttling; memory per NUMA node (read for the container in focus only)."""
    t = Text()
    cg = c.cgroup
    if cg:
        t.append(f"mems {format_cpuset(cg.mems_effective) if cg.mems_effective is not None else '-'}   ")
        quota = f"{cg.quota_us / cg.period_us:.2f} CPUs" if cg.quota_us and cg.period_us else "none (max)"
        t.append(f"CFS quota {quota}   nr_throttled {cg.nr_throttled if cg.nr_throttled is not None else '-'}")
    if c.memory_numa:  # memory.numa_stat, read for the container in focus only
        unit = c.memory_numa["unit"]
        per = "   ".join(f"N{n} " + (f"{(v['anon'] + v['file']) / 2**20:.1f} MiB" if unit == "bytes"
                                    else f"{v['anon'] + v['file']} pages")
                         for n, v in c.memory_numa["nodes"].items())
        t.append(f"\nmemory per NUMA node (anon+file): {per}")
    return t


def _size(b: int) -> str:
    return f"{b / 2**30:.1f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"


def _hugepages_text(v: NodeView, p, c) -> Text:
    """Its hugepages in use per NUMA node (hugetlb numa_stat, or v1's usage on its one mems node) and the memory
    manager's blocks, from the readiness judging (static ticks); a node none of its CPUs sit on is marked."""
    t = Text()
    r = v.snap.readiness if v.snap is not None else None
    cr = next((x for x in r.containers if x.pod_uid == p.uid and x.container == c.name), None) if r else None
    if cr is None:
        return t
    far = " (not its CPUs' NUMA node)"
    known = cr.cpu_nodes_known  # its CPUs' NUMA nodes all known: else "far" is a guess, never marked
    used = [f"{s} N{n} {_size(b)}" + (far if known and n not in cr.cpu_nodes else "")
            for s, per in sorted(cr.hugetlb_nodes.items()) for n, b in sorted(per.items()) if b]
    used += [f"{s} {_size(b)} on NUMA node unknown (mems {format_cpuset(cr.mems or frozenset()) or '?'})"
             for s, b in sorted(cr.hugetlb_unplaced.items())]
    if used:
        t.append("\nhugepages in use: " + "   ".join(used))
    blocks = [f"{b.type} {_size(b.size)} on N{format_cpuset(frozenset(b.numa_nodes))}"
              + (far if known and not set(b.numa_nodes) <= cr.cpu_nodes else "") for b in cr.memory_manager_blocks]
    if blocks:
        t.append("\nmemory manager: " + "   ".join(blocks))
    return t


def _rates_text(cr) -> Text:
    """Throttling, migrations, context switches, run-queue wait (and its worst thread), cpu.pressure."""
    t = Text()
    thr = "-" if cr.throttled_per_s is None else f"{cr.throttled_per_s:.1f}/s"
    mig = "-" if cr.migrations_per_s is None else f"{cr.migrations_per_s:.1f}/s ({cr.migrations_source})"
    t.append(f"\nthrottled periods {thr}   migrations {mig}   "
             f"context switches {'-' if cr.ctx_switches_per_s is None else f'{cr.ctx_switches_per_s:.0f}/s'}")
    wait = "-" if cr.runq_wait_ms_per_s is None else f"{cr.runq_wait_ms_per_s:.0f} ms/s"
    t.append(f"\nrun-queue wait {wait}")
    if cr.runq_worst:
        tid, comm, ms, cpu = cr.runq_worst
        t.append(f" (most: {display(comm)} tid {tid}, {ms:.0f} ms/s on CPU {cpu})")
    if cr.pressure_some_ms_per_s is not None:
        t.append(f"   cpu.pressure some {cr.pressure_some_ms_per_s:.0f} ms/s")
    return t


def runq_line(v: NodeView, p, c) -> str:
    """The run-queue wait sparkline of its threads, with the latest and highest value."""
    rh = list(v.runq_hist.get((p.uid, c.id), ()))
    return sparkbar(rh, 60, top=max(100.0, max(rh, default=0))) + (
        f"  now {rh[-1]:.0f} ms/s, max {max(rh):.0f} ms/s" if rh else "  (no samples yet: two ticks)")


def task_rows(v: NodeView, c) -> list[tuple]:
    """Each task: tid, comm, last CPU, allowed CPUs, wait and on-CPU ms/s, migrations and switches per second,
    the migrations sparkline."""
    tr = v.rates.tasks if v.rates else {}
    rows = []
    for tk in c.tasks:
        r = tr.get(tk.tid)
        num = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
        rows.append((str(tk.tid), tk.comm, str(tk.last_cpu), format_cpuset(tk.allowed) if tk.allowed is not None else "-",
                     num(r.wait_ms_per_s if r else None), num(r.run_ms_per_s if r else None),
                     num(r.migrations_per_s if r else None), num(r.voluntary_per_s if r else None),
                     num(r.involuntary_per_s if r else None), sparkbar(v.mig_hist.get(tk.tid, ()), 30)))
    return rows


def files_text(cg, width: int) -> Text:
    """The cgroup's raw files, each under its path (elided to `width`, never the file name)."""
    files = Text()
    if cg is None:
        files.append("no cgroup: the container has exited (kubelet keeps its CPUs in the state file)")
        return files
    for name, text in cg.raw.items():
        d = cg.cpu_path if (cg.version == 1 and name.startswith("cpu.")) else cg.path
        # long cgroup paths lose their middle, never the file name (cpuset.cpus, cpu.max...)
        files.append(elide_path(display(f"{d}/{name}"), width) + "\n", style="bold")
        files.append("".join(f"    {display(line)}\n" for line in text.split("\n")[:-1] or text.split("\n"))
                     if text else "    (empty)\n")
    return files
