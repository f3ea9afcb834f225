"""The grid is painted only as laid out for the size it has (issue 34, item 16): the first report of a node
used to be laid out at the grid's size before the screen arranged its panes for it, and painted once so
(NUMA 0 alone over the whole width at 200x50, NUMA 1 cut off) before the grid's resize laid it out again.
Frozen data: a simulated two-socket node read through the real probe."""

import pytest

from frozen import FrozenApp, frozen_samples
from nodes import dual_socket_intel
from pinscope.tui.app import NodeUpdate
from pinscope.tui.widgets.coregrid import CoreGrid


@pytest.fixture(scope="module")
def xeon(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


class LateApp(FrozenApp):
    """The report comes after the screen showed 'waiting for the first frame', as from a live node."""

    def _start(self) -> None:
        super(FrozenApp, self)._start()


@pytest.mark.parametrize("size", [(200, 50), (160, 45), (120, 40), (80, 24)])
async def test_the_first_grid_is_painted_at_the_size_it_was_laid_out_for(xeon, size, monkeypatch):
    painted: dict[tuple, bool] = {}  # (the grid's size, its rows) -> are they the rows of that size
    real = CoreGrid.render_line

    def shape(rows) -> list:
        return [(r.kind, r.text, tuple(r.labels), tuple((c.cpu, c.x) for c in r.cells)) for r in rows]

    def render_line(self, y):
        key = (tuple(self.size), id(self.rows))
        if self.view is not None and self.view.snap is not None and key not in painted:
            painted[key] = shape(self.rows) == shape(self.choose(self.size.width, self.size.height)[1])
        return real(self, y)

    monkeypatch.setattr(CoreGrid, "render_line", render_line)

    app = LateApp(xeon, start="xeon-2s")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        assert g.view.snap is None and any("waiting for the first frame" in r.text for r in g.rows)
        app.post_message(NodeUpdate("xeon-2s", xeon["xeon-2s"]))
        for _ in range(5):
            await pilot.pause()
        assert g.view.snap is not None and g.pos  # laid out
        numas = [r.text for r in g.rows if "NUMA" in r.text] + [t for r in g.rows for _, t in r.labels if "NUMA" in t]
        assert any("NUMA 0" in t for t in numas) and any("NUMA 1" in t for t in numas), numas
    assert painted, "the grid never painted the node"
    wrong = [size for (size, _), right in painted.items() if not right]
    assert not wrong, f"painted at {wrong} with rows laid out for another size"
