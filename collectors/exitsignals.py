"""Ending cleanly on the signals that end a terminal program: SIGTERM (kill, systemd, a container stop),
SIGHUP (the terminal closed, the SSH session dropped) and SIGINT.

Their default action kills the process at once, so nothing it holds is given back: a `node/NAME` debug
pod would stay on the node. Here each is turned into an orderly end on the event loop (the snapshot's
task cancelled, the TUI's exit), whose `finally`/unmount closes every transport (the debug pod is deleted).
The first signal starts the end; more while it runs are ignored, so a second SIGTERM does not cut the
cleanup short. SIGKILL cannot be caught: transport/kube.py's watchdog covers it.

An orderly end that does not end is ended anyway: EXIT_GRACE seconds after the first signal a watchdog
thread runs the last-resort cleanups (`last_resort`: each local probe's process group killed) and exits
with 128 + the signal. The signal handler itself arms it (one byte to the waiting thread's pipe), not the
loop: a main thread blocked before the loop took the signal is ended too. Seen: the terminal closed (SIGHUP, then the kernel's SIGCONT) while the TUI started:
Textual's writer thread died on the gone terminal and its shutdown waited for it forever, with the probe
still running under it.
"""
from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
EXIT_GRACE = 10.0  # s from the first exit signal to the watchdog's exit (a debug pod's delete takes ~1-3 s)
T = TypeVar("T")
_LAST_RESORT: list[Callable[[], None]] = []
_AT_END: list[Callable[[], None]] = []
_watchdog: list[tuple[threading.Thread, int]] = []  # the watchdog thread and its pipe's write end
_armed: list[float] = []  # the grace of the first arming: once armed, for good


def at_end(fn: Callable[[], None]) -> None:
    """Run `fn` (bounded, thread-safe, never raising) when the program's work is done (after_main), and as a
    last resort: what an orderly close could not finish (a debug pod whose delete was cut short or failed) is
    tried once more before the process ends."""
    _AT_END.append(fn)
    last_resort(fn)


def last_resort(fn: Callable[[], None]) -> None:
    """Run `fn` (fast, thread-safe, never raising) if an exit signal's orderly end has not ended the process
    within EXIT_GRACE seconds, just before the watchdog exits."""
    _LAST_RESORT.append(fn)


def _arm(sig: int, grace: float) -> None:
    """Start the watchdog (once): a daemon thread, so an orderly end that finishes is not held up by it."""
    arm_watchdog(128 + sig, grace)


def after_main(code: int, grace: float = EXIT_GRACE) -> None:
    """The program's work is done and it returns `code`: should the interpreter's own end not end (it joins
    every thread that is not a daemon), the watchdog ends it `grace` seconds from now with that code, after
    the last-resort cleanups. Seen twice in a row here: `q`, then the terminal closed (tmux kill-session) while
    Textual tore down: its SIGCONT handler started a new input thread on the gone terminal, which spun at
    70 % of a CPU for good, and the interpreter waited for it forever. An end that ends is not held up (the
    watchdog is a daemon thread). Only for the program itself (cli.main with sys.argv), never in a test's
    process."""
    while _AT_END:  # once: each sweep is taken off as it runs
        fn = _AT_END.pop(0)
        try:
            fn()
        except Exception:  # noqa: BLE001 -- the end goes on whatever one sweep did
            pass
    arm_watchdog(code, grace)


def arm_watchdog(code: int, grace: float = EXIT_GRACE) -> None:
    """Arm the watchdog (once): `grace` s from now it runs the last resorts and exits with `code`. As an
    exit signal does: the end-of-work sweeps are left to after_main."""
    if _armed:
        return
    _armed.append(grace)
    _wake(_watchdog_pipe(), code)


def _watchdog_pipe() -> int:
    """The watchdog thread, started once, waiting on a pipe; returns the pipe's end that arms it. Started
    from ordinary code, never from a signal handler: starting a thread takes locks the code a signal
    interrupts may hold."""
    if not _watchdog:
        r, w = os.pipe()
        os.set_blocking(w, False)  # a signal handler's write never waits

        def run() -> None:
            code = os.read(r, 1)[0]  # armed: the exit status is the byte written
            threading.Event().wait(_armed[0] if _armed else EXIT_GRACE)
            for fn in list(_LAST_RESORT):
                try:
                    fn()
                except Exception:  # noqa: BLE001 -- the last resort goes on to the exit whatever one cleanup did
                    pass
            os._exit(code)

        t = threading.Thread(target=run, name="pinscope-exit-watchdog", daemon=True)
        _watchdog.append((t, w))
        t.start()
    return _watchdog[0][1]


def _wake(fd: int, code: int) -> None:
    """One write to the watchdog's pipe: safe in a signal handler (no lock, no allocation that can wait)."""
    try:
        os.write(fd, bytes((code & 0xFF,)))
    except OSError:  # full (only the first byte is read) or closed at the interpreter's end: armed already
        pass


def _armed_by_signal(sig: int, _frame: object) -> None:
    """The Python-level handler of an exit signal: arms the watchdog at once, whatever the loop does. The
    loop still learns of the signal from its wakeup fd (the C-level handler writes it for every handled
    signal) and runs the orderly end. Seen: the terminal closed while the TUI started, and the main thread
    blocked on Textual's writer queue before the loop took the SIGHUP, so nothing armed the watchdog and
    pinscope and its probe ran for good (tui/driver.py mends that block; this bounds any other)."""
    if not _armed:
        _armed.append(EXIT_GRACE)
        _wake(_watchdog[0][1], 128 + sig)


def on_exit_signals(callback: Callable[[int], None]) -> Callable[[], None]:
    """Call `callback(signum)` on the running loop at the first exit signal; returns the undo."""
    loop = asyncio.get_running_loop()
    fired: list[int] = []

    def fire(sig: int) -> None:
        if not fired:
            fired.append(sig)
            _arm(sig, EXIT_GRACE)
            callback(sig)

    _watchdog_pipe()  # its thread started here, so that the signal handler only writes a byte
    for sig in EXIT_SIGNALS:
        loop.add_signal_handler(sig, fire, sig)
        # asyncio's Python-level handler does nothing (the wakeup fd carries the signal to the loop): ours
        # arms the watchdog in the handler itself, which runs even while the loop is blocked
        signal.signal(sig, _armed_by_signal)

    def remove() -> None:
        for sig in EXIT_SIGNALS:
            loop.remove_signal_handler(sig)
    return remove


async def until_exit_signal(work: Awaitable[T]) -> tuple[T | None, int | None]:
    """Await `work`; an exit signal cancels it (its `finally` blocks run to the end). Returns (result,
    None), or (None, signum) when a signal ended it."""
    task = asyncio.current_task()
    assert task is not None
    got: list[int] = []

    def stop(sig: int) -> None:
        got.append(sig)
        task.cancel()

    remove = on_exit_signals(stop)
    try:
        result = await work
        return result, (got[0] if got else None)
    except asyncio.CancelledError:
        if got:
            return None, got[0]
        raise
    finally:
        remove()
