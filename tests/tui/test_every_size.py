"""Issue 24: every screen a war room has. Values read as words in the panes; pod tags in CPU order and
stable while a pod lives; the node screen keeps the node, its state, the critical and warning counts and
the worst finding on screen at every size (the grid next, the rest as room allows, what is folded said).
Real Textual (App.run_test) over frozen data: simulated nodes read through the real probe."""
import asyncio

import pytest

from collectors.kube import ApiContainer, ApiPod
from frozen import FrozenApp, frozen_samples
from nodes import dual_socket_intel
from tui.human import amounts, settings, yes_no
from tui.screens.container import ContainerScreen
from tui.screens.cpu import CpuScreen
from tui.screens.nodeinfo import NodeInfoScreen


@pytest.fixture(scope="module")
def xeon(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


def run(coro):
    return asyncio.run(coro)


def test_words_not_python_values():
    assert settings({"full-pcpus-only": "true"}) == "full-pcpus-only=true"
    assert amounts({"cpu": "500m", "memory": "1Gi"}) == "cpu 500m, memory 1Gi"
    assert (yes_no(True), yes_no(False), yes_no(None)) == ("yes", "no", "unknown")
    assert settings({}) == amounts(None) == "-"


def test_panes_print_values_as_a_person_reads_them(xeon):
    async def go():
        app = FrozenApp(xeon)
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.pause()
            await pilot.press("n")
            assert isinstance(app.screen, NodeInfoScreen)
            txt = str(app.screen.query_one("#node-info").render())
            assert "full-pcpus-only=true" in txt and "cpu 500m, memory 1Gi" in txt, txt
            assert "{" not in txt and "'" not in txt, txt  # (memoryManagerPolicy "None" is kubelet's word)
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
    run(go())


def test_pod_tags_follow_the_first_cpu_and_stay_while_the_pod_lives():
    """512 CPUs, 70 pods listed by the node in uid order: the tags run with the CPUs (shard-00 on CPUs
    8-11 is A, shard-24 the 25th is AA), and a pod keeps its tag when others come and go."""
    from dataclasses import replace

    from frozen import frozen_node
    from nodes import epyc_512
    from tui.state import NodeView, pod_tag

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
