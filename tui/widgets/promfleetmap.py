"""The fleet map fed by Prometheus: one line-API widget for thousands of nodes.

Every node is a row of aggregates (read state, finding counts, utilisation, the latency readiness score from
pinscope_readiness_checks as the SSH overview shows it, the worst finding's code);
the per-CPU mini map (role glyph, `!` on CPUs of a container a finding names) is drawn only for the nodes
on screen, whose per-CPU series the screen fetches; the others' maps are never asked for. A FleetMap
subclass: the same keys, cursor, click and theme classes as the SSH fleet overview.
"""
from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from textual.geometry import Size
from textual.strip import Strip

from pinscope.collectors.promql import PromNode
from pinscope.collectors.text import display
from pinscope.tui.widgets.coregrid import GLYPHS
from pinscope.tui.widgets.fleetmap import _PLAIN, FleetMap, score_cell

RANK = {"critical": 0, "warning": 1, "unreadable": 2}


@dataclass
class PromRow:
    """The UI's row for one node: the latest aggregates, the per-CPU detail if fetched, a generation."""

    node: PromNode
    cpus: tuple | None = None  # PromCpu, for nodes that were on screen
    generation: int = 0

    @property
    def target(self) -> str:
        return self.node.name

    @property
    def title(self) -> str:
        return self.node.name

    def rank(self) -> int:
        if self.node.read_ok is False:
            return min(RANK["unreadable"], RANK.get(self.node.worst() or "", 5))
        return RANK.get(self.node.worst() or "", 5)  # worst(): None without findings


def order_key(row: PromRow):
    return (row.rank(), row.node.name)


class PromFleetMap(FleetMap):
    NAME_W = 26
    CODE_W = 24  # the worst finding's code
    HEAD_W = 26 + 9 + 6 + 12 + CODE_W  # name, ✖n ▲n, util, readiness ("ready 12/12"), worst code
    NARROW_MAP = 16  # fewer map columns than this (an 80-column terminal): the code column goes, the map stays

    def set_views(self, views) -> None:
        cur = self.views[self.cursor].target if self.moved and self.views and self.cursor < len(self.views) else None
        self.views = sorted(views, key=order_key)
        if cur is not None:
            for i, v in enumerate(self.views):
                if v.target == cur:
                    self.cursor = i
                    break
        self.cursor = min(self.cursor, max(0, len(self.views) - 1))
        shape = (tuple(v.target for v in self.views), tuple(v.node.ncpus for v in self.views), self.size)
        if shape != self._shape:
            self._shape = shape
            self._layout()
        else:
            self._cache.clear()
        self.refresh()

    def _head_w(self) -> int:
        """The columns before the map; without the worst code's where the map would keep too few."""
        wide = self.size.width - self.HEAD_W - 1 >= self.NARROW_MAP
        return self.HEAD_W if wide else self.HEAD_W - self.CODE_W

    def _map_width(self) -> int:
        return max(8, self.size.width - self._head_w() - 1)

    def _layout(self) -> None:
        w = self._map_width()
        self.cols = 1  # one column of nodes (FleetMap's rows: per screen line, per column)
        self.rows = []
        for i, v in enumerate(self.views):
            lines = max(1, -(-v.node.ncpus // w)) if v.node.read_ok is not False else 1
            self.rows += [[(i, k)] for k in range(lines)]
        self.virtual_size = Size(self.size.width, len(self.rows))
        self._cache.clear()

    def visible_names(self) -> list[str]:
        """The nodes with a row on screen now (their per-CPU series are worth asking for)."""
        y0 = int(self.scroll_offset.y)
        seen: dict[str, None] = {}
        for line in self.rows[y0:y0 + max(1, self.size.height)]:
            for cell in line:
                if cell is not None:
                    seen[self.views[cell[0]].target] = None
        return list(seen)

    def _paint(self, v: PromRow, k: int, focused: bool, width: int) -> Strip:
        n = v.node
        segs = []
        down = n.read_ok is False
        if k == 0:
            crit, warn = n.findings.get("critical", 0), n.findings.get("warning", 0)
            glyph = "○" if down else ("●" if n.read_ok else "?")
            st = self._st("stale") if down else self._st("name")
            if focused:
                st = st + self._st("cursor")
            segs.append(Segment(f"{glyph} {display(n.name)[:self.NAME_W - 3]:<{self.NAME_W - 2}}", st))
            segs.append(Segment(f"✖{crit:<3}", self._st("critical") if crit else self._st("stale")))
            segs.append(Segment(f"▲{warn:<4}", self._st("warning") if warn else self._st("stale")))
            util = f"{n.util * 100:4.0f}% " if n.util is not None else "   - "
            segs.append(Segment(util + " ", self._st("stale") if down else _PLAIN))
            text, style = score_cell(None if down else n.ready)
            segs.append(Segment(text, self._st("stale") if style is None else self._st(style)))
            code = n.codes[0][1] if n.codes else ""
            sev = n.codes[0][0] if n.codes else None
            if self._head_w() == self.HEAD_W:
                segs.append(Segment(f"{code[:self.CODE_W - 1]:<{self.CODE_W}}", self._st(sev) if sev else _PLAIN))
        else:
            segs.append(Segment(" " * self._head_w(), _PLAIN))
        w = self._map_width()
        if down:
            if k == 0:
                segs.append(Segment("cannot be read (pinscope_read_success 0)", self._st("stale")))
        elif v.cpus is not None:
            for c in v.cpus[k * w:(k + 1) * w]:
                if c.mark in ("critical", "warning"):
                    segs.append(Segment("!", self._st(c.role) + self._st(c.mark)))
                else:
                    segs.append(Segment(GLYPHS.get(c.role, "?"), self._st(c.role if c.role in GLYPHS else "unassigned")))
        else:
            todo = max(0, min(w, n.ncpus - k * w))
            segs.append(Segment("·" * todo, self._st("stale")))  # not fetched yet: on its way
        strip = Strip(Segment.simplify(segs))
        return strip.extend_cell_length(width, _PLAIN).crop(0, width)
