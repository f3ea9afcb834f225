"""The node pane shows kubelet's cgroupRoot; the container pane shows the memory per NUMA node of the
container in focus (read for that container only) — kind's layout, read through the real probe."""
from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport
from frozen import FrozenApp
from layouts import FEED_ID, LAYOUTS
from pinscope.tui.screens.container import ContainerScreen
from pinscope.tui.screens.nodeinfo import NodeInfoScreen


async def report(root, spec, focus):
    SimNode(spec, root).write()
    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        col.focus = focus
        return await col.tick("gcTain")
    finally:
        await col.close()


async def test_node_pane_cgroup_root_and_container_pane_numa_memory(tmp_path):
    lay = LAYOUTS["kind_cgroup_root"]()
    lay.spec.cpuless_numa = 1
    data = {"kind-worker": await report(tmp_path, lay.spec, FEED_ID)}

    app = FrozenApp(data)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        assert isinstance(app.screen, NodeInfoScreen)
        txt = str(app.screen.query_one("#node-info").render())
        assert "cgroupRoot" in txt and "/kubelet" in txt and "from /var/lib/kubelet/config.yaml" in txt
        await pilot.press("escape")
        snap = app.views["kind-worker"].snap
        pod = next(p for p in snap.pods if p.name == "md-feed")
        app.open_container("kind-worker", pod.uid, FEED_ID, "feed")
        await pilot.pause()
        assert isinstance(app.screen, ContainerScreen)
        info = str(app.screen.query_one("#ctr-info").render())
        assert "memory per NUMA node (anon+file): N0 64.0 MiB   N1 0.0 MiB" in info
