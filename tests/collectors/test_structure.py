"""The shape of collectors/ (issue 10), tui/ and cli/ (issue 35): every function or method a reader can hold in
one screen, at most 60 lines (a new check, finding family, stage, pane or command is a new small function, not a
block inside a monolith). No exceptions: a function over the limit is split."""
import ast
from pathlib import Path

import pytest

COLLECTORS = Path(__file__).resolve().parents[2] / "collectors"
TUI = COLLECTORS.parent / "tui"
CLI = COLLECTORS.parent / "cli"
LIMIT = 60


def long_functions(root: Path, limit: int = LIMIT) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {n} lines")
    return out


@pytest.mark.parametrize("root, at_least", [(COLLECTORS, 41), (TUI, 31), (CLI, 3)], ids=["collectors", "tui", "cli"])
def test_every_function_is_at_most_60_lines(root, at_least):
    assert len(list(root.rglob("*.py"))) >= at_least  # the folder is where this test looks
    assert long_functions(root) == []


@pytest.mark.parametrize("lines, flagged", [(60, False), (61, True)])
def test_the_limit_is_checked(tmp_path, lines, flagged):
    pkg = tmp_path / "collectors"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    (pkg / "m.py").write_text(f"def f():\n{body}")
    assert bool(long_functions(pkg)) is flagged
