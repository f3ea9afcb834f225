"""The core grid: ONE Line-API widget for every CPU of a node (never a widget per CPU).

Laid out like the hardware (tui/widgets/gridlayout.py, pure): socket -> NUMA node -> L3 (when a NUMA node
has several) -> cores, the SMT siblings of a core side by side.
A cell: CPU id, class glyph (readable in monochrome), load shade (or kernel noise: one key toggles), and
the pod tag on exclusive CPUs ("!" in the finding colour where a finding names the CPU, "~" in the warning
colour where a pinned CPU is not latency-ready: tui/state.py cpu_marks). Four
densities, chosen to fit, and shown in the title: "wall" (a big screen: id + glyph + tag + a load bar),
"full" (id + glyph + shade + tag), "compact" (glyph + shade + tag, ids at the row start), "cores" (one cell
per physical core: its busiest thread); beyond that it scrolls, and says so (tui/widgets/gridlayout.py).

What each CPU is (role, load or noise share, pod tag, mark) comes from the presenter (tui/presenter.py,
pure): the grid lays the cells out and paints them. Like Textual's DataTable: render_line(y) returns a Strip
from an LRUCache whose key holds everything that changes a painted line (what each cell shows, cursor,
highlight, width, density, style generation), never an id(); notify_style_update() clears it, so a theme
switch repaints.
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Callable

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from pinscope.collectors.model import Role
from pinscope.tui.presenter import EMPTY, CpuState, GridState, merge, present, waiting_note
from pinscope.tui.state import NodeView
from pinscope.tui.widgets.gridlayout import Cell, Row, choose, id_width, tag_width

# every segment carries a Style: Textual's monochrome filter (NO_COLOR) fails on a None style
_PLAIN = Style()

SHADES = " ▁▂▃▄▅▆▇█"
GLYPHS = {str(r): r.glyph for r in Role}
BIG_GLYPHS = {str(r): r.big_glyph for r in Role}


def shade(u: float | None) -> str:
    if u is None:
        return " "
    return SHADES[min(len(SHADES) - 1, max(0, int(round(u * (len(SHADES) - 1)))))]


EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(u: float | None, width: int) -> str:
    """A share 0-1 as a bar of `width` columns in eighths ("███▍ "); blank when unknown."""
    if u is None:
        return " " * width
    n = int(round(min(1.0, max(0.0, u)) * width * 8))
    full, part = divmod(n, 8)
    return ("█" * full + (EIGHTHS[part] if part else "")).ljust(width)[:width]


MARK_GLYPH = {"critical": "!", "warning": "!", "notready": "~"}


def wrap_cells(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` terminal cells (a wide character takes two), broken at spaces
    where it can be; never fewer than 8 cells (a grid not laid out yet is 0 wide)."""
    width = max(8, width)
    out: list[str] = []
    for line in textwrap.wrap(text, width, break_on_hyphens=False) or [text]:
        out += chop_cells(line, width) if cell_len(line) > width else [line]
    return out


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

    class Restyled(Message):
        """The grid's role styles changed (a theme switch): what shows them beside the grid paints again."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: NodeView | None = None
        self.highlight: frozenset[int] = frozenset()
        self.glyphs = GLYPHS
        self.density = "full"
        self.shade_mode = "load"  # or "noise": see set_shade
        self.forced: str | None = None  # a density chosen by use_density(), else the best that fits
        self.idw = 4  # width of a CPU id column (set by the layout)
        self._layout_for: tuple | None = None  # the (topology, size, tag width) the rows were laid out for
        self._layout_gen = 0  # bumps on every new layout (self.rows): in every row's key
        self._laid_out_at: Size | None = None  # the size the rows were laid out at (None: not yet)
        self._sticky: tuple[int, int] | None = None  # (cursor, column x) of the last move up or down
        self.rows: list[Row] = []
        self.pos: dict[int, tuple[int, int]] = {}  # cpu -> (row index, cell index)
        self._cache: LRUCache[tuple, Strip] = LRUCache(4096)  # row key (what the row shows) -> its Strip
        self._shown: dict = {}  # row -> the key of what the terminal shows there
        # (the view's data_key, shade) -> the presenter's GridState: a shade toggled back finds its own again
        self._presented: LRUCache[tuple, GridState] = LRUCache(4)
        self._keys_for: tuple = (None, [])  # (state token, every row's key), see _keys
        self._base_for: tuple = (None, ([], {}))  # (token, _base_keys()): the keys but the cursor's flags
        # called with each CursorMoved as the cursor moves, instead of posting it (the node screen's detail line)
        self.cursor_listener: Callable[[CoreGrid.CursorMoved], None] | None = None
        self._style_gen = 0  # bumps when the theme's styles change: every row paints again
        self._styles: dict = {}
        self.cache_hits = 0
        self.cache_misses = 0

    # ------------------------------------------------------------------ data in
    def set_view(self, view, highlight=frozenset()) -> None:
        self.view = view
        self.highlight = frozenset(highlight)
        # the layout depends on the topology (parsed once per static frame), the size and the tag width only:
        # the topology itself in the key (compared, never hashed: the same object is equal at once)
        key = (view.snap.topology if view and view.snap else None, self.size,
               tag_width(view.tags) if view else 1,
               (view.state, view.message) if view and not view.snap else None)  # the note before a first frame
        if key != self._layout_for:
            self._layout_for = key
            self._relayout()
            self.refresh()
            return
        self._repaint_changed()

    def _repaint_changed(self) -> None:
        """Only the rows whose content changed are painted again (a row's key is what it shows: each cell's
        text, role, mark and cursor); the others stay as the terminal has them. A cursor move repaints the
        one or two rows it left and entered, not the grid."""
        shown = self._shown
        keys = self._keys()
        changed = [ry for ry, k in enumerate(keys) if shown.get(ry) != k]
        if len(changed) * 2 > len(self.rows):
            self.refresh()
        else:
            for ry in changed:
                self.refresh_line(ry)

    def set_highlight(self, cpus) -> None:
        cpus = frozenset(cpus)
        if cpus != self.highlight:
            self.highlight = cpus
            self._repaint_changed()

    def set_glyphs(self, big: bool) -> None:
        glyphs = BIG_GLYPHS if big else GLYPHS
        if glyphs is not self.glyphs:  # called on every refresh of the screen: only a change repaints
            self.glyphs = glyphs
            self._cache.clear()
            self.refresh()

    def set_shade(self, mode: str) -> None:
        """What the shade of a cell shows: "load" (busy share) or "noise" (tui/presenter.py shares)."""
        if mode != self.shade_mode:
            self.shade_mode = mode
            self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._shown.clear()
        self._styles = {}
        self._style_gen += 1
        self.post_message(self.Restyled())

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        """Laid out again here, where Textual gives the grid its new size, not in on_resize: Textual paints the
        screen before the Resize message is handled, and the rows laid out for the old size were painted once
        at the new one (the first report: NUMA 0 alone over the whole width, NUMA 1 cut off, then laid out
        again, as the screen had just arranged its panes for the node)."""
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        if self._laid_out_at is not None and self._laid_out_at != self.size:
            self._layout_for = None
            self._relayout()
        return changed

    def on_resize(self) -> None:
        if self._laid_out_at != self.size:  # laid out already when the size came (_size_updated)
            self._layout_for = None
            self._relayout()

    # ------------------------------------------------------------------ layout
    def _relayout(self) -> None:
        self._laid_out_at = self.size
        self._layout_gen += 1
        if self.view is None or self.view.snap is None:
            # wrapped at the grid's width: a debug pod's state and its seconds come last in a long line
            self.rows = [Row("note", text=line) for line in wrap_cells(waiting_note(self.view), self.size.width - 1)]
            self.pos = {}
            self.virtual_size = Size(self.size.width, len(self.rows))
            self._cache.clear()
            self._shown.clear()
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
        self._cache.clear()  # a row's key holds what it shows, not where its cells are: a new layout paints anew
        self._shown.clear()

    def choose(self, width: int, height: int) -> tuple[str, list[Row]]:
        """The most detailed layout that fits width x height: (density, rows); "…, scrolling" if none does.
        Changes nothing but the id width (a property of the topology): the screen asks it too, to decide
        how many rows the grid needs on a large terminal."""
        v = self.view
        if v is None or v.snap is None:  # callers ask once the node's topology came
            raise LookupError("no topology yet: nothing to lay out")
        topo = v.snap.topology
        self.idw = id_width(topo)
        return choose(topo, tag_width(v.tags), width, height, self.forced)

    def use_density(self, density: str | None) -> None:
        """Force a density ("full", "compact", "cores") even if it scrolls; None chooses by size again."""
        self.forced = density
        self._layout_for = None
        self._relayout()
        self.refresh()

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
        keys = self._keys()
        key = keys[ry] if ry < len(keys) else (ry, width, None)
        self._shown[ry] = key
        hit = self._cache.get(key)
        if hit is not None:
            self.cache_hits += 1
            return hit.crop(scroll_x, scroll_x + width)
        self.cache_misses += 1
        strip = self._paint(ry, width, key)
        self._cache[key] = strip
        return strip.crop(scroll_x, scroll_x + width)

    def _state(self) -> GridState:
        """What every cell of this view shows (tui/presenter.py), worked out once per view data and shade (not
        per painted row)."""
        v = self.view
        if v is None or v.snap is None:
            return EMPTY
        key = (v.data_key, self.shade_mode)
        state = self._presented.get(key)
        if state is None:
            state = present(v, self.shade_mode)
            self._presented[key] = state
        return state

    _CTX = 6  # a row key: (row, width, density, focus, stale, style generation, then what the row shows)

    def _keys(self) -> list[tuple]:
        """Every row's key, what the row shows (equal keys paint equal lines): worked out once per view,
        cursor, highlight, size and style, not per painted line."""
        v = self.view
        state = self._state()
        width = self.size.width
        base = (v.data_key if v else None, self.shade_mode, width, self.density, self.has_focus,
                self.glyphs is GLYPHS, self._style_gen, self._layout_gen, self.idw, state.stale)
        cursor, highlight = self.cursor, self.highlight
        token = (base, cursor, highlight)
        last_token, last = self._keys_for
        if last_token == token:
            return last
        if self._base_for[0] != base:
            self._base_for = (base, self._base_keys(state))
            redo = None  # every row
        else:  # the cursor or the highlight moved: only the rows holding a cell whose flag may change
            _, old_cursor, old_high = last_token
            cpus = {old_cursor, cursor} | (old_high ^ highlight)
            rows_of = self._base_for[1][1]
            redo = {rows_of[c] for c in cpus if c in rows_of}
        rows, _ = self._base_for[1]
        keys: list = list(last) if redo is not None else [None] * len(rows)
        for ry in (range(len(rows)) if redo is None else redo):
            head, cells = rows[ry]
            if cells is None:
                keys[ry] = head
                continue
            keys[ry] = (*head, *((*k, 2 if (cpu == cursor or cursor in members) else
                                  1 if highlight and any(m in highlight for m in members) else 0)
                                 for k, cpu, members in cells))
        self._keys_for = (token, keys)
        return keys

    def _base_keys(self, state: GridState) -> tuple[list, dict]:
        """What each row shows but the cursor and highlight flags: (row key head, None) for a row without
        cells, else (head, [((before the mark, after it, role, mark), cpu, members) per cell]); and each CPU's row. A cursor move
        then works out only the flags of the rows it left and entered (every cell's text was worked out
        again on every key: a third of a keypress's CPU at 256 CPUs)."""
        ctx = (self.size.width, self.density, self.has_focus, state.stale, self._style_gen)
        per, held = state.cpus, state.devices
        rows: list = []
        rows_of: dict = {}
        for ry, row in enumerate(self.rows):
            if row.label_numas:  # NUMA blocks side by side (wall): each title with its node's devices
                rows.append(((ry, *ctx, row.kind, tuple(held.get(n, "") for _, _, n in row.label_numas)), None))
            elif not row.cells:
                rows.append(((ry, *ctx, row.kind, row.text + held.get(row.numa, "") if row.numa is not None else row.text),
                             None))
            else:
                cells = []
                for c in row.cells:
                    cells.append((self._cell_key(c, per), c.cpu, c.members))
                    rows_of[c.cpu] = ry
                    for m in c.members:
                        rows_of[m] = ry
                rows.append(((ry, *ctx), cells))
        return rows, rows_of

    def _cell_key(self, cell: Cell, per: Mapping[int, CpuState]) -> tuple:
        """(text before the mark, text after it, role, mark: MARK_GLYPH's or None) of one cell (its flag: _keys);
        a cell standing for several CPUs shows their merged state (tui/presenter.py merge)."""
        role, u, tag, sev = merge(cell.members, per)
        glyph = self.glyphs.get(role, "?")
        # the mark sits right after the CPU's id where the cell shows one (wall, full): at the cell's end it
        # stood right before the next cell's id (CPU 3's mark beside CPU 51, its sibling); the last column
        # is then the blank between cells. Without ids (compact, cores) it ends the cell, after its tag.
        if self.density.startswith("wall"):  # the tag, then the load as a bar: read from across a room
            tw = tag_width(self.view.tags) if self.view else 1
            barw = cell.width - self.idw - 5 - tw  # what the layout left for the bar
            return (f"{cell.cpu:>{self.idw}}", f"{glyph} {(tag or ''):<{tw}} {bar(u, barw)} ", role, sev)
        if self.density.startswith("full"):
            head = f"{cell.cpu:>{self.idw}}"
            rest = f"{glyph}{shade(u)}"
            # the tag is never cut (pods stay distinguishable in monochrome)
            return (head, rest + (tag or "").ljust(cell.width - len(head) - 1 - len(rest)), role, sev)
        text = f"{glyph}{shade(u)}"
        return (text + (tag or "").ljust(cell.width - len(text) - 1), "", role, sev)

    def _paint(self, ry: int, width: int, key: tuple | None = None) -> Strip:
        if ry >= len(self.rows):
            return Strip.blank(width, _PLAIN)
        row = self.rows[ry]
        stale = self._state().stale
        if row.kind not in ("cells", "l3", "titles"):
            st = self._style("stale") if stale else self._style("header" if row.kind == "header" else "subheader")
            if key is None:
                key = self._keys()[ry]
            line = key[-1] if len(key) > self._CTX and isinstance(key[-1], str) else row.text
            return Strip([Segment(line[:width].ljust(width), st)], width)
        label_style = self._style("stale") if stale else self._style("l3" if row.kind == "l3" else "subheader")
        if key is None:
            keys = self._keys()
            key = keys[ry]
        cell_keys = iter(key[self._CTX:]) if row.cells else iter(())
        labels = row.labels
        if row.label_numas and isinstance(key[-1], tuple):  # each block's title and its devices, within its width
            labels = [(lx, (text + extra)[:bw]) for (lx, text), extra, (_, bw, _) in zip(row.labels, key[-1], row.label_numas)]
        items = [(lx, text, None) for lx, text in labels] + [(c.x, None, c) for c in row.cells or ()]
        items.sort(key=lambda i: i[0])
        segs: list[Segment] = []
        x = 0
        for ix, text, cell in items:
            if ix > x:
                segs.append(Segment(" " * (ix - x), _PLAIN))
                x = ix
            parts = [(text or "", label_style)] if cell is None else self._cell(next(cell_keys), stale)
            for t, style in parts:
                segs.append(Segment(t, style))
                x += len(t)
        if x < width:
            segs.append(Segment(" " * (width - x), _PLAIN))
        return Strip(Segment.simplify(segs), max(width, x)).crop(0, max(width, x))

    def _cell(self, key: tuple, stale: bool) -> list[tuple[str, Style]]:
        """A cell's pieces: its text before the mark, the mark (or a blank), its text after it."""
        before, after, role, sev, flag = key
        base = self._style("stale") if stale else self._style(role)
        if flag == 2:
            base = base + self._style("cursor")
        elif flag == 1:
            base = base + self._style("highlight")
        # the mark alone takes the finding's colour ("~" the warning's): the role colour stays readable
        glyph = MARK_GLYPH.get(sev, " ")
        mark = (glyph, base + self._style("warning" if sev == "notready" else sev)) if sev and not stale else (glyph, base)
        return [(before, base), mark, (after, base)] if after else [(before, base), mark]

    # ------------------------------------------------------------------ keyboard and mouse
    def watch_cursor(self, old: int, new: int) -> None:
        self._scroll_to_cursor()
        listener = self.cursor_listener
        if listener is not None:
            # the screen's detail line updated now, in the same refresh as the cursor (a CursorMoved message
            # was handled after the grid's rows had been drawn: two compositor passes a key)
            listener(self.CursorMoved(new))
        else:
            self.post_message(self.CursorMoved(new))
        self._repaint_changed()

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

    def out_of_view(self, cpus) -> dict[str, list[int]]:
        """Of `cpus`, those whose cells the grid's scroll leaves off screen, by where they are: "above",
        "below", "beside" (scrolled sideways); a CPU the layout has no cell for is in none."""
        top, left = self.scroll_offset.y, self.scroll_offset.x
        height, width = self.size.height, self.size.width
        out: dict[str, list[int]] = {"above": [], "below": [], "beside": []}
        for cpu in sorted(cpus):
            p = self.pos.get(cpu)
            if p is None:
                continue
            cell = self.rows[p[0]].cells[p[1]]
            where = ("above" if p[0] < top else "below" if p[0] >= top + height
                     else "beside" if cell.x < left or cell.x + cell.width > left + width else None)
            if where is not None:
                out[where].append(cpu)
        return out

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
