"""`.ci/run` itself, on a README of tiny commands (the real ones are the whole suite and a venv): it fails on
a process the tests or the demo leave running, and (issue 34, item 22) on a file they leave in the run's
TMPDIR. Needs tmux (the demo runs in one)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import need

ROOT = Path(__file__).resolve().parent.parent
DEMO = "echo trade-xeon-96; read -r -n 1 _"  # draws what .ci/run waits for, ends on its q


def ci_run(tmp_path: Path, test_cmd: str, try_cmd: str = DEMO) -> tuple[subprocess.CompletedProcess, Path]:
    """.ci/run in a copy of the repository holding only it and a README with these commands; TMPDIR is a
    directory of the test's: (the result, that directory)."""
    need(shutil.which("tmux") is not None, "tmux not installed")
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci/run", repo / ".ci/run")
    (repo / "collectors").mkdir()  # what .ci/run lints after "Check the code": the real files and venv
    shutil.copy(ROOT / "collectors/probe.sh", repo / "collectors/probe.sh")
    shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
    (repo / ".venv").symlink_to(ROOT / ".venv")
    (repo / "README.md").write_text(
        f"**Try it**\n```sh\n{try_cmd}\n```\n**Run the tests**\n```sh\n{test_cmd}\n```\n"
        "**Check the code**\n```sh\ntrue\n```\n")
    outer = tmp_path / "tmp"
    outer.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PINSCOPE_CI_RUN", "TMUX"))}
    r = subprocess.run(["bash", str(repo / ".ci/run")], cwd=repo, capture_output=True, text=True, timeout=90,
                       env={**env, "TMPDIR": str(outer)})
    return r, outer


def test_a_clean_run_is_green_and_leaves_nothing(tmp_path):
    # pytest's own base directory in TMPDIR is pytest's to keep (its last three runs' tmp_path)
    r, outer = ci_run(tmp_path, 'mkdir "$TMPDIR/pytest-of-$(id -un)" && mktemp -d >/dev/null && rm -r "$TMPDIR"/tmp.*')
    assert r.returncode == 0 and "ci: green" in r.stdout, r.stdout + r.stderr
    assert list(outer.iterdir()) == []  # the run's TMPDIR and its done-file are gone


@pytest.mark.parametrize("test_cmd, try_cmd, by", [
    ("mktemp -d >/dev/null", DEMO, "the tests"),  # e.g. Chromium's org.chromium.Chromium.XXXXXX
    ("true", f"mktemp >/dev/null; {DEMO}", "the demo"),
])
def test_a_file_left_in_tmpdir_fails_the_run(tmp_path, test_cmd, try_cmd, by):
    r, outer = ci_run(tmp_path, test_cmd, try_cmd)
    assert r.returncode != 0 and f"ci: files left behind in TMPDIR ({outer}/pinscope-ci." in r.stderr, r.stderr
    assert f") by {by}:" in r.stderr and "/tmp." in r.stderr and "ci: green" not in r.stdout
    assert list(outer.iterdir()) == []  # failed or not, the run removes its TMPDIR


def test_a_process_left_running_fails_the_run(tmp_path):
    r, _ = ci_run(tmp_path, "(setsid sleep 60 </dev/null >/dev/null 2>&1 &)")
    try:
        assert r.returncode != 0 and "ci: processes leaked by the tests:" in r.stderr and "sleep 60" in r.stderr
    finally:
        for line in r.stderr.splitlines():
            if line.rstrip().endswith("sleep 60"):
                os.kill(int(line.split()[0]), 9)
