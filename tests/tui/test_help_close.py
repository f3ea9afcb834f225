"""`?` opens the help, and the help says how to close it (issue 34, item 15), with the keys in force (a
keymap.toml that remaps help.close is said as remapped); each key it names closes it. Real Textual."""

import pytest

from frozen import FrozenApp, frozen_samples, screen_lines
from nodes import dual_socket_intel
from pinscope.tui.screens.help import HelpScreen


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


async def help_text_then_close(frozen, key: str, size=(80, 24)) -> tuple[str, bool]:
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(screen_lines(app))
        await pilot.press(key)
        await pilot.pause()
        return text, not isinstance(app.screen, HelpScreen) and app.is_running


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
@pytest.mark.parametrize("key", ["escape", "question_mark", "q"])
async def test_the_help_says_how_to_close_it_and_those_keys_do(frozen, key, size):
    text, closed = await help_text_then_close(frozen, key, size)
    line = next((ln for ln in text.splitlines() if "close this help" in ln), None)
    assert line is not None, text
    assert "esc" in line and "?" in line and " q" in line, line
    assert closed, f"{key} did not close the help"


async def test_a_remapped_close_key_is_the_one_said(frozen, tmp_path, monkeypatch):
    import pinscope.tui.app as appmod

    km = tmp_path / "keymap.toml"
    km.write_text('"help.close" = "x"\n')
    monkeypatch.setattr(appmod, "KEYMAP", km)
    text, closed = await help_text_then_close(frozen, "x")
    line = next(ln for ln in text.splitlines() if "close this help" in ln)
    assert "x" in line.split("close this help")[0] and "esc" not in line, line
    assert closed
