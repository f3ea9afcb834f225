"""Names from a node with escape sequences, newlines, C1 and bidi controls (issue 15): every pane shows them
escaped (as `ls -b` does), nothing raw reaches the terminal, the intruder named by one is still listed."""

from rich.segment import Segment

from pinscope.collectors.text import CONTROL, display
from frozen import FrozenApp, frozen_samples_async
from nodes import HOSTILE, hostile
from pinscope.tui.controlfilter import DropControlCharacters


def screen_text(app) -> str:
    """What the terminal would be sent for the current screen (Textual's own SVG export)."""
    return app.export_screenshot()


async def test_every_pane_shows_node_names_escaped(tmp_path):
    report = await frozen_samples_async(hostile(), tmp_path)

    app = FrozenApp({"h": report}, start="h")
    seen = {}
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        await pilot.press("f")  # the findings pane
        await pilot.pause()
        seen["node"] = screen_text(app)
        snap = app.views["h"].snap
        p = snap.pods[0]
        app.open_container("h", p.uid, p.containers[0].id, p.containers[0].name)
        await pilot.pause()
        seen["container"] = screen_text(app)
        await pilot.press("escape")
        app.open_cpu_or_container("h", 2)
        await pilot.pause()
        seen["cpu/container"] = screen_text(app)

    for pane, svg in seen.items():
        assert not CONTROL.search(svg.replace("\n", "")), pane  # (the SVG's own line breaks aside)
    node = seen["node"].replace("&#160;", " ")
    assert "INTRUDER_TASK" in node
    assert display(HOSTILE["comm"]).replace("&", "&amp;") in node  # \033[31mev\nil\a
    assert display(HOSTILE["ns"]).replace("&", "&amp;") in node


def test_the_line_filter_drops_what_slipped_through():
    f = DropControlCharacters()
    ok = [Segment("plain "), Segment("text")]
    assert f.apply(ok, None) is ok
    out = f.apply([Segment("a\x1b[2J\x07b"), Segment("c\u202ed")], None)
    assert [s.text for s in out] == ["a[2Jb", "cd"]
