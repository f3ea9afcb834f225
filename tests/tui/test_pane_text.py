"""The CPU and container panes' text, built by pure functions of a NodeView (issue 35: no Pilot, no app),
and the one filter both fleet screens share."""
from __future__ import annotations

import pytest

from frozen import frozen_node
from nodes import dual_socket_intel
from pinscope.collectors.text import CONTROL
from pinscope.tui.screens import container, cpu
from pinscope.tui.screens.filtering import FleetFilter, filter_note
from pinscope.tui.screens.fleet import FleetScreen
from pinscope.tui.screens.promfleet import PromFleetScreen
from pinscope.tui.state import NodeView


@pytest.fixture(scope="module")
def view() -> NodeView:
    v = NodeView("xeon-2s")
    v.apply(frozen_node(dual_socket_intel))
    return v


def test_the_cpu_pane_of_a_pinned_cpu(view):
    info = cpu.cpu_info(view, 1).plain
    assert info.startswith("CPU 1: exclusive\n")
    assert "owners (kubelet's cpu_manager_state):\n  trading/md-feed-0  container feed" in info
    assert "SMT siblings 1,25" in info and "load now: " in info
    load, noise, wait = cpu.cpu_history(view, 1)
    assert "now " in load and "max " in load
    tasks = cpu.task_rows(view, 1)
    assert tasks and all(row[4] == "trading/md-feed-0/feed" for row in tasks if row[2].startswith("feed"))
    waits = [0.0 if row[5] == "-" else float(row[5]) for row in tasks]
    assert waits == sorted(waits, reverse=True)  # the threads that waited most first
    assert [k for k, _, _ in cpu.softirq_rows(view, 1)][:2] == ["HI", "TIMER"]
    irqs = cpu.irq_rows(view, 1)
    assert irqs is None or all(len(r) == 4 for r in irqs)


def test_the_container_pane(view):
    snap = view.snap
    p = next(p for p in snap.pods if p.name == "matcher-7d9f")
    c = next(c for c in p.containers if c.name == "engine")
    info = container.container_info(view, p, c).plain
    assert info.startswith("trading/matcher-7d9f  container engine\n")
    assert "kubelet assignment: 13-14,37-38    kernel cpuset.cpus.effective: 13-14,37-38\n" in info
    assert "MISMATCH" not in info and "CFS quota" in info
    assert len(container.task_rows(view, c)) == len(c.tasks)
    files = container.files_text(c.cgroup, 200).plain
    assert f"{c.cgroup.path}/cpuset.cpus.effective\n    13-14,37-38\n" in files
    assert container.files_text(None, 80).plain.startswith("no cgroup: the container has exited")
    assert "ms/s" in container.runq_line(view, p, c) or "no samples yet" in container.runq_line(view, p, c)


def test_both_fleet_screens_filter_one_way_and_escape_what_was_typed():
    """The Prometheus fleet's status line showed the filter text as typed (only the other fleet escaped it)."""
    assert issubclass(FleetScreen, FleetFilter) and issubclass(PromFleetScreen, FleetFilter)
    for cls in (FleetScreen, PromFleetScreen):
        for name in ("on_input_changed", "on_input_submitted", "action_filter", "action_clear"):
            assert name not in cls.__dict__, (cls, name)  # one behaviour: FleetFilter's
    note = filter_note(" · ", "ab\x1b]0;pwned\x07\u202ecd", "1,234")
    assert not CONTROL.search(note) and note.startswith(" · filter ") and note.endswith(": 1,234 shown")
