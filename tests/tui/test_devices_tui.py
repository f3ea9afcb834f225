"""Devices in the TUI (Pilot, real Textual): the grid's NUMA header lists the devices placed on each node and the
pod tag holding each; the container pane lists its devices against its CPUs' NUMA nodes and marks the far one."""
import asyncio

from device_samples import GPU_FAR, GPU_NEAR, gpu_node_spec
from frozen import FrozenApp, frozen_samples_async
from pinscope.tui.screens.container import ContainerScreen
from pinscope.tui.widgets.coregrid import CoreGrid


def grid_lines(g) -> list[str]:
    return [s.text for s in (g._paint(ry, g.size.width) for ry in range(len(g.rows)))]


async def test_numa_header_and_container_pane_show_devices(tmp_path):
    frozen = {"gpu-node": await frozen_samples_async(gpu_node_spec(), tmp_path)}

    app = FrozenApp(frozen, start="gpu-node")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        assert g.density == "wall"  # NUMA blocks side by side: each title carries its node's devices
        titles = [line for line, r in zip(grid_lines(g), g.rows) if r.kind == "titles"]
        assert titles and "devices:" in titles[0] and f"gpu {GPU_FAR[:15]}" in "".join(titles), titles
        g.use_density("full")  # NUMA subheaders, one node after another
        await pilot.pause()
        assert g.density != "wall"
        heads = [k[-1] for k, r in zip(g._keys(), g.rows) if r.kind == "subheader"]
        tags = g.view.tags
        far_tag = next(t for u, t in tags.items() if u.startswith("11111111"))
        n0 = next(h for h in heads if h.startswith(" NUMA 0"))
        n1 = next(h for h in heads if h.startswith(" NUMA 1"))
        assert f"gpu {GPU_NEAR[:15]}\u2026\u2192" in n0 and "devices:" in n0
        assert f"gpu {GPU_FAR[:15]}\u2026\u2192{far_tag}" in n1 and "0000:af:02.1" in n1
        assert "0000:3b:0a.2" not in "".join(heads)  # not placed: on no NUMA header
        g.cursor = 1  # infer-far's first CPU
        await pilot.press("enter")
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, ContainerScreen)
        info = str(scr.query_one("#ctr-info").render())
        assert "devices (its CPUs on NUMA 0):\n  nvidia.com/gpu" in info and "\\n" not in info
        assert f"nvidia.com/gpu  {GPU_FAR}  NUMA 1 (nvidia procfs)   FAR FROM ITS CPUS" in info


async def test_pinscope_demo_shows_the_far_gpu_on_its_numa_header():
    """The live demo (real probe on the demo's trees): infer-epyc-64's NUMA 3 header names triton-0's GPU by its
    pod tag, and the findings include DEVICE_CROSS_NUMA."""
    from pinscope.collectors.collect import Options
    from pinscope.collectors.sim.demo import DemoCluster
    from pinscope.tui.app import PinscopeApp

    cl = DemoCluster()
    app = PinscopeApp(cl.targets(), Options(), 0.3, "dark", cleanup=cl.close, start="demo/infer-epyc-64")
    async with app.run_test(size=(200, 60)) as pilot:
        v = app.views["demo/infer-epyc-64"]
        n3 = ""
        for _ in range(150):  # the grid shows the first frame that has come (the trees are written first)
            await asyncio.sleep(0.1)
            await pilot.pause()
            if not app.screen_stack or not app.screen.query(CoreGrid):
                continue  # the node screen is not up yet
            g = app.screen.query_one(CoreGrid)
            n3 = next((k[-1] for k, r in zip(g._keys(), g.rows) if r.kind == "subheader" and r.numa == 3), "")
            if "devices:" in n3 and v.findings:
                break
        assert v.snap is not None, v.message
        tag = next(t for u, t in v.tags.items() if any(p.uid == u and p.name == "triton-0" for p in v.snap.pods))
        assert f"devices: gpu GPU-3f6c2a9e-81\u2026\u2192{tag}" in n3
        assert any(f.code == "DEVICE_CROSS_NUMA" and f.pod == "triton-0" for f in v.findings)


async def test_a_hostile_device_id_never_reaches_the_terminal_raw(tmp_path):
    """Device ids come from the node (a plugin names them): escape sequences are shown escaped, never sent."""
    from pinscope.collectors.sim.node import CtrSpec, PodSpec

    evil = "\x1b]0;pwned\x07\x1b[2J"
    spec = gpu_node_spec(orphan_devices=[], pods=[PodSpec("x", "ml", containers=[
        CtrSpec("c", cpus="1", devices=[("evil.com/dev", evil, 0), ("evil.com/dev", "d\x1b[31m", 0)])])])
    frozen = {"gpu-node": await frozen_samples_async(spec, tmp_path)}

    app = FrozenApp(frozen, start="gpu-node")
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        painted = "".join(seg.text for y in range(len(g.rows)) for seg in g._paint(y, 200))
        assert "devices: dev " in painted and "\x1b" not in painted and "\x07" not in painted
        g.cursor = 1
        await pilot.press("enter")
        await pilot.pause()
        info = str(app.screen.query_one("#ctr-info").render())
        assert "evil.com/dev" in info and "\x1b" not in info and "\x07" not in info


async def test_the_container_pane_lists_its_pods_dra_claims_escaped(tmp_path):
    """kubelet's DRA checkpoint names claims per pod: the container pane lists them with driver/pool/device; a
    hostile claim or device name (from the node) never reaches the terminal raw."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    spec = NodeSpec(hostname="dra-1", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=2, driver="systemd",
                    pods=[PodSpec("enc", "media", containers=[CtrSpec("ffmpeg", cpus="1,5")],
                                  claims=[("enc-nic", "dra.net", "dra-1", "eth1-vf3"),
                                          ("evil\x1b]0;pwned\x07", "gpu.example.com", "p0", "gpu\x1b[2J")])])
    frozen = {"dra-1": await frozen_samples_async(spec, tmp_path)}

    app = FrozenApp(frozen, start="dra-1")
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        g.cursor = 1  # enc's first CPU
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ContainerScreen)
        info = str(app.screen.query_one("#ctr-info").render())
        assert "pod's DRA claims:\n  enc-nic  dra.net/dra-1/eth1-vf3" in info, info
        assert "gpu.example.com/p0/gpu" in info and "\x1b" not in info and "\x07" not in info
