"""The real node's gate (issue 33): outside CI, a machine without Go skips the cluster's tests with one line
saying why; with CI=true the same machine fails them (helpers.need). Runs anywhere: nothing is started."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _session_without_go(ci: bool) -> subprocess.CompletedProcess:
    """pytest on a throwaway test that uses `cluster`, with Go hidden from pytest_cluster.available()."""
    code = textwrap.dedent("""
        import shutil, sys
        from pathlib import Path
        import pytest
        sys.path.insert(0, sys.argv[1])
        real_which, real_exists = shutil.which, Path.exists
        shutil.which = lambda n, *a, **k: None if n == "go" else real_which(n, *a, **k)
        Path.exists = lambda p: False if str(p) == "/usr/local/go/bin/go" else real_exists(p)
        sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-n", "0", "-rs", sys.argv[2]]))
    """)
    return subprocess.run([sys.executable, "-c", code, str(TESTS), str(TESTS / "cluster" / "test_cluster_smoke.py")
                           + "::test_node_ready"], capture_output=True, text=True, timeout=300, cwd=TESTS.parent,
                          env={**os.environ, "CI": "true" if ci else ""})


def test_without_go_outside_ci_the_cluster_tests_skip_with_one_line() -> None:
    if os.geteuid() != 0:
        return  # the gate's first line is root's: this one is about Go
    p = _session_without_go(ci=False)
    assert p.returncode == 0, p.stdout[-2000:]
    skips = [line for line in p.stdout.splitlines() if line.startswith("SKIPPED")]
    # one line (pytest folds the two releases' skips into "SKIPPED [2]"), saying why
    assert len(skips) == 1 and "[2]" in skips[0] and "no Go toolchain" in skips[0], p.stdout[-2000:]


def test_without_go_in_ci_the_cluster_tests_fail() -> None:
    if os.geteuid() != 0:
        return
    p = _session_without_go(ci=True)
    assert p.returncode == 1, p.stdout[-2000:]
    assert "required in CI: no Go toolchain" in p.stdout, p.stdout[-2000:]
