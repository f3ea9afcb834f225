"""Snapshot tests (pytest-textual-snapshot): each screen at 80x24 and 200x60, frozen data.

Frozen: fixture trees read through the real probe, two samples of a seeded simulation one node-second
apart (the node's uptime is the clock), no live workers. Update with: pytest --snapshot-update
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tui"))

from frozen import FrozenApp, frozen_samples  # noqa: E402
from nodes import dual_socket_intel  # noqa: E402

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
