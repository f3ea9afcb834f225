"""A cancel (an exit signal's) is never swallowed.

Python 3.11's asyncio.wait_for returns the inner result when its own task is cancelled in the instant the inner
awaitable has finished but the task has not resumed yet (bpo-42130, fixed in 3.12 by building wait_for on
asyncio.timeout). Seen in a CI run: SIGTERM while `node/NAME` waited for its debug pod to run; the cancel
landed as a `get pods` poll's answer came in, was swallowed, and the poll went on; 10 s later the exit watchdog
ended the process with the pod still on the node. Debian 12's python3 is 3.11: pinscope must not rely on it.
"""
from __future__ import annotations

import ast
import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from pinscope.collectors.aio import deadline, within
from pinscope.collectors.transport.kube import KubeTransport

ROOT = Path(__file__).resolve().parents[2]
BANNED = {"wait_for", "timeout", "timeout_at", "Timeout"}


class _Answer:
    """What the kubernetes client returns for _preload_content=False: the body in `.data`."""

    def __init__(self, doc: dict) -> None:
        self.data = json.dumps(doc).encode()


async def _cancel_as_it_answers(call, hops: int) -> tuple[bool, str]:
    """Run `call(fn)` (fn: the blocking API call, in a worker thread) and cancel its task in the loop turn its
    answer comes in: the loop is held while the worker answers (its result queued, not yet run), then the
    cancel is queued `hops` callbacks later. Returns (whether cancel() was accepted, how the task ended).
    `cancel()` returning True promises a CancelledError; wait_for broke the promise at hops=1 on 3.11."""
    loop = asyncio.get_running_loop()
    started, go_on = threading.Event(), threading.Event()

    def fn(**_kw):
        started.set()
        go_on.wait(5)
        return _Answer({"kind": "Pod", "status": {"phase": "Pending"}})

    task = asyncio.create_task(call(fn))
    while not started.is_set():
        await asyncio.sleep(0.001)
    accepted: list[bool] = []

    def hop(n: int) -> None:
        if n:
            loop.call_soon(hop, n - 1)
        else:
            accepted.append(task.cancel())
    go_on.set()
    time.sleep(0.2)  # noqa: ASYNC251 -- the loop held on purpose: the worker returns and queues its answer
    loop.call_soon(hop, hops)
    try:
        await task
        ended = "answered"
    except asyncio.CancelledError:
        ended = "cancelled"
    while not accepted:  # the hops that come after the task's end
        await asyncio.sleep(0)
    return accepted[0], ended


async def _never_lost(call) -> None:
    runs = [await _cancel_as_it_answers(call, hops) for hops in range(5)]
    assert all(ended == ("cancelled" if accepted else "answered") for accepted, ended in runs), runs
    assert any(accepted for accepted, _ in runs), runs  # the cancel did land while the task waited


async def test_a_kube_api_call_cancelled_as_its_answer_comes_is_cancelled():
    """The defect: KubeTransport._call (every API request: the debug pod's polls, its delete) returned the
    answer and the cancel was lost. Fails on wait_for (Python 3.11)."""
    tr = KubeTransport("node/n1")
    tr.api = object()  # type: ignore[assignment]  # "connected"; the call below is all it asks
    await _never_lost(lambda fn: tr._call(fn, "get", "pods", "pinscope", 5.0))


async def test_within_keeps_the_cancel_and_the_deadline():
    await _never_lost(lambda fn: within(asyncio.to_thread(fn), 5.0))

    # the deadline: TimeoutError (asyncio's is the builtin since 3.11), the awaited work cancelled
    ev = asyncio.Event()
    with pytest.raises(asyncio.TimeoutError):
        await within(ev.wait(), 0.05)
    assert await within(asyncio.sleep(0, "done"), None) == "done"


async def test_a_deadline_in_the_cleanup_a_cancel_runs_is_a_timeout():
    """The cleanup after a cancel (the debug pod's delete, with its own deadline): its expiry is a TimeoutError,
    which the cleanup handles, and the cancel goes on after it. asyncio.timeout before 3.11.3 raised
    CancelledError there and cut the cleanup short."""
    said: list[str] = []

    async def work():
        try:
            await asyncio.sleep(30)
        finally:
            try:
                await within(asyncio.sleep(30), 0.05)
            except TimeoutError:
                said.append("the delete timed out")
            said.append("cleanup ran to its end")

    task = asyncio.create_task(work())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert said == ["the delete timed out", "cleanup ran to its end"]


async def test_a_deadline_stands_down_for_the_cleanup_of_a_cancel_from_outside():
    """The work is cancelled from outside (a signal) well before its deadline; the cleanup that cancel runs
    takes longer than the deadline had left: it runs to its end, as under wait_for (a deadline that kept its
    timer cut it). The cancel comes at 0.1 s, the deadline at 3 s: a loaded machine that stalls the loop past
    a deadline as close as 0.2 s let the deadline fire first (the cleanup then cut by the cancel)."""
    said: list[str] = []

    async def work():
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(3.5)  # the debug pod's delete: past the deadline
            said.append("cleanup ran to its end")

    task = asyncio.create_task(within(work(), 3.0))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert said == ["cleanup ran to its end"]


async def test_a_deadline_that_stood_down_for_a_cancel_taken_back_still_holds():
    """aiohttp's own timeouts cancel the task and take the cancel back (uncancel). A deadline that stood down
    meanwhile stood down for good: the block ran on without it (a 0.5 s block ran 3.5 s in a review).
    The deadline (3 s) is far from the cancel (0.1 s): with 0.2 s, a loaded machine's stalled loop let the
    deadline fire first, and the handler below took back the deadline's own cancel (the task then hung)."""
    async def work():
        async with deadline(3.0):
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:  # a cancel at 0.1 s, handled and taken back at 3.6 s (past the deadline)
                await asyncio.sleep(3.5)
                asyncio.current_task().uncancel()
            await asyncio.sleep(30)

    task = asyncio.create_task(work())
    await asyncio.sleep(0.1)
    task.cancel()
    await asyncio.wait({task}, timeout=10)
    assert task.done() and isinstance(task.exception(), TimeoutError)


async def test_nested_deadlines():
    """The inner one expires: TimeoutError inside, the outer block goes on and its own deadline still holds."""
    said = []
    with pytest.raises(TimeoutError):
        async with deadline(0.3):
            try:
                await within(asyncio.sleep(30), 0.05)
            except TimeoutError:
                said.append("inner")
            await asyncio.sleep(30)
    assert said == ["inner"] and asyncio.current_task().cancelling() == 0
    # both at once: the outer's TimeoutError, nothing left cancelled
    with pytest.raises(TimeoutError):
        async with deadline(0.05):
            await within(asyncio.sleep(30), 0.05)
    assert asyncio.current_task().cancelling() == 0
    assert await within(asyncio.sleep(0.01, "after"), 1) == "after"


def test_no_wait_for_in_pinscope():
    """Every deadline goes through aio.within/deadline: asyncio.wait_for and asyncio.timeout are nowhere else."""
    found = []
    for part in ("collectors", "tui"):
        for path in sorted((ROOT / part).rglob("*.py")):
            if path == ROOT / "collectors" / "aio.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Attribute) and (node.attr == "wait_for" or node.attr in BANNED and
                                                        isinstance(node.value, ast.Name) and node.value.id == "asyncio"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("asyncio") and any(
                        a.name in BANNED for a in node.names):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
