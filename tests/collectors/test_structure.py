"""The shape of collectors/ (issue 10): every function or method a reader can hold in one screen, at most
60 lines (a new check, finding family or stage is a new small function, not a block inside a monolith)."""
import ast
from pathlib import Path

import pytest

COLLECTORS = Path(__file__).resolve().parents[2] / "collectors"
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


def test_every_function_in_collectors_is_at_most_60_lines():
    assert len(list(COLLECTORS.rglob("*.py"))) > 40
    assert long_functions(COLLECTORS) == []


@pytest.mark.parametrize("lines, flagged", [(60, False), (61, True)])
def test_the_limit_is_checked(tmp_path, lines, flagged):
    pkg = tmp_path / "collectors"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 1))
    (pkg / "m.py").write_text(f"def f():\n{body}")
    assert bool(long_functions(pkg)) is flagged
