"""The command line says of the demo what the TUI says (issue 36, the user trial): each demo node's kubelet
answers PodResources from the simulation (collectors/sim/transport.py, DemoCluster.targets(), the TUI's own
path), so `fit demo` has the live view asked, and `check demo --samples 2` meets the planted disagreement on
trade-xeon-96 (KUBELET_MEMORY) held two rounds. Before, the CLI read the demo's trees as plain --root
targets and said "kubelet.sock: no such socket"."""

from __future__ import annotations

import contextlib
import io
import json

from pinscope.cli import main
from pinscope.collectors.sim.demo import KUBELET_MEMORY


def _run(argv) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue()


def test_fit_demo_asks_the_demo_kubelet():
    rc, out = _run(["fit", "demo", "--cpus", "2", "--json"])
    assert rc in (0, 1)
    objs = {o["node"]: o for o in json.loads(out)}
    assert "trade-xeon-96" in objs
    for name, o in objs.items():
        live = o["live"]
        assert live["asked"] is True, (name, live)
        assert "no such socket" not in json.dumps(live), name
    # the planted fault is there after one round, not yet held
    (d,) = [d for d in objs["trade-xeon-96"]["live"]["disagreements"] if d["pod"] == "risk-calc-2"]
    assert not d["held"] and d["podresources"] == KUBELET_MEMORY["trade-xeon-96"][("risk-calc-2", "risk")]


def test_fit_demo_text_says_the_live_view():
    _, out = _run(["fit", "demo", "--cpus", "2"])
    assert "no such socket" not in out and "not asked" not in out
    assert ("risk-calc-2/risk cpus: kubelet's in-memory state differs from its checkpoint and the kernel (seen once): "
            in out)
    # the demo's planted drift (the kernel wider than kubelet's in-memory state and checkpoint, which agree) is the
    # kernel's difference, STATE_CGROUP_DRIFT's: never worded as kubelet's in-memory state disagreeing
    assert "fix-gw cpus: the kernel differs from kubelet's in-memory state and checkpoint (seen once): " in out
    assert "kubelet's in-memory state disagrees" not in out


def test_check_demo_two_rounds_finds_the_planted_disagreement():
    rc, out = _run(["check", "demo", "--samples", "2", "--interval", "0.2", "--json"])
    assert rc in (0, 1, 2, 4)
    objs = {o["node"]: o for o in json.loads(out)}
    found = [f for f in objs["trade-xeon-96"]["findings"] if f["code"] == "PODRESOURCES_DISAGREES"]
    assert [f["pod"] for f in found] == ["risk-calc-2"]
    # planted on one node only: the others' kubelets agree
    assert not [n for n, o in objs.items() if n != "trade-xeon-96"
                and any(f["code"] == "PODRESOURCES_DISAGREES" for f in o["findings"])]


def test_snapshot_demo_json_has_the_live_view():
    _, out = _run(["snapshot", "demo", "--json"])
    for o in json.loads(out):
        assert "no such socket" not in json.dumps(o.get("podresources")), o["node"]
        assert o["podresources"]["asked"] is True, o["node"]
