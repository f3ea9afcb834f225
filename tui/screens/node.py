"""The main screen: one node's core grid, legend, pinned-pod list, findings pane and filter."""
from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.widgets import DataTable, Footer, Input, Static
from pinscope.tui.screens.base import ReportScreen

from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display
from pinscope.tui.cells import cells
from pinscope.tui.state import NodeView
from pinscope.tui.widgets.coregrid import NOISE_FULL, CoreGrid

SEV_MARK = {"critical": "✖ critical", "warning": "▲ warning", "info": "· info"}


def pod_cpus(snap, uid: str) -> frozenset[int]:
    out: set[int] = set()
    for p in snap.pods:
        if p.uid == uid:
            for c in p.containers:
                if c.assigned:
                    out |= c.assigned
    return frozenset(out)


def matches(snap, query: str):
    """(pod, container) pairs whose namespace, pod or container name contains the query."""
    q = query.strip().lower()
    if not q:
        return []
    out = []
    for p in snap.pods:
        for c in p.containers:
            hay = f"{p.namespace or ''}/{p.name or p.uid}/{c.name or ''}".lower()
            if q in hay:
                out.append((p, c))
    return out


class NodeScreen(ReportScreen):
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="node.filter"),
        Binding("f", "findings", "Findings", id="node.findings"),
        Binding("c", "cpu", "CPU pane", id="node.cpu"),
        Binding("n", "node_info", "Node pane", id="node.info"),
        Binding("v", "toggle_shade", "Load/noise", id="node.shade"),
        Binding("right_square_bracket", "next_node", "Next node", id="node.next", show=False),
        Binding("left_square_bracket", "prev_node", "Prev node", id="node.prev", show=False),
        Binding("escape", "clear", "Back", id="node.back", show=False),
    ]

    def __init__(self, view: NodeView) -> None:
        super().__init__(view)
        self.filter_text = ""
        self._arranged_for: tuple | None = None  # the layout key the panes were last arranged for
        self._pod_rows: list | None = None  # what the pods and findings tables show (redrawn when it changes)
        self._finding_rows: list | None = None
        self._painted: dict = {}  # Static -> (its last text, the shape of that text)

    @property
    def grid_widget(self) -> CoreGrid:
        return self.query_one(CoreGrid)

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        # a grid layout: grid | legend + pods beside it, findings under both when asked (f); on a large
        # terminal ("roomy") the grid takes the whole width and the pods and findings go under it
        with Container(id="main"):
            yield CoreGrid(id="grid")
            with Vertical(id="side"):
                yield Static("", id="legend")
                yield DataTable(id="pods", cursor_type="row", zebra_stripes=False)
            yield DataTable(id="findings", cursor_type="row")
        yield Input(placeholder="filter: pod, namespace or container; Enter jumps, Esc clears", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        pods = self.query_one("#pods", DataTable)
        pods.add_columns("tag", "pod", "container", "cpus", "NUMA")
        fs = self.query_one("#findings", DataTable)
        fs.add_columns("severity", "code", "message")
        self.query_one(CoreGrid).focus()
        self.refresh_view()

    # ------------------------------------------------------------------ data
    def refresh_view(self) -> None:
        v = self.view
        grid = self.query_one(CoreGrid)
        grid.set_glyphs(self.nav.big_glyphs)
        grid.set_shade(self.nav.grid_shade)
        grid.set_view(v, self._highlight())
        self._arrange()  # after set_view: the grid measures the layout of this view
        self._status()
        self._legend()
        self._pods()
        self._findings()

    ROOMY = (160, 48)  # a war-room screen (200x60) is roomy; a laptop terminal is not
    MIN_TABLES = 14  # rows the pods and findings need under the grid to be worth it

    def on_resize(self) -> None:
        self._arrange()

    def _arrange(self) -> None:
        """Side by side, or (on a large terminal whose grid does not need every row) the grid over the
        full width with the pods and findings under it, so the war-room screen has no empty half."""
        v = self.view
        w, h = self.size
        tags = max(map(len, v.tags.values()), default=1)
        key = (id(v.snap.topology) if v.snap else None, w, h, tags)
        if key == self._arranged_for:
            return
        self._arranged_for = key
        main = self.query_one("#main")
        grid = self.query_one(CoreGrid)
        grid_rows = None
        if v.snap is not None and grid.view is v and w >= self.ROOMY[0] and h >= self.ROOMY[1]:
            room = h - 2 - self.MIN_TABLES  # status and footer lines
            density, rows = grid.choose(w, room)
            if "scrolling" not in density:
                grid_rows = len(rows)
        side = max(28, min(60, w * 2 // 5))
        if grid_rows is not None:
            main.add_class("roomy")
            main.styles.grid_columns = f"{side} 1fr"
            main.styles.grid_rows = f"{grid_rows} 1fr"
        else:
            main.remove_class("roomy")
            main.styles.grid_columns = f"1fr {side}"
            main.styles.grid_rows = "1fr 12"

    def _highlight(self) -> frozenset[int]:
        v = self.view
        if v.snap is None:
            return frozenset()
        if self.filter_text:
            return frozenset(filter_cpus(matches(v.snap, self.filter_text)))
        fs = self.query_one("#findings", DataTable)
        if fs.has_class("visible") and fs.has_focus and v.findings and fs.cursor_row < len(v.findings):
            return frozenset(v.findings[fs.cursor_row].cpus)
        grid = self.query_one(CoreGrid)
        r = v.snap.role_of(grid.cursor)
        if r and r.owners:
            return pod_cpus(v.snap, r.owners[0].pod_uid)
        return frozenset()

    def _status(self) -> None:
        v = self.view
        st = self.query_one("#status", Static)
        st.set_class(v.state == "stale", "stale")
        st.set_class(v.state == "down", "down")
        grid = self.query_one(CoreGrid)
        if v.snap is None:
            st.update(Text(display(f" {v.target}  {v.state}{': ' + v.message if v.message else ''}")))
            return
        s, k = v.snap, v.snap.kubelet
        n = {sev: sum(1 for f in v.findings if f.severity == sev) for sev in ("critical", "warning", "info")}
        age = time.monotonic() - v.last_update if v.last_update else 0
        rs = self.nav.replay_status  # a recording is not live: say where in it we are
        state = {"up": rs or "live", "stale": f"STALE {age:.0f}s", "down": f"DOWN ({v.message})",
                 "connecting": "connecting"}.get(v.state, v.state)
        idx = self.nav.targets.index(self.view.target) + 1
        t = Text()
        t.append(f" {display(s.node)} ", style="bold")
        if len(self.nav.targets) > 1:
            t.append(f"[{idx}/{len(self.nav.targets)}] ")
        t.append(display(f" {state}  policy {k.cpu_manager_policy or 'unknown'}  topology {k.topology_manager_policy}  "
                         f"cgroup v{s.cgroup_version} {s.cgroup_driver or ''}  {len(s.topology.online)}/{len(s.topology.cpus)} CPUs  "))
        t.append(f"✖{n['critical']} ", style="bold red" if n["critical"] else "")
        t.append(f"▲{n['warning']} ", style="bold yellow" if n["warning"] else "")
        t.append(f" density: {grid.density}")
        if grid.shade_mode == "noise":
            t.append("  shade: kernel noise", style="bold")
        if self.filter_text:
            t.append(f"  filter: {display(repr(self.filter_text))}")
        self._update(st, t)

    def _legend(self) -> None:
        g = self.query_one(CoreGrid).glyphs
        v = self.view
        t = Text()
        for role in ("exclusive", "reserved", "shared", "isolated", "offline", "unassigned"):
            t.append(f"{g[role]} {role}  ", style=self.query_one(CoreGrid)._style(role))
        noise = self.query_one(CoreGrid).shade_mode == "noise"
        if noise:
            t.append(f"\nshade = kernel noise ▁▂▃▄▅▆▇█ (irq+softirq+steal, full at {NOISE_FULL * 100:.0f} %)"
                     "\n! = finding   letter = pod")
            busiest = _busiest_softirqs(v.rates)
            if busiest:
                t.append(f"\nbusiest softirqs: {busiest}")
        else:
            t.append("\nshade = load ▁▂▃▄▅▆▇█   ! = finding   letter = pod")
        if v.snap and any(o.pod_level for r in v.snap.roles for o in r.owners):
            t.append("\nlower-case letter = CPUs the pod holds as a whole (pod-level resources)")
        if v.snap:
            c = v.snap.role_of(self.query_one(CoreGrid).cursor)
            cpu = v.snap.topology.cpu(c.id) if c else None
            if c and cpu:
                u = v.rates.util.get(c.id) if v.rates else None
                who = ", ".join(f"{o.namespace or '?'}/{o.pod or o.pod_uid[:8]}/"
                                + ("(whole pod)" if o.pod_level else o.container or "?") for o in c.owners)
                t.append(f"\ncpu{c.id}: {c.role}  socket {cpu.socket} NUMA {cpu.numa_node} core {cpu.core} "
                         f"sib {format_cpuset(cpu.siblings)}  load {'-' if u is None else f'{u * 100:.0f}%'}")
                nz = v.rates.noise.get(c.id) if v.rates else None
                if noise and nz is not None:
                    t.append(f"\n  noise {nz.total * 100:.1f}% (irq {nz.irq * 100:.1f}  softirq {nz.softirq * 100:.1f}"
                             f"  steal {nz.steal * 100:.1f})")
                if who:
                    t.append(f"\n  {display(who)}")
        self._update(self.query_one("#legend", Static), t)

    def _pods(self) -> None:
        v = self.view
        table = self.query_one("#pods", DataTable)
        if v.snap is None:
            table.clear()
            return
        cpu_node = {c.id: c.numa_node for c in v.snap.topology.cpus}
        q = self.filter_text
        rows = []
        for p in v.snap.pods:
            for c in p.containers:
                if not c.assigned:
                    continue
                if q and not matches_one(p, c, q):
                    continue
                nodes = sorted({n for x in c.assigned if (n := cpu_node.get(x)) is not None})
                rows.append((v.tags.get(p.uid, ""), f"{p.namespace or '?'}/{p.name or p.uid[:8]}",
                             c.name or "?", format_cpuset(c.assigned), format_cpuset(nodes)))
            held = v.snap.state.pod_level(p.uid) if v.snap.state is not None else frozenset()
            name = f"{p.namespace or '?'}/{p.name or p.uid[:8]}"
            if held and (not q or q.lower() in name.lower()):  # CPUs the pod holds as a whole (podEntries)
                held_nodes = sorted({n for x in held if (n := cpu_node.get(x)) is not None})
                rows.append((v.tags.get(p.uid, "").lower(), name, "(whole pod)", format_cpuset(held),
                             format_cpuset(held_nodes)))
        rows.sort(key=lambda r: (len(r[0]), r[0], r[2]))
        if rows == self._pod_rows:
            return  # unchanged: no repaint of the table
        self._pod_rows = rows
        row = table.cursor_row
        table.clear()
        for r in rows:
            table.add_row(*cells(r))
        if rows:
            table.move_cursor(row=min(row, len(rows) - 1))

    def _findings(self) -> None:
        table = self.query_one("#findings", DataTable)
        rows = [(SEV_MARK.get(f.severity, f.severity), f.code, f.message) for f in self.view.findings]
        if rows == self._finding_rows:
            return
        self._finding_rows = rows
        row = table.cursor_row
        table.clear()
        for r in rows:
            table.add_row(*cells(r))
        if self.view.findings:
            table.move_cursor(row=min(row, len(self.view.findings) - 1))

    # ------------------------------------------------------------------ events
    def on_core_grid_cursor_moved(self, event: CoreGrid.CursorMoved) -> None:
        if self.view.snap is None:
            return
        self.query_one(CoreGrid).set_highlight(self._highlight())
        self._legend()

    def on_core_grid_relaid(self, event: CoreGrid.Relaid) -> None:
        self._status()

    def on_core_grid_selected(self, event: CoreGrid.Selected) -> None:
        self.nav.open_cpu_or_container(self.view.target, event.cpu)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "findings":
            self.query_one(CoreGrid).set_highlight(self._highlight())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        v = self.view
        if event.data_table.id == "findings" and v.findings and event.cursor_row < len(v.findings):
            self.nav.open_finding(v.target, v.findings[event.cursor_row])
        elif event.data_table.id == "pods":
            rows = self._pod_rows or []
            if event.cursor_row >= len(rows) or v.snap is None:
                return
            label = rows[event.cursor_row]  # the raw names (the cells show them escaped)
            for p in v.snap.pods:
                for c in p.containers:
                    if c.assigned and f"{p.namespace or '?'}/{p.name or p.uid[:8]}" == label[1] and (c.name or "?") == label[2]:
                        self.nav.open_container(v.target, p.uid, c.id, c.name)
                        return

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.query_one(CoreGrid).set_highlight(self._highlight())
        self._pods()
        self._status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        v = self.view
        inp = self.query_one("#filter", Input)
        inp.remove_class("visible")
        grid = self.query_one(CoreGrid)
        grid.focus()
        if v.snap is None:
            return
        cpus = filter_cpus(matches(v.snap, self.filter_text))
        if cpus:
            grid.cursor = min(cpus)
        else:
            self.app.notify(display(f"no pod, namespace or container matches {self.filter_text!r}"), severity="warning",
                            markup=False)

    # ------------------------------------------------------------------ actions
    def action_filter(self) -> None:
        inp = self.query_one("#filter", Input)
        inp.add_class("visible")
        inp.focus()

    def action_clear(self) -> None:
        inp = self.query_one("#filter", Input)
        fs = self.query_one("#findings", DataTable)
        if inp.has_class("visible") or self.filter_text:
            inp.value = ""
            self.filter_text = ""
            inp.remove_class("visible")
        elif fs.has_class("visible"):
            fs.remove_class("visible")
        elif self.nav.back_to_fleet():
            return
        self.query_one(CoreGrid).focus()
        self.refresh_view()

    def action_findings(self) -> None:
        fs = self.query_one("#findings", DataTable)
        fs.toggle_class("visible")
        if fs.has_class("visible"):
            fs.focus()
        else:
            self.query_one(CoreGrid).focus()
        self.query_one(CoreGrid).set_highlight(self._highlight())

    def action_cpu(self) -> None:
        self.nav.open_cpu(self.view.target, self.query_one(CoreGrid).cursor)

    def action_toggle_shade(self) -> None:
        """The grid's shade: load, or kernel noise (irq + softirq + steal share of each CPU)."""
        self.nav.grid_shade = "noise" if self.nav.grid_shade == "load" else "load"
        self.refresh_view()

    def action_node_info(self) -> None:
        self.nav.open_node_info(self.view.target)

    def action_next_node(self) -> None:
        self.nav.switch_node(+1)

    def action_prev_node(self) -> None:
        self.nav.switch_node(-1)


    def _update(self, w: Static, t: Text) -> None:
        """Static.update only when the text changed, and without a relayout of the screen when its shape
        (lines and their lengths) did not: a relayout every tick was most of the node screen's refresh."""
        last, last_shape = self._painted.get(w, (None, None))
        if last is not None and last == t:
            return
        shape = [len(ln) for ln in t.plain.split("\n")]
        w.update(t, layout=last is None or shape != last_shape)
        self._painted[w] = (t, shape)


def _busiest_softirqs(rates, n: int = 3) -> str:
    """The CPUs that take the most softirqs per second, with their top kind: "cpu1 NET_RX 3200/s, ..." """
    if rates is None or not rates.softirqs:
        return ""
    per_cpu = sorted(((sum(k.values()), cpu, k) for cpu, k in rates.softirqs.items()), reverse=True)[:n]
    out = []
    for total, cpu, kinds in per_cpu:
        if total <= 0:
            continue
        kind, rate = max(kinds.items(), key=lambda kv: kv[1])
        out.append(f"cpu{cpu} {total:.0f}/s ({kind} {rate:.0f}/s)")
    return ", ".join(out)


def filter_cpus(found) -> set[int]:
    """The CPUs a filter lights: the exclusive CPUs of the matches; only when none of them is pinned,
    the CPUs the (shared) matches may run on."""
    pinned: set[int] = set()
    for _, c in found:
        pinned |= c.assigned or set()
    if pinned:
        return pinned
    out: set[int] = set()
    for _, c in found:
        if c.cgroup and c.cgroup.cpus_effective:
            out |= c.cgroup.cpus_effective
    return out


def matches_one(p, c, q: str) -> bool:
    return q.strip().lower() in f"{p.namespace or ''}/{p.name or p.uid}/{c.name or ''}".lower()
