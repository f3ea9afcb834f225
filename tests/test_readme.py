"""The README documents every finding code, and its first screen gives the two set-up commands."""
from pathlib import Path

from collectors.findings import CODES

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_code_is_documented_with_meaning_and_fix():
    for code, (sev, meaning, fix) in CODES.items():
        line = next((ln for ln in README.splitlines() if ln.startswith(f"| `{code}` |")), None)
        assert line, f"{code} missing from the README"
        assert f"| {sev} |" in line and meaning in line and fix in line


def test_first_screen_has_both_setup_commands():
    first = "\n".join(README.splitlines()[:30])
    assert "pip install -e . && pinscope demo" in first
    assert "pip install -e '.[test]' && python3 -m pytest" in first
