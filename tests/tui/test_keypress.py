"""A keypress on the node screen (issue 25): the cursor and the cursor's `cpuN:` detail line come in the same
refresh, and the move repaints only what changed: the grid rows the cursor left and entered, the legend, never
the whole grid or a relayout of the screen."""

from frozen import FrozenApp, frozen_samples_async
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from pinscope.tui.widgets.coregrid import CoreGrid
from textual.content import Content
from textual.widgets import Static


async def test_a_move_repaints_two_grid_rows_and_the_legend_in_the_same_refresh(tmp_path):
    spec = NodeSpec(hostname="k-64", sockets=2, cores=16, threads=2, reserved="0,32",
                    pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="20-23,52-55")])])
    frozen = {"k-64": await frozen_samples_async(spec, tmp_path)}

    app = FrozenApp(frozen, start="k-64")
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        g.cursor = 2  # a shared-pool CPU: no pod to highlight on either side of the move
        await pilot.pause()
        painted: list[int] = []
        real = g.render_line

        def counting(y):
            painted.append(y)
            return real(y)

        g.render_line = counting  # what the compositor asks the grid to paint
        layouts = []
        real_layout = app.screen._refresh_layout

        def counting_layout(*a, **kw):
            layouts.append(1)
            return real_layout(*a, **kw)

        app.screen._refresh_layout = counting_layout
        passes = []
        real_pass = app.screen._compositor_refresh

        def counting_pass(*a, **kw):
            passes.append(str(app.screen.query_one("#legend-cursor", Static).render()))
            return real_pass(*a, **kw)

        app.screen._compositor_refresh = counting_pass  # each time the screen's changes are drawn
        for _ in range(3):
            painted.clear()
            layouts.clear()
            passes.clear()
            before = g.cursor
            await pilot.press("right")
            await pilot.pause()
            assert g.cursor != before
            legend = str(app.screen.query_one("#legend-cursor", Static).render())
            assert f"cpu{g.cursor}:" in legend and f"cpu{before}:" not in legend
            rows = {y for y in painted}
            assert 1 <= len(rows) <= 2, sorted(rows)  # the row it left and the row it entered (often one)
            assert layouts == [], "a cursor move relaid the screen out"
            # the pass that draws the moved cursor draws its detail line too (main drew the grid's rows in
            # one pass, the legend in the next)
            assert passes and all(f"cpu{g.cursor}:" in p for p in passes), passes


async def test_a_theme_switch_repaints_the_legend_key_in_the_new_styles(tmp_path):
    """The key is its own Static, which a cursor move leaves alone: after a theme switch it must be painted
    in the new theme's role styles by itself, not at the next tick (a paused replay or a down node has none)."""
    spec = NodeSpec(hostname="k-16", cores=8, threads=2, reserved="0,8",
                    pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="2,10")])])
    frozen = {"k-16": await frozen_samples_async(spec, tmp_path)}

    def key_styles(app):
        return [s.style for s in app.screen.query_one("#legend-key", Static).render().spans]

    app = FrozenApp(frozen, start="k-16")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        before = key_styles(app)
        await pilot.press("t")
        for _ in range(3):
            await pilot.pause()
        await pilot.press("right")  # a move repaints the cursor's lines, not the key
        await pilot.pause()
        scr = app.screen
        fresh = [s.style for s in Content.from_rich_text(scr._legend_key(max(20, scr._plan.side - 3))).spans]
        assert fresh != before, "the theme switch changed no role style: the test shows nothing"
        assert key_styles(app) == fresh


async def test_the_cursor_line_of_an_offline_cpu_says_its_place_is_unknown(tmp_path):
    """An offline CPU has no topology/ directory: its line said "socket None NUMA None core None  sib"."""
    spec = NodeSpec(hostname="k-off", cores=4, threads=2, reserved="0,4", offline="3,7",
                    pods=[PodSpec("rt", containers=[CtrSpec("app", cpus="2,6")])])
    frozen = {"k-off": await frozen_samples_async(spec, tmp_path)}

    app = FrozenApp(frozen, start="k-off")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        lines = {}
        for cpu in (2, 3):
            g.cursor = cpu
            await pilot.pause()
            lines[cpu] = str(app.screen.query_one("#legend-cursor", Static).render()).split("\n")[0]
        assert lines[3].startswith("cpu3: offline") and "None" not in lines[3], lines
        assert "no topology while offline" in lines[3] and not lines[3].rstrip().endswith("sib"), lines
        assert "socket 0 NUMA 0 core 2" in lines[2], lines  # an online CPU: as before
