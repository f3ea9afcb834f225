"""One name for a node in every frontend (issue 34 item 11): `pinscope exporter --root TREE local` labelled
the node `node="local"` (it looked for TREE/etc/hostname) while `snapshot --json` of the same tree named
it by the hostname the node reports. exporter, `snapshot --json`, `check` and the TUI's status line now
take the name from one function (collectors/naming.py node_name): the name the user gave, else the
hostname the node reported, else how it is reached (`local`). Each is run for real on the same tree: the
CLI as a process, the exporter over HTTP, the TUI with Pilot.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import time

import pytest

from pinscope.collectors.naming import node_name
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import run_cli
from promserver import Exporter

SPEC = NodeSpec(hostname="worker-7", sockets=1, cores=4, threads=2, reserved="0,4",
                pods=[PodSpec("feed-0", "trading", containers=[CtrSpec("feed", cpus="2-3")])])


def test_the_one_rule():
    assert node_name("inv-a", "worker-7", "ops@10.0.0.5") == "inv-a"  # given: inventory, --node-name, --kube
    assert node_name(None, "worker-7", "local") == "worker-7"  # else what the node reports
    assert node_name(None, " worker-7\n", "local") == "worker-7"
    assert node_name(None, "", "local") == "local" and node_name("", None, "local") == "local"  # else the reach


def _tree(tmp_path, hostname: str | None):
    sim = SimNode(SPEC, tmp_path / "n").write()
    # the tree's /etc/hostname, which the exporter used to name it by, says something else, and is a FIFO
    # (opening it would wait for a writer): nobody reads it now
    (sim.root / "etc").mkdir()
    os.mkfifo(sim.root / "etc/hostname")
    f = sim.root / "proc/sys/kernel/hostname"
    if hostname is None:
        f.unlink()
    else:
        f.write_text(hostname + "\n" if hostname else "")
    return sim.root


def _exporter_label(root) -> str:
    with Exporter("--interval", "0.5", "--root", str(root), "local") as exp:
        end = time.monotonic() + 60
        text = ""
        while time.monotonic() < end:
            text = exp.metrics()
            if re.search(r'pinscope_read_success\{node="[^"]*"\} 1\.0', text):
                break
            time.sleep(0.2)
        labels = set(re.findall(r'^pinscope_\w+\{node="([^"]*)"', text, re.M))
    assert len(labels) == 1, labels  # one node, one name: no series left under a name it had before
    return labels.pop()


async def _tui_status(root) -> str:
    from pinscope.collectors.collect import Options
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.tui.app import PinscopeApp
    from textual.widgets import Static

    app = PinscopeApp([NodeTarget("local", options=Options(root=str(root)))], interval=0.2)
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(600):
            if app.views["local"].snap is not None:
                break
            await asyncio.sleep(0.05)
        await pilot.pause()
        await pilot.pause()
        return str(app.screen.query_one("#status", Static).render())



@pytest.mark.parametrize("hostname, want", [("worker-7", "worker-7"), ("", "local"), (None, "local")],
                         ids=["reported", "empty", "absent"])
async def test_exporter_snapshot_check_and_the_tui_name_a_root_tree_alike(tmp_path, hostname, want):
    root = _tree(tmp_path, hostname)
    r = run_cli("snapshot", "--json", "--root", str(root), "local")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["node"] == want
    r = run_cli("check", "--root", str(root), "local")
    assert r.returncode in (0, 1), r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(ln.startswith(f"{want}: ") for ln in lines if ln and not ln.startswith(" ")), r.stdout
    assert _exporter_label(root) == want
    assert (await _tui_status(root)).split()[0] == want


async def test_a_node_unreadable_at_first_takes_its_own_name_when_read_and_leaves_nothing_under_local(tmp_path):
    """The exporter's loop for `local --root TREE` with the tree not there yet: read_success 0 under the
    reach (`local`, nothing else knows a name); once the tree is there, its series are the node's own name
    and nothing stays under `local`."""
    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.exporter.metrics import LatestReports
    from pinscope.collectors.exporter.serve import node_loop

    root = tmp_path / "n"
    store = LatestReports()

    stop = asyncio.Event()
    col = NodeCollector("local", Options(root=str(root)))
    task = asyncio.create_task(node_loop(col, None, 0.05, store, stop, 5.0))
    try:
        for _ in range(400):
            await asyncio.sleep(0.025)
            if store.get("local") is not None:
                break
        first = store.get("local")
        assert first is not None and not first.success
        SimNode(SPEC, root).write()
        for _ in range(1200):
            await asyncio.sleep(0.025)
            st = store.get("worker-7")
            if st is not None and st.success:
                break
        assert store.get("worker-7") is not None and store.get("worker-7").success
        assert store.get("local") is None
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)



def test_a_name_another_target_has_is_not_taken(capsys):
    from pinscope.collectors.exporter.metrics import LatestReports
    from pinscope.collectors.exporter.serve import _own_name

    taken = {"ops@10.0.0.5", "worker-7"}
    assert _own_name("ops@10.0.0.5", "worker-7", LatestReports(), taken) == "ops@10.0.0.5"
    assert "reports the name 'worker-7', which another target has" in capsys.readouterr().err
    assert _own_name("ops@10.0.0.6", "worker-8", LatestReports(), taken) == "worker-8"
    assert taken == {"ops@10.0.0.5", "worker-7", "worker-8"}
