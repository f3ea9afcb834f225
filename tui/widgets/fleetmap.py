"""The fleet map: every node as a mini core map (a character per CPU: class glyph and colour, findings
marked "!", pinned CPUs not latency-ready "~"), one Line-API widget for the whole fleet; the largest trouble first. On a wide screen the maps
go side by side, as many columns as fit (read left to right, then down), so a wall shows more nodes."""
from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from pinscope.collectors.text import display
from pinscope.tui.widgets.coregrid import GLYPHS

# every segment carries a Style: Textual's monochrome filter (NO_COLOR) fails on a None style
_PLAIN = Style()

RANK = {"critical": 0, "warning": 1, "down": 2, "stale": 3, "connecting": 4, None: 5, "info": 5}
STATE = {"up": "●", "stale": "◐", "down": "○", "connecting": "…"}


def order_key(view):
    """The largest trouble first: the worst severity (or state), then the most critical findings, then
    the most warnings, then the name."""
    w = view.worst() if view.snap is not None else None
    st = view.state if view.state in ("down", "stale", "connecting") else None
    crit = sum(1 for f in view.findings if f.severity == "critical")
    warn = sum(1 for f in view.findings if f.severity == "warning")
    return (min(RANK.get(w, 5), RANK.get(st, 5)), -crit, -warn, view.title)


def ready_cell(view) -> tuple[str, str | None]:
    """The node's latency readiness score as the overview shows it, 12 wide, and its style: "ready 12/12"
    (name), "ready 1/12" (warning); dim: "ready -" where there is nothing to judge (no pinned or isolated CPU),
    "ready ?" before the node's first read. collectors/assemble/readiness.py's score: checks ok of those that apply."""
    r = view.snap.readiness if view.snap is not None else None
    return score_cell(r.score if r is not None else None)


def score_cell(score: tuple[int, int] | None) -> tuple[str, str | None]:
    """(ok, applicable) or None (not read) -> the 12-wide cell and its style (ready_cell's; the Prometheus
    overview's too, from pinscope_readiness_checks)."""
    if score is None:
        return f"{'ready ?':<12}", None
    ok, of = score
    if not of:
        return f"{'ready -':<12}", None
    return f"{f'ready {ok}/{of}':<12}", ("name" if ok == of else "warning")


