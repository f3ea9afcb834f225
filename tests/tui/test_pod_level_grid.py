"""The grid labels CPUs a pod holds as a whole (pod-level resources, checkpoint podEntries): its pod's tag
in lower case (monochrome reads it), the legend says what lower case means, the cursor line names the pod
as a whole. Frozen data: a fixture tree with a v4 checkpoint read through the real probe."""
import json

from frozen import FrozenApp, frozen_samples_async
from textual.widgets import DataTable

from pinscope.collectors.parse.kubelet import fnv1a32
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from pinscope.tui.widgets.coregrid import CoreGrid

RT = "11111111-2222-3333-4444-555555555555"
WHOLE = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def spec() -> NodeSpec:
    data = json.dumps({"policyName": "static", "defaultCpuSet": "0,3-4,7", "entries": {RT: {"app": "1,5"}},
                       "podEntries": {WHOLE: {"cpuSet": "2,6"}}})
    state = json.dumps({"policyName": "static", "defaultCpuSet": "0,3-4,7", "checksum": 0, "data": data,
                        "dataChecksum": fnv1a32("(string)" + data)})
    return NodeSpec(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", init_affinity="0,4", state_text=state,
                    pods=[PodSpec("rt", "prod", uid=RT, containers=[CtrSpec("app", cpus="1,5")]),
                          PodSpec("whole", "prod", uid=WHOLE, containers=[CtrSpec("worker", effective="2,6")])])


async def test_pod_level_cpus_carry_their_pods_tag_in_lower_case(tmp_path):
    rep = await frozen_samples_async(spec(), tmp_path)

    app = FrozenApp({"t": rep})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        v = app.views["t"]
        assert set(v.tags) == {RT, WHOLE}
        lines = [g._paint(y, max(g.size.width, g.virtual_size.width)).text for y in range(len(g.rows))]
        cell_text = {}
        for ri, row in enumerate(g.rows):
            for cell in row.cells or ():
                cell_text[cell.cpu] = lines[ri][cell.x:cell.x + cell.width]
        whole, rt = v.tags[WHOLE], v.tags[RT]
        for cpu in (2, 6):
            assert whole.lower() in cell_text[cpu] and whole not in cell_text[cpu], cell_text[cpu]
        for cpu in (1, 5):
            assert rt in cell_text[cpu], cell_text[cpu]
        legend = str(app.screen.query_one("#legend-key").render())
        assert "lower-case letter = CPUs the pod holds as a whole" in legend
        pods = app.screen.query_one("#pods", DataTable)
        shown = [[str(c) for c in pods.get_row_at(i)] for i in range(pods.row_count)]
        # wide: tag, pod, container, cpus, NUMA; narrow (this size): tag, pod/container, cpus
        assert ([whole.lower(), "prod/whole", "(whole pod)", "2,6", "0"] in shown
                or [whole.lower(), "whole/(whole pod)", "2,6"] in shown), shown
        g.cursor = 2
        await pilot.pause()
        assert "prod/whole/(whole pod)" in str(app.screen.query_one("#legend-cursor").render())
        await pilot.press("q")
