"""Snapshot tests (pytest-textual-snapshot): each screen at 80x24 and 200x60, frozen data; the node screen
of a node in trouble at every size a war room has (issue 24), its text checked as well as its picture.

Frozen: fixture trees read through the real probe, two samples of a seeded simulation one node-second
apart (the node's uptime is the clock), no live workers. Update with: pytest -n 0 --snapshot-update
"""
import asyncio
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tui"))

from frozen import FrozenApp, frozen_node, frozen_samples, screen_lines
from nodes import dual_socket_intel, epyc_512, trouble_16, trouble_96, trouble_512

SCREENS = {
    "main": [],
    "findings": ["f"],
    "cpu": ["enter"],
    "container": ["right", "right", "enter"],
    "node": ["n"],
    "help": ["question_mark"],
}


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_screen(snap_compare, frozen, screen, size):
    assert snap_compare(FrozenApp(frozen), press=["_", *SCREENS[screen], "_"], terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_512_cpus(snap_compare, size):
    """2 x 128-core EPYC: L3 tiles (16 per NUMA node), 70 pods, two-letter tags shown whole."""
    assert snap_compare(FrozenApp({"epyc-512": frozen_node(epyc_512)}), press=["_", "_"], terminal_size=size)


def test_512_cpus_monochrome(snap_compare, monkeypatch):
    """NO_COLOR: the pods are told apart by their whole tags alone."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = FrozenApp({"epyc-512": frozen_node(epyc_512)})
    assert app.no_color
    assert snap_compare(app, press=["_", "_"], terminal_size=(80, 24))


class FrozenReplay(FrozenApp):
    """The node screen as a replay shows it (the real ReplayApp is driven in tests/warroom/test_record.py)."""

    replay_status = "replay 2026-03-01 03:12:05  [65s of 600s]  ×1  PAUSED"


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_replay_header(snap_compare, frozen, size):
    assert snap_compare(FrozenReplay(frozen), press=["_", "_"], terminal_size=size)


TROUBLE = {"16": trouble_16, "96": trouble_96, "512": trouble_512}
SIZES = [(80, 24), (120, 40), (200, 50), (320, 90)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("cpus", sorted(TROUBLE, key=int))
def test_node_in_trouble_at_every_size(snap_compare, cpus, size):
    """A 16-, 96- or 512-CPU node with a critical finding (a drifted cpuset), from a laptop's 80x24 to a
    wall: the first line names the node, its state and its critical and warning counts; the second, the
    worst finding; the findings pane shows it too, and the grid is there."""
    shape = TROUBLE[cpus]
    name = shape().hostname
    data = {name: frozen_node(shape)}

    async def text() -> list[str]:
        app = FrozenApp(data)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.pause()
            return screen_lines(app)

    lines = asyncio.run(text())
    assert name in lines[0] and "live" in lines[0] and re.search(r"✖1\s*▲\d", lines[0]), lines[0]
    assert lines[1].startswith("✖ STATE_CGROUP_DRIFT") and "kernel runs it" in lines[1], lines[1]
    assert any("STATE_CGROUP_DRIFT" in ln for ln in lines[2:]), "\n".join(lines)  # the findings pane
    assert any("Socket 0" in ln for ln in lines[2:4]), "\n".join(lines)  # the grid right under them
    assert snap_compare(FrozenApp(data), press=["_", "_"], terminal_size=size)
