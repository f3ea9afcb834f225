"""The core grid's presenter (tui/presenter.py, issue 35): a NodeView in, what each CPU shows out (role, shade
share, pod tag, mark), the NUMA headers' devices and the note before a first frame. Pure functions, tested
without Pilot on frozen nodes read through the real probe; what is expected is read from the node's spec."""
from __future__ import annotations

import json

import pytest

from device_samples import GPU_FAR, GPU_NEAR, gpu_node_spec
from frozen import frozen_node, frozen_samples
from nodes import dual_socket_intel, trouble_16
from pinscope.collectors.parse.kubelet import fnv1a32
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from pinscope.tui.presenter import (EMPTY, NOISE_FULL, UNASSIGNED, CpuState, merge, numa_devices, present, shares,
                                    waiting_note)
from pinscope.tui.state import NodeView


def view_of(report, target: str = "n") -> NodeView:
    v = NodeView(target)
    v.apply(report)
    return v


@pytest.fixture(scope="module")
def xeon() -> NodeView:
    """48 CPUs: reserved 0,24; md-feed-0 pinned to 1-2,25-26, matcher-7d9f's engine to 13-14,37-38."""
    return view_of(frozen_node(dual_socket_intel))


def pod_uid(view: NodeView, name: str) -> str:
    return next(p.uid for p in view.snap.pods if p.name == name)


def test_roles_shares_and_tags_of_a_pinned_node(xeon):
    g = present(xeon)
    assert not g.stale and g.devices == {}
    assert {c for c, s in g.cpus.items() if s.role == "reserved"} == {0, 24}
    feed, engine = {1, 2, 25, 26}, {13, 14, 37, 38}
    assert {c for c, s in g.cpus.items() if s.role == "exclusive"} == feed | engine
    assert {c for c, s in g.cpus.items() if s.role == "shared"} == set(range(48)) - feed - engine - {0, 24}
    # tags run with the grid: A on the lowest pinned CPU's pod
    assert xeon.tags[pod_uid(xeon, "md-feed-0")] == "A" and xeon.tags[pod_uid(xeon, "matcher-7d9f")] == "B"
    assert {c: g.cpus[c].tag for c in feed | engine} == {**{c: "A" for c in feed}, **{c: "B" for c in engine}}
    assert all(g.cpus[c].tag is None for c in (0, 3, 24, 47))  # no pod owns a reserved or shared CPU
    assert all(g.cpus[c].share == xeon.rates.util.get(c) for c in range(48))
    assert g.cpus[1].share is not None and g.cpus[1].share > 0.5  # the feed is busy (busy=0.9)


def test_the_noise_shade_is_full_at_noise_full(xeon):
    noise = xeon.rates.noise
    got = shares(xeon, "noise")
    assert set(got) == set(noise) and all(0.0 <= s <= 1.0 for s in got.values())
    for c, n in noise.items():
        assert got[c] == pytest.approx(1.0 if n.total >= NOISE_FULL else n.total / NOISE_FULL)
    assert {c: s.share for c, s in present(xeon, "noise").cpus.items()} == {c: got.get(c) for c in range(48)}


def test_a_findings_cpus_carry_its_mark():
    v = view_of(frozen_node(trouble_16))
    g = present(v)
    named = {c: sev for c, sev in v.cpu_findings().items() if sev in ("critical", "warning")}
    assert named, "the node in trouble has CPUs a finding names"
    assert {c: s.mark for c, s in g.cpus.items() if s.mark in ("critical", "warning")} == named
    # matcher-7d9f's kernel cpuset drifted from kubelet's 3,11 onto 4,12 too: a critical there; risk-calc holds 5,
    # its sibling 13 is shared: a warning on both; an info (SYSTEM_NOT_CONFINED) marks nothing
    assert (g.cpus[4].mark, g.cpus[12].mark, g.cpus[5].mark, g.cpus[13].mark) == ("critical",) * 2 + ("warning",) * 2
    assert g.cpus[1].mark is None and g.cpus[3].mark is None


def test_a_pinned_cpu_not_latency_ready_is_marked_and_a_finding_wins(tmp_path):
    """Reserved 0-1, rt/engine pinned to 2-5, the powersave governor on every CPU (2-5 not latency-ready),
    logrotate last run on CPU 3 (INTRUDER_TASK, critical): "notready" on 2, 4, 5; the critical on 3."""
    files = {}
    for c in range(8):
        d = f"/sys/devices/system/cpu/cpu{c}/cpufreq"
        files |= {f"{d}/scaling_driver": "intel_pstate\n", f"{d}/scaling_governor": "powersave\n",
                  f"{d}/scaling_min_freq": "800000\n", f"{d}/scaling_max_freq": "3500000\n",
                  f"{d}/cpuinfo_min_freq": "800000\n", f"{d}/cpuinfo_max_freq": "3500000\n"}
    spec = NodeSpec(hostname="rt-node", sockets=1, cores=4, threads=2, numbering="amd", cgroup=2, driver="systemd",
                    policy="static", reserved="0-1", other_tasks=[("logrotate", 3, False)], extra_files=files,
                    pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="2-5")])])
    g = present(view_of(frozen_samples(spec, tmp_path)))
    assert {c: s.mark for c, s in g.cpus.items()} == {0: None, 1: None, 2: "notready", 3: "critical",
                                                      4: "notready", 5: "notready", 6: None, 7: None}


