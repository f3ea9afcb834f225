"""The main screen: one node's core grid, legend, pinned-pod list, findings pane and filter.

Laid out by priority at every size (tui/screens/nodelayout.py says what goes where): the status line and
the worst finding always, then the grid, then the findings, the pods and the legend as room allows."""
from __future__ import annotations

import io
import time

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.widgets import DataTable, Footer, Input, Static
from pinscope.tui.screens.base import ReportScreen

from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display
from pinscope.tui.cells import cells
from pinscope.tui.elide import elide_middle
from pinscope.tui.screens import nodelayout as lay
from pinscope.tui.screens.nodequery import busiest_softirqs, filter_cpus, matches, matches_one, pod_cpus
from pinscope.tui.presenter import NOISE_FULL
from pinscope.tui.state import NodeView
from pinscope.tui.widgets.coregrid import CoreGrid, wrap_cells
from pinscope.tui.widgets.field import OrderedInput


# measures how a text wraps (cell widths, words) as Rich will draw it; it writes nowhere
_MEASURE = Console(file=io.StringIO(), width=400, color_system=None)


def _place(cpu) -> str:
    """Where a CPU sits ("socket 0 NUMA 1 core 7"): what the node said of it; an offline CPU's topology files
    are gone (the kernel removes them), so it has none ("socket None" was shown)."""
    known = [f"{k} {v}" for k, v in (("socket", cpu.socket), ("NUMA", cpu.numa_node), ("core", cpu.core))
             if v is not None]
    if known:
        return " ".join(known)
    return "no topology while offline" if not cpu.online else "place unknown"


def _wrapped_lines(t: Text, width: int) -> int:
    """The lines `t` takes `width` wide, as Rich wraps it: its own lines when each fits (no tab to expand),
    without wrapping it (a cursor move's legend lines: Rich's wrap was a tenth of the move's time)."""
    plain = t.plain
    lines = plain.split("\n")
    if "\t" not in plain and all(cell_len(ln) <= width for ln in lines):
        return len(lines)
    return len(t.wrap(_MEASURE, width))


def _entries(t: Text, entries: list[tuple[str, Style | str]], width: int, gap: str, trail: bool = False) -> None:
    """Append the legend's entries (text, style) to `t`, `gap` between them, a new line before an entry that
    would not fit in `width`: an entry is never broken (one longer than the line is left to Rich). `trail`:
    each entry's gap after it, in its style, the last one's too where it fits (the role colours' swatches)."""
    x = 0
    for i, (text, style) in enumerate(entries):
        x += cell_len(text)
        nxt = entries[i + 1][0] if i + 1 < len(entries) else None
        if nxt is not None and x + len(gap) + cell_len(nxt) > width:
            after, x = "\n", 0
        elif nxt is not None or (trail and x + len(gap) <= width):
            after, x = gap, x + len(gap)
        else:
            after = ""
        if trail and after == gap:  # one piece: the swatch and its gap, as one run of the role's colour
            t.append(text + gap, style=style)
        else:
            t.append(text, style=style)
            t.append(after)


