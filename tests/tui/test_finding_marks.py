"""A finding's mark `!` sits on the CPU it is about (issue 34, item 16: in the demo a mark of CPU 3's showed
beside CPU 51, its SMT sibling in the next cell). A cell's last column was its mark, right before the next
cell's CPU id. Read from the grid's painted lines at every density and in the wall layout; frozen data
read through the real probe (a node in trouble: drifted cpusets, split siblings)."""
import re

import pytest

from frozen import FrozenApp, frozen_node_async
from nodes import trouble_16, trouble_96
from pinscope.tui.widgets.coregrid import CoreGrid


def marks_and_ids(g: CoreGrid) -> list[tuple[int, int, dict[int, tuple[int, int]]]]:
    """Per painted cells row: (row, column of each '!', {cpu: (start, end) of its id as painted})."""
    out = []
    for ry, row in enumerate(g.rows):
        if row.kind != "cells":
            continue
        text = g._paint(ry, max(g.size.width, g.virtual_size.width)).text
        ids = {}
        for c in row.cells:
            m = re.search(rf"(?<!\d){c.cpu}(?!\d)", text[c.x:c.x + c.width])
            if m:
                ids[c.cpu] = (c.x + m.start(), c.x + m.end())
        for col in (i for i, ch in enumerate(text) if ch == "!"):
            out.append((ry, col, ids))
    return out


def _dist(col: int, span: tuple[int, int]) -> int:
    """Columns from `col` to the span [start, end)."""
    return 0 if span[0] <= col < span[1] else min(abs(col - span[0]), abs(col - (span[1] - 1)))


@pytest.mark.parametrize("shape", [trouble_16, trouble_96], ids=["16", "96"])
@pytest.mark.parametrize("density", ["wall", "full", "compact", "cores"])
async def test_a_mark_sits_on_the_cpu_it_is_about(shape, density):
    frozen = {"n": await frozen_node_async(shape)}

    app = FrozenApp(frozen, start="n")
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        g.use_density(density)
        await pilot.pause()
        assert g.density.startswith(density), g.density
        marked = {c for c, sev in app.views["n"].cpu_findings().items() if sev in ("critical", "warning")}
        assert marked, "the node in trouble has CPUs a finding names"
        found = marks_and_ids(g)
        shown = set()
        for ry, col, ids in found:
            (cell,) = [c for c in g.rows[ry].cells if c.x <= col < c.x + c.width]
            assert any(m in marked for m in cell.members), (cell.cpu, marked)
            shown |= {m for m in cell.members if m in marked}
            if ids:  # ids in the cells (wall, full): the id nearest the mark is the marked CPU's
                nearest = min(ids, key=lambda cpu: _dist(col, ids[cpu]))
                assert nearest == cell.cpu and _dist(col, ids[cell.cpu]) == 1, (
                    f"the mark of CPU {cell.cpu} is nearest CPU {nearest}'s id")
        assert shown == marked  # every marked CPU's cell shows its mark, and no other cell does
