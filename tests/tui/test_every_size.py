"""Issue 24: every screen a war room has. Values read as words in the panes; pod tags in CPU order and
stable while a pod lives; the node screen keeps the node, its state, the critical and warning counts and
the worst finding on screen at every size (the grid next, the rest as room allows, what is folded said).
Real Textual (App.run_test) over frozen data: simulated nodes read through the real probe."""
import re

import pytest

from pinscope.collectors.kube import ApiContainer, ApiPod
from frozen import FrozenApp, frozen_samples
from nodes import dual_socket_intel
from pinscope.tui.human import amounts, settings, yes_no
from pinscope.tui.screens.container import ContainerScreen
from pinscope.tui.screens.cpu import CpuScreen
from pinscope.tui.screens.nodeinfo import NodeInfoScreen


@pytest.fixture(scope="module")
def xeon(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


def test_words_not_python_values():
    assert settings({"full-pcpus-only": "true"}) == "full-pcpus-only=true"
    assert amounts({"cpu": "500m", "memory": "1Gi"}) == "cpu 500m, memory 1Gi"
    assert (yes_no(True), yes_no(False), yes_no(None)) == ("yes", "no", "unknown")
    assert settings({}) == amounts(None) == "-"


# a Python value printed as it is (repr): a dict's or list's brackets, or a quoted string where a person reads a
# word: {'a': 1}, ['x', 'y'], ('x',), 'static'. English apostrophes ("the kernel's housekeeping", "the CPUs' NUMA node")
# are words, not a leak.
PYTHON_REPR = re.compile(r"[{}]|[\[(]'|'[\])]|'[:,] '?|'[^'\s]+'")


def python_repr(txt: str) -> list[str]:
    return PYTHON_REPR.findall(txt)


@pytest.mark.parametrize("leak", ["{'full-pcpus-only': 'true'}", "['cpu', 'memory']", "('a',)", "{}",
                                  "policy 'static', options x", "policy 'static' x"])
def test_the_repr_check_sees_python_values(leak):
    assert python_repr(f"options {leak} here")


@pytest.mark.parametrize("words", ["isolated from the kernel's housekeeping", "memory on the CPUs' NUMA node",
                                   "cpu 500m, memory 1Gi", "kubelet's word: \"None\""])
def test_the_repr_check_lets_words_through(words):
    assert not python_repr(words)


async def test_panes_print_values_as_a_person_reads_them(xeon):
    app = FrozenApp(xeon)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        assert isinstance(app.screen, NodeInfoScreen)
        txt = str(app.screen.query_one("#node-info").render())
        assert "full-pcpus-only=true" in txt and "cpu 500m, memory 1Gi" in txt, txt
        assert not python_repr(txt), (python_repr(txt), txt)  # (memoryManagerPolicy "None" is kubelet's word)
        await pilot.press("escape", "c")
        assert isinstance(app.screen, CpuScreen)
        txt = str(app.screen.query_one("#cpu-info").render())
        assert "online yes" in txt and "True" not in txt and "None" not in txt, txt
        await pilot.press("escape")
        v = app.views["xeon-2s"]
        pod = next(p for p in v.snap.pods if p.name == "md-feed-0")
        v.api_pods[pod.uid] = ApiPod(pod.uid, "trading", "md-feed-0", "Guaranteed", None,
                                     (ApiContainer("feed", {"cpu": "4", "memory": "1Gi"}, {"cpu": "4"}),))
        app.open_container("xeon-2s", pod.uid, pod.containers[0].id, "feed")
        await pilot.pause()
        assert isinstance(app.screen, ContainerScreen)
        txt = str(app.screen.query_one("#ctr-info").render())
        assert "requests cpu 4, memory 1Gi   limits cpu 4" in txt, txt


def test_pod_tags_follow_the_first_cpu_and_stay_while_the_pod_lives():
    """512 CPUs, 70 pods listed by the node in uid order: the tags run with the CPUs (shard-00 on CPUs
    8-11 is A, shard-24 the 25th is AA), and a pod keeps its tag when others come and go."""
    from dataclasses import replace

    from frozen import frozen_node
    from nodes import epyc_512
    from pinscope.tui.state import NodeView, pod_tag

    rep = frozen_node(epyc_512)
    v = NodeView("epyc-512")
    v.apply(rep)
    by_name = {p.name: v.tags.get(p.uid) for p in rep.snapshot.pods}
    assert by_name["shard-00"] == "A" and by_name["shard-01"] == "B" and by_name["shard-24"] == "AA"
    assert by_name["pricer-0"] == pod_tag(62) and by_name["batch-etl"] is None  # not pinned: no tag
    firsts = sorted((min(x for c in p.containers for x in c.assigned or ()), v.tags[p.uid])
                    for p in rep.snapshot.pods if p.uid in v.tags)
    assert [t for _, t in firsts] == [pod_tag(i) for i in range(70)]  # CPU order is tag order
    # shard-00 leaves; the next tick's pods keep their tags, in whatever order the node lists them
    gone = next(p for p in rep.snapshot.pods if p.name == "shard-00")
    pods = tuple(reversed([p for p in rep.snapshot.pods if p is not gone]))
    v.apply(replace(rep, snapshot=replace(rep.snapshot, pods=pods)))
    assert {p.name: v.tags.get(p.uid) for p in pods} == {n: t for n, t in by_name.items() if n != "shard-00"}
    assert gone.uid not in v.tags


@pytest.fixture(scope="module")
def trouble():
    from frozen import frozen_node
    from nodes import trouble_16

    return {"edge-16": frozen_node(trouble_16)}


async def test_findings_wrap_in_the_pane_and_are_whole_in_the_detail_view(trouble):
    """80x24: the findings pane wraps each message (every word of the critical one on screen, worst
    first); Enter on it opens its evidence, the drifted container, with the whole message and its hint."""
    from frozen import screen_lines
    from pinscope.tui.screens.node import NodeScreen

    app = FrozenApp(trouble)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        v = app.views["edge-16"]
        crit = next(f for f in v.findings if f.code == "STATE_CGROUP_DRIFT")
        fs = app.screen.query_one("#findings")
        assert fs.display and fs.region.height >= 3
        pane = " ".join(screen_lines(app)[fs.region.y:fs.region.bottom])  # (pods beside it, at the left)
        assert all(word in pane for word in crit.message.split()), pane  # wrapped, not cut
        await pilot.press("f", "enter")
        await pilot.pause()
        assert isinstance(app.screen, ContainerScreen)
        txt = str(app.screen.query_one("#ctr-info").render())
        assert f"critical: STATE_CGROUP_DRIFT: {crit.message}" in txt and crit.hint in txt
        await pilot.press("escape")
        assert isinstance(app.screen, NodeScreen)
        await pilot.press("n")
        txt = str(app.screen.query_one("#node-info").render()).replace("\n", " ")
        assert all(f"{f.code}: {f.message}" in txt for f in v.findings), txt


async def test_enter_opens_the_cpu_pane_from_the_last_report_without_waiting_for_a_frame(trouble):
    """No new frame comes (frozen data, no workers): the pane is drawn, whole, on the Enter."""
    app = FrozenApp(trouble)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        v = app.views["edge-16"]
        ticks, generation = v.ticks, v.generation
        await pilot.press("enter")  # cpu 0, reserved: the CPU pane
        assert isinstance(app.screen, CpuScreen)
        await pilot.pause()
        txt = str(app.screen.query_one("#cpu-info").render())
        load = f"load now: {v.rates.util[0] * 100:.1f}%"  # the last report's, drawn without a new frame
        assert "CPU 0: reserved" in txt and "SMT siblings 0,8" in txt and load in txt, txt
        assert (v.ticks, v.generation) == (ticks, generation)  # drawn from the report it had


async def test_the_cursor_line_never_wraps_a_word_onto_a_line_of_its_own():
    """512 CPUs on a wall: the legend's cursor line is fitted to its column (`load` was wrapped alone)."""
    from frozen import frozen_node_async
    from nodes import trouble_512
    from pinscope.tui.widgets.coregrid import CoreGrid

    data = {"epyc-512": await frozen_node_async(trouble_512)}

    app = FrozenApp(data)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        app.screen.query_one(CoreGrid).cursor = 511
        await pilot.pause()
        legend = app.screen.query_one("#legend-cursor")
        lines = str(legend.render()).split("\n")
        cursor = next(ln for ln in lines if ln.startswith("cpu511"))
        assert "load" in cursor and len(cursor) <= legend.content_region.width, lines


async def test_a_wall_grows_the_grid_big_cells_numa_nodes_side_by_side():
    """320x90, 96 CPUs: big cells (id, glyph, pod tag, a load bar), the two NUMA nodes side by side,
    taller rows, the grid over a good part of the screen; the findings and pods under it. 80x24: not."""
    from frozen import frozen_node_async
    from nodes import trouble_96
    from pinscope.tui.widgets.coregrid import CoreGrid, bar

    data = {"trade-96": await frozen_node_async(trouble_96)}
    assert (bar(None, 5), bar(0.0, 5), bar(1.0, 5), bar(0.5, 5)) == ("     ", "     ", "█████", "██▌  ")

    app = FrozenApp(data)
    async with app.run_test(size=(320, 90)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        assert g.density == "wall"
        titles = [r for r in g.rows if r.kind == "titles"]
        assert len(titles) == 1 and [t for _, t in titles[0].labels] == [
            "Socket 0  NUMA 0  cpus 0-23,48-71  (24 cores)", "Socket 1  NUMA 1  cpus 24-47,72-95  (24 cores)"]
        util = app.views["trade-96"].rates.util
        busy = max((1, 2, 49, 50), key=lambda c: util.get(c, 0.0))  # md-feed-0's CPUs: where its threads ran
        ry, _ = g.pos[busy]
        assert f"{busy:>3} # A ███████████" in g._paint(ry, 320).text  # its tag, a long bar
        assert g.rows[ry + 1].kind == "note"  # taller rows: a blank line between
        assert len(g.rows) >= 25  # the grid grows into the screen (12 lines of cores, each with a blank)
        assert g.region.height == len(g.rows) and app.screen.query_one("#findings").region.y >= g.region.bottom
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert g.density != "wall"


def test_the_fleet_puts_the_largest_trouble_first():
    """Two nodes with criticals: the one with more of them comes first, whatever their names."""
    from dataclasses import replace

    from frozen import frozen_node
    from nodes import trouble_16
    from pinscope.tui.state import NodeView
    from pinscope.tui.widgets.fleetmap import order_key

    rep = frozen_node(trouble_16)
    crit = next(f for f in rep.findings if f.severity == "critical")
    one, two = NodeView("a-one"), NodeView("b-two")
    one.apply(rep)
    two.apply(replace(rep, findings=(*rep.findings, replace(crit, message="another"))))
    assert sorted([one, two], key=order_key) == [two, one]


async def test_a_wall_shows_the_fleet_side_by_side_largest_trouble_first():
    """Three nodes at 320x60: the mini-maps in columns (as many as fit), read left to right from the
    largest trouble; Enter on the cursor's map opens that node; at 120 columns, one column."""
    from frozen import frozen_node_async
    from nodes import trouble_16, trouble_96, trouble_512
    from pinscope.tui.widgets.fleetmap import FleetMap

    data = {"edge-16": await frozen_node_async(trouble_16), "trade-96": await frozen_node_async(trouble_96),
            "epyc-512": await frozen_node_async(trouble_512)}

    app = FrozenApp(data)
    async with app.run_test(size=(320, 60)) as pilot:
        await pilot.pause()
        fm = app.screen.query_one(FleetMap)
        # the overview re-sorts on its timer (every 0.5 s), not per report: a loaded CI run read it before
        # the refresh that followed the last report (0.5 s was a wall-clock bet). Until every node is in
        for _ in range(100):
            await pilot.pause(0.1)
            if all(v.snap is not None for v in fm.views) and not app._fleet_dirty:
                break
        assert fm.cols == 2
        first = fm.render_line(0).text
        # the 512-CPU node first: three criticals (its drifted engine's cpuset, and that engine's two tasks
        # busy on shard-31's exclusive CPUs, tests/nodes.py trouble_512), then the two nodes of one critical
        # and warnings (by name)
        assert [v.target for v in fm.views] == ["epyc-512", "edge-16", "trade-96"]
        assert first.index("epyc-512") < first.index("edge-16") and "✖3" in first and "✖1" in first
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.screen.target == "edge-16"
        await pilot.press("escape")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert app.screen.query_one(FleetMap).cols == 1
