"""Shared fixtures. pinscope is imported as installed (`pip install -e .`, README "Run the tests"), by its
one name: `collectors`, `tui` and `themes` are refused at the top level (issue 35, tests/test_one_name.py).

The suite cannot hang: every test (set-up and teardown included) has a deadline, pytest-timeout's
`timeout` in pyproject.toml, raised by SIGALRM in the test's own thread. When it fires, the test's name,
every thread's stack and every asyncio task's stack go to the terminal at once (capture suspended), the
test fails with the traceback of where it was, and the run goes on to its summary. If Python itself
cannot run the handler (stuck in C code), faulthandler dumps the stacks and ends the run a minute later.
At the end of the session no test sshd may be left running (tests/sshd.py marks all of its processes).
"""
import asyncio
import faulthandler
import os
import signal
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import onename  # noqa: F401  first: refuses `collectors`, `tui`, `themes` at the top level (tests/onename.py)
import pytest

import sshd as sshd_mod

# the real one-node cluster: its fixture, and the hooks that give its tests and the other tests of the machine's
# own kubelet files one xdist worker (tests/cluster/pytest_cluster.py says how)
from cluster.pytest_cluster import (  # noqa: F401
    _cluster_session,
    cluster,
    pytest_collection_modifyitems,
    pytest_itemcollected,
    pytest_runtest_protocol,
)

# tests run as root and call sbin tools (sshd, useradd): a PATH of /usr/bin:/bin must still find them
for _d in ("/usr/local/sbin", "/usr/sbin", "/sbin"):
    if _d not in os.environ.get("PATH", "").split(":"):
        os.environ["PATH"] = os.environ.get("PATH", "/usr/bin:/bin") + ":" + _d

LAST_RESORT = 60  # s after the per-test deadline
_REARM = pytest.StashKey()  # the deadline of a teardown after a failure (pytest_exception_interact)


def pytest_configure(config):
    if os.environ.get("CI") == "true" and not config.pluginmanager.hasplugin("timeout"):
        raise pytest.UsageError("pytest-timeout is required in CI (pip install -e '.[test]')")
    config.addinivalue_line("markers", "virtual_clock: the async test runs on tests/fakeclock.py's loop")


def pytest_asyncio_loop_factories(config, item):
    """The loop pytest-asyncio runs an async test in: asyncio's own, or with `@pytest.mark.virtual_clock` the
    fake clock's (tests/fakeclock.py: its timers take exactly their virtual time, whatever the machine's load)."""
    from fakeclock import VirtualClockLoop

    if item.get_closest_marker("virtual_clock"):
        return {"virtual-clock": VirtualClockLoop}
    return {"asyncio": asyncio.new_event_loop}


def _stacks() -> str:
    """Every thread's stack and every asyncio task's (where a test stuck past its deadline was)."""
    out = []
    for ident, frame in sys._current_frames().items():
        out.append(f"~~~ thread {ident}\n" + "".join(traceback.format_stack(frame, limit=12)))
    loop = asyncio._get_running_loop()
    if loop is not None:
        for task in asyncio.all_tasks(loop):
            out.append(f"~~~ asyncio task {task.get_name()}\n"
                       + "".join("".join(traceback.format_stack(f, limit=1)) for f in task.get_stack()))
    return "".join(out)


def _dump(item, seconds: float, stacks: str) -> None:
    tw = item.config.get_terminal_writer()
    tw.line()
    tw.sep("!", f"TIMEOUT after {seconds:g} s: {item.nodeid}", red=True)
    tw.write(stacks)
    tw.sep("!", f"end of TIMEOUT {item.nodeid}", red=True)
    tw.flush()


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    """pytest-timeout's signal method, with the stacks written past the capture and asyncio tasks too."""
    if settings.method != "signal" or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
        return None  # let pytest-timeout do it

    def arm(seconds: float, what: str) -> None:
        def handler(signum, frame):
            __tracebackhide__ = True
            stacks = _stacks()
            capman = item.config.pluginmanager.getplugin("capturemanager")
            if capman is not None:
                with capman.global_and_fixture_disabled():
                    _dump(item, seconds, stacks)
            else:
                _dump(item, seconds, stacks)
            # in the failure report too: under pytest-xdist a worker's terminal is not the run's
            pytest.fail(f"Timeout: {what} ran over {seconds:g} s; where every thread and task was:\n" + stacks)

        signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        faulthandler.dump_traceback_later(seconds + LAST_RESORT, exit=True)

    def cancel():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        faulthandler.cancel_dump_traceback_later()

    item.cancel_timeout = cancel
    item.stash[_REARM] = lambda: arm(settings.timeout, f"the teardown of {item.nodeid}, after it failed,")
    arm(settings.timeout, item.nodeid)
    return True


@pytest.hookimpl(trylast=True)
def pytest_exception_interact(node, call, report):
    """A failed set-up or call stops every deadline (pytest-timeout's and pytest's own faulthandler hooks, made
    for pdb): the teardown after it gets one of its own, as long as a test's. An async test's event loop is
    closed in teardown (pytest-asyncio's runner fixture), cancelling there the task of a test its deadline cut:
    a cleanup of it that hangs fails the test (named) and the run goes on to its summary."""
    rearm = node.stash.get(_REARM, None) if isinstance(node, pytest.Item) else None
    if rearm is not None and report.when in ("setup", "call") and not node.config.getvalue("usepdb"):
        rearm()


@pytest.fixture
def notices(monkeypatch) -> list[str]:
    """Every notice a Textual app raised during the test, in order, kept. `app._notifications` is no record:
    Textual drops a notice from it once its timeout (5 s by default) has passed on the wall clock, so on a
    loaded machine a test that started the app slowly found the notice gone before it looked."""
    from textual.app import App

    said: list[str] = []
    real = App.notify

    def notify(self, message, *args, **kwargs):
        said.append(str(message))
        return real(self, message, *args, **kwargs)

    monkeypatch.setattr(App, "notify", notify)
    return said


@pytest.fixture(autouse=True)
def _no_test_hangs_forever(request):
    """Last resort when pytest-timeout is absent: every thread's traceback, then the run ends."""
    if request.config.pluginmanager.hasplugin("timeout"):
        yield
        return
    faulthandler.dump_traceback_later(180, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def pytest_sessionfinish(session, exitstatus):
    """A test sshd still running at the end is a leak: kill it and fail the run."""
    left = sshd_mod.leaked_by_this_run()
    if left:
        sshd_mod.kill_marked(f"{os.getpid()}-")
        tw = session.config.get_terminal_writer()
        tw.line(f"LEAK: test sshd processes still running at the end: {left} (killed now)", red=True)
        session.exitstatus = 1
