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


def _with_checkpoint(snap, held_numa, *, running=True, checksum_ok=True):
    """The snapshot with a device checkpoint: example.com/gpu g0,g1 registered, g0 held by one of its pods (one
    the node shows running, or one it does not)."""
    import dataclasses

    from pinscope.collectors.model import DeviceAllocation, DeviceCheckpoint

    pod = next(p.uid for p in snap.pods if p.cgroup_path is not None) if running else "gone-pod-uid"
    cp = DeviceCheckpoint((DeviceAllocation(pod, "c", "example.com/gpu", "g0", held_numa),),
                          (("example.com/gpu", ("g0", "g1")),), 1, checksum_ok)
    return dataclasses.replace(snap, device_state=cp)


@pytest.mark.parametrize("held_numa", [0, -1])
def test_checkpoint_alone_shows_kubelets_refusal_of_too_many_devices(static_snap, held_numa):
    """The user trial: PodResources not reached, 2 GPUs asked, the checkpoint shows 1 registered free: kubelet's
    device manager refuses (Requested: 2, Available: 1), said in its words (exit 1), the NUMA nodes unknown. Under
    the node's single-numa-node policy devices with a NUMA node are refused by the topology manager first."""
    snap = _with_checkpoint(static_snap, held_numa)
    ans = predict(snap, 2, devices={"example.com/gpu": 2}, live=None, count=False)
    assert ans.error is not None and ans.cpus is None
    if held_numa >= 0 and snap.kubelet.topology_manager_policy in ("restricted", "single-numa-node"):
        assert ans.error["kind"] == "TopologyAffinityError"
    else:
        assert ans.error == {"kind": "UnexpectedAdmissionError", "message": "Allocate failed due to requested number of "
                             "devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"}
    assert "checkpoint alone" in ans.devices["note"] and ans.devices["request"] == {"example.com/gpu": 2}
    assert any(u.startswith("the devices' NUMA nodes") for u in ans.unknown)
    if held_numa < 0 and snap.kubelet.topology_manager_policy == "single-numa-node":
        assert any("TopologyAffinityError" in u for u in ans.unknown), ans.unknown


@pytest.mark.parametrize("ask, kw", [(1, {}), (2, {"running": False}), (2, {"checksum_ok": False})])
def test_checkpoint_without_positive_evidence_stays_unknown(static_snap, ask, kw):
    """Enough registered free (1 of 1 asked) is no evidence of admission; a device held by a pod the node does not
    show running may be freed by kubelet first; a checkpoint of a wrong checksum says nothing: unknown, as before."""
    snap = _with_checkpoint(static_snap, 0, **kw)
    plain = predict(snap, 2, count=False)
    ans = predict(snap, 2, devices={"example.com/gpu": ask}, live=None, count=False)
    assert (ans.cpus, ans.error) == (plain.cpus, plain.error)
    assert ans.devices["per_resource"] == {} and "NUMA nodes are unknown" in ans.devices["note"]


def test_policy_none_still_refuses_too_many_devices(static_snap):
    """cpuManagerPolicy none: no CPUs are placed, yet kubelet's device manager refuses 2 GPUs where 1 is free: from
    the checkpoint alone, or from kubelet's PodResources view; 1 asked is no refusal (it was "fits", exit 0, for all)."""
    import dataclasses

    snap = _with_checkpoint(static_snap, -1)
    snap = dataclasses.replace(snap, kubelet=dataclasses.replace(snap.kubelet, cpu_manager_policy="none",
                                                                 topology_manager_policy="none"))
    words = {"kind": "UnexpectedAdmissionError", "message": "Allocate failed due to requested number of devices "
             "unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"}
    ans = predict(snap, 2, devices={"example.com/gpu": 2}, live=None, count=False)
    assert ans.error == words and ans.cpus is None and "checkpoint alone" in ans.devices["note"]
    held = LivePod("ns", "p", (LiveContainer("c", frozenset(), (Device("example.com/gpu", ("g0",), (0,)),)),))
    live = _live(Device("example.com/gpu", ("g0", "g1"), (0,)), pods=[held])
    assert predict(snap, 2, devices={"example.com/gpu": 2}, live=live, count=False).error == words
    for one in (predict(snap, 2, devices={"example.com/gpu": 1}, live=None, count=False),
                predict(snap, 2, devices={"example.com/gpu": 1}, live=live, count=False)):
        assert one.error is None and "shared pool" in one.note


