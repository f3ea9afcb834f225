"""Devices in the TUI (Pilot, real Textual): the grid's NUMA header lists the devices placed on each node and the
pod tag holding each; the container pane lists its devices against its CPUs' NUMA nodes and marks the far one."""
import asyncio

from device_samples import GPU_FAR, GPU_NEAR, gpu_node_spec
from frozen import FrozenApp, frozen_samples
from tui.screens.container import ContainerScreen
from tui.widgets.coregrid import CoreGrid


def test_numa_header_and_container_pane_show_devices(tmp_path):
    frozen = {"gpu-node": frozen_samples(gpu_node_spec(), tmp_path)}

    async def go():
        app = FrozenApp(frozen, start="gpu-node")
        async with app.run_test(size=(200, 60)) as pilot:
            await pilot.pause()
            g = app.screen.query_one(CoreGrid)
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
            assert "devices (its CPUs on NUMA 0):" in info
            assert f"nvidia.com/gpu  {GPU_FAR}  NUMA 1 (nvidia procfs)   FAR FROM ITS CPUS" in info
    asyncio.run(go())
