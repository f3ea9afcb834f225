"""Issue 34 item 17: the demo's numbers agree with each other the way a kernel's do. Each demo node is read
through the real probe (every thread's schedstat, every cgroup's files) over several ticks of the load wave
the demo runs (trough to peak), at the intervals it may run at (`pinscope demo --interval`: the demo ticks
by the wall clock, so a window is 0.2 s or 3 s as well as 1 s), and every window is checked:

- a thread's time on CPU plus its run-queue wait is at most the second (a thread that waits cannot also
  run 100 %);
- a CPU's threads run at most what its interrupts leave it, and /proc/stat's busy share holds them;
- a thread waits only while its CPU was busy with something else (wait <= the CPU's busy time not its own);
- cpu.pressure "some" (the share of time at least one thread of the cgroup waited) lies between its
  longest thread wait and the sum of them; its avg10/avg60/avg300 are running averages of that share, so
  they lie between the least and the most of it seen (not 0.00 beside a 150 ms/s wait);
- cpu.stat's usage_usec grows by the time its threads ran (schedstat), and so does their utime;
- a container is throttled in at most every period of its quota (nr_throttled <= nr_periods, 10 periods of
  100 ms a second), for at most the time that passed.
"""
import re

import pytest

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.rates import compute
from pinscope.collectors.sim.demo import demo_specs
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport

# the demo's load wave (DemoTransport) and the seconds each tick covers
STEPS = [(0.0, 1.0), (1.0, 1.0), (1.0, 0.2), (0.5, 3.0), (-0.5, 1.0), (-1.0, 0.5), (-1.0, 1.0), (0.0, 2.0)]


def _tol(dt: float) -> float:
    """ms per second: /proc/stat, utime and schedstat's run time count 10 ms clock ticks, 12 ms over a window."""
    return 12.0 / dt


def _avgs(text: str) -> list[float]:
    m = re.search(r"^some avg10=([\d.]+) avg60=([\d.]+) avg300=([\d.]+) total=(\d+)", text or "", re.M)
    assert m, text
    return [float(x) for x in m.groups()]


def _usage(text: str) -> int | None:
    m = re.search(r"^usage_usec (\d+)", text or "", re.M)
    return int(m.group(1)) if m else None


async def _windows(spec, root):
    """The snapshots of every tick: the first after the tree is written, then one per phase."""
    sim = SimNode(spec, root).write()
    keys = {t[5] for t in sim.tasks if t[5] is not None}

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        snaps = [(await col.tick()).snapshot]
        for phase, dt in STEPS:
            sim.tick(dt, load={k: phase for k in keys})
            snaps.append((await col.tick()).snapshot)
        return snaps
    finally:
        await col.close()



@pytest.mark.parametrize("spec", demo_specs(), ids=lambda s: s.hostname)
async def test_the_demo_numbers_agree_like_a_kernel(tmp_path, spec):
    snaps = await _windows(spec, tmp_path / spec.hostname)
    shares: dict = {}  # container -> the "some" shares (percent) of every window so far
    # the share of the tick before the first window: its total (µs) over the 1 s the tree's first tick ran
    first = {(p.uid, c.id): _avgs(c.cgroup.raw.get("cpu.pressure"))[3] / 1e4
             for p, c in snaps[0].containers() if spec.cgroup == 2 and c.cgroup and c.tasks}
    waited = throttles = 0
    for (_, dt), a, b in zip(STEPS, snaps, snaps[1:]):
        r = compute(a, b)
        assert r is not None and r.dt == pytest.approx(dt, abs=0.011)
        tol = _tol(dt)
        per_cpu: dict[int, float] = {}
        last_cpu = {t.tid: t.last_cpu for _, c in b.containers() for t in c.tasks}
        for tid, tr in r.tasks.items():
            if tr.run_ms_per_s is None or tr.wait_ms_per_s is None:
                continue
            run, wait = tr.run_ms_per_s, tr.wait_ms_per_s
            assert run + wait <= 1000 + tol, (spec.hostname, tid, run, wait)
            cpu = last_cpu.get(tid)
            if cpu is None:
                continue
            per_cpu[cpu] = per_cpu.get(cpu, 0.0) + run
            # while it waited, its CPU ran something else: the CPU's busy time beside its own run
            others = r.util[cpu] * 1000 - run
            assert wait <= others + tol, (spec.hostname, tid, cpu, run, wait, r.util[cpu])
            waited += wait > 1
        for cpu, run in per_cpu.items():
            kernel = r.noise[cpu].total * 1000
            assert run + kernel <= 1000 + tol, (spec.hostname, cpu, run, kernel)
            assert run + kernel <= r.util[cpu] * 1000 + tol, (spec.hostname, cpu, run, kernel, r.util[cpu])
        prev = {(p.uid, c.id): c for p, c in a.containers()}
        for p, c in b.containers():
            key = (p.uid, c.id)
            cr = r.containers.get(key)
            if cr is None or not c.tasks:
                continue
            runs = [r.tasks[t.tid].run_ms_per_s for t in c.tasks if t.tid in r.tasks]
            waits = [r.tasks[t.tid].wait_ms_per_s for t in c.tasks if t.tid in r.tasks]
            assert cr.cpu_usage == pytest.approx(sum(runs) / 1000, abs=tol * len(runs) / 1000), (p.name, c.name)
            before, now = _usage(prev[key].cgroup.raw.get("cpu.stat")), _usage(c.cgroup.raw.get("cpu.stat"))
            if before is not None and now is not None:
                assert (now - before) / 1000 / dt == pytest.approx(sum(runs), abs=tol * len(runs)), (p.name, c.name)
            pg, g = prev[key].cgroup, c.cgroup
            if g and pg and g.nr_periods is not None and pg.nr_periods is not None:
                periods, throttled = g.nr_periods - pg.nr_periods, (g.nr_throttled or 0) - (pg.nr_throttled or 0)
                assert throttled <= periods <= 10 * dt + 1, (p.name, c.name, dt, periods, throttled)
                assert (g.throttled_usec or 0) - (pg.throttled_usec or 0) <= throttled * 100_000, (p.name, c.name)
                throttles += throttled > 0
            if spec.cgroup != 2:
                continue
            some = cr.pressure_some_ms_per_s
            assert some is not None, (p.name, c.name)
            assert max(waits) - 1 <= some <= min(1000.0, sum(waits)) + 1, (p.name, c.name, some, waits)
            seen = shares.setdefault(key, [first[key]])
            seen.append(some / 10)
            for avg in _avgs(c.cgroup.raw.get("cpu.pressure"))[:3]:
                assert min(seen) - 0.02 <= avg <= max(seen) + 0.02, (p.name, c.name, avg, seen)
    assert waited or spec.hostname != "trade-xeon-96"  # the demo's waiting thread is there to be checked
    assert throttles or spec.hostname != "infer-epyc-64"  # and so is its throttled encoder
