"""Run-queue wait and kernel noise: literal kernel texts for the parsers, rates over stamped counters,
and the probe's depth (schedstat only for the container or CPU in focus, or with "w")."""

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.model import KernelNoise
from pinscope.collectors.parse.noise import SchedStat, parse_ipis, parse_sched_wait, parse_schedstat, parse_softirqs
from pinscope.collectors.parse.procfs import parse_proc_stat
from pinscope.collectors.rates import compute
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from pinscope.collectors.transport.local import LocalTransport

# ----------------------------------------------------------------------------- schedstat


def test_schedstat_fields_are_run_wait_slices():
    # /proc/1/task/1/schedstat on Linux 6.18 (CONFIG_SCHED_INFO=y, CONFIG_SCHEDSTATS not set)
    assert parse_schedstat("187623569 8094205 395\n") == SchedStat(187623569, 8094205, 395)


def test_schedstat_zeros_mean_no_sched_info():
    # kernels without sched_info (or, before 5.14, with delay accounting off) print zeros
    assert parse_schedstat("0 0 0\n") is None
    assert parse_schedstat("") is None and parse_schedstat(None) is None
    assert parse_schedstat("garbage here\n") is None


SCHED_ON = """\
busy (4242, #threads: 1)
-------------------------------------------------------------------
se.exec_start                                :       5230163.092874
se.vruntime                                  :        131580.214651
se.sum_exec_runtime                          :          9036.457915
se.nr_migrations                             :                    3
sum_sleep_runtime                            :             0.000000
sum_block_runtime                            :             0.000000
wait_start                                   :       5230163.092874
sleep_start                                  :             0.000000
block_start                                  :             0.000000
sleep_max                                    :             0.000000
block_max                                    :             0.000000
exec_max                                     :             4.002417
slice_max                                    :            12.004226
wait_max                                     :             8.001920
wait_sum                                     :          4512.000501
wait_count                                   :                 1129
iowait_sum                                   :             0.000000
iowait_count                                 :                    0
nr_switches                                  :                 1129
nr_voluntary_switches                        :                    0
nr_involuntary_switches                      :                 1129
"""


def test_sched_wait_sum_with_schedstats_on():
    # kernel.sched_schedstats=1: wait_sum is printed as ms.nnnnnn (SPLIT_NS), read without float rounding
    assert parse_sched_wait(SCHED_ON) == SchedStat(9036457915, 4512000501, None, "wait_sum")


def test_sched_wait_sum_old_name_and_squeezed_by_the_probe():
    # before 5.13 the line was se.statistics.wait_sum; the probe squeezes the padding
    assert parse_sched_wait("se.statistics.wait_sum : 12.000007\n").wait_ns == 12000007


def test_sched_without_schedstats_has_no_wait():
    off = "\n".join(line for line in SCHED_ON.splitlines() if not line.startswith(("sum_", "wait", "sleep", "block",
                                                                                   "exec_max", "slice", "iowait")))
    assert "wait_sum" not in off and parse_sched_wait(off) is None


# ----------------------------------------------------------------------------- /proc/softirqs

SOFTIRQS_OFFLINE = """\
                    CPU0       CPU1       CPU2       CPU3
          HI:          0          0          0          0
       TIMER:       7012       6283        412          0
      NET_TX:          3          0          0          0
      NET_RX:       2349    3268000         17          0
       BLOCK:          0      60539          0          0
    IRQ_POLL:          0          0          0          0
     TASKLET:          1          1          0          0
       SCHED:      14295      12660        380          0
     HRTIMER:          0          0          0          0
         RCU:      14801      17747        101          0
"""


def test_softirqs_have_a_column_per_possible_cpu_offline_ones_too():
    # fs/proc/softirqs.c walks for_each_possible_cpu: CPU2 went offline (frozen), CPU3 never came up
    s = parse_softirqs(SOFTIRQS_OFFLINE)
    assert list(s) == ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"]
    assert s["NET_RX"] == {0: 2349, 1: 3268000, 2: 17, 3: 0}
    assert s["TIMER"][2] == 412


def test_softirqs_empty():
    assert parse_softirqs("") == {} and parse_softirqs(None) == {}


# ----------------------------------------------------------------------------- /proc/stat with steal


def test_proc_stat_keeps_irq_softirq_steal():
    # a VM: user nice system idle iowait irq softirq steal guest guest_nice
    text = ("cpu  7480 4 3537 76306 333 12 64 230 0 0\n"
            "cpu0 3069 0 1353 39355 71 2 5 90 0 0\n"
            "cpu1 4410 4 2183 36951 261 10 58 140 0 0\n")
    t = parse_proc_stat(text)
    assert (t[0].irq, t[0].softirq, t[0].steal) == (2, 5, 90)
    assert t[1].busy == 4410 + 4 + 2183 + 10 + 58 + 140 and t[1].total == t[1].busy + 36951 + 261


