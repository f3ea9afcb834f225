"""Issue 25 (first grid): pinscope's own start-up costs, pinned.

- The local probe is started, and asked for the first frame, before the UI loads (`prestart`): the first
  LocalTransport takes that process over, reads the frame asked for, and starts no second probe; a first
  request other than the one foreseen drops that frame and asks again; a probe never taken over is killed.
- The theme is in force before the stylesheet is first read: no re-read of the CSS at start (it restyled
  every widget of the first screen), and the screen looks as it did (the snapshots)."""
import os
import time

from nodes import dual_socket_intel
from frozen import FrozenApp, frozen_samples_async
from pinscope.collectors.collect import NodeCollector, Options, live_depth, prestart_local
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport import local
from pinscope.tui.app import PinscopeApp
from pinscope.tui.screens.node import NodeScreen
from textual.app import App


def _tree(tmp_path):
    root = str(tmp_path / "node")
    SimNode(dual_socket_intel(), root).write()
    return root


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_prestarted_probe_is_taken_over_with_its_first_frame(tmp_path):
    opts = Options(root=_tree(tmp_path))
    assert prestart_local(opts)
    pre = local._prestarted
    assert pre is not None and pre.request == NodeCollector("local", opts)._request(live_depth(0))
    assert not prestart_local(opts)  # one waiting at a time

    col = NodeCollector("local", opts)
    await col.connect()
    assert isinstance(col.transport.proc, local._Adopted) and col.transport.proc.pid == pre.popen.pid
    first = await col.tick(live_depth(0))
    second = await col.tick(live_depth(1))
    await col.close()

    assert local._prestarted is None
    assert len(first.snapshot.roles) == 48 and len(second.snapshot.roles) == 48
    assert pre.popen.poll() is not None  # closed: the probe ended


async def test_another_first_request_drops_the_prestarted_frame(tmp_path):
    opts = Options(root=_tree(tmp_path))
    assert local.prestart(opts.root, False, "g")  # not what the collector asks first ("s..."): dropped

    col = NodeCollector("local", opts)
    await col.connect()
    r = await col.tick(live_depth(0))
    await col.close()

    assert r.snapshot.roles and local._prestarted is None


def _group(pgid: int) -> dict[int, str]:
    """The live processes (not zombies) of process group `pgid`: pid -> its program's name."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if rest[0] != "Z" and int(rest[2]) == pgid:
            out[int(d)] = comm
    return out


def test_a_probe_never_taken_over_is_killed(tmp_path):
    """Every process of the probe's group ends, not its leader only (issue 34 item 20: os.kill in place of
    os.killpg left the forwarder, the loop and awk running, and this test passed)."""
    assert local.prestart(_tree(tmp_path), False, "g")
    pre = local._prestarted
    pgid = pre.popen.pid
    end = time.monotonic() + 20
    while time.monotonic() < end and not (len(_group(pgid)) >= 4 and any("awk" in c for c in _group(pgid).values())):
        time.sleep(0.02)  # the pipeline up: the leader, the forwarder, the loop, awk
    before = _group(pgid)
    assert len(before) >= 4 and any("awk" in c for c in before.values()), before
    local._kill_unclaimed()
    local._prestarted = None
    assert pre.popen.poll() is not None and not _alive(pre.popen.pid)
    end = time.monotonic() + 10  # the rest are killed at once, reaped by init (asynchronous)
    while _group(pgid) and time.monotonic() < end:
        time.sleep(0.02)
    assert _group(pgid) == {}, f"left running of {before}: {_group(pgid)}"


def test_no_prestart_without_the_tree():
    assert not local.prestart("/nonexistent/pinscope-tree", False, "g")
    assert local._prestarted is None


async def test_the_theme_is_in_force_before_the_css_is_read(tmp_path, monkeypatch):
    calls = {"css": 0}
    refresh_css = App.refresh_css

    def counted_css(self, *a, **k):
        calls["css"] += 1
        return refresh_css(self, *a, **k)

    monkeypatch.setattr(App, "refresh_css", counted_css)
    frozen = {"xeon-2s": await frozen_samples_async(dual_socket_intel(), tmp_path / "x")}

    app = FrozenApp(frozen, theme="light")
    async with app.run_test(size=(200, 60)) as pilot:
        for _ in range(3):
            await pilot.pause(0.05)
        assert isinstance(app.screen, NodeScreen)
        assert app.theme == app.current_theme.name and f"-theme-{app.theme}" in app.classes
        at_start = dict(calls)
        await pilot.press("t")  # switching theme still re-reads the CSS
        await pilot.pause(0.05)
        after_t = calls["css"]

    assert at_start == {"css": 0}, at_start
    assert after_t >= 1


def test_pinscope_app_keeps_its_theme_key():
    app = PinscopeApp([], Options(), theme="nope")
    assert app.theme_key == "dark" and app.theme == app.current_theme.name
