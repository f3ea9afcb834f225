"""A terminal that hangs up at a chosen moment of pinscope's start-up: a pty of its own (pinscope its session
leader, as in a terminal window), pinscope stopped (SIGSTOP) by a hook at that moment, then the pty's master
closed: the kernel hangs the terminal up and sends SIGHUP, then SIGCONT, which wakes pinscope into a terminal
that refuses every write (EIO). The tmux test (test_tmux.py) closes at random moments; this one at the bad ones.
"""
import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time
from pathlib import Path

import pytest

from pinscope.collectors.sim.node import SimNode
from nodes import dual_socket_intel

REPO = Path(__file__).resolve().parents[2]

# run as `python -c`: stops pinscope (SIGSTOP to itself) right after the first call of the named hook point,
# then runs the program as `pinscope --root ROOT local` does
_HOOK = """
import functools, os, signal, sys
import textual.drivers._writer_thread as W
from pinscope.tui.app import PinscopeApp
cls, name = {"writer": (W.WriterThread, "start"), "load": (PinscopeApp, "on_load"),
             "mount": (PinscopeApp, "on_mount")}[sys.argv[1]]
orig, done = getattr(cls, name), []
@functools.wraps(orig)
def hooked(self, *a, **k):
    out = orig(self, *a, **k)
    if not done:
        done.append(1)
        os.kill(os.getpid(), signal.SIGSTOP)
    return out
setattr(cls, name, hooked)
sys.argv = ["pinscope", "--root", sys.argv[2], "local"]
from pinscope.cli import main
raise SystemExit(main())
"""


def _named(root: Path) -> list[int]:
    """pinscope and its probe (both name the tree)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if str(root).encode() in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _in_pty(args: list[str]) -> tuple[int, int]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session of its own, the pty its terminal
        os.chdir(REPO)
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, [sys.executable, *args])
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    return pid, fd


def _read_until_stopped(pid: int, fd: int, timeout: float = 60.0) -> None:
    """Read what pinscope writes, as a terminal does, until the hook stopped it."""
    end = time.time() + timeout
    while time.time() < end:
        if select.select([fd], [], [], 0.05)[0]:
            try:
                os.read(fd, 65536)
            except OSError:
                break
        if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T":
            return
    pytest.fail("pinscope did not reach the hook point")


def _ended(pid: int, root: Path, within: float) -> int:
    """pinscope's exit status, once it and its probe are gone; fails if either runs after `within` s."""
    end = time.time() + within
    while _named(root) and time.time() < end:
        time.sleep(0.05)
    assert _named(root) == [], f"pinscope or its probe still running {within:g} s after the signal"
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _cleanup(pid: int, fd: int, root: Path) -> None:
    if fd >= 0:
        os.close(fd)
    for p in _named(root):
        os.kill(p, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@pytest.mark.parametrize("moment", ["writer", "load", "mount"])
def test_a_hang_up_at_any_moment_of_start_up_ends_pinscope_and_its_probe_at_once(tmp_path, moment):
    """Seen (1 close in ~300 of test_tmux's, in CI): pinscope stayed for good, its main thread waiting on
    Textual's writer queue, two input threads spinning on the dead terminal, the probe running. Textual's
    SIGCONT handler had started application mode again (a second input thread, a second writer), that writer
    ended at its first refused write, and the main thread's 31st write waited on its full queue before the
    loop took the SIGHUP (`writer`: for good); later (`load`, `mount`) the SIGHUP's orderly end waited there
    and only the exit watchdog ended pinscope, after EXIT_GRACE. Now it and its probe end within seconds, as
    on SIGHUP (129)."""
    from pinscope.collectors.exitsignals import EXIT_GRACE

    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    pid, fd = _in_pty(["-c", _HOOK, moment, str(root)])
    try:
        _read_until_stopped(pid, fd)
        assert len(_named(root)) >= 2, "pinscope and its probe (sh and its children), started"
        os.close(fd)  # the hang-up: SIGHUP, then SIGCONT (which ends the stop)
        fd = -1
        assert _ended(pid, root, EXIT_GRACE / 2) == 128 + signal.SIGHUP  # well before the watchdog's end
    finally:
        _cleanup(pid, fd, root)


def test_sigterm_as_the_first_screen_mounts_ends_without_a_traceback(tmp_path):
    """An exit signal while the first screen mounted: the node screen's first paint ran on an app already
    ending, its widgets going (NoMatches '#legend-key'), and the terminal showed a traceback, status 1. Now it
    paints nothing then, and pinscope ends as on SIGTERM (143), its probe with it."""
    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    pid, fd = _in_pty(["-c", _HOOK, "mount", str(root)])
    try:
        _read_until_stopped(pid, fd)
        os.kill(pid, signal.SIGTERM)
        os.kill(pid, signal.SIGCONT)
        shown, end = b"", time.time() + 15
        while time.time() < end:
            if select.select([fd], [], [], 0.05)[0]:
                try:
                    shown += os.read(fd, 65536)
                except OSError:  # pinscope ended: the terminal's other side is closed
                    break
        assert b"Traceback" not in shown and b"NoMatches" not in shown
        assert _ended(pid, root, 5) == 128 + signal.SIGTERM
    finally:
        _cleanup(pid, fd, root)


def test_a_sigcont_without_a_suspend_starts_nothing(tmp_path):
    """The kernel sends SIGCONT after every hang-up's SIGHUP, and `kill -CONT` is anyone's: Textual's handler
    started application mode again on each, a second input and writer thread beside the first (on a gone
    terminal: one more thread spinning, and a writer that dies). Only a resume after a suspend starts them,
    and that one still does."""
    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    pid, fd = _in_pty(["-m", "pinscope.cli", "--root", str(root), "local"])

    def threads() -> int:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith("Threads:")).split()[1])

    def read(seconds: float) -> bytes:
        out, end = b"", time.time() + seconds
        while time.time() < end:
            if select.select([fd], [], [], 0.05)[0]:
                out += os.read(fd, 65536)
        return out

    try:
        seen, end = b"", time.time() + 60
        while b"live" not in seen:  # drawn: its threads all started
            assert time.time() < end, "pinscope did not draw"
            seen = seen[-100:] + read(0.2)
        read(1.0)
        before = threads()
        os.kill(pid, signal.SIGCONT)
        read(1.0)
        assert threads() == before, "threads started by a SIGCONT that followed no suspend"
        # and a suspend (Ctrl+Z: SIGTSTP) is still resumed by its SIGCONT: application mode again, redrawn
        os.kill(pid, signal.SIGTSTP)
        assert b"\x1b[?1049l" in read(1.0), "the suspend left the alternate screen"
        os.kill(pid, signal.SIGCONT)
        assert b"\x1b[?1049h" in read(1.5), "the resume came back to the alternate screen"
        assert threads() == before
    finally:
        os.kill(pid, signal.SIGTERM)
        end = time.time() + 15
        while time.time() < end and os.waitpid(pid, os.WNOHANG) == (0, 0):
            time.sleep(0.05)
        os.close(fd)
        for p in _named(root):
            os.kill(p, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