def test_proc_stat_old_kernel_without_steal_columns():
    # 2.6.10 and older: only 7 columns; the missing ones are 0
    t = parse_proc_stat("cpu  10 0 5 100 1 2 3\ncpu0 10 0 5 100 1 2 3\n")
    assert (t[0].irq, t[0].softirq, t[0].steal) == (2, 3, 0)


# ----------------------------------------------------------------------------- /proc/interrupts


X86 = """\
           CPU0       CPU1       CPU3
 24:          1          0          0  IO-APIC   5-edge      ACPI:Ged
 41:       1910          0          9  PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx
NMI:          0          0          0   Non-maskable interrupts
LOC:      23072      25940        300   Local timer interrupts
RES:      13566       6738          4   Rescheduling interrupts
CAL:      35615      20430          1   Function call interrupts
ERR:          0
MIS:          0
"""

ARM64 = """\
           CPU0       CPU1
 11:     901234     876543     GICv3  27 Level     arch_timer
IPI0:      5120       4410       Rescheduling interrupts
IPI1:       300        200       Function call interrupts
IPI2:         0          0       CPU stop interrupts
Err:          0
"""


def test_ipis_x86_rows_mapped_through_the_header():
    # CPU2 is offline: /proc/interrupts has no column for it
    assert parse_ipis(X86) == {"LOC": {0: 23072, 1: 25940, 3: 300}, "RES": {0: 13566, 1: 6738, 3: 4}}


def test_ipis_arm64_named_by_description():
    assert parse_ipis(ARM64) == {"LOC": {0: 901234, 1: 876543}, "RES": {0: 5120, 1: 4410}}


# ----------------------------------------------------------------------------- rates


class _Snap:
    """Just what rates.compute reads."""

    def __init__(self, uptime, cpu_times=None, noise=None, pods=(), all_tasks=None):
        self.uptime, self.cpu_times, self.noise, self.pods, self.all_tasks = uptime, cpu_times or {}, noise, pods, all_tasks
        self.numastat = {}

    def containers(self):
        for p in self.pods:
            for c in p.containers:
                yield p, c


def test_noise_shares_and_counts_over_their_own_interval():
    a = _Snap(100.0, parse_proc_stat("cpu1 100 0 0 900 0 10 20 0 0 0\n"),
              KernelNoise({"NET_RX": {1: 1000}}, 100.0, {"LOC": {1: 500}}, 95.0))
    b = _Snap(101.0, parse_proc_stat("cpu1 123 0 0 950 0 12 40 5 0 0\n"),
              # the IPIs come from a frame read at 100.0 (carried): 2 s since their previous read
              KernelNoise({"NET_RX": {1: 3000}}, 101.0, {"LOC": {1: 1000}}, 100.0))
    r = compute(a, b)
    n = r.noise[1]
    assert (round(n.irq, 3), round(n.softirq, 3), round(n.steal, 3)) == (0.02, 0.2, 0.05)
    assert round(n.total, 3) == 0.27
    assert r.softirqs == {1: {"NET_RX": 2000.0}}
    assert r.ipis == {1: {"LOC": 100.0}}


def test_noise_counts_not_reread_give_no_rate():
    k = KernelNoise({}, None, {"LOC": {0: 5}}, 50.0)
    assert compute(_Snap(1.0, noise=k), _Snap(2.0, noise=k)).ipis == {}


# ----------------------------------------------------------------------------- through the probe


def _spec(wait=0.3):
    return NodeSpec(hostname="jitter", cores=2, threads=2, cgroup=2, reserved="0,2", pods=[
        PodSpec("lat", containers=[CtrSpec("engine", cpus="1,3", tasks=2, busy=0.9, runq_wait=wait)]),
        PodSpec("web", qos="Burstable", containers=[CtrSpec("nginx", tasks=1)]),
    ], noise={3: 0.2})


async def _collect(root, requests, focus=None, focus_cpu=None):
    sim = SimNode(_spec(), root).write()

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    col.focus, col.focus_cpu = (focus(sim) if callable(focus) else focus), focus_cpu
    await col.connect()
    out = []
    try:
        for req in requests:
            out.append((await col.tick(req)).snapshot)
            sim.tick(1.0)
    finally:
        await col.close()
    return out



async def test_grid_depth_reads_softirqs_not_schedstat(tmp_path):
    a, b = await _collect(tmp_path, ["g", "g"])
    assert a.noise.softirqs["NET_RX"][3] > a.noise.softirqs["NET_RX"][0]
    assert all(t.runq is None for _, c in b.containers() for t in c.tasks)
    r = compute(a, b)
    assert r.noise[3].total > 0.1 and r.noise[0].total < 0.02
    assert r.softirqs[3]["NET_RX"] > 1000 > r.softirqs[0]["NET_RX"]