def test_cpus_a_pod_holds_as_a_whole_carry_its_tag_in_lower_case(tmp_path):
    rt, whole = "11111111-2222-3333-4444-555555555555", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
    data = json.dumps({"policyName": "static", "defaultCpuSet": "0,3-4,7", "entries": {rt: {"app": "1,5"}},
                       "podEntries": {whole: {"cpuSet": "2,6"}}})
    state = json.dumps({"policyName": "static", "defaultCpuSet": "0,3-4,7", "checksum": 0, "data": data,
                        "dataChecksum": fnv1a32("(string)" + data)})
    spec = NodeSpec(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", init_affinity="0,4", state_text=state,
                    pods=[PodSpec("rt", "prod", uid=rt, containers=[CtrSpec("app", cpus="1,5")]),
                          PodSpec("whole", "prod", uid=whole, containers=[CtrSpec("worker", effective="2,6")])])
    v = view_of(frozen_samples(spec, tmp_path))
    g = present(v)
    assert v.tags == {rt: "A", whole: "B"}
    assert {c: g.cpus[c].tag for c in (1, 5, 2, 6)} == {1: "A", 5: "A", 2: "b", 6: "b"}


def test_the_numa_headers_name_each_device_and_the_pod_holding_it(tmp_path):
    v = view_of(frozen_samples(gpu_node_spec(), tmp_path))
    far = v.tags[next(u for u in v.tags if u.startswith("11111111"))]
    near = v.tags[next(u for u in v.tags if u.startswith("66666666"))]
    fwd = v.tags[next(u for u in v.tags if u.startswith("bbbbbbbb"))]
    devices = numa_devices(v)
    assert present(v).devices == devices
    assert set(devices) == {0, 1}
    assert f"gpu {GPU_NEAR[:15]}\u2026\u2192{near}" in devices[0] and devices[0].startswith("  devices: ")
    assert f"gpu {GPU_FAR[:15]}\u2026\u2192{far}" in devices[1]  # the far GPU: on its own node, not its pod's
    assert f"intel_sriov_netdevice 0000:af:02.1\u2192{fwd}" in devices[1]
    assert "0000:3b:0a.2" not in "".join(devices.values())  # the platform cannot place it: on no header


def test_a_core_cell_shows_its_most_telling_cpu():
    cpus = {0: CpuState("shared", 0.2, None, None), 8: CpuState("exclusive", 0.1, "A", "notready"),
            1: CpuState("reserved", None, None, "warning"), 9: CpuState("shared", 0.9, None, "critical")}
    assert merge((0, 8), cpus) == CpuState("exclusive", 0.2, "A", "notready")
    assert merge((1, 9), cpus) == CpuState("reserved", 0.9, None, "critical")
    assert merge((9, 8), cpus) == CpuState("exclusive", 0.9, "A", "critical")  # the first member a pod owns
    assert merge((0,), cpus) is cpus[0]
    assert merge((5,), cpus) == UNASSIGNED == CpuState("unassigned", None, None, None)  # no role names it
    assert merge((5, 6), cpus) == UNASSIGNED


def test_before_the_first_frame_a_note_and_nothing_else():
    v = NodeView("edge-1")
    assert present(v) is EMPTY and present(None) is EMPTY
    assert waiting_note(v) == "waiting for the first frame from edge-1 ..."
    assert waiting_note(None) == "waiting for the first frame from the node ..."
    v.set_state("connecting", "debug pod Pending (4 s)")
    assert waiting_note(v) == "edge-1: debug pod Pending (4 s)"
    v.set_state("down", "Connection refused")
    assert waiting_note(v) == "edge-1: Connection refused"
    hostile = NodeView("evil\x1b[2Jnode")  # a name from an inventory: never a raw escape on the terminal
    assert "\x1b" not in waiting_note(hostile) and "evil" in waiting_note(hostile)


def test_a_node_that_stopped_answering_is_stale_and_keeps_its_last_frame(xeon):
    v = view_of(xeon.report, "xeon-2s")
    assert not present(v).stale
    assert v.check_stale(1.0, now=v.last_update + 10)
    g = present(v)
    assert g.stale and g.cpus == present(xeon).cpus


def test_a_views_data_key_changes_with_its_data_and_is_never_another_views(xeon):
    """What the grid keys its caches by. An id() is reused once a view is gone; a serial is not."""
    v = view_of(xeon.report)
    k = v.data_key
    v.set_state("stale", None)
    assert v.data_key != k and v.data_key[0] == k[0]
    keys = set()
    for _ in range(50):
        w = NodeView("n", generation=v.generation)
        keys.add(w.data_key)
        del w
    assert len(keys) == 50 and k not in keys
