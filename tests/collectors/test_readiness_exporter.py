"""Latency readiness in the metrics contract (issue 37, item b): per check every status (1 for the one it has),
the count per status, the pinned CPUs not ready. Nodes read through the real probe; values worked out by hand."""
from test_readiness_findings import cpufreq, node

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.exporter.metrics import node_samples
from pinscope.collectors.sim.node import NodeSpec, SimNode


def samples(root):
    import asyncio

    rep = asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=10)), 30))
    return node_samples("n1", rep)


def test_a_node_with_powersave_on_its_pinned_cpus(tmp_path):
    """8 CPUs, reserved 0-1, rt/engine pinned to 2-5, powersave everywhere, nothing else tuned (the sim writes
    no sysctl, workqueue or IRQ mask file): no isolated, nohz_full, rcu_nocbs, governor (4); ok housekeeping
    (nothing tickless), cfs_quota (cpu.max "max") (2); n/a irqbalance (not running), cstates (no cpuidle),
    numa_memory (no hugepages, no memory manager) (3); unknown irq_default, rt_throttling, timer_migration,
    workqueue, thp (not read), load_balance (no partition file) (6). Not ready: 2-5."""
    node(tmp_path, cpufreq(range(8), "powersave"))  # writes the tree under tmp_path/node
    s = samples(tmp_path / "node")
    got = {x.labels["status"]: x.value for x in s["pinscope_readiness_checks"]}
    assert got == {"ok": 2, "no": 4, "n/a": 3, "unknown": 6}
    per = {}
    for x in s["pinscope_readiness_check"]:
        assert set(x.labels) == {"node", "check", "status"} and x.value in (0, 1)
        if x.value:
            per[x.labels["check"]] = x.labels["status"]
    assert len(s["pinscope_readiness_check"]) == 15 * 4 and len(per) == 15
    assert (per["governor"], per["isolated"], per["housekeeping"], per["cstates"], per["thp"]) == (
        "no", "no", "ok", "n/a", "unknown")
    assert [(x.labels, x.value) for x in s["pinscope_readiness_not_ready_cpus"]] == [({"node": "n1"}, 4)]


def test_a_node_without_pinned_or_isolated_cpus_has_nothing_to_judge(tmp_path):
    """policy none, nothing isolated: every check n/a, no CPU not ready (never cry wolf in a series either)."""
    root = tmp_path / "plain"
    SimNode(NodeSpec(hostname="plain", cores=4, threads=2, policy="none"), root).write()
    s = samples(root)
    assert {x.labels["status"]: x.value for x in s["pinscope_readiness_checks"]} == {
        "ok": 0, "no": 0, "n/a": 15, "unknown": 0}
    assert s["pinscope_readiness_not_ready_cpus"][0].value == 0
