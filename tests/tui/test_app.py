"""Pilot tests (App.run_test): navigation, filter, drill-down, help, theme switch, quit, a stale node,
and the demo changing over time. Real Textual, real probe on fixture trees."""
import asyncio
import time

import pytest

from nodes import dual_socket_intel, policy_none
from frozen import FrozenApp, frozen_samples, frozen_samples_async
from pinscope.collectors.fleet import NodeTarget
from pinscope.tui.app import NodeState, PinscopeApp
from pinscope.tui.screens.container import ContainerScreen
from pinscope.tui.screens.cpu import CpuScreen
from textual.binding import Binding

from pinscope.tui.screens.help import HelpScreen
from pinscope.tui.screens.node import NodeScreen
from pinscope.tui.screens.nodeinfo import NodeInfoScreen
from pinscope.tui.widgets.coregrid import CoreGrid


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x")),
            "plain": frozen_samples(policy_none(), tmp_path_factory.mktemp("p"))}


def grid(app) -> CoreGrid:
    return app.screen.query_one(CoreGrid)


async def test_navigation_moves_cursor_and_lights_the_pod(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = grid(app)
        assert g.cursor == 0 and g.density == "wall"  # 200x60: the big cells (issue 24)
        await pilot.press("right")  # the SMT sibling of 0 sits beside it
        assert g.cursor == 24
        await pilot.press("right")
        assert g.cursor == 1
        await pilot.press("l", "h")
        assert g.cursor == 1
        # cpu 1 is exclusive to md-feed-0: all of that pod's CPUs light up
        assert g.highlight == {1, 2, 25, 26}
        await pilot.press("down")
        assert g.cursor not in (1, 25) and g.pos[g.cursor][0] > g.pos[1][0]
        await pilot.press("up")
        assert g.cursor == 1
        await pilot.press("k")  # first row: stays
        assert g.cursor == 1


async def test_filter_then_enter_jumps_then_enter_drills_into_container(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        await pilot.press(*"matcher")
        await pilot.pause()
        assert grid(app).highlight == {13, 14, 37, 38}
        await pilot.press("enter")
        assert grid(app).cursor == 13
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, ContainerScreen) and scr.cname == "engine"
        files = str(scr.query_one("#ctr-files").render())
        assert "cpuset.cpus.effective" in files and "13-14,37-38" in files
        assert app.fleet.collectors["xeon-2s"].focus == scr.cid  # the drill-down asks for everything of it
        await pilot.press("escape")
        assert isinstance(app.screen, NodeScreen) and app.fleet.collectors["xeon-2s"].focus is None


async def test_filter_without_match_says_so(frozen, notices):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"nosuchpod", "enter")
        await pilot.pause()
        assert grid(app).cursor == 0
        assert any("no pod" in n for n in notices), notices


