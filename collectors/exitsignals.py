"""Ending cleanly on the signals that end a terminal program: SIGTERM (kill, systemd, a container stop),
SIGHUP (the terminal closed, the SSH session dropped) and SIGINT.

Their default action kills the process at once, so nothing it holds is given back: a `node/NAME` debug
pod would stay on the node. Here each is turned into an orderly end on the event loop (the snapshot's
task cancelled, the TUI's exit), whose `finally`/unmount closes every transport (the debug pod is deleted).
The first signal starts the end; more while it runs are ignored, so a second SIGTERM does not cut the
cleanup short. SIGKILL cannot be caught: transport/kube.py's watchdog covers it.
"""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

EXIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
T = TypeVar("T")


def on_exit_signals(callback: Callable[[int], None]) -> Callable[[], None]:
    """Call `callback(signum)` on the running loop at the first exit signal; returns the undo."""
    loop = asyncio.get_running_loop()
    fired: list[int] = []

    def fire(sig: int) -> None:
        if not fired:
            fired.append(sig)
            callback(sig)

    for sig in EXIT_SIGNALS:
        loop.add_signal_handler(sig, fire, sig)

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