class NodeScreen(ReportScreen):
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="node.filter"),
        Binding("f", "findings", "Findings", id="node.findings"),
        Binding("c", "cpu", "CPU pane", id="node.cpu"),
        Binding("n", "node_info", "Node pane", id="node.info"),
        Binding("w", "what_fits", "What fits", id="node.fit", show=False),
        Binding("v", "toggle_shade", "Load/noise", id="node.shade"),
        Binding("right_square_bracket", "next_node", "Next node", id="node.next", show=False),
        Binding("left_square_bracket", "prev_node", "Prev node", id="node.prev", show=False),
        Binding("escape", "clear", "Back", id="node.back", show=False),
    ]

    def __init__(self, view: NodeView) -> None:
        super().__init__(view)
        self.filter_text = ""
        self._arranged_for: tuple | None = None  # the layout key the panes were last arranged for
        # what the pods and findings tables show (redrawn when it changes), and what their rows stand for
        self._pod_rows: tuple | None = None
        self._pod_keys: list[tuple] = []  # (pod uid, container id, container name) per pods row
        self._finding_rows: list | None = None
        self._shown_findings: list = []  # the findings in the pane's order (the worst first)
        self._plan = lay.Plan(False, None, 32, 0, 80, True, ())  # until the first _arrange
        self._painted: dict = {}  # Static -> (its last text, the shape of that text)
        self._key_lines: tuple = (None, None, 0)  # the legend key's plain text, width, lines (text_lines)
        self._refs: dict = {}  # selector -> widget: what a cursor move touches, looked up once

    @property
    def grid_widget(self) -> CoreGrid:
        return self.query_one(CoreGrid)

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        yield Static("", id="worst")
        # a grid layout: grid | legend + pods beside it, findings under both; where the grid fits over
        # the whole width ("roomy": a war-room screen, a small node) the pods and findings go under it
        with Container(id="main"):
            yield CoreGrid(id="grid")
            with Vertical(id="side"):
                # the legend: its key, then the cursor's lines (a move repaints those alone)
                yield Static("", id="legend-key", classes="legend")
                yield Static("", id="legend-cursor", classes="legend")
                yield DataTable(id="pods", cursor_type="row", zebra_stripes=False)
            yield DataTable(id="findings", cursor_type="row", show_header=False)
        yield Static("", id="folded")
        yield OrderedInput(placeholder="filter: pod, namespace or container; Enter jumps, Esc clears", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        grid = self.query_one(CoreGrid)
        grid.cursor_listener = self.on_core_grid_cursor_moved  # the detail line in the cursor's own refresh
        grid.focus()
        self.refresh_view()

    # ------------------------------------------------------------------ data
    def refresh_view(self) -> None:
        if not self.is_attached:  # the app is ending (an exit signal while it started): its widgets are going
            return
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

    def on_resize(self) -> None:
        self._arrange()
        self._status()
        self._legend()
        self._pods()
        self._findings()

    def _arrange(self) -> None:
        """Where everything goes at this size (nodelayout.plan): the grid, then the findings, the pods and
        the legend as room allows; what did not fit is named in the help line."""
        v = self.view
        w, h = self.size
        grid = self.query_one(CoreGrid)
        fs = self.query_one("#findings", DataTable)
        expanded = fs.has_class("visible")
        legend_w = lay.side_width(w) - 3
        legend_lines = lay.text_lines(self._legend_text(legend_w).plain, legend_w)
        n_pods = len(self._pod_list())

        def finding_lines(fw: int) -> int:
            return sum(len(r[-1]) for r in lay.finding_rows(v.findings, fw, expanded))

        # what the plan depends on: the findings' wrapped lines at the widths it may give them, not their
        # words (a rate in a message changes every tick, its line count seldom)
        widths = (w, w - lay.side_width(w), w - w // 2)
        key = (id(v.snap.topology) if v.snap else None, w, h, max(map(len, v.tags.values()), default=1),
               tuple(finding_lines(fw) for fw in widths), n_pods, expanded, legend_lines, grid.forced)
        if key == self._arranged_for:
            return
        self._arranged_for = key

        def grid_rows(width: int, height: int) -> int | None:
            if v.snap is None or grid.view is not v or grid.forced:
                return None
            density, rows = grid.choose(width, height)
            return None if "scrolling" in density else len(rows)

        p = lay.plan(w, h, grid_rows, finding_lines, n_pods,
                     lambda lw: lay.text_lines(self._legend_text(lw).plain, lw), expanded)
        if p == self._plan and self.query_one("#main").styles.grid_rows:
            return  # the same arrangement: no relayout
        self._plan = p
        main = self.query_one("#main")
        main.set_class(p.stacked, "roomy")
        if p.stacked:
            main.styles.grid_columns = f"{p.side} 1fr"
            main.styles.grid_rows = f"{p.grid_rows} 1fr"
        else:
            main.styles.grid_columns = f"1fr {p.side}"
            main.styles.grid_rows = f"1fr {max(1, p.findings)}"
        fs.display = p.findings > 0
        self._one("#legend-key").display = p.legend
        self._show_cursor_display()
        folded = self.query_one("#folded", Static)
        folded.display = bool(p.folded)
        self._update(folded, Text(" " + "  ·  ".join(p.folded), style="italic"))

    def _one(self, selector: str):
        """query_one, once: the widgets a cursor move touches (the screen composes them once, never again)."""
        w = self._refs.get(selector)
        if w is None:
            w = self._refs[selector] = self.query_one(selector)
        return w

    def _highlight(self) -> frozenset[int]:
        v = self.view
        if v.snap is None:
            return frozenset()
        if self.filter_text:
            return frozenset(filter_cpus(matches(v.snap, self.filter_text)))
        fs = self.query_one("#findings", DataTable)
        shown = self._shown_findings
        if fs.display and fs.has_focus and shown and fs.cursor_row < len(shown):
            return frozenset(shown[fs.cursor_row].cpus)
        r = v.snap.role_of(self._one("#grid").cursor)
        if r and r.owners:
            return pod_cpus(v.snap, r.owners[0].pod_uid)
        return frozenset()

    def _status(self) -> None:
        """Node, state, critical and warning counts first, never cut; the rest part by part as they fit
        (the line never wraps). Under it, the worst finding in one line."""
        v = self.view
        st = self.query_one("#status", Static)
        st.set_class(v.state == "stale", "stale")
        st.set_class(v.state == "down", "down")
        grid = self.query_one(CoreGrid)
        width = max(20, self.size.width - 2)
        self._worst()
        if v.snap is None:
            st.update(Text(display(elide_middle(f"{v.target}  {v.state}{': ' + v.message if v.message else ''}", width))))
            return
        s, k = v.snap, v.snap.kubelet
        n = {sev: sum(1 for f in v.findings if f.severity == sev) for sev in ("critical", "warning", "info")}
        age = time.monotonic() - v.last_update if v.last_update else 0
        rs = self.nav.replay_status  # a recording is not live: say where in it we are
        state = {"up": rs or "live", "stale": f"STALE {age:.0f}s", "down": f"DOWN ({v.message})",
                 "connecting": "connecting"}.get(v.state, v.state)
        idx = self.nav.targets.index(self.view.target) + 1
        where = f"[{idx}/{len(self.nav.targets)}]" if len(self.nav.targets) > 1 else ""
        counts = f"✖{n['critical']} ▲{n['warning']}"
        head = display(f"{where}  {state}").strip()
        name = elide_middle(display(v.title), max(6, width - len(head) - len(counts) - 4))  # the node's one name
        rest = lay.fit([f"filter: {display(repr(self.filter_text))}" if self.filter_text else "",
                        "shade: kernel noise" if grid.shade_mode == "noise" else "",
                        f"density: {grid.density}",
                        display(f"policy {k.cpu_manager_policy or 'unknown'}"),
                        display(f"topology {k.topology_manager_policy}"),
                        f"{len(s.topology.online)}/{len(s.topology.cpus)} CPUs",
                        display(f"cgroup v{s.cgroup_version} {s.cgroup_driver or ''}".strip())],
                       width - len(name) - len(head) - len(counts) - 6)
        t = Text()
        t.append(name, style="bold")
        t.append(f"  {head}  ")
        t.append(f"✖{n['critical']}", style="bold red" if n["critical"] else "")
        t.append(" ")
        t.append(f"▲{n['warning']}", style="bold yellow" if n["warning"] else "")
        if rest:
            t.append(f"  {rest}")
        self._update(st, t)

    def _worst(self) -> None:
        v = self.view
        w = self.query_one("#worst", Static)
        worst = lay.worst_first(v.findings)[0].severity if v.findings else None
        for sev in ("critical", "warning"):
            w.set_class(worst == sev, sev)
        text = lay.worst_line(v.findings, max(20, self.size.width - 2)) if v.snap is not None else ""
        self._update(w, Text(text))  # escaped by worst_line

    def _legend_text(self, width: int) -> Text:
        """The whole legend as it shows (its key, then the cursor's lines): what the plan counts."""
        t = self._legend_key(width)
        cursor = self._legend_cursor(width)
        if cursor.plain:
            t.append("\n")
            t.append(cursor)
        return t

    def _legend_key(self, width: int) -> Text:
        """The legend's key: what each glyph and shade means (a cursor move leaves it as it was). Each glyph
        and its word are kept on one line (Rich broke `i` from `isolated` at 80x24): the key is laid out in
        lines of at most `width` here, whole entries at a time."""
        g = self.query_one(CoreGrid).glyphs
        v = self.view
        grid = self.query_one(CoreGrid)
        t = Text()
        _entries(t, [(f"{g[role]} {role}", grid._style(role))
                     for role in ("exclusive", "reserved", "shared", "isolated", "offline", "unassigned")], width, "  ",
                 trail=True)
        marks = [("! = finding", "")]
        if "notready" in v.cpu_marks().values():  # only where the grid shows one: no line spent on others
            marks.append(("~ = pinned, not latency-ready", ""))
        if grid.shade_mode == "noise":
            t.append("\n")
            _entries(t, [("shade = kernel noise ▁▂▃▄▅▆▇█", ""),
                         (f"(irq+softirq+steal, full at {NOISE_FULL * 100:.0f} %)", "")], width, " ")
            t.append("\n")
            _entries(t, [*marks, ("letter = pod", "")], width, "   ")
            busiest = busiest_softirqs(v.rates)
            if busiest:
                t.append(f"\nbusiest softirqs: {busiest}")
        else:
            t.append("\n")
            _entries(t, [("shade = load ▁▂▃▄▅▆▇█", ""), *marks, ("letter = pod", "")], width, "   ")
        if v.snap and any(o.pod_level for r in v.snap.roles for o in r.owners):
            t.append("\nlower-case letter = CPUs the pod holds as a whole (pod-level resources)")
        return t

    def _legend_cursor(self, width: int) -> Text:
        """The cursor's lines: its CPU, load and place, its noise (noise shade), who holds it."""
        v = self.view
        grid = self._one("#grid")
        noise = grid.shade_mode == "noise"
        lines: list[str] = []
        if v.snap:
            c = v.snap.role_of(grid.cursor)
            cpu = v.snap.topology.cpu(c.id) if c else None
            if c and cpu:
                u = v.rates.util.get(c.id) if v.rates else None
                who = ", ".join(f"{o.namespace or '?'}/{o.pod or o.pod_uid[:8]}/"
                                + ("(whole pod)" if o.pod_level else o.container or "?") for o in c.owners)
                # the cursor's line, part by part as they fit: it never wraps a word onto a line of its own
                lines.append(lay.fit([f"cpu{c.id}: {c.role}", f"load {'-' if u is None else f'{u * 100:.0f}%'}",
                                      _place(cpu), f"sib {format_cpuset(cpu.siblings)}" if cpu.siblings else ""],
                                     width))
                nz = v.rates.noise.get(c.id) if v.rates else None
                if noise and nz is not None:
                    lines.append(f"  noise {nz.total * 100:.1f}% (irq {nz.irq * 100:.1f}  softirq {nz.softirq * 100:.1f}"
                                 f"  steal {nz.steal * 100:.1f})")
                if who:
                    lines.append("  " + elide_middle(display(who), max(8, width - 2)))
                why = v.snap.readiness.reasons.get(c.id) if v.snap.readiness is not None else None
                if why:  # the "~" of the grid, said: what keeps this pinned CPU from being latency-ready
                    said = wrap_cells(display("not latency-ready: " + "; ".join(why)), max(8, width - 4))
                    lines += [("  ~ " if i == 0 else "    ") + ln for i, ln in enumerate(said)]
        return Text("\n".join(lines))

    def _legend(self) -> None:
        width = max(20, self._plan.side - 3)
        self._update(self.query_one("#legend-key", Static), self._legend_key(width))
        self._show_cursor(self._legend_cursor(width))

    def _show_cursor(self, text: Text) -> None:
        """The cursor's lines under the key; none (no node data yet): no line at all."""
        w = self._one("#legend-cursor")
        self._update(w, text)
        self._show_cursor_display()

    def _show_cursor_display(self) -> None:
        """The cursor's lines show with the legend, and only when there are some."""
        w = self._one("#legend-cursor")
        last = self._painted.get(w, (None, None))[0]
        show = self._plan.legend and last is not None and bool(last.plain)
        if w.display != show:
            w.display = show

    def _pod_list(self) -> list[tuple]:
        """(tag, namespace/pod, container, cpus, NUMA nodes, pod uid, container id) of each pinned
        container the filter lets through, in tag order (tags follow the CPUs). Kubelet's state file not
        read, its assignment is unknown: the containers the grid shows on CPUs of their own (inferred from
        the cgroups) are listed, their CPUs marked "?" (the kernel's word, not kubelet's)."""
        v = self.view
        if v.snap is None:
            return []
        cpu_node = {c.id: c.numa_node for c in v.snap.topology.cpus}
        q = self.filter_text
        rows = []
        inferred: dict[tuple[str, str | None], set[int]] = {}
        if not v.snap.assignment_known:
            for r in v.snap.roles:
                for o in r.owners:
                    inferred.setdefault((o.pod_uid, o.container), set()).add(r.id)
        for p in v.snap.pods:
            for c in p.containers:
                cpus = c.assigned or inferred.get((p.uid, c.name))
                if not cpus or (q and not matches_one(p, c, q)):
                    continue
                nodes = sorted({n for x in cpus if (n := cpu_node.get(x)) is not None})
                rows.append((v.tags.get(p.uid, ""), f"{p.namespace or '?'}/{p.name or p.uid[:8]}",
                             c.name or "?", format_cpuset(cpus) + ("" if c.assigned else "?"), format_cpuset(nodes),
                             p.uid, c.id))
            held = v.snap.state.pod_level(p.uid) if v.snap.state is not None else frozenset()
            name = f"{p.namespace or '?'}/{p.name or p.uid[:8]}"
            if held and (not q or q.lower() in name.lower()):  # CPUs the pod holds as a whole (podEntries)
                held_nodes = sorted({n for x in held if (n := cpu_node.get(x)) is not None})
                rows.append((v.tags.get(p.uid, "").lower(), name, "(whole pod)", format_cpuset(held),
                             format_cpuset(held_nodes), p.uid, None))
        rows.sort(key=lambda r: (len(r[0]), r[0], r[2]))
        return rows

    def _pods(self) -> None:
        """Wide: tag, namespace/pod, container, cpus, NUMA. Narrow: the labels shortened, not dropped:
        tag, pod/container (the middle elided to fit), cpus. Wide or narrow, the table fits its column:
        a long name (a Deployment's, its ReplicaSet's hash, the pod's hash: up to 63 characters) loses its
        middle, never the columns after it."""
        table = self.query_one("#pods", DataTable)
        rows = self._pod_list()
        width = self._plan.side - 1  # its border
        cpus_w = max((len(r[3]) for r in rows), default=4)
        tag_w = max((len(r[0]) for r in rows), default=3)
        wide = width >= 50
        shown: list[tuple]
        if wide:
            numa_w = max(4, *(len(r[4]) for r in rows)) if rows else 4
            # each of the 5 columns' padding (2) and the scrollbar (2)
            room = width - max(3, tag_w) - max(4, cpus_w) - numa_w - 12
            pod_need = max((len(display(r[1])) for r in rows), default=3)
            ctr_need = max((len(display(r[2])) for r in rows), default=9)
            ctr_w = ctr_need if pod_need + ctr_need <= room else min(ctr_need, max(10, room * 2 // 5))
            pod_w = room - ctr_w
            wide = pod_w >= 16  # else the narrow form: the pod's name matters more than its namespace
        if wide:
            # the pod's end (its hashes) is what tells replicas apart: two thirds of the room for it
            shown = [(r[0], Text(elide_middle(display(r[1]), pod_w, keep_tail=pod_w * 2 // 3)),
                      Text(elide_middle(display(r[2]), ctr_w)), r[3], r[4]) for r in rows]
        else:
            room = max(8, width - cpus_w - max(3, tag_w) - 8)  # each column's padding, the scrollbar
            shown = [(r[0], Text(elide_middle(display(f"{r[1].split('/', 1)[-1]}/{r[2]}"), room)), r[3])
                     for r in rows]
        if (shown, wide) == self._pod_rows:
            return  # unchanged: no repaint of the table
        cols = ("tag", "pod", "container", "cpus", "NUMA") if wide else ("tag", "pod", "cpus")
        if self._pod_rows is None or self._pod_rows[1] != wide:
            table.clear(columns=True)
            table.add_columns(*cols)
        self._pod_rows = (shown, wide)
        self._pod_keys = [(r[5], r[6], r[2]) for r in rows]
        row = table.cursor_row
        table.clear()
        for r in shown:
            table.add_row(*cells(r))
        if rows:
            table.move_cursor(row=min(row, len(rows) - 1))

    def _findings(self) -> None:
        table = self.query_one("#findings", DataTable)
        self._shown_findings = lay.worst_first(self.view.findings)
        detail = self.query_one("#findings", DataTable).has_class("visible")  # asked for (f): evidence and fix too
        rows = lay.finding_rows(self.view.findings, self._plan.findings_width, detail)
        if rows == self._finding_rows:
            return
        ncols = len(rows[0]) if rows else 0
        if not self._finding_rows or len(self._finding_rows[0]) != ncols:
            table.clear(columns=True)
            table.add_columns(*(("severity", "code", "message") if ncols == 3 else ("", "finding")))
        self._finding_rows = rows
        row = table.cursor_row
        table.clear()
        for r in rows:
            lines = r[-1]
            table.add_row(*cells(r[:-1]), Text("\n".join(lines)), height=len(lines))  # escaped before wrapping
        if rows:
            table.move_cursor(row=min(row, len(rows) - 1))

    # ------------------------------------------------------------------ events
    def on_core_grid_cursor_moved(self, event: CoreGrid.CursorMoved) -> None:
        """A key moved the cursor: the cursor's pod highlighted and the legend's detail lines, nothing else.
        The panes are arranged again only when the legend's height changed (the plan counts its lines)."""
        if self.view.snap is None:
            return
        self._one("#grid").set_highlight(self._highlight())
        width = max(20, self._plan.side - 3)
        text = self._legend_cursor(width)
        key = self._arranged_for
        if key is None or self._legend_lines(text) != key[7]:
            self._arrange()
            self._legend()
            return
        self._show_cursor(text)

    def _legend_lines(self, cursor: Text) -> int:
        """The legend's lines (as the plan counts them) with these cursor lines: the key's counted once for
        the key shown (a cursor move leaves it as it was)."""
        lw = lay.side_width(self.size.width) - 3
        key_text = self._painted.get(self._one("#legend-key"), (None, None))[0]
        if key_text is None:
            return lay.text_lines(self._legend_text(lw).plain, lw)
        if self._key_lines[:2] != (key_text.plain, lw):
            self._key_lines = (key_text.plain, lw, lay.text_lines(key_text.plain, lw))
        return self._key_lines[2] + (lay.text_lines(cursor.plain, lw) if cursor.plain else 0)

    def on_core_grid_relaid(self, event: CoreGrid.Relaid) -> None:
        self._status()

    def on_core_grid_restyled(self, event: CoreGrid.Restyled) -> None:
        """A theme switch: the legend's key is painted in the grid's new styles (a cursor move leaves the key
        as it was, so it must not wait for one; nor for a tick, which a paused replay or a down node never has)."""
        self._legend()

    def on_core_grid_selected(self, event: CoreGrid.Selected) -> None:
        self.nav.open_cpu_or_container(self.view.target, event.cpu)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "findings":
            self.query_one(CoreGrid).set_highlight(self._highlight())

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        v = self.view
        shown = self._shown_findings
        if event.data_table.id == "findings" and shown and event.cursor_row < len(shown):
            self.nav.open_finding(v.target, shown[event.cursor_row])
        elif event.data_table.id == "pods" and event.cursor_row < len(self._pod_keys):
            uid, cid, name = self._pod_keys[event.cursor_row]
            if cid is None:
                return  # a pod's pod-level CPUs: no container to open
            self.nav.open_container(v.target, uid, cid, None if name == "?" else name)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.query_one(CoreGrid).set_highlight(self._highlight())
        self._arrange()
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
        fs.toggle_class("visible")  # "visible": the findings pane asked for, and given more room
        self._arrange()
        self._findings()
        if fs.has_class("visible") and fs.display:
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

    def action_what_fits(self) -> None:
        self.nav.open_fit(self.view.target)

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
        # a Static fills the width its container gives it: only its height (the lines the text wraps to at
        # that width) can change the layout
        width = w.content_region.width
        shape = (width, _wrapped_lines(t, width)) if width > 0 else None
        w.update(t, layout=last is None or shape is None or shape != last_shape)
        self._painted[w] = (t, shape)
