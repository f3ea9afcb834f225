"""The connection gate (collectors/pacing.py) and the reconnect backoff, on the event loop alone.

The gate's timed behaviour runs on a fake clock (tests/fakeclock.py): its sleeps and timers take exactly their
virtual time, so when a slot is given back is asserted exactly, whatever the load of the machine."""
import asyncio
import socket

import pytest

from pinscope.collectors.collect import Backoff
from pinscope.collectors.errors import AuthFailed, HostKeyRejected, ProbeFailed, Unreachable
from pinscope.collectors.pacing import ConnectGate

pytestmark = pytest.mark.virtual_clock  # every async test here runs on the fake clock (tests/conftest.py)


async def test_at_most_slots_at_once_and_the_node_on_screen_first():
    focus = {"name": None}
    gate = ConnectGate(3, first=lambda: focus["name"])
    running, peak, order = set(), [0], []

    async def node(name):
        async with gate.slot(name):
            order.append(name)
            running.add(name)
            peak[0] = max(peak[0], len(running))
            await asyncio.sleep(0.3 if name in ("n00", "n01") else 0.02)
            running.discard(name)

    tasks = [asyncio.create_task(node(f"n{i:02d}")) for i in range(20)]
    await asyncio.sleep(0)  # all queued behind the first two
    focus["name"] = "n17"
    await asyncio.gather(*tasks)
    peak, order = peak[0], order

    assert peak == 3  # two for the others, one kept for the node on screen
    assert order[:3] == ["n00", "n01", "n17"]  # the focus does not wait for a slot to free
    assert sorted(order) == [f"n{i:02d}" for i in range(20)]
    rest = [n for n in order[3:] if n != "n17"]
    assert rest == sorted(rest)  # the others in the order they asked


@pytest.mark.parametrize("recent, stuck_after", [
    ([0.01] * 8, 2.0),  # recent handshakes took 10 ms: stuck after 2 s (the floor)
    ([1.0] * 8, 4.0),  # 1 s each: four times the median
    ([], 5.0),  # too few to judge: the default
])
async def test_a_stuck_handshake_gives_its_slot_back_but_keeps_running(recent, stuck_after):
    loop = asyncio.get_running_loop()
    gate = ConnectGate(1)
    gate.recent.extend(recent)
    stuck_done = asyncio.Event()
    t0 = loop.time()

    async def stuck():
        async with gate.slot("dead"):
            await stuck_done.wait()

    async def ok():
        async with gate.slot("ok"):
            return loop.time() - t0

    s = asyncio.create_task(stuck())
    await asyncio.sleep(0)
    took = await asyncio.wait_for(ok(), 60)
    assert gate.stalled == 1 and gate.active == 0
    stuck_done.set()
    await s
    assert gate.stalled == 0 and gate.active == 0

    assert took == pytest.approx(stuck_after, abs=0.001)  # the fake clock: exactly then


async def test_cancelled_waiters_leave_no_slot_behind():
    async with asyncio.timeout(5):
        gate = ConnectGate(1)
        hold = asyncio.Event()

        async def holder():
            async with gate.slot("a"):
                await hold.wait()

        h = asyncio.create_task(holder())
        await asyncio.sleep(0)
        waiters = [asyncio.create_task(gate.slot(f"w{i}").__aenter__()) for i in range(5)]
        await asyncio.sleep(0)
        for w in waiters:
            w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        hold.set()
        await h
        assert gate.active == 0 and not gate.waiting
        async with gate.slot("again"):
            assert gate.active == 1



async def test_a_late_event_loop_holds_new_handshakes_but_never_all_and_never_the_focus():
    async with asyncio.timeout(10):
        gate = ConnectGate(8, first=lambda: "focus")
        gate.lag = 1.0  # the loop is a second late: the ticks of the connected nodes come first
        inside = []

        async def node(name):
            async with gate.slot(name):
                inside.append(name)
                await asyncio.sleep(0.3)

        tasks = [asyncio.create_task(node(f"n{i}")) for i in range(6)]
        await asyncio.sleep(0.01)
        assert len(inside) == gate.min_slots  # progress, however late the loop
        t = asyncio.create_task(node("focus"))
        await asyncio.sleep(0.01)
        assert "focus" in inside  # the node on screen is never held back
        await asyncio.gather(*tasks, t)  # the heartbeat sees the loop on time again and lets the rest in
        assert len(inside) == 7



def _err(cls, cause=None):
    e = cls("x")
    e.__cause__ = cause
    return e


@pytest.mark.parametrize("err, lo, hi", [
    (_err(Unreachable, ConnectionRefusedError()), 0.0, 1.0),  # refused: cheap to retry, back within ~1 s
    (_err(ProbeFailed), 0.0, 1.0),
    (_err(Unreachable, socket.gaierror()), 5.0, 10.0),  # DNS: 10 s at most
    (_err(AuthFailed), 30.0, 60.0),
    (_err(HostKeyRejected), 30.0, 60.0),
])
def test_backoff_by_kind_after_many_failures(err, lo, hi):
    b = Backoff(base=0.25, cap=1.0)
    waits = [b.next(err) for _ in range(12)]
    assert all(0 < w <= hi for w in waits)
    assert lo <= waits[-1] <= hi
    assert len({round(w, 6) for w in waits[-4:]}) > 1  # jittered: nodes do not retry in lockstep
    b.reset()
    assert b.next(err) <= 0.25


async def test_while_the_node_on_screen_sets_up_the_others_hold_back():
    async with asyncio.timeout(5):
        gate = ConnectGate(8, first=lambda: "focus")
        focus_done = asyncio.Event()
        inside = []

        async def node(name, until):
            async with gate.slot(name):
                inside.append(name)
                await until.wait()

        rest = asyncio.Event()
        f = asyncio.create_task(node("focus", focus_done))
        await asyncio.sleep(0)
        others = [asyncio.create_task(node(f"n{i}", rest)) for i in range(10)]
        await asyncio.sleep(0.01)
        assert inside == ["focus", "n0", "n1"]  # two beside it, not seven
        focus_done.set()
        await f
        await asyncio.sleep(0.01)
        assert len(inside) == 1 + 7  # then every slot but the one kept for the focus
        rest.set()
        await asyncio.gather(*others)

