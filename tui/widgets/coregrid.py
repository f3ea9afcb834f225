"""The core grid: ONE Line-API widget for every CPU of a node (never a widget per CPU).

Laid out like the hardware: socket -> NUMA node -> cores, the SMT siblings of a core side by side.
A cell: CPU id, class glyph (readable in monochrome), load shade (or kernel noise: one key toggles), and
the pod tag on exclusive CPUs ("!" in the finding colour where a finding names the CPU). Three
densities, chosen to fit, and shown in the title: "full" (id + glyph + shade + tag), "compact" (glyph +
shade + tag, ids at the row start), "cores" (one cell per physical core: its busiest thread); beyond that
it scrolls, and says so.

Like Textual's DataTable: render_line(y) returns a cached Strip; the cache key holds everything that
changes a painted line (data generation, cursor, highlight, width, density, shade); notify_style_update()
clears it, so a theme switch repaints.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

# every segment carries a Style: Textual's monochrome filter (NO_COLOR) fails on a None style
_PLAIN = Style()

from collectors.parse.cpuset import format_cpuset
from collectors.model import Role

SHADES = " ▁▂▃▄▅▆▇█"
GLYPHS = {str(r): r.glyph for r in Role}
BIG_GLYPHS = {str(r): r.big_glyph for r in Role}


NOISE_FULL = 0.10  # the noise shade is full at 10 % of a CPU's time in irq + softirq + steal


def shade(u: float | None) -> str:
    if u is None:
        return " "
    return SHADES[min(len(SHADES) - 1, max(0, int(round(u * (len(SHADES) - 1)))))]


@dataclass(slots=True)
class Cell:
    cpu: int  # the CPU (in "cores" density: the core's first thread)
    x: int
    width: int
    members: tuple[int, ...]  # CPUs this cell stands for


@dataclass(slots=True)
class Row:
    kind: str  # "header" | "subheader" | "cells" | "note"
    text: str = ""
    cells: list | None = None
    label: str = ""


class CoreGrid(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "coregrid--exclusive", "coregrid--reserved", "coregrid--shared", "coregrid--isolated",
        "coregrid--offline", "coregrid--unassigned", "coregrid--header", "coregrid--subheader",
        "coregrid--cursor", "coregrid--highlight", "coregrid--critical", "coregrid--warning", "coregrid--stale",
    }
    BINDINGS = [
        Binding("left,h", "move(-1, 0)", "Left", id="grid.left", show=False),
        Binding("right,l", "move(1, 0)", "Right", id="grid.right", show=False),
        Binding("up,k", "move(0, -1)", "Up", id="grid.up", show=False),
        Binding("down,j", "move(0, 1)", "Down", id="grid.down", show=False),
        Binding("home", "first", "First CPU", id="grid.first", show=False),
        Binding("end", "last", "Last CPU", id="grid.last", show=False),
        Binding("enter", "select", "Drill down", id="grid.select"),
    ]

    cursor: reactive[int] = reactive(0, repaint=False)

    class CursorMoved(Message):
        def __init__(self, cpu: int) -> None:
            self.cpu = cpu
            super().__init__()

    class Selected(Message):
        def __init__(self, cpu: int) -> None:
            self.cpu = cpu
            super().__init__()

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view = None
        self.highlight: frozenset[int] = frozenset()
        self.glyphs = GLYPHS
        self.density = "full"
        self.shade_mode = "load"  # or "noise": see set_shade
        self._noise_for: tuple = (None, {})
        self.rows: list[Row] = []
        self.pos: dict[int, tuple[int, int]] = {}  # cpu -> (row index, cell index)
        self._cache: dict = {}
        self._styles: dict = {}
        self.cache_hits = 0
        self.cache_misses = 0

    # ------------------------------------------------------------------ data in
    def set_view(self, view, highlight=frozenset()) -> None:
        self.view = view
        self.highlight = frozenset(highlight)
        # the layout depends on the topology (parsed once per static frame) and the size only
        key = (id(view.snap.topology) if view and view.snap else None, self.size)
        if key != getattr(self, "_layout_for", None):
            self._layout_for = key
            self._relayout()
        else:
            self._cache.clear()
        self.refresh()

    def set_highlight(self, cpus) -> None:
        cpus = frozenset(cpus)
        if cpus != self.highlight:
            self.highlight = cpus
            self.refresh()

    def set_glyphs(self, big: bool) -> None:
        glyphs = BIG_GLYPHS if big else GLYPHS
        if glyphs is not self.glyphs:  # called on every refresh of the screen: only a change repaints
            self.glyphs = glyphs
            self._cache.clear()
            self.refresh()

    def set_shade(self, mode: str) -> None:
        """What the shade of a cell shows: "load" (busy share) or "noise" (irq + softirq + steal share,
        full at NOISE_FULL: a few per cent of kernel time is already the jitter an exclusive CPU is for)."""
        if mode != self.shade_mode:
            self.shade_mode = mode
            self.refresh()

    def _shade_values(self) -> dict:
        rates = self.view.rates if self.view else None
        if rates is None:
            return {}
        if self.shade_mode == "noise":
            gen = self.view.generation
            if self._noise_for[0] != gen:  # once per frame, not per painted line
                self._noise_for = (gen, {c: min(1.0, n.total / NOISE_FULL) for c, n in rates.noise.items()})
            return self._noise_for[1]
        return rates.util

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._styles = {}

    def on_resize(self) -> None:
        self._layout_for = None
        self._relayout()

    # ------------------------------------------------------------------ layout
    def _groups(self):
        """[(socket label, [(numa label, [core cpu tuples])])] plus offline CPUs."""
        snap = self.view.snap
        socks: dict = {}
        offline = []
        for c in snap.topology.cpus:
            if not c.online or c.socket is None and c.core is None:
                offline.append(c.id)
                continue
            key = (c.socket, c.die, c.core)
            socks.setdefault(c.socket, {}).setdefault(c.numa_node, {}).setdefault(key, set()).update(
                x for x in c.siblings)
        out = []
        for s in sorted(socks, key=lambda v: (v is None, v)):
            numas = []
            for n in sorted(socks[s], key=lambda v: (v is None, v)):
                cores = sorted({tuple(sorted(v)) for v in socks[s][n].values()}, key=lambda t: t[0])
                numas.append((n, cores))
            out.append((s, numas))
        return out, sorted(offline)

    def _relayout(self) -> None:
        if self.view is None or self.view.snap is None:
            self.rows = [Row("note", text="waiting for the first frame from " + (self.view.target if self.view else "the node") + " ...")]
            self.pos = {}
            self.virtual_size = Size(self.size.width, len(self.rows))
            self._cache.clear()
            return
        width = max(10, self.size.width - 1)
        height = max(1, self.size.height)
        groups, offline = self._groups()
        threads = max((len(core) for _, numas in groups for _, cores in numas for core in cores), default=1)
        chosen = None
        for density in ("full", "compact", "cores"):
            rows = self._build(groups, offline, density, width, threads)
            if len(rows) <= height:
                chosen = (density, rows)
                break
        if chosen is None:
            chosen = ("compact", self._build(groups, offline, "compact", width, threads))
            self.density = "compact, scrolling"
        else:
            self.density = chosen[0]
        self.rows = chosen[1]
        self.pos = {}
        for ri, r in enumerate(self.rows):
            for ci, cell in enumerate(r.cells or ()):
                for m in cell.members:
                    self.pos[m] = (ri, ci)
        if self.cursor not in self.pos and self.pos:
            self.cursor = min(self.pos)
        self.virtual_size = Size(width, len(self.rows))
        self._cache.clear()

    def _build(self, groups, offline, density, width, threads) -> list[Row]:
        rows: list[Row] = []
        cw = {"full": 9, "compact": 4, "cores": 3}[density]
        label_w = 6 if density != "full" else 1
        for sock, numas in groups:
            rows.append(Row("header", text=f"Socket {sock if sock is not None else '?'}"))
            for numa, cores in numas:
                cpus = [c for core in cores for c in core]
                rows.append(Row("subheader", text=f" NUMA {numa if numa is not None else '?'}  "
                                f"cpus {format_cpuset(cpus)}  ({len(cores)} cores)"))
                block = cw * (1 if density == "cores" else threads) + (1 if density == "cores" else 2)
                per_row = max(1, (width - label_w) // block)
                for i in range(0, len(cores), per_row):
                    chunk = cores[i:i + per_row]
                    cells = []
                    x = label_w
                    for core in chunk:
                        if density == "cores":
                            cells.append(Cell(core[0], x, cw, core))
                            x += cw + 1
                        else:
                            for t in core:
                                cells.append(Cell(t, x, cw, (t,)))
                                x += cw
                            x += 2
                    rows.append(Row("cells", cells=cells, label=f"{chunk[0][0]:>4}:" if density != "full" else ""))
        if offline:
            rows.append(Row("header", text="Offline"))
            per_row = max(1, (width - 6) // (cw + 1))
            for i in range(0, len(offline), per_row):
                chunk = offline[i:i + per_row]
                rows.append(Row("cells", cells=[Cell(c, 6 + j * (cw + 1), cw, (c,)) for j, c in enumerate(chunk)],
                                label=f"{chunk[0]:>4}:"))
        return rows

    # ------------------------------------------------------------------ painting
    def _style(self, name: str) -> Style:
        st = self._styles.get(name)
        if st is None:
            st = self._styles[name] = self.get_component_rich_style(f"coregrid--{name}")
        return st

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        ry = y + scroll_y
        width = self.size.width
        key = (ry, self.view.generation if self.view else -1, self.cursor, self.highlight, width,
               self.density, self.has_focus, self.shade_mode)
        hit = self._cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit.crop(scroll_x, scroll_x + width)
        self.cache_misses += 1
        strip = self._paint(ry, width)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = strip
        return strip.crop(scroll_x, scroll_x + width)

    def _paint(self, ry: int, width: int) -> Strip:
        if ry >= len(self.rows):
            return Strip.blank(width, _PLAIN)
        row = self.rows[ry]
        stale = self.view is not None and self.view.state != "up" and self.view.snap is not None
        if row.kind != "cells":
            st = self._style("stale") if stale else self._style("header" if row.kind == "header" else "subheader")
            return Strip([Segment(row.text[:width].ljust(width), st)], width)
        snap = self.view.snap
        roles = {r.id: r for r in snap.roles}
        util = self._shade_values()
        marks = self.view.cpu_findings()
        segs: list[Segment] = []
        x = 0
        if row.label:
            segs.append(Segment(row.label, self._style("subheader")))
            x = len(row.label)
        for cell in row.cells:
            if cell.x > x:
                segs.append(Segment(" " * (cell.x - x), _PLAIN))
                x = cell.x
            for text, style in self._cell(cell, roles, util, marks, stale):
                segs.append(Segment(text, style))
                x += len(text)
        if x < width:
            segs.append(Segment(" " * (width - x), _PLAIN))
        return Strip(Segment.simplify(segs), max(width, x)).crop(0, max(width, x))

    def _cell(self, cell: Cell, roles, util, marks, stale) -> list[tuple[str, Style]]:
        members = cell.members
        rs = [roles.get(m) for m in members]
        role_names = [r.role if r else "unassigned" for r in rs]
        # a core cell shows its most telling role: exclusive > isolated > reserved > shared > ...
        order = ["exclusive", "isolated", "reserved", "unassigned", "shared", "offline"]
        role = min(role_names, key=order.index)
        us = [util.get(m) for m in members if util.get(m) is not None]
        u = max(us) if us else None
        glyph = self.glyphs.get(role, "?")
        tag = ""
        for r in rs:
            if r and r.owners:
                tag = self.view.tags.get(r.owners[0].pod_uid, "")
                break
        sev = None
        for m in members:
            s = marks.get(m)
            if s == "critical" or (s == "warning" and sev is None):
                sev = s
        mark = "!" if sev in ("critical", "warning") else ""
        if self.density == "full":
            head, tail = f"{cell.cpu:>3} {glyph}{shade(u)}", f"{(mark + tag)[:2]:<2} "
        elif self.density == "cores":
            head, tail = f"{glyph}{shade(u)}", (mark or tag)[:1] or " "
        else:
            head, tail = f"{glyph}{shade(u)}", f"{(mark or tag)[:1] or ' '} "
        base = self._style("stale") if stale else self._style(role)
        if cell.cpu == self.cursor or (self.cursor in members):
            base = base + self._style("cursor")
        elif members and any(m in self.highlight for m in members):
            base = base + self._style("highlight")
        # the finding mark alone takes the finding's colour: the role colour stays readable
        parts = [(head, base)]
        if mark and not stale:
            parts += [(tail[:1], base + self._style(sev)), (tail[1:], base)]
        else:
            parts.append((tail, base))
        total = sum(len(t) for t, _ in parts)
        if total < cell.width:
            parts.append((" " * (cell.width - total), base))
        return [(t, st) for t, st in parts if t]

    # ------------------------------------------------------------------ keyboard and mouse
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self._scroll_to_cursor()
        self.post_message(self.CursorMoved(new))

    def _scroll_to_cursor(self) -> None:
        p = self.pos.get(self.cursor)
        if p is None:
            return
        ri = p[0]
        top = self.scroll_offset.y
        h = self.size.height
        if ri < top:
            self.scroll_to(y=max(0, ri - 1), animate=False)
        elif ri >= top + h:
            self.scroll_to(y=ri - h + 1, animate=False)

    def action_move(self, dx: int, dy: int) -> None:
        p = self.pos.get(self.cursor)
        if p is None:
            return
        ri, ci = p
        if dx:
            cells = self.rows[ri].cells
            ni = ci + dx
            if 0 <= ni < len(cells):
                self.cursor = cells[ni].cpu
                return
            # wrap into the next/previous row of cells
            rj = ri + dx
            while 0 <= rj < len(self.rows) and self.rows[rj].kind != "cells":
                rj += dx
            if 0 <= rj < len(self.rows):
                cells = self.rows[rj].cells
                self.cursor = (cells[0] if dx > 0 else cells[-1]).cpu
            return
        x = self.rows[ri].cells[ci].x
        rj = ri + dy
        while 0 <= rj < len(self.rows) and self.rows[rj].kind != "cells":
            rj += dy
        if 0 <= rj < len(self.rows):
            cells = self.rows[rj].cells
            best = min(cells, key=lambda c: abs(c.x - x))
            self.cursor = best.cpu

    def action_first(self) -> None:
        if self.pos:
            self.cursor = self._cells_in_order()[0]

    def action_last(self) -> None:
        if self.pos:
            self.cursor = self._cells_in_order()[-1]

    def _cells_in_order(self) -> list[int]:
        return [c.cpu for r in self.rows for c in (r.cells or ())]

    def action_select(self) -> None:
        if self.cursor in self.pos:
            self.post_message(self.Selected(self.cursor))

    def cpu_at(self, x: int, y: int) -> int | None:
        ry = y + self.scroll_offset.y
        if not 0 <= ry < len(self.rows) or self.rows[ry].kind != "cells":
            return None
        for c in self.rows[ry].cells:
            if c.x <= x + self.scroll_offset.x < c.x + c.width:
                return c.cpu
        return None

    def on_click(self, event: Click) -> None:
        cpu = self.cpu_at(event.x, event.y)
        if cpu is None:
            return
        if cpu == self.cursor or event.chain > 1:
            self.post_message(self.Selected(cpu))
        self.cursor = cpu
