"""The suite cannot hang: a test stuck past its deadline fails naming itself and the line it was stuck on,
in the run's report (also when it ran in a pytest-xdist worker, whose terminal is not the run's), and the
run goes on to its summary. Run here on a test made to hang, through this suite's own conftest."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("workers", [["-n", "0"], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_stuck_test_fails_with_where_it_was_and_the_run_finishes(tmp_path, workers):
    """The stuck test sleeps an hour: the run can only finish because its deadline cut it (said, with where);
    it never got past its sleep (no marker file), and the next test ran. The 100 s (under the suite's own 120)
    only guard this test against a hang: how long the run took is not what is checked (a loaded machine is
    slow)."""
    (tmp_path / "test_stuck.py").write_text(
        "import time\n\n\ndef test_stuck_here():\n    time.sleep(3600)  # the line\n"
        "    open('got-past-the-sleep', 'w').close()\n\n\ndef test_after():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=f"{TESTS}{os.pathsep}{TESTS.parent}")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cloudcoil", "-o", "timeout=2",
                        "-o", "timeout_method=signal", "-p", "no:cacheprovider", *workers, "test_stuck.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed" in out, out[-3000:]  # the run went on to its summary
    assert "Timeout: test_stuck.py::test_stuck_here ran over 2 s" in out, out[-3000:]
    assert 'test_stuck.py", line 5, in test_stuck_here' in out and "time.sleep(3600)  # the line" in out, out[-3000:]
    assert not (tmp_path / "got-past-the-sleep").exists()  # cut, not waited out
