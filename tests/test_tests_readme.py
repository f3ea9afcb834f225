"""tests/README.md maps each module to its tests (issue 35): a module without a row, or a test file named
there that is gone, fails here, so the map stays true as modules and tests come and go."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = (ROOT / "tests" / "README.md").read_text()


def test_every_module_has_a_row():
    mods = sorted(p.relative_to(ROOT).as_posix() for d in ("cli", "collectors", "tui", "themes")
                  for p in (ROOT / d).rglob("*.py"))
    assert len(mods) > 80
    assert [m for m in mods if f"| `{m}` |" not in TABLE] == []


def test_every_test_named_exists():
    named = set(re.findall(r"(?<![\w/])((?:[a-z]+/)?test_\w+\.py)", TABLE))
    assert len(named) > 50
    assert sorted(n for n in named if not (ROOT / "tests" / n).is_file()) == []


def test_every_row_is_a_module_that_exists():
    rows = re.findall(r"^\| `([^`]+)` \|", TABLE, re.M)
    assert [r for r in rows if not (ROOT / r).is_file()] == []