async def test_w_reads_every_pod_task_schedstat(tmp_path):
    a, b = await _collect(tmp_path, ["gtw", "gtw"])
    r = compute(a, b)
    eng = next(c for p, c in b.containers() if c.name == "engine")
    assert all(t.runq is not None for t in eng.tasks)
    cr = r.containers[(next(p.uid for p, c in b.containers() if c.name == "engine"), eng.id)]
    assert round(cr.runq_wait_ms_per_s) == 600  # 2 threads x 300 ms/s
    assert cr.runq_worst[2] == 300.0 and cr.runq_worst[3] in (1, 3)
    assert cr.pressure_some_ms_per_s is None  # cpu.pressure is read with the cgroup detail ("c")


async def test_focused_container_gets_schedstat_and_pressure_every_tick(tmp_path):
    a, b = await _collect(tmp_path, ["g", "g"], focus=lambda sim: sim.spec.pods[0].containers[0].id)
    eng = [c for _, c in b.containers() if c.name == "engine"][0]
    web = [c for _, c in b.containers() if c.name == "nginx"][0]
    assert eng.tasks and all(t.runq is not None for t in eng.tasks) and not web.tasks
    r = compute(a, b)
    cr = r.containers[(eng.pod_uid, eng.id)]
    assert round(cr.pressure_some_ms_per_s) == 300 and round(cr.runq_wait_ms_per_s) == 600


async def test_focused_cpu_reads_schedstat_only_for_its_tasks(tmp_path):
    a, b = await _collect(tmp_path, ["g", "g"], focus_cpu=1)
    assert b.request.endswith("@1") and "a" in b.request.partition(" ")[0]
    with_runq = [t for t in b.all_tasks if t.runq is not None]
    assert with_runq and all(t.last_cpu == 1 for t in with_runq)
    assert any(t.last_cpu != 1 for t in b.all_tasks)
    assert b.noise.ipis["LOC"][1] > 0 and b.noise.ipis_at is not None
    r = compute(a, b)
    assert r.cpu_wait.get(1, 0) > 0 and 3 not in r.cpu_wait
    assert r.ipis[1]["LOC"] == 250.0


# ----------------------------------------------------------------------------- findings: evidence, thresholds


