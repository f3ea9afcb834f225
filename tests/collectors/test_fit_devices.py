"""`pinscope fit --device` and predict()'s devices on the demo's simulated nodes (read by the real collector):
devices placed from kubelet's PodResources view where it is there, said unknown where it is not (never guessed),
the device manager's hints moving the CPUs, its refusals in kubelet's words, and the command line's refusals.
The port itself is checked against kubelet's own device manager in test_fit_differential.py."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json

import pytest

from pinscope.cli import main
from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.fit.predict import predict
from pinscope.collectors.podresources import Device, LiveContainer, LivePod, LiveView
from pinscope.collectors.sim.demo import DemoCluster


@pytest.fixture(scope="module")
def static_snap():
    d = DemoCluster()
    try:
        for sim in d.sims:
            snap = asyncio.run(snapshot("local", Options(root=str(sim.root)), samples=1, interval=1.0, timeout=60)).snapshot
            if snap.kubelet.cpu_manager_policy == "static" and len(snap.topology.numa_nodes) >= 2:
                yield snap
                return
        pytest.fail("the demo has a static-policy node of two NUMA nodes or more")
    finally:
        d.close()


def _live(*devices: Device, pods=()) -> LiveView:
    return LiveView("/var/lib/kubelet/pod-resources/kubelet.sock", tuple(pods), frozenset(), tuple(devices))


def _numa_of(snap, cpus) -> set[int]:
    return {c.numa_node for c in snap.topology.cpus if c.id in set(cpus)}


def test_devices_on_one_numa_node_are_placed_there(static_snap):
    """GPUs free only on the last NUMA node: they come from there, and under the node's topology manager policy
    (restricted/single-numa-node/best-effort align; none does not) the answer names that node."""
    last = max(n.id for n in static_snap.topology.numa_nodes)
    live = _live(Device("example.com/gpu", ("g0", "g1"), (last,)))
    ans = predict(static_snap, 2, devices={"example.com/gpu": 1}, live=live, count=False)
    assert ans.error is None, ans.error
    got = ans.devices["per_resource"]["example.com/gpu"]
    assert got["numa_nodes"] == [last] and got["tiers"][0]["take"] == 1 and got["tiers"][0]["devices"] == ["g0", "g1"]
    if static_snap.kubelet.topology_manager_policy not in (None, "none"):
        assert _numa_of(static_snap, ans.cpus) == {last}, "the device hint moved the CPUs to the GPUs' node"
    assert any("GetPreferredAllocation" in a for a in ans.assumed)


def test_more_devices_than_free_is_kubelets_refusal(static_snap):
    held = LivePod("ns", "p", (LiveContainer("c", frozenset(), (Device("example.com/gpu", ("g0",), (0,)),)),))
    live = _live(Device("example.com/gpu", ("g0", "g1"), (0,)), pods=[held])
    ans = predict(static_snap, 1, devices={"example.com/gpu": 2}, live=live, count=False)
    assert ans.error is not None and ans.cpus is None
    if static_snap.kubelet.topology_manager_policy in ("restricted", "single-numa-node"):
        assert ans.error["kind"] == "TopologyAffinityError"
    else:
        assert ans.error == {"kind": "UnexpectedAdmissionError", "message": "Allocate failed due to requested number of "
                             "devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"}


def test_unreachable_podresources_is_said_not_guessed(static_snap):
    """Non-root (or no socket): the devices' NUMA nodes are unknown; the CPUs are those without devices."""
    plain = predict(static_snap, 2, count=False)
    for live in (None, LiveView("/var/lib/kubelet/pod-resources/kubelet.sock", error="permission denied (not root)")):
        ans = predict(static_snap, 2, devices={"example.com/gpu": 1}, live=live, count=False)
        assert ans.cpus == plain.cpus and ans.error == plain.error
        assert ans.devices["per_resource"] == {} and "unknown" in ans.devices["note"]
        assert any("NUMA nodes are unknown" in a for a in ans.assumed)


def test_unregistered_resource_says_only_that_it_is_ignored(static_snap):
    """The user trial: where no plugin registered the asked resource, the two "assumed: devices …" lines (unhealthy
    devices unseen, no GetPreferredAllocation) were printed beside "kubelet ignores it": only what applies is said."""
    from pinscope.cli.fit import render

    live = _live(Device("example.com/nic", ("n0",), (0,)))
    ans = predict(static_snap, 2, devices={"example.com/gpu": 1}, live=live, count=False)
    assert "ignores it" in ans.devices["per_resource"]["example.com/gpu"]["note"]
    text = render(ans, 2)
    assert "unhealthy" not in text and "GetPreferredAllocation" not in text and "counts CPUs" not in text, text
    both = predict(static_snap, 2, devices={"example.com/gpu": 1, "example.com/nic": 1}, live=live, count=False)
    assert any("GetPreferredAllocation" in a for a in both.assumed)  # one asked resource is a device: they apply


def test_device_without_topology_has_no_preference(static_snap):
    plain = predict(static_snap, 2, count=False)
    ans = predict(static_snap, 2, devices={"example.com/nic": 1}, live=_live(Device("example.com/nic", ("n0",), ())),
                  count=False)
    assert ans.cpus == plain.cpus
    assert ans.devices["per_resource"]["example.com/nic"]["numa_nodes"] is None


def _run(argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = int(e.code or 0)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("arg", ["gpu=1", "example.com/gpu=0", "example.com/gpu=1.5", "example.com/gpu", "example.com/gpu=٣"])
def test_bad_device_is_refused_exit_2(arg):
    rc, out, err = _run(["fit", "demo", "--cpus", "1", "--device", arg])
    assert rc == 2 and out == "" and "--device" in err and "Traceback" not in err


def test_repeated_device_is_refused_exit_2():
    rc, out, err = _run(["fit", "demo", "--cpus", "1", "--device", "a.io/x=1", "--device", "a.io/x=2"])
    assert rc == 2 and out == "" and "given twice" in err


def test_fit_json_has_devices_on_the_demo():
    """Every node answers `devices` for the asked resource: placed, ignored (no plugin has it), or why not."""
    rc, out, _err = _run(["fit", "demo", "--cpus", "2", "--device", "nvidia.com/gpu=1", "--json"])
    assert rc in (0, 1)
    for o in json.loads(out):
        assert o["devices"]["request"] == {"nvidia.com/gpu": 1}
        per = o["devices"]["per_resource"]
        assert per or o["devices"]["note"], o["node"]


def test_bad_device_is_quoted_once_with_controls_made_visible():
    """The user trial: `--device $'a\\e[31mred=1'` printed 'a\\\\x1b[31mred=1' (repr's escape, escaped again):
    the text typed is shown once, its control characters escaped as every text line escapes them, never raw."""
    rc, out, err = _run(["fit", "demo", "--cpus", "1", "--device", "a\x1b[31mred=1"])
    assert rc == 2 and out == "" and "\x1b" not in err
    assert "'a\\033[31mred=1' is not RESOURCE=COUNT" in err, err
    assert "\\\\" not in err, err