class FleetMap(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {
        "fleetmap--exclusive", "fleetmap--reserved", "fleetmap--shared", "fleetmap--isolated",
        "fleetmap--offline", "fleetmap--unassigned", "fleetmap--critical", "fleetmap--warning",
        "fleetmap--stale", "fleetmap--cursor", "fleetmap--name",
    }
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", id="fleet.up", show=False),
        Binding("down,j", "move(1)", "Down", id="fleet.down", show=False),
        Binding("enter", "open", "Open node", id="fleet.open"),
    ]
    cursor: reactive[int] = reactive(0)

    class Open(Message):
        def __init__(self, target: str) -> None:
            self.target = target
            super().__init__()

    NAME_W = 34
    HEAD = 15 + 12  # after the name: "✖n  ▲n  STATE  " and the readiness score ("ready 12/12 ")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.views: list = []
        self.rows: list[list[tuple[int, int] | None]] = []  # per screen line, per column: (view, its line)
        self.cols = 1
        self._cache: dict = {}
        self._styles: dict = {}
        self.moved = False
        self._shape: tuple | None = None  # the order, CPU counts and size the rows were made for

    def set_views(self, views) -> None:
        # the cursor stays on its node while the list re-sorts, once the user has moved it; until
        # then it stays on the top row: the worst node
        cur = self.views[self.cursor].target if self.moved and self.views and self.cursor < len(self.views) else None
        self.views = sorted(views, key=order_key)
        if cur is not None:
            for i, v in enumerate(self.views):
                if v.target == cur:
                    self.cursor = i
        self.cursor = min(self.cursor, max(0, len(self.views) - 1))
        shape = (tuple(v.target for v in self.views),
                 tuple(len(v.snap.topology.cpus) if v.snap else 0 for v in self.views), self.size)
        if shape != self._shape:  # order, CPU counts or size changed: new rows
            self._shape = shape
            self._layout()
        self.refresh()

    MIN_MAP = 64  # a column is worth it when each map keeps this many CPUs a line
    GAP = 2

    def _col_width(self) -> int:
        return (self.size.width + self.GAP) // self.cols - self.GAP

    def _map_width(self) -> int:
        return max(8, self._col_width() - self.NAME_W - self.HEAD - 5)

    def _layout(self) -> None:
        self.cols = max(1, (self.size.width + self.GAP) // (self.NAME_W + self.HEAD + 5 + self.MIN_MAP + self.GAP))
        self.cols = min(self.cols, max(1, len(self.views)))
        w = self._map_width()
        self.rows = []
        for b in range(0, len(self.views), self.cols):
            band = list(range(b, min(b + self.cols, len(self.views))))
            lines = [max(1, -(-(len(self.views[i].snap.topology.cpus) if self.views[i].snap else 0) // w))
                     for i in band]
            for k in range(max(lines)):
                self.rows.append([(i, k) if k < n else None for i, n in zip(band, lines)])
        self.virtual_size = Size(self.size.width, len(self.rows))
        self._cache.clear()

    def on_resize(self) -> None:
        self._shape = None
        self._layout()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()
        self._styles = {}

    def _st(self, name):
        st = self._styles.get(name)
        if st is None:
            st = self._styles[name] = self.get_component_rich_style(f"fleetmap--{name}")
        return st

    def render_line(self, y: int) -> Strip:
        sx, sy = self.scroll_offset
        ry = y + sy
        width = self.size.width
        if ry >= len(self.rows):
            return Strip.blank(width, _PLAIN)
        cw = self._col_width()
        if len(self._cache) > 8192:
            self._cache.clear()
        parts = []
        for cell in self.rows[ry]:
            if cell is None:
                parts.append(Strip.blank(cw, _PLAIN))
                continue
            vi, k = cell
            v = self.views[vi]
            key = (ry, vi, k, v.target, v.generation, self.cursor == vi, cw)
            hit = self._cache.get(key)
            if hit is None:
                hit = self._cache[key] = self._paint(v, k, vi == self.cursor, cw)
            parts.append(hit)
        segs: list[Segment] = []
        for i, part in enumerate(parts):
            if i:
                segs.append(Segment(" " * self.GAP, _PLAIN))
            segs.extend(part)
        return Strip(segs).extend_cell_length(width, _PLAIN).crop(sx, sx + width)

    def _paint(self, v, k: int, focused: bool, width: int) -> Strip:
        segs = []
        stale = v.state != "up"
        if k == 0:
            crit = sum(1 for f in v.findings if f.severity == "critical")
            warn = sum(1 for f in v.findings if f.severity == "warning")
            head = f"{STATE.get(v.state, '?')} {display(v.title)[:self.NAME_W - 3]:<{self.NAME_W - 2}}"
            st = self._st("stale") if stale else self._st("name")
            if focused:
                st = st + self._st("cursor")
            segs.append(Segment(head, st))
            segs.append(Segment(f"✖{crit:<3}", self._st("critical") if crit else self._st("stale")))
            segs.append(Segment(f"▲{warn:<3}", self._st("warning") if warn else self._st("stale")))
            state = {"down": "DOWN ", "stale": "STALE", "connecting": "...  "}.get(v.state, "     ")
            segs.append(Segment(f"{state}  ", self._st("stale")))
            text, style = ready_cell(v)
            segs.append(Segment(text, self._st("stale") if stale or style is None else self._st(style)))
        else:
            segs.append(Segment(" " * (self.NAME_W + self.HEAD), _PLAIN))
        if v.snap is not None:
            w = self._map_width()
            cpus = v.snap.topology.cpus[k * w:(k + 1) * w]
            roles = {r.id: r.role for r in v.snap.roles}
            marks = v.cpu_marks()
            for c in cpus:
                role = roles.get(c.id, "unassigned")
                sev = marks.get(c.id)
                if stale:
                    segs.append(Segment(GLYPHS[role], self._st("stale")))
                elif sev in ("critical", "warning"):
                    segs.append(Segment("!", self._st(role) + self._st(sev)))
                elif sev == "notready":
                    segs.append(Segment("~", self._st(role) + self._st("warning")))
                else:
                    segs.append(Segment(GLYPHS[role], self._st(role)))
        elif k == 0:
            segs.append(Segment(display(v.message) or "waiting for the first frame", self._st("stale")))
        # runs of one role are one segment: fewer segments for the compositor to style and cut
        strip = Strip(Segment.simplify(segs))
        return strip.extend_cell_length(width, _PLAIN).crop(0, width)

    def watch_cursor(self, old: int, new: int) -> None:
        self._cache.clear()
        self.refresh()
        for i, line in enumerate(self.rows):
            if (new, 0) in line:
                if i < self.scroll_offset.y or i >= self.scroll_offset.y + self.size.height:
                    self.scroll_to(y=i, animate=False)
                break

    def action_move(self, d: int) -> None:
        if self.views:
            self.moved = True
            self.cursor = max(0, min(len(self.views) - 1, self.cursor + d))

    def action_open(self) -> None:
        if self.views:
            self.post_message(self.Open(self.views[self.cursor].target))

    def on_click(self, event: Click) -> None:
        ry = event.y + self.scroll_offset.y
        col = (event.x + self.scroll_offset.x) // (self._col_width() + self.GAP)
        cell = self.rows[ry][col] if 0 <= ry < len(self.rows) and col < len(self.rows[ry]) else None
        if cell is not None:
            vi = cell[0]
            if vi == self.cursor:
                self.action_open()
            self.moved = True
            self.cursor = vi