def _findings(tmp_path, **kw):
    from helpers import read_sim

    d = dict(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", cgroup=2, init_affinity="0,4",
             pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", busy=0.9)])])
    d.update(kw)
    return list(read_sim(NodeSpec(**d), tmp_path, samples=2).findings)


def test_runqueue_wait_names_the_thread_and_what_else_ran_there(tmp_path):
    fs = _findings(tmp_path, pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", runq_wait=0.2, tasks=1)])],
                   other_tasks=[("backup.sh", 5, False)])
    (f,) = [f for f in fs if f.code == "RUNQUEUE_WAIT_EXCLUSIVE"]
    assert f.pod == "rt" and f.container == "app" and "waited 200 ms/s" in f.message
    assert any("schedstat" in e and "waited 200 ms/s" in e for e in f.evidence)
    assert any("backup.sh" in e for e in f.evidence)  # the task that ran there
    assert any("cpu.pressure: some +200 ms/s" in e for e in f.evidence)
    assert "INTRUDER_TASK" in {x.code for x in fs}


def test_kernel_noise_names_the_softirq_kind_and_the_irq(tmp_path):
    fs = _findings(tmp_path, noise={5: 0.15}, irqs={40: "0", 41: "5"})
    (f,) = [f for f in fs if f.code == "KERNEL_NOISE_EXCLUSIVE"]
    assert f.cpus == (5,) and f.pod == "rt" and "NET_RX" in f.message
    assert any(e.startswith("/proc/softirqs CPU5: NET_RX") for e in f.evidence)
    assert any(e.startswith("IRQ 41 (eth0-rx-41)") for e in f.evidence)
    assert any(e.startswith("/proc/stat cpu5: irq 3.") and "softirq 1" in e for e in f.evidence)


def test_thresholds_are_configurable(tmp_path):
    from pinscope.collectors.findings.jitter import Thresholds, set_thresholds, thresholds

    old = thresholds()
    try:
        set_thresholds(Thresholds(runq_wait_ms=500, noise_pct=50))
        fs = _findings(tmp_path / "a", noise={5: 0.15},
                       pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", runq_wait=0.2)])])
        assert not {"RUNQUEUE_WAIT_EXCLUSIVE", "KERNEL_NOISE_EXCLUSIVE"} & {f.code for f in fs}
        set_thresholds(Thresholds(runq_wait_ms=10, noise_pct=1))
        fs = _findings(tmp_path / "b", noise={5: 0.03},
                       pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", runq_wait=0.02)])])
        assert {"RUNQUEUE_WAIT_EXCLUSIVE", "KERNEL_NOISE_EXCLUSIVE"} <= {f.code for f in fs}
    finally:
        set_thresholds(old)


async def test_slow_counters_keep_their_last_rate_between_reads(tmp_path):
    """cpu.pressure comes with the cgroup detail ("c"), tasks with "t": between two reads the report keeps
    the rate of the last window, so a finding on it does not flicker tick to tick."""
    sim = SimNode(_spec(), tmp_path).write()

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    out = []
    try:
        for req in ("gctw", "gctw", "g", "g"):
            out.append(await col.tick(req))
            sim.tick(1.0)
    finally:
        await col.close()
    reports = out

    eng = [(p.uid, c.id) for p, c in reports[-1].snapshot.containers() if c.name == "engine"][0]
    for r in reports[1:]:
        cr = r.rates.containers[eng]
        assert round(cr.pressure_some_ms_per_s) == 300
        assert any(r.rates.tasks[t.tid].wait_ms_per_s == 300.0 for _, c in r.snapshot.containers()
                   if c.name == "engine" for t in c.tasks)
        assert "RUNQUEUE_WAIT_EXCLUSIVE" in {f.code for f in r.findings}


async def test_softirqs_are_parsed_and_rated_only_when_read(tmp_path, monkeypatch):
    """Issue 25: /proc/softirqs is read every tick (2,560 counters on 256 CPUs), but only the CPU pane, a
    noise finding's evidence, the softirqs query and --json look at them. Through the real probe and the
    Pipeline (findings included): a tick nobody looks at parses none; the first look parses the two reads the
    rates span, once each, and gives what an eager parse gives; the JSON then costs no parse more."""
    from pinscope.collectors.assemble import noise as noise_stage
    from pinscope.collectors.parse.noise import parse_softirqs
    from pinscope.collectors.rates import _per_s

    calls: list[str] = []
    monkeypatch.setattr(noise_stage, "parse_softirqs", lambda text: calls.append(text) or parse_softirqs(text))
    spec = _spec()
    spec.noise = {}  # no kernel noise over the threshold: no finding reads the softirqs' rates
    sim = SimNode(spec, tmp_path).write()

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    try:
        out = []
        for _ in range(3):
            out.append(await col.tick("g"))
            sim.tick(1.0)
        reports = out
    finally:
        await col.close()

    assert calls == []
    a, b = reports[1].snapshot, reports[2].snapshot
    got = reports[2].rates.softirqs.get(3)
    assert len(calls) == 2 and calls[0] != calls[1]  # this tick's read and the one before, each once
    older, newer = sorted(map(parse_softirqs, calls), key=lambda t: sum(t["TIMER"].values()))  # counters only grow
    want = _per_s(older, newer, b.noise.softirqs_at - a.noise.softirqs_at)
    assert got == want[3] and dict(reports[2].rates.softirqs) == want and got["TIMER"] > 0
    reports[2].to_json()
    repr(reports[1])  # a repr is no reader (asyncio.run's end repr'd the reports through its task's result)
    assert len(calls) == 2


async def test_a_wait_rate_kept_after_the_drill_down_closed_is_said_and_does_not_crash(tmp_path):
    """The drill-down reads its container's threads with schedstat every tick; closed, the threads come from
    the last pod task scan again (older, without run-queue counters) and keep the wait rate of their last
    window until read again. RUNQUEUE_WAIT_EXCLUSIVE read the source of that rate from the thread's current
    read (None): AttributeError on the tick after the drill-down closed, every tick until the next scan.
    Now the finding stands, from the rate kept, and says it is the last window's."""
    from pinscope.collectors.collect import live_depth

    sim = SimNode(_spec(wait=0.5), tmp_path).write()

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    out = []
    try:
        for i in range(30):
            if i == 21:  # the tick after a pod task scan (tick 20, carried until tick 30)
                col.focus = next(c.id for _, c in out[-1].snapshot.containers() if c.name == "engine")
            if i == 24:
                col.focus = None
            out.append(await col.tick(live_depth(i)))
            sim.tick(1.0)
    finally:
        await col.close()
    reports = out

    after = reports[24:]
    eng = [next(c for _, c in r.snapshot.containers() if c.name == "engine") for r in after]
    kept = [r for r, c in zip(after, eng) if any(t.runq is None and (r.rates.tasks.get(t.tid) or 0) and
                                                 r.rates.tasks[t.tid].wait_ms_per_s for t in c.tasks)]
    assert kept, "no tick where a thread read without schedstat kept a wait rate: the case is not exercised"
    for r in kept:
        f = next(f for f in r.findings if f.code == "RUNQUEUE_WAIT_EXCLUSIVE")
        assert any("the last window" in e for e in f.evidence), f.evidence
