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
