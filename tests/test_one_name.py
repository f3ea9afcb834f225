"""Each module has one importable name, `pinscope.…` (issue 35 item 1). pinscope/ links collectors/, tui/
and themes/; with the repository root on sys.path `import collectors.model` would load a second copy of
pinscope.collectors.model (two classes of each name, two registries of checks), and tools reading the
second name see tui/ detached from collectors/. Nothing may name them so: no code, no test, no code a test
writes for a subprocess, no config (pyproject's entry points and tool settings), no Dockerfile or script.
tests/conftest.py refuses the second names at run time as well (test_conftest_refuses_second_names)."""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECOND = ("collectors", "tui", "themes")
_NAME = "|".join(SECOND)
# an import statement at the start of a line, also inside a string (code a test runs in a subprocess)
IMPORT_LINE = re.compile(rf"^\s*(?:from\s+({_NAME})(?:\.[\w.]+)?\s+import\b|import\s+({_NAME})\b)", re.M)
# a module path in a string: "collectors.model", "tui.cli:main" (an entry point), "python -m tui.cli"
MODULE_PATH = re.compile(rf"(?<![\w./-])({_NAME})\.[a-z_]\w*(?:[.:]\w+)*")
RUN_MODULE = re.compile(rf"\bpython3?\s+(?:-\w+\s+)*-m\s+({_NAME})\b")


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", *patterns],
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted({ROOT / p for p in out if (ROOT / p).is_file()})


def second_names_in_python(text: str) -> list[str]:
    """Every second name a Python source imports: statements (in code or in strings), importlib.import_module
    and __import__ with a literal name."""
    hits = [m.group(0).strip() for m in IMPORT_LINE.finditer(text)]
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return hits + ["(not Python)"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            hits += [f"import {a.name}" for a in node.names if a.name.split(".")[0] in SECOND]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in SECOND:
                hits.append(f"from {node.module} import …")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            arg = node.args[0].value
            if name in ("import_module", "__import__") and isinstance(arg, str) and arg.split(".")[0] in SECOND:
                hits.append(f"{name}({arg!r})")
    return sorted(set(hits))


def strings(value) -> list[str]:
    """Every string in a parsed TOML document, keys included."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def second_names_in_config(doc: dict) -> list[str]:
    """Module paths under a second name anywhere in pyproject.toml (entry points, ruff, mypy, import-linter).
    Paths of files ("collectors/probe.sh", "tests/**") are not module paths."""
    return sorted({m.group(0) for s in strings(doc) for m in MODULE_PATH.finditer(s)})


def test_the_scanner_finds_each_way_in():
    """The checks below are only as good as this: each way of naming a second copy is seen, the one name
    is not."""
    stray = ["import collectors.model", "from tui.cli import main", "import themes",
             "x = importlib.import_module('collectors.sim.node')", "m = __import__('tui.app')",
             'CODE = """\nimport sys\nfrom collectors.collect import Options\n"""']
    for src in stray:
        assert second_names_in_python(src), src
    fine = ["import pinscope.collectors.model", "from pinscope.tui.cli import main", "from .model import X",
            "from ..tui import app", "importlib.import_module('pinscope.tui.app')",
            "# the collectors stage, see tui/cli.py", "import tuiplus", "from themes_extra import x"]
    for src in fine:
        assert second_names_in_python(src) == [], src
    doc = {"project": {"scripts": {"pinscope": "tui.cli:main"}},
           "tool": {"ruff": {"x": ["pinscope.collectors.collect.Options", "collectors.collect.Options"]},
                    "importlinter": {"root_packages": ["pinscope.tui"], "ignore": ["tui.cli -> collectors.x"]},
                    "package-data": {"pinscope.collectors": ["probe.sh"]}, "p": {"collectors/probe.sh": 1}}}
    assert second_names_in_config(doc) == ["collectors.collect.Options", "collectors.x", "tui.cli", "tui.cli:main"]
    assert RUN_MODULE.search("RUN python3 -m tui.cli snapshot") and RUN_MODULE.search("python -u -m collectors")
    assert not RUN_MODULE.search("python3 -m pinscope.tui.cli") and not RUN_MODULE.search("python -m pinscope")


def test_no_code_or_test_imports_a_second_name():
    files = [p for p in tracked("*.py") if not any(part.startswith(".") for part in p.relative_to(ROOT).parts)]
    assert len(files) > 150
    found = {p.relative_to(ROOT).as_posix(): h for p in files if (h := second_names_in_python(p.read_text()))}
    assert found == {}


def test_no_config_names_a_second_module():
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["scripts"] and doc["tool"]["importlinter"]["contracts"]
    assert second_names_in_config(doc) == []


def test_no_dockerfile_or_script_runs_a_second_name():
    files = [p for p in tracked("*Dockerfile*", "*.sh", "*.md", "*.yaml", "*.yml", ".ci/*", "*.toml")
             if p.suffix != ".py"]
    assert any(p.name == "Dockerfile" for p in files) and any(p.name == "run" for p in files)
    found = {p.relative_to(ROOT).as_posix(): m.group(0) for p in files
             for m in [RUN_MODULE.search(p.read_text(errors="replace"))] if m}
    assert found == {}


def test_conftest_refuses_second_names(tmp_path):
    """A stray `import collectors.model` in a test fails the run, saying why: tests/onename.py (conftest's
    first import) refuses the name though the repository root, the cwd of `python -m pytest`, is on sys.path;
    `import pinscope.collectors.model` beside it is fine."""
    (tmp_path / "conftest.py").write_text(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\nimport onename\n")
    (tmp_path / "test_stray.py").write_text("import collectors.model\n\n\ndef test_x():\n    pass\n")
    (tmp_path / "test_one.py").write_text("import pinscope.collectors.model\n\n\ndef test_x():\n    pass\n")
    base = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:cloudcoil", "-p", "no:xdist",
            "-q", "--rootdir", str(tmp_path), "-c", "/dev/null"]
    one = subprocess.run([*base, str(tmp_path / "test_one.py")], cwd=ROOT, capture_output=True, text=True)
    assert one.returncode == 0, one.stdout + one.stderr
    assert subprocess.run([sys.executable, "-c", "import collectors.model"], cwd=ROOT).returncode == 0  # the hole
    bad = subprocess.run([*base, str(tmp_path / "test_stray.py")], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0
    assert "'collectors' is a second name for 'pinscope.collectors'" in bad.stdout + bad.stderr
