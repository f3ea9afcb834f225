"""Snapshot tests (pytest-textual-snapshot): each screen at 80x24 and 200x60, frozen data.

Frozen: fixture trees read through the real probe, two samples of a seeded simulation one node-second
apart (the node's uptime is the clock), no live workers. Update with: pytest -n 0 --snapshot-update
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tui"))

from frozen import FrozenApp, frozen_node, frozen_samples
from nodes import dual_socket_intel, epyc_512

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