async def test_every_pane_is_reachable_from_the_keyboard(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # cpu 0 is reserved: the CPU pane
        assert isinstance(app.screen, CpuScreen)
        info = str(app.screen.query_one("#cpu-info").render())
        assert "CPU 0: reserved" in info and "SMT siblings 0,24" in info
        await pilot.press("escape", "right", "right", "c")
        assert isinstance(app.screen, CpuScreen) and app.screen.cpu == 1
        assert "md-feed-0" in str(app.screen.query_one("#cpu-info").render())
        await pilot.press("escape", "n")
        assert isinstance(app.screen, NodeInfoScreen)
        txt = str(app.screen.query_one("#node-info").render())
        assert "cpuManagerPolicy" in txt and "static" in txt and "from /var/lib/kubelet/config.yaml" in txt
        assert "distances 10 32" in txt
        await pilot.press("escape", "f")
        fs = app.screen.query_one("#findings")
        assert fs.has_class("visible") and fs.row_count == len(app.views["xeon-2s"].findings)
        await pilot.press("escape", "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, NodeScreen)


async def test_help_is_generated_from_bindings(frozen):
    from pinscope.tui.screens.help import binding_rows

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        rows = binding_rows(app, app.screen)
        ids = {r[2] for r in rows}
        for b in [*PinscopeApp.BINDINGS, *NodeScreen.BINDINGS, *CoreGrid.BINDINGS]:
            if b.description:
                assert b.id in ids
        assert all(b.id for b in [*PinscopeApp.BINDINGS, *NodeScreen.BINDINGS, *CoreGrid.BINDINGS])


async def test_theme_switch_repaints(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        g = grid(app)
        before = g._style("exclusive")
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "pinscope-light"
        assert g._style("exclusive") != before
        await pilot.press("t")
        await pilot.pause()
        assert app.theme == "pinscope-warroom" and g.glyphs["exclusive"] == "■"


async def test_quit_exits_zero(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test() as pilot:
        await pilot.press("q")
    assert app.return_code == 0  # None would mean the app never exited


async def test_stale_and_down_node_greys_its_data_and_survives(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        v = app.views["xeon-2s"]
        v.last_update = time.monotonic() - 10
        app.stale_checks = True
        app._check_stale()
        await pilot.pause()
        assert v.state == "stale"
        assert "STALE" in str(app.screen.query_one("#status").render())
        g = grid(app)
        first = next(i for i, r in enumerate(g.rows) if r.kind == "cells")
        cells = [seg for seg in g._paint(first, 100) if seg.text.strip()]
        assert cells and all(seg.style == g._style("stale") for seg in cells[1:])
        app.post_message(NodeState("xeon-2s", "down", "connection lost"))
        await pilot.pause()
        assert "DOWN (connection lost)" in str(app.screen.query_one("#status").render())
        assert app.screen.query_one("#status").has_class("down")
        await pilot.press("right", "enter")  # still navigable on the last data
        assert isinstance(app.screen, CpuScreen)


async def test_switching_nodes(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert app.screen.target == "plain" and app.focus_node == "plain"
        assert "plain" in str(app.screen.query_one("#status").render())


async def test_fleet_overview_worst_first_filter_open_and_back(frozen, tmp_path):
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
    from pinscope.tui.screens.fleet import FleetScreen
    from pinscope.tui.widgets.fleetmap import FleetMap

    bad = await frozen_samples_async(NodeSpec(hostname="zz-broken", cores=2, pods=[PodSpec("a", containers=[CtrSpec("x", cpus="1", effective="1-2")])]),
                                     tmp_path)
    data = {**frozen, "zz-broken": bad}

    app = FrozenApp(data)
    async with app.run_test(size=(160, 40)) as pilot:
        end = time.monotonic() + 10  # a loaded machine may take more than two pauses to compose it
        while not (isinstance(app.screen, FleetScreen) and app.screen.query(FleetMap)) and time.monotonic() < end:
            await pilot.pause(0.05)
        assert isinstance(app.screen, FleetScreen)
        fm = app.screen.query_one(FleetMap)
        app._refresh_fleet()
        await pilot.pause()
        assert [v.target for v in fm.views] == ["zz-broken", "plain", "xeon-2s"]  # worst first, then name
        line = "".join(seg.text for seg in fm.render_line(0))
        assert "zz-broken" in line and "✖1" in line and "!" in line
        assert "3 nodes" in str(app.screen.query_one("#status").render())
        await pilot.press("enter")  # the cursor starts on the worst node
        assert isinstance(app.screen, NodeScreen) and app.screen.target == "zz-broken"
        await pilot.press("escape")
        await pilot.press("slash", *"xeon", "enter")
        assert [v.target for v in fm.views] == ["xeon-2s"]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.target == "xeon-2s" and app.focus_node == "xeon-2s"
        await pilot.press("escape")
        assert isinstance(app.screen, FleetScreen) and app.focus_node is None


@pytest.mark.parametrize("write", [True, False], ids=["trees-first", "trees-on-connect"])
async def test_demo_changes_over_time(write):
    """`write=False` is `pinscope demo`: the UI starts before the trees exist; each is written in a
    thread when its node first connects."""
    from pinscope.collectors.sim.demo import DemoCluster
    from pinscope.collectors.collect import Options

    cl = DemoCluster(write=write)
    assert write or not any(s.root.exists() for s in cl.sims)
    app = PinscopeApp(cl.targets(), Options(), 0.3, "dark", cleanup=cl.close, start="demo/trade-xeon-96")
    async with app.run_test(size=(200, 60)) as pilot:
        v = app.views["demo/trade-xeon-96"]
        for _ in range(600):  # hang guards (60 s, 30 s): a loaded machine ticks late
            await asyncio.sleep(0.1)
            if v.rates:
                break
        assert v.snap is not None and v.rates is not None, v.message
        first = dict(v.rates.util)
        text1 = "".join(s.text for y in range(20) for s in grid(app).render_line(y))
        g0 = v.generation
        for _ in range(300):
            await asyncio.sleep(0.1)
            if v.generation >= g0 + 3:
                break
        assert v.generation >= g0 + 3
        assert v.rates.util != first
        text2 = "".join(s.text for y in range(20) for s in grid(app).render_line(y))
        assert text1 != text2
        assert len(v.snap.topology.cpus) == 96 and v.snap.kubelet.cpu_manager_policy == "static"
        codes = {f.code for f in v.findings}
        assert {"STATE_CGROUP_DRIFT", "IRQ_ON_EXCLUSIVE"} <= codes
        await pilot.press("q")


async def test_mouse_click_moves_then_drills(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = grid(app)
        ri, ci = g.pos[25]
        cell = g.rows[ri].cells[ci]
        await pilot.click(CoreGrid, offset=(cell.x + 1, ri))
        await pilot.pause()
        assert g.cursor == 25
        await pilot.click(CoreGrid, offset=(cell.x + 1, ri))
        await pilot.pause()
        assert isinstance(app.screen, ContainerScreen) and app.screen.cname == "feed"


async def test_keymap_file_remaps_a_binding(frozen, tmp_path, monkeypatch):
    import pinscope.tui.app as appmod

    km = tmp_path / "keymap.toml"
    km.write_text('"grid.select" = "space"\n')
    monkeypatch.setattr(appmod, "KEYMAP", km)

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        await pilot.press("space")
        await pilot.pause()
        assert isinstance(app.screen, CpuScreen)


async def test_keymap_unknown_ids_are_named_in_one_line(frozen, tmp_path, monkeypatch, notices):
    """An id no binding has (a typo) was silently ignored: it is named, in one line, and the known ones work."""
    import pinscope.tui.app as appmod

    km = tmp_path / "keymap.toml"
    km.write_text('"grid.selct" = "x"\n"app.qiut" = "z"\n"grid.select" = "space"\n')
    monkeypatch.setattr(appmod, "KEYMAP", km)

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        assert notices == [f"keymap {km}: unknown binding ids 'app.qiut', 'grid.selct' ignored "
                         "(the ids are listed in the help, ?)"], notices
        await pilot.press("space")
        await pilot.pause()
        assert isinstance(app.screen, CpuScreen)


async def test_help_shows_the_keys_of_the_keymap_in_force(frozen, tmp_path, monkeypatch):
    """The help is generated from the bindings: after keymap.toml remaps one, it names the new key (it
    showed the class's default, Enter, while the footer said space)."""
    import pinscope.tui.app as appmod
    from pinscope.tui.screens.help import binding_rows

    km = tmp_path / "keymap.toml"
    km.write_text('"grid.select" = "space"\n')
    monkeypatch.setattr(appmod, "KEYMAP", km)

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        rows = {bid: keys for keys, _, bid in binding_rows(app, app.screen)}
        assert rows["grid.select"] == app.get_key_display(Binding("space", "x")), rows
        assert rows["grid.left"] == "←, h"  # the others unchanged


async def test_screenshot_key_saves_an_svg(frozen, tmp_path, monkeypatch):
    monkeypatch.setenv("PINSCOPE_SCREENSHOTS", str(tmp_path))

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause()
    svgs = list(tmp_path.glob("*.svg"))
    assert len(svgs) == 1 and "<svg" in svgs[0].read_text()[:2000] and "Socket" in svgs[0].read_text()


async def test_no_color_renders_every_screen_in_monochrome(frozen, monkeypatch):
    """NO_COLOR: Textual applies its monochrome filter; every segment must carry a style, and the grid
    must still read (glyphs)."""
    monkeypatch.setenv("NO_COLOR", "1")

    app = FrozenApp(frozen)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert app.no_color
        await pilot.press("enter")  # the fleet -> a node grid
        await pilot.pause()
        await pilot.press("enter", "escape", "f", "escape", "escape")
        await pilot.pause()
        svg = app.export_screenshot()
        assert "Socket" in svg or "fleet" in svg


async def test_container_pane_marks_the_drift_the_findings_name(tmp_path):
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    data = {"drift": await frozen_samples_async(NodeSpec(hostname="d", cores=4, reserved="0,4", pods=[
        PodSpec("gw", "trading", containers=[CtrSpec("fix", cpus="1,5", effective="1-2,5-6")])]), tmp_path)}

    app = FrozenApp(data)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        app.open_container("drift", app.views["drift"].snap.pods[0].uid, app.views["drift"].snap.pods[0].containers[0].id, "fix")
        await pilot.pause()
        info = str(app.screen.query_one("#ctr-info").render())
        assert "MISMATCH" in info and "1-2,5-6" in info


async def test_finding_enter_jumps_to_the_container_it_names(tmp_path):
    """f, move to the drift finding, Enter: the container pane of the container the finding names."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    data = {"drift": await frozen_samples_async(NodeSpec(hostname="d", cores=4, reserved="0,4", pods=[
        PodSpec("web", "shop", containers=[CtrSpec("nginx", cpus="2,6")]),
        PodSpec("gw", "trading", containers=[CtrSpec("fix", cpus="1,5", effective="1-2,5-6")])]), tmp_path)}

    app = FrozenApp(data)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        codes = [f.code for f in app.views["drift"].findings]
        assert "STATE_CGROUP_DRIFT" in codes, codes
        await pilot.press("f")
        for _ in range(codes.index("STATE_CGROUP_DRIFT")):
            await pilot.press("down")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ContainerScreen) and app.screen.cname == "fix"
        assert "MISMATCH" in str(app.screen.query_one("#ctr-info").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)


async def test_grid_paints_again_only_the_rows_whose_cells_changed(frozen):
    """A new report where one CPU's load moved to another shade: that CPU's row is painted again, no other
    (the rest of the terminal keeps what it shows); the same report once more paints nothing."""
    from dataclasses import replace

    from pinscope.tui.app import NodeUpdate

    rep = frozen["xeon-2s"]

    app = FrozenApp({"xeon-2s": rep})
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = grid(app)
        app.post_message(NodeUpdate("xeon-2s", rep))  # settle the layout
        await pilot.pause()
        cpu = max(c for c in g.pos if c != g.cursor)
        util = dict(rep.rates.util)
        util[cpu] = 0.0 if (util.get(cpu) or 0.0) > 0.5 else 1.0
        row = g.pos[cpu][0]
        before = [g._paint(y, 200).text for y in range(len(g.rows))]
        g.cache_misses = g.cache_hits = 0
        app.post_message(NodeUpdate("xeon-2s", replace(rep, rates=replace(rep.rates, util=util))))
        await pilot.pause()
        assert g.cache_misses == 1, (g.cache_misses, g.cache_hits)
        after = [g._paint(y, 200).text for y in range(len(g.rows))]
        assert [y for y in range(len(before)) if before[y] != after[y]] == [row]
        g.cache_misses = g.cache_hits = 0
        app.post_message(NodeUpdate("xeon-2s", replace(rep, rates=replace(rep.rates, util=dict(util)))))
        await pilot.pause()
        assert g.cache_misses == 0 and g.cache_hits == 0, (g.cache_misses, g.cache_hits)
        await pilot.press("q")



async def test_fleet_refresh_after_its_widgets_went_is_quiet(frozen):
    """The overview's 0.5 s repaint timer can fire while the app closes, after the FleetScreen's widgets were
    removed (CI saw it once: NoMatches for FleetMap, the test died). It must pass quietly, as the node screen's
    refresh does."""
    from pinscope.tui.screens.fleet import FleetScreen
    from pinscope.tui.widgets.fleetmap import FleetMap

    app = FrozenApp(frozen)
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, FleetScreen)
        await app.screen.query_one(FleetMap).remove()  # as the shutdown leaves it
        app._fleet_dirty = True
        app._refresh_fleet()  # raised NoMatches before
        await pilot.press("q")
    assert app.return_code == 0


# the race is timing-dependent: several quits, each at another moment of a tick (each in a loop of its own)
@pytest.mark.parametrize("i", range(8))
async def test_quitting_while_ticks_arrive_fast_is_quiet(tmp_path, i):
    """A tick that lands while the app closes (the node screen's widgets already removed) used to query a
    CoreGrid that was gone: NoMatches, a traceback on the way out. Live collectors at 20 ms, quit mid-flow."""
    from pinscope.collectors.collect import Options
    from pinscope.collectors.sim.node import SimNode

    root = tmp_path / "node"
    SimNode(policy_none(), root).write()

    app = PinscopeApp([NodeTarget("local", options=Options(root=str(root)))], interval=0.02)
    async with app.run_test(size=(120, 40)) as pilot:  # run_test raises what the app raised (it was NoMatches)
        while app.views["local"].ticks < 3 + i:
            await asyncio.sleep(0.02)
        if i % 2:
            await pilot.press("q")
        # else: the app is shut down from outside (as when its terminal or browser tab goes away)
    rc = app.return_code
    assert rc == 0 or (i % 2 == 0 and rc is None), rc  # shut down from outside: no exit code of its own


@pytest.mark.parametrize("names", [["n1"], ["n1", "n2"]], ids=["node-screen", "fleet-overview"])
async def test_messages_queued_while_the_app_is_shut_down_from_outside_are_quiet(names):
    """Shut down from outside (run_test's exit, a closed terminal or browser tab), Textual prunes every screen,
    empties the stack, then still handles what was queued meanwhile: a node's message there used to ask for
    `app.screen` (ScreenStackError: No screens on stack, the app died on the way out; seen under load as
    test_quitting_while_ticks_arrive_fast_is_quiet). Messages arrive on every turn of the loop, as from a
    worker that never waits, so some are always queued when the stack empties: no timing involved."""
    app = PinscopeApp([NodeTarget(n) for n in names], interval=3600, autostart=False)
    posted = [0]
    stop = asyncio.Event()

    async def flood():
        while not stop.is_set():
            app.post_message(NodeState(names[posted[0] % len(names)], "down", f"gone {posted[0]}"))
            posted[0] += 1
            await asyncio.sleep(0)

    async with app.run_test(size=(120, 40)) as pilot:  # run_test raises what the app raised
        await pilot.pause()
        task = asyncio.create_task(flood())
        await pilot.pause()
    stop.set()
    await task
    assert app.screen_stack == [] and posted[0] > 10
    assert app.return_code is None


@pytest.mark.parametrize("where", ["grid", "filter", "help"])
async def test_ctrl_c_quits_like_q(frozen, where, notices):
    """Issue 23: ctrl+c showed Textual's "Press ctrl+q to quit" notice; in pinscope it quits, from the grid,
    from the filter box (nothing selected to copy) and from the help."""
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        if where == "filter":
            await pilot.press("slash", "m")
        elif where == "help":
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
        assert not any("to quit" in n for n in notices)


async def test_help_lists_ctrl_c(frozen):
    from pinscope.tui.screens.help import binding_rows

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        rows = {bid: (keys, desc) for keys, desc, bid in binding_rows(app, app.screen)}
        assert rows["app.interrupt"][1] == "Quit (as q)" and rows["app.quit"][1] == "Quit"
        assert "c" in rows["app.interrupt"][0].lower()


async def test_ctrl_c_still_copies_a_selection(frozen):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"matcher")
        box = app.screen.query_one("#filter")
        box.action_select_all()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running and app.clipboard == "matcher"
        await pilot.press("escape", "ctrl+c")  # the filter cleared: nothing selected, ctrl+c quits
        await pilot.pause()
        assert not app.is_running


async def test_read_only_session_refuses_s_and_e(frozen, tmp_path, monkeypatch, notices):
    """`pinscope serve` beyond localhost runs its sessions with PINSCOPE_READ_ONLY=1: `s` and `e` write no
    file on the serving machine, and say why."""
    monkeypatch.setenv("PINSCOPE_SCREENSHOTS", str(tmp_path))
    monkeypatch.setenv("PINSCOPE_READ_ONLY", "1")

    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("s", "e")
        await pilot.pause()
        said = notices
        assert len(said) == 2 and all(m.startswith("read-only session") for m in said)
    assert list(tmp_path.iterdir()) == []
