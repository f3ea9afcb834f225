"""Issue 34 item 14: real pod names are long (a Deployment's name, the ReplicaSet's hash, the pod's hash: up
to 63 characters). The pod list shortens them at every size a screen test uses and never pushes its other
columns out of sight: the tag, the pod's own hash (what tells two replicas apart), the CPUs, and where the
list is wide, the container and the NUMA nodes. Real Textual over a simulated node read through the probe."""

import pytest
from textual.widgets import DataTable

from frozen import FrozenApp, frozen_samples, screen_lines
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

# written by hand: a Deployment of 46 characters + "-" + a ReplicaSet hash of 10 + "-" + a pod hash of 5
POD_A = "payments-settlement-reconciler-eu-west-1-batch-7f9c8d6b5d-x2k9q"
POD_B = "payments-settlement-reconciler-eu-west-1-batch-7f9c8d6b5d-m4p2z"  # its replica: only the hash differs
CTR = "reconciler"
CTR_LONG = "settlement-reconciler-sidecar"  # longer than most: shortened in its middle where room is short
# every size the screen tests use (tests/tui/*, tests/snapshots/test_snapshots.py)
SIZES = [(80, 24), (120, 40), (160, 40), (160, 45), (160, 50), (200, 50), (200, 60), (320, 60), (320, 90)]
# what each row must show, from the spec below: tag, the pod's hash, CPUs, container, NUMA nodes
ROWS = {"A": ("x2k9q", "1-2,25-26", CTR, "0"), "B": ("m4p2z", "13-14,37-38", CTR_LONG, "1")}


def test_the_names_are_as_long_as_kubernetes_makes_them():
    assert len(POD_A) == len(POD_B) == 63


def _spec() -> NodeSpec:
    return NodeSpec(
        hostname="xeon-2s", sockets=2, cores=12, threads=2, numbering="intel", cgroup=2, driver="systemd",
        policy="static", reserved="0,24", topology_policy="single-numa-node",
        pods=[PodSpec(POD_A, "payments-production", containers=[CtrSpec(CTR, cpus="1-2,25-26", busy=0.5)]),
              PodSpec(POD_B, "payments-production", containers=[CtrSpec(CTR_LONG, cpus="13-14,37-38", busy=0.5)])])


@pytest.fixture(scope="module")
def long_names(tmp_path_factory):
    return {"xeon-2s": frozen_samples(_spec(), tmp_path_factory.mktemp("long"))}


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_long_pod_names_shortened_and_every_column_shown(long_names, size):
    app = FrozenApp(long_names)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.pause()
        table = app.screen.query_one("#pods", DataTable)
        assert table.display, f"the pod list is not shown at {size}"
        # nothing off to the right: the table never scrolls sideways
        assert table.virtual_size.width <= table.scrollable_content_region.width, (
            size, table.virtual_size, table.scrollable_content_region)
        header = [str(c.label) for c in table.columns.values()]
        wide = "container" in header
        if size[0] >= 160:
            assert wide and "NUMA" in header, (size, header)
        r = table.region
        lines = [ln[r.x:r.x + r.width] for ln in screen_lines(app)[r.y:r.y + r.height]]
        rows = {ln.split()[0]: ln for ln in lines[1:] if ln.split() and ln.split()[0] in ROWS}
        assert rows, (size, lines)
        for tag, line in rows.items():
            pod_hash, cpus, ctr, numa = ROWS[tag]
            words = [w for w in line.split() if w != "│"]  # the pane's border beside it
            assert cpus in words, (size, tag, line)
            if wide:
                assert any(w.endswith(pod_hash) for w in words), (size, tag, line)
                assert words[-1] == numa, (size, tag, line)
                assert ctr in words or any(w.startswith(ctr[:4]) and "…" in w and w.endswith(ctr[-4:])
                                           for w in words), (size, tag, line)
                if ctr == CTR:  # a container name of a usual length is shown whole
                    assert ctr in words, (size, tag, line)
            else:
                assert any(w.startswith("payments") for w in words), (size, tag, line)
