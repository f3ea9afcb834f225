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

from dataclasses import dataclass, field

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
    kind: str  # "header" | "subheader" | "l3" (tile titles) | "cells" | "note"
    text: str = ""
    cells: list | None = None
    labels: list = field(default_factory=list)  # (x, text): row labels (first CPU id) and L3 tile titles
    width: int = 0


class CoreGrid(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "coregrid--exclusive", "coregrid--reserved", "coregrid--shared", "coregrid--isolated",
        "coregrid--offline", "coregrid--unassigned", "coregrid--header", "coregrid--subheader",
        "coregrid--cursor", "coregrid--highlight", "coregrid--l3", "coregrid--critical", "coregrid--warning", "coregrid--stale",
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

    class Relaid(Message):
        def __init__(self, density: str) -> None:
            self.density = density
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
        self.forced: str | None = None  # a density chosen by use_density(), else the best that fits
        self.idw = 4  # width of a CPU id column (set by the layout)
        self._sticky: tuple[int, int] | None = None  # (cursor, column x) of the last move up or down
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
        # the layout depends on the topology (parsed once per static frame), the size and the tag width only
        key = (id(view.snap.topology) if view and view.snap else None, self.size,
               max(map(len, view.tags.values()), default=1) if view else 1)
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
        """[(socket, [(numa, [(l3, [core cpu tuples])])])] plus offline CPUs. A NUMA node whose CPUs share
        one L3 (or whose L3 is unknown) has a single group; AMD nodes have several (one per CCX)."""
        snap = self.view.snap
        socks: dict = {}
        offline = []
        for c in snap.topology.cpus:
            if not c.online or c.socket is None and c.core is None:
                offline.append(c.id)
                continue
            key = (c.socket, c.die, c.core)
            socks.setdefault(c.socket, {}).setdefault(c.numa_node, {}).setdefault(c.l3, {}).setdefault(
                key, set()).update(c.siblings or (c.id,))
        order = lambda v: (v is None, v)  # noqa: E731
        out = []
        for s in sorted(socks, key=order):
            numas = []
            for n in sorted(socks[s], key=order):
                l3s = []
                for l3 in sorted(socks[s][n], key=order):
                    cores = sorted({tuple(sorted(v)) for v in socks[s][n][l3].values()}, key=lambda t: t[0])
                    l3s.append((l3, cores))
                numas.append((n, l3s))
            out.append((s, numas))
        return out, sorted(offline)

    def _relayout(self) -> None:
        if self.view is None or self.view.snap is None:
            self.rows = [Row("note", text="waiting for the first frame from " + (self.view.target if self.view else "the node") + " ...")]
            self.pos = {}
            self.virtual_size = Size(self.size.width, len(self.rows))
            self._cache.clear()
            return
        density, self.rows = self.choose(self.size.width, self.size.height)
        if density != self.density:
            self.density = density
            self.post_message(self.Relaid(density))  # the screen's status line names the density
        width = max(10, self.size.width - 1)
        self.pos = {}
        for ri, r in enumerate(self.rows):
            for ci, cell in enumerate(r.cells or ()):
                for m in cell.members:
                    self.pos[m] = (ri, ci)
        if self.cursor not in self.pos and self.pos:
            self.cursor = min(self.pos)
        self.virtual_size = Size(max(width, max((r.width for r in self.rows), default=0)), len(self.rows))
        self._cache.clear()

    def choose(self, width: int, height: int) -> tuple[str, list[Row]]:
        """The most detailed layout that fits width x height: (density, rows); "…, scrolling" if none does.
        Changes nothing but the id width (a property of the topology): the screen asks it too, to decide
        how many rows the grid needs on a large terminal."""
        width, height = max(10, width - 1), max(1, height)
        snap = self.view.snap
        self.idw = len(str(max(c.id for c in snap.topology.cpus))) + 1 if snap.topology.cpus else 2
        groups, offline = self._groups()
        for density in ("full", "compact", "cores") if self.forced is None else (self.forced,):
            rows = self._build(groups, offline, density, width)
            if len(rows) <= height:
                return density, rows
            if self.forced is not None:
                return density + ", scrolling", rows
        return "compact, scrolling", self._build(groups, offline, "compact", width)

    def use_density(self, density: str | None) -> None:
        """Force a density ("full", "compact", "cores") even if it scrolls; None chooses by size again."""
        self.forced = density
        self._layout_for = None
        self._relayout()
        self.refresh()

    def _metrics(self, density: str) -> tuple[int, int]:
        """(cell width, gap after a core). Every pod tag is shown whole in every density (two letters
        from the 25th pod on): pods stay distinguishable without colour. The last column of a cell is
        the finding mark, or a blank that separates cells."""
        tw = max((len(t) for t in self.view.tags.values()), default=1) if self.view else 1
        if density == "full":
            return self._idw() + 1 + 2 + tw + 1, 2  # " 123 #▅AB!"
        return 2 + tw + 1, 1 if density == "compact" else 0  # "#▅AB!"

    def _idw(self) -> int:
        """Width of a CPU id column, with a blank before it (ids are right-aligned)."""
        return self.idw

    def _build(self, groups, offline, density, width) -> list[Row]:
        rows: list[Row] = []
        cw, gap = self._metrics(density)
        idw = self._idw()
        label_w = 0 if density == "full" else idw + 1
        for sock, numas in groups:
            rows.append(Row("header", text=f"Socket {sock if sock is not None else '?'}"))
            for numa, l3s in numas:
                cores = [core for _, cs in l3s for core in cs]
                cpus = [c for core in cores for c in core]
                tiled = len(l3s) > 1
                rows.append(Row("subheader", text=f" NUMA {numa if numa is not None else '?'}  "
                                f"cpus {format_cpuset(cpus)}  ({len(cores)} cores"
                                + (f", {len(l3s)} L3 caches)" if tiled else ")")))
                if tiled:
                    rows += self._tiles(l3s, density, width, cw, gap, label_w)
                    continue
                block = self._block(cores, density, cw, gap)
                per_row = max(1, (width - label_w) // block)
                per_row = -(-len(cores) // -(-len(cores) // per_row))  # as many rows, evenly filled
                for i in range(0, len(cores), per_row):
                    rows.append(self._cells_row(cores[i:i + per_row], density, cw, gap, 0, label_w))
        if offline:
            rows.append(Row("header", text="Offline"))
            step = max(cw, 3) + 1
            per_row = max(1, (width - idw - 1) // step)
            for i in range(0, len(offline), per_row):
                chunk = offline[i:i + per_row]
                rows.append(Row("cells", cells=[Cell(c, idw + 1 + j * step, step - 1, (c,)) for j, c in enumerate(chunk)],
                                labels=[(0, f"{chunk[0]:>{idw - 1}}:")], width=idw + 1 + len(chunk) * step))
        return rows

    @staticmethod
    def _block(cores, density, cw, gap) -> int:
        threads = max((len(c) for c in cores), default=1)
        return (cw if density == "cores" else cw * threads) + gap

    def _cells_row(self, chunk, density, cw, gap, x0, label_w) -> Row:
        cells = []
        x = x0 + label_w
        for core in chunk:
            if density == "cores":
                cells.append(Cell(core[0], x, cw, core))
                x += cw + gap
            else:
                for t in core:
                    cells.append(Cell(t, x, cw, (t,)))
                    x += cw
                x += gap
        labels = [(x0, f"{chunk[0][0]:>{label_w - 2}}:")] if label_w else []
        return Row("cells", cells=cells, labels=labels, width=x)

    def _tiles(self, l3s, density, width, cw, gap, label_w) -> list[Row]:
        """One tile per L3 cache, side by side: a title line ("L3 2  cpus 16-23") over its cores. The
        tile's column count is the one giving the fewest rows at this width."""
        biggest = max(len(cores) for _, cores in l3s)
        best: list[Row] | None = None
        tried = set()
        for div in range(1, biggest + 1):
            cols = -(-biggest // div)
            if cols in tried:
                continue
            tried.add(cols)
            tile_w = label_w + cols * self._block(l3s[0][1], density, cw, gap)
            if tile_w > width and cols > 1:
                continue
            per_row = max(1, (width + 2) // (tile_w + 2))
            rows: list[Row] = []
            for i in range(0, len(l3s), per_row):
                group = l3s[i:i + per_row]
                lines = max(-(-len(cores) // cols) for _, cores in group)
                rows.append(Row("l3", labels=[(j * (tile_w + 2), self._l3_title(l3, cores, tile_w))
                                              for j, (l3, cores) in enumerate(group)]))
                for li in range(lines):
                    cells, labels, w = [], [], 0
                    for j, (_, cores) in enumerate(group):
                        chunk = cores[li * cols:(li + 1) * cols]
                        if chunk:
                            r = self._cells_row(chunk, density, cw, gap, j * (tile_w + 2), label_w)
                            cells += r.cells
                            labels += r.labels
                            w = r.width
                    rows.append(Row("cells", cells=cells, labels=labels, width=w))
            if best is None or len(rows) < len(best):
                best = rows
            if per_row >= len(l3s):
                break  # fewer columns only adds lines from here on
        return best or []

    @staticmethod
    def _l3_title(l3, cores, tile_w: int) -> str:
        cpus = [c for core in cores for c in core]
        text = f"L3 {l3 if l3 is not None else '?'}  cpus {format_cpuset(cpus)}"
        return text if len(text) <= tile_w else text[:max(1, tile_w - 1)] + "…"

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
        if row.kind not in ("cells", "l3"):
            st = self._style("stale") if stale else self._style("header" if row.kind == "header" else "subheader")
            return Strip([Segment(row.text[:width].ljust(width), st)], width)
        label_style = self._style("stale") if stale else self._style("l3" if row.kind == "l3" else "subheader")
        items = [(lx, text, None) for lx, text in row.labels] + [(c.x, None, c) for c in row.cells or ()]
        items.sort(key=lambda i: i[0])
        if row.cells:
            snap = self.view.snap
            roles = {r.id: r for r in snap.roles}
            util = self._shade_values()
            marks = self.view.cpu_findings()
        segs: list[Segment] = []
        x = 0
        for ix, text, cell in items:
            if ix > x:
                segs.append(Segment(" " * (ix - x), _PLAIN))
                x = ix
            parts = [(text, label_style)] if cell is None else self._cell(cell, roles, util, marks, stale)
            for t, style in parts:
                segs.append(Segment(t, style))
                x += len(t)
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
        head = f"{cell.cpu:>{self._idw()}} {glyph}{shade(u)}" if self.density.startswith("full") else f"{glyph}{shade(u)}"
        # the tag is never cut (pods stay distinguishable in monochrome); the mark takes the last column
        tag = tag.ljust(cell.width - len(head) - 1)
        base = self._style("stale") if stale else self._style(role)
        if cell.cpu == self.cursor or (self.cursor in members):
            base = base + self._style("cursor")
        elif members and any(m in self.highlight for m in members):
            base = base + self._style("highlight")
        # the finding mark alone takes the finding's colour: the role colour stays readable
        parts = [(head + tag, base)]
        if mark and not stale:
            parts.append((mark, base + self._style(sev)))
        else:
            parts.append((mark or " ", base))
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
        # the column sticks while moving up and down, so a short row on the way does not pull it left
        x = self._sticky[1] if self._sticky and self._sticky[0] == self.cursor else self.rows[ri].cells[ci].x
        rj = ri + dy
        while 0 <= rj < len(self.rows) and self.rows[rj].kind != "cells":
            rj += dy
        if 0 <= rj < len(self.rows):
            cells = self.rows[rj].cells
            best = min(cells, key=lambda c: abs(c.x - x))
            self.cursor = best.cpu
            self._sticky = (best.cpu, x)

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
