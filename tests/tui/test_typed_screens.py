"""The app and its screens talk through declared types (tui/screens/base.py: ReportScreen; the app's
replay_status, replay_clock, want_detail, keymap_in_force), not by asking objects what they happen to have:
no getattr/hasattr in the app, the screens, the widgets, export or replay (issue 10)."""
import ast
from pathlib import Path

import pytest

TUI = Path(__file__).resolve().parents[2] / "tui"
FILES = [TUI / "app.py", TUI / "promapp.py", TUI / "export.py", TUI / "replay.py",
         *sorted((TUI / "screens").glob("*.py")), *sorted((TUI / "widgets").glob("*.py"))]


def duck_typing(path: Path) -> list[str]:
    return [f"{path.name}:{n.lineno} {n.func.id}" for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr")]


def test_no_getattr_or_hasattr_between_the_app_and_its_screens():
    assert len(FILES) > 15
    assert [hit for f in FILES for hit in duck_typing(f)] == []


@pytest.mark.parametrize("code, hits", [("x = getattr(a, 'b', None)\n", 1), ("x = a.b\n", 0), ("hasattr(s, 'r')\n", 1)])
def test_the_check_sees_them(tmp_path, code, hits):
    f = tmp_path / "m.py"
    f.write_text(code)
    assert len(duck_typing(f)) == hits
