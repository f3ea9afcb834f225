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


def test_a_stuck_async_test_whose_cleanup_hangs_fails_twice_named_and_the_run_finishes(tmp_path):
    """An async test (pytest-asyncio) is cut like any other; its task is cancelled when the plugin closes the
    test's event loop, in teardown, after pytest-timeout and pytest stopped every deadline for the failure: a
    cleanup that hangs there fails by a deadline of its own (tests/conftest.py) instead of hanging the run."""
    (tmp_path / "test_stuck.py").write_text(
        "import asyncio\n\n\nasync def test_stuck_here():\n    try:\n        await asyncio.sleep(3600)  # the line\n"
        "    finally:\n        await asyncio.Event().wait()  # the cleanup\n\n\ndef test_after():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=f"{TESTS}{os.pathsep}{TESTS.parent}")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cloudcoil", "-o", "timeout=2",
                        "-o", "timeout_method=signal", "-o", "asyncio_mode=auto", "-p", "no:cacheprovider", "-n", "0",
                        "test_stuck.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed, 1 error" in out, out[-3000:]  # the run went on to its summary
    assert "Timeout: test_stuck.py::test_stuck_here ran over 2 s" in out, out[-3000:]
    assert 'test_stuck.py", line 6, in test_stuck_here' in out, out[-3000:]
    assert "Timeout: the teardown of test_stuck.py::test_stuck_here, after it failed, ran over 2 s" in out, out[-3000:]
    assert 'test_stuck.py", line 8, in test_stuck_here' in out, out[-3000:]



def test_the_exporter_helper_keeps_every_line_its_first_read_brought():
    """tests/promserver.py reads the exporter's first line (its address) with select and os.read: whatever
    came in that same read belongs to the lines too (a loaded CI run lost the "gone: --root" line printed
    right after the start, and test_prometheus waited for it in vain); a line split between two reads is
    one line."""
    import time

    from promserver import Exporter

    exp = Exporter()
    exp.proc = subprocess.Popen(["sh", "-c", "printf 'serving http://127.0.0.1:1/metrics\\ngone: --root x\\nre' >&2; "
                                 "sleep 0.5; printf 'fused: y\\n' >&2"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.2)  # both lines in the pipe before the first read
        exp._read_start(10)
        assert exp.addr == "127.0.0.1:1"
        exp.proc.wait(10)
        end = time.monotonic() + 10
        while len(exp.lines) < 3 and time.monotonic() < end:
            time.sleep(0.05)
        assert exp.lines == ["serving http://127.0.0.1:1/metrics", "gone: --root x", "refused: y"], exp.lines
    finally:
        exp.close()


def test_the_tmux_helper_survives_sessions_ending_while_others_start():
    """tests/e2e/test_tmux.py's `tmux` runs a server of the test process's own, kept up while it has no
    session: on the shared default server, a session's end (the last one) ended the server while another
    test (the same test's next loop turn, or the other xdist worker) started one on it, and tmux said
    "server exited unexpectedly" (a CI run failed so). Two threads start and end sessions at once."""
    import shutil
    import threading
    import uuid

    from helpers import need

    need(shutil.which("tmux") is not None, "tmux not installed (apt-get install tmux)")
    sys.path.insert(0, str(TESTS / "e2e"))
    from test_tmux import tmux

    failed: list[str] = []

    def churn():
        for _ in range(60):
            s = f"guard-{uuid.uuid4().hex[:8]}"
            r = tmux("new-session", "-d", "-s", s, "sleep 0.2", check=False)
            if r.returncode:
                failed.append(r.stderr.strip())
            tmux("kill-session", "-t", s, check=False)

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failed == []


def _hand_run_coroutines(root: Path) -> list[str]:
    """Test functions under `root` that run a coroutine of their own by hand: `asyncio.run(go())`, or a `run(go())`
    helper, on a coroutine function defined inside the test (also under asyncio.wait_for). Async tests are run
    by pytest-asyncio instead (pyproject.toml). A test that takes `snap_compare` stays sync: pytest-textual-
    snapshot runs its app in an event loop of its own, which cannot start inside a test's running loop."""
    import ast

    def runner(f: ast.expr) -> bool:
        return (isinstance(f, ast.Name) and f.id == "run") or (
            isinstance(f, ast.Attribute) and f.attr == "run" and isinstance(f.value, ast.Name) and f.value.id == "asyncio")

    def called(arg: ast.expr) -> ast.expr:  # asyncio.wait_for(go(), n) -> go()
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "wait_for" and arg.args:
            return arg.args[0]
        return arg

    found = []
    for path in sorted(root.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.name.startswith("test"):
                continue
            if "snap_compare" in {a.arg for a in fn.args.args}:
                continue
            own = {n.name for n in ast.walk(fn) if isinstance(n, ast.AsyncFunctionDef)}
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and runner(n.func) and n.args:
                    c = called(n.args[0])
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in own:
                        found.append(f"{path.relative_to(root)}:{n.lineno}: {fn.name}")
    return found


def test_no_test_runs_its_own_coroutine_by_hand():
    """Issue 35 item 6: about 130 tests wrapped `async def go()` in `run(go())` or `asyncio.run(go())`; they are
    `async def` tests now, run by pytest-asyncio, each in a fresh event loop. None comes back. (Scripts given to
    a fresh interpreter are strings here, and a fixture may build its data with asyncio.run: neither is a test.)"""
    assert _hand_run_coroutines(TESTS) == []


def test_the_hand_run_guard_sees_each_way_of_writing_it(tmp_path):
    (tmp_path / "test_x.py").write_text(
        "import asyncio\n\n\ndef run(coro):\n    return asyncio.run(coro)\n\n\n"
        "def test_a():\n    async def go():\n        pass\n    run(go())\n\n\n"
        "def test_b():\n    async def check():\n        return 1\n    assert asyncio.run(asyncio.wait_for(check(), 5)) == 1\n\n\n"
        "def test_fine(snap_compare):\n    async def text():\n        pass\n    asyncio.run(text())\n\n\n"
        "async def test_awaits():\n    async def go():\n        pass\n    await asyncio.wait_for(go(), 5)\n")
    assert _hand_run_coroutines(tmp_path) == ["test_x.py:11: test_a", "test_x.py:17: test_b"]
