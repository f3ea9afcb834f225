"""Record, kill -9 the recorder mid-stream, replay everything up to the last whole snapshot."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pinscope.collectors.record import Recorder, at_time, open_recording, state_at
from pinscope.collectors.sim.node import SimNode
from helpers import run_cli, stop
from nodes import dual_socket_intel, policy_none

REPO = Path(__file__).resolve().parents[2]


RECORDER = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {repo!r})
    from pinscope.collectors.collect import NodeCollector, Options, live_depth
    from pinscope.collectors.record import Recorder
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport
    sys.path.insert(0, {tests!r})
    from nodes import dual_socket_intel, policy_none

    async def main():
        rec = Recorder({out!r})
        sims, cols = [], []
        for name, spec in (("xeon", dual_socket_intel()), ("plain", policy_none())):
            root = {tmp!r} + "/" + name
            sims.append(SimNode(spec, root).write())
            c = NodeCollector(name, Options(root=root), LocalTransport(root))
            c.recorder = rec
            await c.connect()
            cols.append(c)
        i = 0
        while True:
            for s, c in zip(sims, cols):
                s.tick(0.05)
                await c.tick(live_depth(i))
            i += 1
            print(i, flush=True)
    asyncio.run(main())
""")


def test_kill_9_mid_stream_then_replay(tmp_path):
    out = tmp_path / "rec.pinscope"
    script = RECORDER.format(repo=str(REPO), tests=str(REPO / "tests"), out=str(out), tmp=str(tmp_path))
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        ticks = 0
        while ticks < 25:
            line = p.stdout.readline()
            assert line, "the recorder died"
            ticks = int(line)
    finally:
        stop(p)  # kill -9, and a wait with a deadline
    size = out.stat().st_size
    rec = open_recording(str(out))
    assert rec.nodes == ["xeon", "plain"]
    assert len(rec.index) >= 50  # every whole record is there
    # a member cut in the middle (what kill -9 during write() leaves): dropped, said, the rest replays
    whole = rec.index[-1][2] + rec.index[-1][3]
    with open(out, "ab") as f:
        f.truncate(whole)
        f.write(open(out, "rb").read()[rec.index[-1][2]:whole][: rec.index[-1][3] // 2])
    rec2 = open_recording(str(out))
    assert len(rec2.index) == len(rec.index) and "cut short" in rec2.problem
    report = state_at(rec2, "xeon", at_time(rec2, None))
    snap, rates = report.snapshot, report.rates
    assert snap.node == "xeon-2s" and rates is not None
    assert {r.role for r in snap.roles} >= {"exclusive", "reserved", "shared"}
    # the CLI over the recording, at a time in the middle
    mid = (rec2.start + rec2.end) / 2
    r = run_cli("check", "--json", "--replay", str(out), f"--at={mid}")
    assert r.returncode in (0, 1, 2), r.stderr
    objs = json.loads(r.stdout)
    assert [o["node"] for o in objs] == ["xeon-2s", "plain"] and all(o["recorded_at"] == mid for o in objs)
    assert "cut short" in r.stderr
    assert size > 0


async def test_recording_keys_nodes_by_their_names_not_addresses(tmp_path):
    """Five inventory nodes may share one address ('local' with different roots, or a jump host)."""
    import asyncio

    from pinscope.collectors.collect import Options
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.collectors.inventory import Target
    from pinscope.tui.app import PinscopeApp

    rec_path = tmp_path / "r.pinscope"
    entries = []
    for name, spec in (("a", dual_socket_intel()), ("b", policy_none())):
        SimNode(spec, tmp_path / name).write()
        entries.append(NodeTarget.of(Target(name, "local", root=str(tmp_path / name)), Options()))

    recorder = Recorder(str(rec_path))
    app = PinscopeApp(entries, interval=0.2, recorder=recorder)
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(600):  # a hang guard (60 s): a loaded machine ticks late
            await asyncio.sleep(0.1)
            if all(v.ticks >= 3 for v in app.views.values()):
                break
        await pilot.press("q")
    recorder.close()

    rec = open_recording(str(rec_path))
    assert rec.nodes == ["a", "b"] or rec.nodes == ["b", "a"]
    assert state_at(rec, "a", rec.end).node == "xeon-2s" and state_at(rec, "b", rec.end).node == "plain"


async def test_replay_tui_steps_seeks_and_plays(tmp_path):
    import asyncio

    from pinscope.tui.replay import ReplayApp

    rec_path = tmp_path / "r.pinscope"
    sim = SimNode(dual_socket_intel(), tmp_path / "n").write()

    from pinscope.collectors.collect import NodeCollector, Options, live_depth
    from pinscope.collectors.transport.local import LocalTransport

    col = NodeCollector("xeon", Options(root=str(tmp_path / "n")), LocalTransport(str(tmp_path / "n")))
    col.recorder = Recorder(str(rec_path))
    await col.connect()
    for i in range(8):
        sim.tick(1.0)
        await col.tick(live_depth(i))
    await col.close()
    col.recorder.close()

    rec = open_recording(str(rec_path))
    assert len(rec.index) == 8

    app = ReplayApp(rec, speed=32)
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(1200):  # a hang guard (60 s)
            await asyncio.sleep(0.05)
            if app.pos == 7:
                break
        assert app.pos == 7  # played to the end
        # one node screen: the app's on_mount ran twice (ReplayApp's called it, then Textual did)
        assert [type(s).__name__ for s in app.screen_stack] == ["Screen", "NodeScreen"]
        v = app.views["xeon"]
        status = str(app.screen.query_one("#status").render())
        assert v.snap.node == "xeon-2s" and "replay" in status
        assert "live" not in status  # a recording is not live
        await pilot.press("comma")  # step back
        await pilot.pause()
        assert app.paused and app.pos == 6
        v.last_update -= 60  # paused for a minute of wall time: the recorded node is not "stale"
        app._check_stale()
        assert v.state == "up" and "STALE" not in str(app.screen.query_one("#status").render())
        await pilot.press("less_than_sign")  # seek -60 s: the start
        await pilot.pause()
        assert app.pos == 0
        await pilot.press("full_stop", "full_stop")
        await pilot.pause()
        assert app.pos == 2 and app.views["xeon"].snap is not None
        await pilot.press("plus")
        assert app.speed == 64
        await pilot.press("q")
