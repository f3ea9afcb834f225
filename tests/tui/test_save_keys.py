"""`s` (screenshot) and `e` (export) where they cannot write, and where they can (issue 34, item 13): a
directory that takes no file (/proc/self; a path that is a file) is said in a notice naming it, and the app
goes on (`s` died with a traceback, exit 1); both keys name their files the same way and say where they
wrote. Real Textual (run_test), frozen data read through the real probe."""
import os
import re

import pytest

from frozen import FrozenApp, frozen_samples
from nodes import dual_socket_intel


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


async def press(frozen, *keys) -> bool:
    """Press the keys on the node's grid; whether the app still runs after them."""
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        for k in keys:
            await pilot.press(k)
            await pilot.pause()
        return app.is_running and app.return_code is None


def unwritable(tmp_path) -> list[str]:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    return ["/proc/self", str(a_file), str(a_file / "below")]


@pytest.mark.parametrize("key,what", [("s", "screenshot"), ("e", "export")])
async def test_a_directory_that_takes_no_file_is_said_and_the_app_goes_on(frozen, tmp_path, monkeypatch, notices, key, what):
    for where in unwritable(tmp_path):
        monkeypatch.setenv("PINSCOPE_SCREENSHOTS", where)
        notices.clear()
        assert await press(frozen, key, "c", "escape"), f"{key} in {where} ended the app"
        failed = [n for n in notices if n.startswith(f"{what} failed")]
        assert len(failed) == 1 and where in failed[0], notices


async def test_s_and_e_name_their_files_alike_and_say_where(frozen, tmp_path, monkeypatch, notices):
    out = tmp_path / "shots"
    monkeypatch.setenv("PINSCOPE_SCREENSHOTS", str(out))
    assert await press(frozen, "s", "e", "s")
    names = sorted(p.name for p in out.iterdir())
    stems = sorted({n.rsplit(".", 1)[0] for n in names})
    # pinscope-<node>-<YYYYmmdd-HHMMSS>[-N]: two s in the same second keep both
    assert all(re.fullmatch(r"pinscope-xeon-2s-\d{8}-\d{6}(-\d+)?", s) for s in stems), names
    assert sum(n.endswith(".svg") for n in names) == 3 and len(stems) == 3, names
    saved = [n for n in notices if n.startswith("saved")]
    assert len(saved) == 3, notices
    for n in saved:
        assert n.endswith(f" in {out}"), n
        for f in n.removeprefix("saved ").rsplit(" in ", 1)[0].split(", "):
            assert (out / f).is_file(), (f, names)


async def test_s_writes_in_the_working_directory_by_default_and_says_which(frozen, tmp_path, monkeypatch, notices):
    monkeypatch.delenv("PINSCOPE_SCREENSHOTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert await press(frozen, "s")
    (svg,) = tmp_path.glob("*.svg")
    assert notices[-1] == f"saved {svg.name} in {os.getcwd()}", notices
