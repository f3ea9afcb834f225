"""Issue 34 item 7 in the live view: kubelet's assignment not read (here its state file is not JSON; as a
user who may not read it, the same) is said unknown where the view shows it, never taken for "shared":
the container pane, the CPU pane (whose owners then come from the cgroups, not from cpu_manager_state), the
pod list (which listed only what the state file pinned: nothing, so every container looked shared) and the
grid's pod letters. Real Textual over a fixture tree read through the real probe."""

from frozen import FrozenApp, frozen_samples_async
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from pinscope.tui.export import cpu_rows
from pinscope.tui.screens.container import ContainerScreen
from pinscope.tui.screens.cpu import CpuScreen
from pinscope.tui.screens.node import NodeScreen


def spec(state_text=None) -> NodeSpec:
    return NodeSpec(hostname="n", sockets=1, cores=4, threads=1, policy="static", reserved="0", cgroup=2,
                    driver="systemd", state_text=state_text, pods=[
                        PodSpec("pinned", "prod", containers=[CtrSpec("engine", cpus="2-3")]),
                        PodSpec("web", "prod", qos="Burstable", containers=[CtrSpec("nginx")])])


async def panes(tmp_path, state_text):
    data = {"n": await frozen_samples_async(spec(state_text), tmp_path)}

    app = FrozenApp(data)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        scr = app.screen
        assert isinstance(scr, NodeScreen)
        rows = [r[:4] for r in scr._pod_list()]
        tags = dict(app.views["n"].tags)
        snap = app.views["n"].snap
        csv = {r["cpu"]: r for r in cpu_rows(app.views["n"])}
        out = {}
        for p in snap.pods:
            c = p.containers[0]
            app.open_container("n", p.uid, c.id, c.name)
            await pilot.pause()
            assert isinstance(app.screen, ContainerScreen)
            out[c.name] = str(app.screen.query_one("#ctr-info").render())
            await pilot.press("escape")
            await pilot.pause()
        app.open_cpu("n", 2)
        await pilot.pause()
        assert isinstance(app.screen, CpuScreen)
        cpu = str(app.screen.query_one("#cpu-info").render())
        return rows, tags, out, cpu, csv, snap



async def test_an_assignment_not_read_is_unknown_in_every_pane(tmp_path):
    rows, tags, ctr, cpu, csv, snap = await panes(tmp_path, '{"policyName":"static","defaultCpuSet":"0-3","entries":{"abc')
    assert not snap.assignment_known
    pinned = next(p for p in snap.pods if p.name == "pinned")
    assert "kubelet assignment: unknown" in ctr["engine"] and "shared pool" not in ctr["engine"], ctr["engine"]
    assert "kubelet assignment: unknown" in ctr["nginx"] and "shared pool" not in ctr["nginx"], ctr["nginx"]
    assert "owners (inferred from the cgroups: kubelet's assignment unknown)" in cpu, cpu
    assert "cpu_manager_state" not in cpu.split("owners", 1)[1].split("\n", 1)[0]
    # the pod list shows what the grid shows exclusive, its CPUs marked as the kernel's, not kubelet's
    assert rows == [("A", "prod/pinned", "engine", "2-3?")], rows
    assert tags == {pinned.uid: "A"}
    assert csv[2]["role"] == "exclusive" and csv[2]["roles_from"] == "cgroups"


async def test_an_assignment_read_is_said_as_before(tmp_path):
    rows, tags, ctr, cpu, csv, snap = await panes(tmp_path, None)
    assert snap.assignment_known
    assert "kubelet assignment: 2-3" in ctr["engine"]
    assert "kubelet assignment: shared pool" in ctr["nginx"]
    assert "owners (kubelet's cpu_manager_state)" in cpu
    assert rows == [("A", "prod/pinned", "engine", "2-3")], rows
    assert csv[2]["roles_from"] == "state"
