"""Boundaries and arithmetic that a fixture one second apart, or an empty pool, cannot pin down.

Each test here fails on a specific plausible mutation (issue 13): a starved-pool threshold off by one,
a rate not divided by the interval, an owned CPU that is also reserved treated as reserved.
"""
import dataclasses

import pytest

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.findings import evaluate
from pinscope.collectors.rates import compute
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from pinscope.collectors.transport.local import LocalTransport
from helpers import read_sim


def spec(**kw) -> NodeSpec:
    """1 socket, 4 cores x 2 threads (siblings N, N+4), static, reserved 0,4."""
    d = dict(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=2, driver="systemd",
             pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5")])])
    d.update(kw)
    return NodeSpec(**d)


@pytest.mark.parametrize("pinned, left, starved", [
    ("1-3,5-7", set(), True),    # nothing outside the reserved CPUs
    ("1-3,5-6", {7}, True),      # exactly one CPU left: still starved (the boundary)
    ("1-2,5-6", {3, 7}, False),  # two left: fine
])
def test_shared_pool_starved_boundary(tmp_path, pinned, left, starved):
    report = read_sim(spec(pods=[PodSpec("rt", containers=[CtrSpec("app", cpus=pinned)])]), tmp_path, 1)
    hits = [f for f in evaluate(report.snapshot, report.rates) if f.code == "SHARED_POOL_STARVED"]
    assert [f.code for f in report.findings if f.code == "SHARED_POOL_STARVED"] == [f.code for f in hits]
    assert bool(hits) is starved
    if starved:
        assert set(hits[0].cpus) == left


async def _two_samples(tmp_path, node: NodeSpec, dt: float):
    """Two reads through the real probe, the simulated node advanced `dt` node-seconds in between."""
    sim = SimNode(node, tmp_path).write()

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    try:
        a = await col.tick()
        sim.tick(dt)
        b = await col.tick()
        return a.snapshot, b.snapshot
    finally:
        await col.close()



@pytest.mark.parametrize("dt", [0.5, 2.0, 5.0])
async def test_rates_are_per_second_of_the_interval(tmp_path, dt):
    """The simulated NUMA counters grow by a fixed amount per tick, whatever its length, the throttling ones
    by a fixed amount per second of it (as a kernel's do: no more throttled periods than periods): a rate is
    the growth divided by the interval the node's uptime says passed (not by 1, not by the client's wall
    clock)."""
    node = spec(numa_miss_per_tick=300,
                pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", quota_cores=2, throttled=8)])])
    a, b = await _two_samples(tmp_path, node, dt)
    r = compute(a, b, wall_dt=123.0)  # a wrong wall clock must not be used when uptime is there
    assert r.dt == pytest.approx(dt, abs=0.011)
    (cr,) = r.containers.values()
    assert cr.throttled_per_s == pytest.approx(8, rel=0.02)
    assert cr.throttled_us_per_s == pytest.approx(8 * 5000, rel=0.02)
    assert r.numa[0]["numa_miss_per_s"] == pytest.approx(300 / dt, rel=0.02)
    assert r.numa[0]["numa_hit_per_s"] == pytest.approx(10000 / dt, rel=0.02)
    # CPU use from the tasks' utime is a fraction of a CPU, the same whatever the interval
    assert 0 < cr.cpu_usage < 2.5
    if dt >= 2.0:
        small = compute(*await _two_samples(tmp_path / "short", node, 1.0))
        (cs,) = small.containers.values()
        assert cr.cpu_usage == pytest.approx(cs.cpu_usage, rel=0.35)


async def test_rates_fall_back_to_the_wall_clock_without_uptime(tmp_path):
    a, b = await _two_samples(tmp_path, spec(numa_miss_per_tick=300), 1.0)
    r = compute(dataclasses.replace(a, uptime=None), dataclasses.replace(b, uptime=None), wall_dt=4.0)
    assert r.dt == 4.0 and r.numa[0]["numa_miss_per_s"] == pytest.approx(300 / 4.0)


def test_an_owned_cpu_that_is_also_reserved_is_shown_as_the_owners(tmp_path):
    """kubelet never hands out reserved CPUs; when the state file says it did, the CPU is the container's
    (exclusive, with its owner), not silently 'reserved'."""
    snap = read_sim(spec(pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="0,4")])]), tmp_path, 1).snapshot
    roles = {r.id: r for r in snap.roles}
    for cpu in (0, 4):
        assert roles[cpu].role == "exclusive"
        assert [(o.namespace, o.pod, o.container) for o in roles[cpu].owners] == [("prod", "rt", "app")]
    assert roles[1].role == "shared" and roles[1].owners == ()
