"""The fleet service (collectors/fleet.py): typed targets, and the collectors of the watched nodes run
through the real probe on simulated trees, without any UI."""
import asyncio

from pinscope.collectors.collect import Options, live_depth, overview_depth
from pinscope.collectors.fleet import Fleet, NodeTarget
from pinscope.collectors.inventory import Target
from pinscope.collectors.pacing import ConnectGate
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport
from nodes import dual_socket_intel, policy_none


class LoggingLocal(LocalTransport):
    """The real local transport, noting each request it sends to the probe."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.requests: list[str] = []

    async def request(self, req: str, timeout: float):
        self.requests.append(req)
        return await super().request(req, timeout)


def test_a_target_from_the_command_line_or_an_inventory():
    opts = Options(root="/host", identity="/k")
    word = NodeTarget.of("ops@10.0.0.5:2222", opts)
    assert (word.name, word.reach, word.options, word.spec) == ("ops@10.0.0.5:2222", "ops@10.0.0.5:2222", None, None)
    inv = Target("trade-1", "ops@10.0.0.5", root=None, sudo=True, labels={"pool": "trading"}, groups=("rt",))
    t = NodeTarget.of(inv, opts)
    assert t.name == "trade-1" and t.reach == "ops@10.0.0.5"
    assert t.options.root == "/host" and t.options.sudo is True and t.options.identity == "/k"  # its own over the line's
    assert NodeTarget.of(Target("n", "local", root="/other"), opts).options.root == "/other"
    assert t.matches("TRAD") and t.matches("pool=trading") and t.matches("rt") and not t.matches("web")
    assert NodeTarget("w-1", "local").matches("w-") and not NodeTarget("w-1", "local").matches("pool")


def test_the_node_on_screen_gets_the_full_depth_the_others_the_overviews():
    f = Fleet([NodeTarget("a", "local"), NodeTarget("b", "local")])
    assert f.names == ["a", "b"] and f.collectors["a"].target == "local" and f.collectors["a"].name == "a"
    deep = [t for t in range(60) if live_depth(t) != overview_depth(t)]
    assert deep  # the two cadences differ, or this test says nothing
    f.focus_node = "a"
    assert [f.depth("a")(t) for t in deep] == [live_depth(t) for t in deep]
    assert [f.depth("b")(t) for t in deep] == [overview_depth(t) for t in deep]
    assert isinstance(f.gate, ConnectGate) and f.gate.first() == "a"  # its set-up goes first too


def test_what_a_drill_down_asks_for_reaches_only_its_collector():
    f = Fleet([NodeTarget("a", "local"), NodeTarget("b", "local")])
    f.focus_container("a", "3f9c0a")
    f.focus_cpu("b", 7)
    assert (f.collectors["a"].focus, f.collectors["b"].focus) == ("3f9c0a", None)
    assert (f.collectors["a"].focus_cpu, f.collectors["b"].focus_cpu) == (None, 7)
    f.focus_container("a", "3f9c; rm -rf /")  # an id goes into the probe's request: hex digits or nothing
    assert f.collectors["a"].focus is None
    f.focus_container("gone", "abc")  # a node no longer watched: nothing, no error
    assert f.api_name("node/worker-7") == "worker-7" and f.api_name("a") is None  # no report yet: no hostname


async def test_two_nodes_collected_through_the_real_probe_then_closed(tmp_path):
    roots = {}
    for spec in (dual_socket_intel(), policy_none()):
        roots[spec.hostname] = SimNode(spec, tmp_path / spec.hostname).write()
    transports = {name: LoggingLocal(str(tmp_path / name)) for name in roots}

    f = Fleet([NodeTarget(f"n/{name}", transport=tr) for name, tr in transports.items()], interval=0.05)
    f.focus_node = "n/xeon-2s"
    reports: dict[str, list] = {n: [] for n in f.names}
    states: list[tuple[str, str]] = []
    tasks = [asyncio.create_task(f.run_node(n, lambda name, r: reports[name].append(r),
                                            lambda name, st, msg: states.append((name, st))))
             for n in f.names]
    for _ in range(1200):  # a hang guard (60 s): a loaded machine ticks late
        if all(len(r) >= 11 for r in reports.values()):
            break
        await asyncio.sleep(0.05)
    await asyncio.wait_for(f.close(), 30)
    await asyncio.wait_for(asyncio.gather(*tasks), 30)  # close() stops every node's task

    assert {n: [r.name for r in rs][:1] for n, rs in reports.items()} == {"n/xeon-2s": ["n/xeon-2s"],
                                                                          "n/plain": ["n/plain"]}
    assert {n: [st for name, st in states if name == n] for n in f.names} == {
        "n/xeon-2s": ["connecting", "up"], "n/plain": ["connecting", "up"]}  # up once, never down
    assert f.node_names == {"n/xeon-2s": "xeon-2s", "n/plain": "plain"}  # the hostnames the nodes reported
    assert f.api_name("n/plain") == "plain"
    assert reports["n/xeon-2s"][-1].snapshot.topology is not None and len(reports["n/xeon-2s"][-1].snapshot.topology.cpus) == 48
    # tick 10: the focused node read its tasks, every task and its IRQs; the other only the overview's cgroups
    assert "ai" in transports["xeon-2s"].requests[10] and "a" not in transports["plain"].requests[10]
    assert all(tr.proc is None for tr in transports.values())  # no probe left running


async def test_a_tick_cut_short_by_closing_the_fleet_is_not_a_node_down(tmp_path):
    """Fleet.close() closes every connection while a tick may be in flight: that tick fails, on purpose.
    It was reported "down" (a failed CI run): on exit, and to anything watching states, a node that was up."""
    SimNode(policy_none(), tmp_path / "n").write()

    class InFlight(LocalTransport):
        """The real local transport; from its third request on, the request waits until close() has begun,
        then goes to the probe close() is killing."""

        def __init__(self, root: str) -> None:
            super().__init__(root)
            self.sent = 0
            self.closing = asyncio.Event()
            self.in_flight = asyncio.Event()

        async def request(self, req: str, timeout: float):
            self.sent += 1
            if self.sent >= 3:
                self.in_flight.set()
                await self.closing.wait()
                await asyncio.sleep(0.2)  # close() is killing the probe meanwhile
            return await super().request(req, timeout)

        async def close(self) -> None:
            self.closing.set()
            await super().close()

    tr = InFlight(str(tmp_path / "n"))

    f = Fleet([NodeTarget("n", transport=tr)], interval=0.05)
    states: list[tuple[str, str]] = []
    task = asyncio.create_task(f.run_node("n", lambda name, r: None, lambda name, st, msg: states.append((st, msg))))
    await asyncio.wait_for(tr.in_flight.wait(), 60)
    await asyncio.wait_for(f.close(), 30)
    await asyncio.wait_for(task, 30)

    assert [st for st, _ in states] == ["connecting", "up"], states
    assert tr.proc is None


async def test_closing_a_node_closes_the_connection_it_had_when_asked(tmp_path):
    """Esc in the Prometheus overview closes the node's connection in a worker; a node opened again before
    that worker runs keeps its new connection."""
    class Counting(LocalTransport):
        closed = 0

        async def close(self) -> None:
            self.closed += 1
            await super().close()

    first, second = Counting(str(tmp_path)), Counting(str(tmp_path))

    f = Fleet([NodeTarget("n", transport=first)])
    pending = f.close("n")  # asked now, run later
    f.add(NodeTarget("n", transport=second))  # opened again meanwhile
    await pending
    await f.close("gone")  # a node not watched: nothing to close

    assert (first.closed, second.closed) == (1, 0) and f.collectors["n"].transport is second
    assert not f.stop.is_set()  # closing one node stops nothing else


def test_the_exporter_merges_an_inventory_nodes_options_as_the_tui_does():
    from pinscope.collectors.exporter.serve import plan

    opts = Options(root="/host", identity="/k")
    out = dict(plan([Target("a", "ops@10.0.0.5", sudo=True), Target("b", "local", root="/other")], opts))
    assert out["a"].target == "ops@10.0.0.5" and out["a"].name == "a"
    assert (out["a"].opts.root, out["a"].opts.sudo, out["a"].opts.identity) == ("/host", True, "/k")
    assert (out["b"].opts.root, out["b"].opts.sudo) == ("/other", False)
    for t in (Target("a", "ops@10.0.0.5", sudo=True), Target("b", "local", root="/other")):
        assert NodeTarget.of(t, opts).options == out[t.name].opts  # one rule, NodeTarget.of


def test_the_exporter_removes_the_demo_trees_when_its_targets_are_refused(tmp_path):
    """`pinscope exporter demo demo`: the targets would share labels, refused before serving (exit 1); the
    demo cluster's temporary trees are removed all the same (they were left in $TMPDIR: mypy found the
    cluster hung on a collector from outside, where a refused plan never handed it back)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    r = subprocess.run([sys.executable, "-m", "pinscope.cli", "exporter", "demo", "demo", "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "TMPDIR": str(tmp_path)},
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 1 and "two targets would be labelled" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


async def test_a_defect_on_a_node_s_data_is_a_state_and_the_node_is_read_again(tmp_path):
    """An exception that is not one of pinscope's errors (a defect met on some node's data: RUNQUEUE_WAIT_EXCLUSIVE
    raised AttributeError after a drill-down closed) ended the node's task: the TUI's worker failed silently and
    the node's last report stayed on screen as if live. Now it is the node's state, "down" with the error in
    one line, and the node is read again from a new connection, where it comes back up."""
    SimNode(dual_socket_intel(), tmp_path / "n").write()
    tr = LocalTransport(str(tmp_path / "n"))

    f = Fleet([NodeTarget("n", transport=tr)], interval=0.05)
    col = f.collectors["n"]
    feeds = {"n": 0}
    real_feed = col.pipeline.feed

    def feed(*a, **kw):
        feeds["n"] += 1
        if feeds["n"] == 3:
            raise AttributeError("'NoneType' object has no attribute 'source'")
        return real_feed(*a, **kw)

    states: list[tuple[str, str | None]] = []
    reports: list = []
    col.pipeline.feed = feed
    task = asyncio.create_task(f.run_node("n", lambda name, r: reports.append(r),
                                          lambda name, st, msg: states.append((st, msg))))
    for _ in range(600):
        if sum(st == "up" for st, _ in states) >= 2 and len(reports) >= 4:
            break
        await asyncio.sleep(0.05)
        col.pipeline.feed = feed  # a reconnect keeps the Pipeline object: the same stand-in
    await asyncio.wait_for(f.close(), 30)
    await asyncio.wait_for(task, 30)

    kinds = [st for st, _ in states]
    assert kinds[:3] == ["connecting", "up", "down"], states
    msg = states[2][1]
    assert msg.startswith("pinscope failed on this node (AttributeError: 'NoneType' object has no attribute")
    assert "\n" not in msg and "a defect of pinscope's" in msg
    assert kinds[3:5] == ["connecting", "up"], states  # read again, and up
    assert len(reports) >= 4 and tr.proc is None


async def test_a_defect_on_every_connection_s_second_tick_slows_its_reconnects(tmp_path):
    """The reconnect after a defect is paced by its own backoff, which a connect that works does not reset:
    reset with the connection's, a defect on every connection's second tick reconnected the node every cycle
    for good, a new session and probe each time (review: 17 reconnects in 20 s at a 1 s interval). Over 4 s
    at a 0.05 s interval: waits of 0.5-1, 1-2, 2-4 s, so at most 4 connects, where the reset gave ~40."""
    SimNode(dual_socket_intel(), tmp_path / "n").write()
    tr = LocalTransport(str(tmp_path / "n"))

    f = Fleet([NodeTarget("n", transport=tr)], interval=0.05)
    col = f.collectors["n"]
    real_feed = col.pipeline.feed

    def feed(*a, **kw):
        if col.pipeline.ticks == 1:  # reset() does not renew the counter: count this connection's own
            raise RuntimeError("defect")
        return real_feed(*a, **kw)

    states: list[tuple[str, str | None]] = []
    col.pipeline.feed = feed
    col.pipeline.ticks = 0
    real_connect = col.connect

    async def connect():
        await real_connect()
        col.pipeline.ticks = 0

    col.connect = connect
    task = asyncio.create_task(f.run_node("n", lambda name, r: None, lambda name, st, msg: states.append((st, msg))))
    await asyncio.sleep(4.0)
    await asyncio.wait_for(f.close(), 30)
    await asyncio.wait_for(task, 30)

    connects = sum(st == "connecting" for st, _ in states)
    downs = [m for st, m in states if st == "down"]
    assert downs and all(m.startswith("pinscope failed on this node (RuntimeError: defect)") for m in downs), states
    assert 2 <= connects <= 4, states


async def test_a_node_s_defects_are_forgiven_after_enough_good_reports_in_a_row_only(tmp_path, monkeypatch):
    """collect.DEFECT_FORGIVEN: a node's defects stop slowing its reconnects after that many good reports IN A
    ROW, and a defect starts the count again. The defects' backoff is watched (its step at each defect; every
    wait 0 s, so the test runs at the probe's pace): 29 good reports, a defect (step 0), 5 good ones, a defect
    (step 1: 5 in a row forgive nothing, and the 29 before the first defect do not count), then
    DEFECT_FORGIVEN + 4 good ones, a defect (step 0 again: forgiven). Never resetting the count forgave the
    second defect; never forgiving took the third to step 2."""
    from pinscope.collectors import collect

    made: list = []

    class Watched(collect.Backoff):
        def __init__(self, *a, **kw) -> None:
            super().__init__(*a, **kw)
            self.steps: list[int] = []
            made.append(self)

        def next(self, err=None) -> float:
            self.steps.append(self.n)
            self.n += 1
            return 0.0

    monkeypatch.setattr(collect, "Backoff", Watched)
    SimNode(dual_socket_intel(), tmp_path / "n").write()
    tr = LocalTransport(str(tmp_path / "n"))
    defect_at = {30, 36, 36 + collect.DEFECT_FORGIVEN + 5}  # the feeds (ticks) that raise, counted over all

    f = Fleet([NodeTarget("n", transport=tr)], interval=0.001)
    col = f.collectors["n"]
    real_feed = col.pipeline.feed
    feeds = [0]

    def feed(*a, **kw):
        feeds[0] += 1
        if feeds[0] in defect_at:
            raise RuntimeError("defect")
        return real_feed(*a, **kw)

    states: list[str] = []
    col.pipeline.feed = feed
    task = asyncio.create_task(f.run_node("n", lambda name, r: None, lambda name, st, msg: states.append(st)))
    for _ in range(1200):
        if feeds[0] > max(defect_at) + 1:
            break
        await asyncio.sleep(0.05)
        col.pipeline.feed = feed
    await asyncio.wait_for(f.close(), 30)
    await asyncio.wait_for(task, 30)
    n = feeds[0]

    assert n > max(defect_at), (n, states)
    connection, defects = made  # live() makes the connection's backoff first, then the defects'
    assert defects.steps == [0, 1, 0], (defects.steps, states)
    assert states.count("down") == 3, states
