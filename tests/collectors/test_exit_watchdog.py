"""An exit signal's orderly end that does not end is ended anyway (collectors/exitsignals.py): the terminal
closed while the TUI started, Textual's writer thread died on the gone terminal and its shutdown waited for it
forever, with the local probe still running under it (seen: five pinscope processes and their probes left
behind by a benchmark's closed tmux windows)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from pinscope.collectors.sim.node import SimNode
from nodes import dual_socket_intel

CHILD = r'''
import asyncio, sys, threading
from pinscope.collectors import exitsignals
from pinscope.collectors.transport.local import LocalTransport

exitsignals.EXIT_GRACE = 1.0
mark = sys.argv[2]
exitsignals.last_resort(lambda: open(mark, "w").write("ran"))

async def main():
    tr = LocalTransport(sys.argv[1])
    await tr.connect(10)
    await tr.request("sgn", 15)
    # the signal is taken, and the orderly end it starts never ends: the loop stuck in a futex wait, as
    # Textual's shutdown was (WriterThread.stop, its queue full and its thread gone)
    exitsignals.on_exit_signals(lambda sig: threading.Event().wait(60))
    print(tr.proc.pid, flush=True)
    if sys.argv[3] == "blocked":  # the main thread blocks before the loop takes the signal: the loop never does
        sys.stdin.readline()  # the test's SIGHUP is on its way
        threading.Event().wait(60)
    await asyncio.sleep(60)

asyncio.run(main())
'''


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.parametrize("where", ["loop", "blocked"])
def test_a_stuck_end_is_ended_after_the_grace_with_the_probe_killed(tmp_path, where):
    """`loop`: the orderly end the signal started is stuck. `blocked`: the main thread is stuck before the loop
    took the signal, as it was on Textual's full writer queue when the terminal closed during start-up (seen
    in CI: pinscope and its probe left for good); the watchdog is armed by the signal handler itself."""
    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    mark = tmp_path / "ran"
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(mark), where], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        probe = int(p.stdout.readline())
        assert _alive(probe)
        t0 = time.monotonic()
        p.stdin.write("\n")
        p.stdin.flush()
        time.sleep(0.2)  # blocked: the child waits in the Event, its loop never to run again
        p.send_signal(signal.SIGHUP)
        assert p.wait(timeout=30) == 128 + signal.SIGHUP
        took = time.monotonic() - t0
        assert 0.9 <= took < 20, took  # after the grace, not at once (the orderly end had its chance)
        assert mark.read_text() == "ran"
        end = time.monotonic() + 10
        while _alive(probe) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _alive(probe), "the probe's process group outlived pinscope"
    finally:
        p.kill()
        p.wait()


def test_an_orderly_end_is_not_held_up_by_the_watchdog(tmp_path):
    """The watchdog is a daemon thread: a process whose end ends exits at once, with its own status."""
    code = ("import asyncio, os, signal\nfrom pinscope.collectors.exitsignals import until_exit_signal\n"
            "async def work():\n    os.kill(os.getpid(), signal.SIGTERM)\n    await asyncio.sleep(30)\n"
            "rc, sig = asyncio.run(until_exit_signal(work()))\nraise SystemExit(7 if sig else 1)\n")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], timeout=30)
    assert r.returncode == 7 and time.monotonic() - t0 < 8


def test_the_end_of_work_sweeps_run_once_and_never_from_the_terminal_watch(monkeypatch):
    """exitsignals.at_end: run by after_main (the program's end), once however often it is called; the live
    view's terminal watch (a Textual timer, on the UI thread, each second until the exit) only arms the
    watchdog: a sweep there deleted every live debug pod before the orderly close, blocking the UI up to 3 s."""
    import ast
    from pathlib import Path

    from pinscope.collectors import exitsignals

    ran: list[str] = []
    armed: list[int] = []
    monkeypatch.setattr(exitsignals, "_AT_END", [lambda: ran.append("sweep")])
    monkeypatch.setattr(exitsignals, "arm_watchdog", lambda code, grace=0: armed.append(code))
    exitsignals.after_main(0)
    exitsignals.after_main(0)
    assert ran == ["sweep"] and armed == [0, 0]
    app = Path(__file__).resolve().parents[2] / "tui" / "app.py"
    called = {n.func.id for n in ast.walk(ast.parse(app.read_text()))
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "arm_watchdog" in called and "after_main" not in called