@pytest.mark.parametrize("tm", ["restricted", "single-numa-node", "best-effort"])
def test_policy_none_refuses_devices_no_numa_node_holds_under_an_aligning_topology_manager(static_snap, tm):
    """cpuManagerPolicy none, GPUs g0, g1 on NUMA 0 (g0 held) and g2 on NUMA 1, 2 asked: enough are free, but only
    across two nodes, where the narrowest would be one: the device manager's one hint is unpreferred, and kubelet's
    topology manager (a provider's hints still merged with none from the CPU manager) refuses under restricted and
    single-numa-node (TopologyAffinityError); best-effort admits. It was "fits" for all three."""
    import dataclasses

    snap = dataclasses.replace(static_snap, kubelet=dataclasses.replace(
        static_snap.kubelet, cpu_manager_policy="none", topology_manager_policy=tm))
    held = LivePod("ns", "p", (LiveContainer("c", frozenset(), (Device("example.com/gpu", ("g0",), (0,)),)),))
    live = _live(Device("example.com/gpu", ("g0", "g1"), (0,)), Device("example.com/gpu", ("g2",), (1,)), pods=[held])
    ans = predict(snap, 2, devices={"example.com/gpu": 2}, live=live, count=False)
    if tm == "best-effort":
        assert ans.error is None and "shared pool" in ans.note, ans.as_json()
    else:
        assert ans.error == {"kind": "TopologyAffinityError", "message": "Resources cannot be allocated with Topology "
                             "locality"}, ans.as_json()


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


@pytest.mark.parametrize("argv, flag", [(["--memory", "1Gi", "--memory", "2Gi"], "--memory"),
                                        (["--memory=1Gi", "--memory=1Gi"], "--memory"),
                                        (["--memory", "4Gi", "--hugepages-2Mi", "2Mi", "--hugepages-2Mi", "4Mi"], "--hugepages-2Mi"),
                                        (["--memory", "4Gi", "--hugepages-1Gi", "1Gi", "--hugepages-1Gi=2Gi"], "--hugepages-1Gi")])
def test_repeated_memory_is_refused_exit_2_as_device_is(argv, flag):
    """The user trial: `--memory` twice silently took the last one while a repeated `--device` is refused: one
    line, exit 2, the same words."""
    rc, out, err = _run(["fit", "demo", "--cpus", "1", *argv])
    assert (rc, out) == (2, "") and len(err.strip().splitlines()) == 1, err
    assert err.strip() == f"pinscope fit: {flag}: given twice (a container has one limit per resource)", err


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


def test_the_demo_shows_a_placement():
    """The user trial: the demo held every GPU, so no placement line was ever seen; infer-epyc-64 has one free GPU on
    NUMA 0 (registered in its device checkpoint, allocatable in kubelet's PodResources view): one is placed there."""
    rc, out, _err = _run(["fit", "demo", "--cpus", "2", "--device", "nvidia.com/gpu=1"])
    assert ("  nvidia.com/gpu=1: kubelet's device manager would take them from NUMA node 0 "
            "(1 of GPU-7a1e9c3d-2b4f-4c6a-8e0d-1f3a5b7c9d2e)") in out.splitlines(), out
    rc, out, _err = _run(["fit", "demo", "--cpus", "2", "--device", "nvidia.com/gpu=2", "--json"])
    epyc = next(o for o in json.loads(out) if o["node"] == "infer-epyc-64")
    assert epyc["error"]["message"].startswith("Allocate failed due to requested number of devices unavailable for "
                                               "nvidia.com/gpu. Requested: 2, Available: 1")
