"""Many real SSH nodes on loopback (one sshd each, each with its own fixture root): the overview shows all;
freeze one sshd and that node goes stale, then down, while the others keep updating; bring it back and
it recovers. The app never exits because a node is lost."""
import asyncio
import signal
import time


import sshd as sshd_mod
from pinscope.collectors.collect import Options
from pinscope.collectors.fleet import NodeTarget
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import need
from pinscope.tui.app import PinscopeApp
from pinscope.tui.screens.fleet import FleetScreen


async def test_fleet_of_real_ssh_nodes_loses_and_regains_one(tmp_path):
    ok, why = sshd_mod.available()
    need(ok, why)
    servers, entries = [], []
    for i in range(3):
        root = tmp_path / f"root{i}"
        SimNode(NodeSpec(hostname=f"node-{i}", cores=4, pods=[PodSpec("p", containers=[CtrSpec("c", cpus="1,5")])],
                         seed=i + 1), root).write()
        s = sshd_mod.Sshd(tmp_path / f"s{i}").start()
        servers.append(s)
        o = Options(root=str(root), identity=str(s.userkey), known_hosts=str(s.known_hosts),
                    ssh_config=str(s.ssh_config), connect_timeout=2, frame_timeout=1.5)
        entries.append(NodeTarget(s.target, options=o))
    victim = servers[1]

    try:
        app = PinscopeApp(entries, interval=0.3)
        async with app.run_test(size=(160, 40)) as pilot:
            async def until(cond, t=20):
                end = time.time() + t
                while time.time() < end:
                    if cond():
                        return
                    await asyncio.sleep(0.1)
                raise AssertionError({k: (v.state, v.message) for k, v in app.views.items()})

            async def status_says(*texts, t=20):
                """The fleet status line says one of `texts` (polled: at 0.3 s a node is stale after 0.9 s
                without a frame, which a loaded machine's sshd round trip can take for a moment)."""
                end = time.time() + t
                while True:
                    app._refresh_fleet()
                    await pilot.pause()
                    status = str(app.screen.query_one("#status").render())
                    if any(x in status for x in texts) or time.time() > end:
                        return status
                    await asyncio.sleep(0.1)

            views = app.views
            await until(lambda: all(v.state == "up" and v.snap is not None for v in views.values()))
            assert isinstance(app.screen, FleetScreen)
            status = await status_says("3 up")
            assert "3 up" in status, status
            # freeze the victim's sshd (and its session): no frames, no error: stale first
            victim.signal_all(signal.SIGSTOP)
            vv = views[victim.target]
            await until(lambda: vv.state == "stale", 10)
            others = [views[s.target] for s in servers if s is not victim]
            gens = [v.generation for v in others]
            await until(lambda: vv.state == "down", 15)
            # the others kept updating and are up (polled: one may be stale for a moment on a loaded machine)
            await until(lambda: all(v.generation > g for v, g in zip(others, gens)) and all(v.state == "up" for v in others))
            status = await status_says("1 down", "○ 1")
            assert "1 down" in status or "○ 1" in status, status
            assert vv.state == "down"
            # bring it back on the same port
            victim.signal_all(signal.SIGCONT)
            await victim.akill()
            await victim.astart()
            await until(lambda: vv.state == "up", 30)
            g = vv.generation
            await until(lambda: vv.generation > g + 1, 10)
            assert vv.snap.node == "node-1"
            await pilot.press("q")
    finally:
        for s in servers:
            s.kill()
