"""The README is the front page: under 300 lines, its first screen gives the two set-up commands, and CI runs
them as written there; docs/findings.md documents every finding code, docs/prometheus.md every metric."""
import re
import subprocess
from pathlib import Path

import pytest

from pinscope.collectors.findings import CODES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
FINDINGS = (ROOT / "docs" / "findings.md").read_text()
PROMETHEUS = (ROOT / "docs" / "prometheus.md").read_text()


def test_every_code_is_documented_with_meaning_and_fix():
    for code, (sev, meaning, fix) in CODES.items():
        line = next((ln for ln in FINDINGS.splitlines() if ln.startswith(f"| `{code}` |")), None)
        assert line, f"{code} missing from docs/findings.md"
        assert f"| {sev} |" in line and meaning in line and fix in line


def test_the_readme_is_a_front_page():
    """The README is what pinscope is, a picture, the set-up commands and where to read more (issue 35): the
    manual is docs/, by topic."""
    assert len(README.splitlines()) < 300


def test_first_screen_has_both_setup_commands_and_ci_runs_exactly_them():
    """Fresh Debian 12: no system pip (PEP 668), no venv module until python3-venv is installed. Both commands
    make a venv and use it; .ci/run reads them from the README and runs those very lines."""
    first = "\n".join(README.splitlines()[:30])
    blocks = re.findall(r"```sh\n(.*?)\n```", first, re.S)
    assert len(blocks) == 2, first
    try_it, tests = blocks
    assert try_it.startswith("apt-get update && apt-get install -y python3-venv && python3 -m venv .venv && ")
    assert try_it.endswith(".venv/bin/pip install -e . && .venv/bin/pinscope demo")
    assert tests == ("sh tests/system-packages.sh && python3 -m venv .venv && .venv/bin/pip install -e '.[test]'"
                     " && .venv/bin/python -m pytest")
    for cmd in blocks:
        assert "pip install" not in cmd.replace(".venv/bin/pip install", ""), "the system pip refuses (PEP 668)"
    r = subprocess.run(["bash", str(ROOT / ".ci/run"), "--print"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.splitlines() == [tests, try_it], r.stdout + r.stderr


def test_ci_runs_the_type_checker_and_the_linter_the_readme_names():
    """"Check the code" is a README command like the set-up ones: .ci/run reads it from there and runs it after
    the tests, in their venv; the test extra installs both tools (the README's test command installs it)."""
    import tomllib

    block = re.search(r"\*\*Check the code\*\*.*?```sh\n(.*?)\n```", README, re.S)
    assert block and block.group(1) == ".venv/bin/mypy && .venv/bin/ruff check ."
    ci = (ROOT / ".ci/run").read_text()
    assert "check_cmd=$(readme_cmd '**Check the code**')" in ci and 'bash -euo pipefail -c "$check_cmd"' in ci
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert {"mypy", "ruff"} <= {re.split(r"[=<>~ ]", d)[0] for d in test_extra}


@pytest.mark.timeout(300)  # a nested pytest with its workers: a hang guard, slow on a loaded machine
def test_the_readme_test_command_ends_with_pytests_summary_line():
    """The README's test command as written (its `python -m pytest`, with pyproject's addopts), on one test:
    the output ends with pytest's framed summary line, which .ci/run's log then shows (a -q in addopts or in
    the README shortened it; -qq hides it)."""
    import sys

    cmd = README.split("**Run the tests**", 1)[1].split("```sh\n", 1)[1].split("\n", 1)[0]
    pytest_cmd = cmd.rsplit(" && ", 1)[1]
    assert pytest_cmd == ".venv/bin/python -m pytest"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                        "tests/test_readme.py::test_one_list_of_system_packages"],
                       cwd=ROOT, capture_output=True, text=True, timeout=280)
    last = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0 and re.fullmatch(r"=+ 1 passed in [0-9.]+s( \([0-9:]+\))? =+", last), r.stdout[-2000:]


def test_one_list_of_system_packages():
    """tests/system-packages.sh is the one place; .ci/run has no list of its own."""
    pkgs = (ROOT / "tests/system-packages.sh").read_text()
    for p in ("python3-venv", "openssh-server", "tmux", "util-linux", "busybox", "prometheus", "chromium",
              "kubernetes-client"):
        assert p in pkgs
    ci = (ROOT / ".ci/run").read_text()
    assert "apt-get" not in ci and "pip install" not in ci


def test_metrics_table_is_the_exporters_contract():
    """Every metric the exporter can serve is in docs/prometheus.md's table with its type, labels and meaning, and
    the table has no metric the exporter does not serve."""
    from pinscope.collectors.exporter.metrics import CONTRACT

    rows = [ln for ln in PROMETHEUS.splitlines() if ln.startswith("| `pinscope_")]
    for f in CONTRACT:
        want = f"| `{f.sample_name}` | {f.type} | {', '.join(f.labels)} | {f.help} |"
        assert want in rows, f"{f.sample_name}: docs/prometheus.md row differs or is missing"
    assert len(rows) == len(CONTRACT)
