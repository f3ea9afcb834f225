"""The metrics contract, computed from NodeReports of simulated nodes read through the real probe
(no HTTP here: tests/e2e/test_prometheus.py has the real Prometheus)."""
from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, generate_latest

from pinscope.collectors.exporter.metrics import CONTRACT, LatestReports, NodeState, node_samples, self_samples
from pinscope.collectors.exporter.serve import ListenError, parse_listen
from helpers import read_sim
from nodes import broken, dual_socket_intel, offline_isolated

import pytest


def _by(samples, fam):
    return samples[fam]


def test_cpu_info_one_series_per_cpu_with_the_running_owner(tmp_path):
    rep = read_sim(dual_socket_intel(), tmp_path / "n")
    s = node_samples("xeon", rep)
    info = {x.labels["cpu"]: x.labels for x in s["pinscope_cpu_info"]}
    assert len(info) == 48 == len(s["pinscope_cpu_info"])
    # CPU 13 is kubelet's for both init-tune (exited) and engine (reuses it): the running one is named
    assert (info["13"]["role"], info["13"]["pod"], info["13"]["container"]) == ("exclusive", "matcher-7d9f", "engine")
    assert (info["1"]["namespace"], info["1"]["pod"], info["1"]["container"]) == ("trading", "md-feed-0", "feed")
    assert info["0"]["role"] == "reserved" and info["0"]["pod"] == "" and info["0"]["namespace"] == ""
    assert {k for k in info["0"]} == set(CONTRACT[0].labels)
    roles = {x.labels["role"]: x.value for x in s["pinscope_cpus"]}
    assert roles == {"exclusive": 8.0, "reserved": 2.0, "isolated": 0.0, "shared": 38.0, "offline": 0.0, "unassigned": 0.0}
    ex = {(x.labels["pod"], x.labels["container"]): x.value for x in s["pinscope_container_exclusive_cpus"]}
    assert ex[("md-feed-0", "feed")] == 4 and ex[("matcher-7d9f", "engine")] == 4 and ex[("api-5c8d", "api")] == 0
    assert ("matcher-7d9f", "init-tune") not in ex  # exited: kubelet's entry only, nothing to measure
    # two samples: utilisation per CPU and per node, rates per container
    assert len(s["pinscope_cpu_utilization_ratio"]) == 48
    assert 0 <= s["pinscope_node_cpu_utilization_ratio"][0].value <= 1
    assert s["pinscope_container_migrations_per_second"]


@pytest.mark.parametrize("init_name", ["0-setup", "zz-setup"])
def test_an_exited_init_containers_reused_cpus_are_the_app_containers(tmp_path, init_name):
    """Issue 22 item 6: the init container exited, its empty cgroup still there (the runtime has not
    removed it), its CPUs 1,5 reused by the app (kubelet's cpusToReuse, k/k cm/cpumanager/policy_static.go). Every CPU is
    labelled with the app, whatever the names sort as, and the pod holds 6 CPUs, not 8."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    spec = NodeSpec(hostname="t", sockets=1, cores=4, threads=2, reserved="0,4", init_affinity="0,4", pods=[
        PodSpec("rt", "prod", containers=[CtrSpec(init_name, cpus="1,5", init=True, cgroup_left=True),
                                          CtrSpec("app", cpus="1-3,5-7")])])
    s = node_samples("t", read_sim(spec, tmp_path / "n", samples=1))
    info = {int(x.labels["cpu"]): (x.labels["role"], x.labels["pod"], x.labels["container"]) for x in s["pinscope_cpu_info"]}
    assert info == {0: ("reserved", "", ""), 4: ("reserved", "", ""),
                    **{c: ("exclusive", "rt", "app") for c in (1, 2, 3, 5, 6, 7)}}
    ex = {(x.labels["pod"], x.labels["container"]): x.value for x in s["pinscope_container_exclusive_cpus"]}
    assert ex == {("rt", "app"): 6, ("rt", init_name): 0}


def test_first_read_has_no_rates_and_counters_only_where_the_kernel_counts(tmp_path):
    rep = read_sim(offline_isolated(), tmp_path / "n", samples=1)
    s = node_samples("edge", rep)
    assert not s["pinscope_cpu_utilization_ratio"] and not s["pinscope_node_cpu_utilization_ratio"]
    assert not s["pinscope_container_migrations_per_second"]
    roles = {x.labels["role"]: x.value for x in s["pinscope_cpus"]}
    assert roles["offline"] == 2 and roles["exclusive"] == 2
    for fam in ("pinscope_container_cpu_cfs_throttled_periods", "pinscope_container_cpu_cfs_throttled_seconds"):
        for x in s[fam]:
            assert x.name.endswith("_total")


def _many_findings():
    """Several findings of each severity (issue 34 item 21: with one of each, a count of 1 passed): four
    drifted containers (critical; two in one pod), three split SMT cores (warning, node-wide: one series,
    counted 3 times), two infos."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    return NodeSpec(hostname="many", sockets=1, cores=8, threads=2, reserved="0,8", pods=[
        PodSpec("gw-1", "trading", containers=[CtrSpec("fix-gw", cpus="2,10", effective="2-3,10")]),
        PodSpec("gw-2", "trading", containers=[CtrSpec("fix-gw", cpus="4,12", effective="4-5,12"),
                                               CtrSpec("sidecar", cpus="6", effective="6-7")]),
        PodSpec("gw-3", "trading", containers=[CtrSpec("fix-gw", cpus="15", effective="14-15")]),
        PodSpec("tick", "trading", containers=[CtrSpec("t", cpus="1")]),
        PodSpec("api", "web", qos="Burstable", containers=[CtrSpec("api", tasks=3)]),
    ])


def test_findings_are_one_series_per_code_and_container_and_counted(tmp_path):
    rep = read_sim(_many_findings(), tmp_path / "n", samples=1)
    s = node_samples("many", rep)
    series = sorted((x.labels["code"], x.labels["severity"], x.labels["pod"], x.labels["container"])
                    for x in s["pinscope_finding"])
    assert series == [("SAMPLES_NEEDED", "info", "", ""),
                      ("SMT_SIBLING_SHARED", "warning", "", ""),  # three findings, one series
                      ("STATE_CGROUP_DRIFT", "critical", "gw-1", "fix-gw"),
                      ("STATE_CGROUP_DRIFT", "critical", "gw-2", "fix-gw"),
                      ("STATE_CGROUP_DRIFT", "critical", "gw-2", "sidecar"),
                      ("STATE_CGROUP_DRIFT", "critical", "gw-3", "fix-gw"),
                      ("SYSTEM_NOT_CONFINED", "info", "", "")]
    assert all(x.value == 1 for x in s["pinscope_finding"])
    # counted: findings, not series, per severity (every severity present)
    per = {x.labels["severity"]: x.value for x in s["pinscope_findings"]}
    assert per == {"critical": 4, "warning": 3, "info": 2}
    keys = [tuple(x.labels.values()) for x in s["pinscope_finding"]]
    assert len(keys) == len(set(keys))


def test_a_node_wide_critical_finding_has_empty_owner_labels(tmp_path):
    s = node_samples("broken", read_sim(broken(), tmp_path / "n", samples=1))
    (x,) = [x for x in s["pinscope_finding"] if x.labels["code"] == "STATE_UNREADABLE"]
    assert (x.labels["severity"], x.labels["namespace"], x.labels["pod"], x.labels["container"]) == ("critical", "", "", "")


def test_collector_serves_the_latest_state_and_an_unreadable_node_only_as_read_success_0(tmp_path):
    rep = read_sim(dual_socket_intel(), tmp_path / "n")
    store = LatestReports()
    reg = CollectorRegistry(auto_describe=False)
    reg.register(store)
    store.put(NodeState("xeon", node_samples("xeon", rep), True, 0.01, 0.002, 1700000000.0))
    store.put(NodeState("gone", {}, False, 3.0, None, None, "no route"))
    text = generate_latest(reg).decode()
    assert 'pinscope_read_success{node="xeon"} 1.0' in text and 'pinscope_read_success{node="gone"} 0.0' in text
    assert 'pinscope_cpu_info{' in text and 'node="gone",' not in text.replace('pinscope_read_success{node="gone"}', "")
    assert 'pinscope_probe_cpu_seconds_total{node="xeon"} 0.002' in text and "# TYPE pinscope_probe_cpu_seconds_total counter" in text
    assert "pinscope_probe_cpu" not in "".join(str(x) for x in self_samples(NodeState("gone", {}, False)).values())
    # a scrape while reads publish: never blocks, never half a node
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            store.put(NodeState("xeon", node_samples("xeon", rep), True, 0.01, None, 1.0))

    t = threading.Thread(target=churn)
    t.start()
    try:
        for _ in range(20):
            assert generate_latest(reg).decode().count('pinscope_cpu_info{') == 48
    finally:
        stop.set()
        t.join(5)


@pytest.mark.parametrize("text,want", [(":9847", ("0.0.0.0", 9847)), ("127.0.0.1:0", ("127.0.0.1", 0)),
                                       ("[::1]:9847", ("::1", 9847)), ("node-1.example:80", ("node-1.example", 80))])
def test_listen_forms(text, want):
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", ["", "9847", "host:", "host:65536", "a:b:9847", "[::1:9847", " :9847"])
def test_listen_malformed(text):
    with pytest.raises(ListenError, match="expected ADDR:PORT"):
        parse_listen(text)


def test_probe_cpu_is_a_counter_across_reconnects():
    """Each probe says its total since it started; the exporter's counter adds the steps, and a new probe
    (after a reconnect) counts from 0 again: the counter never goes back."""
    from pinscope.collectors.exporter.serve import ProbeCpu

    c = ProbeCpu()
    assert c.add(None) is None  # nothing said yet: no series
    assert c.add(0.004) == 0.004 and c.add(0.0065) == 0.0065
    c.new_probe()
    assert abs(c.add(0.003) - 0.0095) < 1e-12  # the new probe's first 3 ms on top
    assert abs(c.add(0.001) - 0.0105) < 1e-12  # said less than before without a reconnect: a new probe too
    assert abs(c.add(None) - 0.0105) < 1e-12


def test_the_probes_cpu_line_is_read_or_refused():
    from pinscope.collectors.frames import parse_frame
    from pinscope.collectors.pipeline import _probe_cpu

    fr = parse_frame(b"B1 g\nIprobe_cpu 0.001751883 schedstat\nZ1\n")
    assert _probe_cpu(fr.info.get("probe_cpu")) == (0.001751883, "schedstat")
    for bad in (None, "", "nan schedstat", "inf stat", "-1 stat", "1e400 stat", "0.1 jiffies", "abc stat", "0.2"):
        assert _probe_cpu(bad) == (None, None), bad


def test_jitter_measures_per_cpu_and_per_container(tmp_path):
    """Kernel noise per CPU from the two reads' /proc/stat; run-queue wait per container from its tasks'
    schedstat (the full read has it), in seconds per second: the TUI's ms/s over 1000."""
    rep = read_sim(dual_socket_intel(), tmp_path / "n")
    s = node_samples("xeon", rep)
    noise = {x.labels["cpu"]: x.value for x in s["pinscope_cpu_noise_ratio"]}
    assert len(noise) == 48 and all(0 <= v <= 1 for v in noise.values())
    assert noise == {str(c): min(1.0, n.total) for c, n in rep.rates.noise.items()}
    waits = {(x.labels["pod"], x.labels["container"]): x.value
             for x in s["pinscope_container_runqueue_wait_seconds_per_second"]}
    assert waits, "no container's run-queue wait"
    want = {(p.name, c.name): rep.rates.containers[(p.uid, c.id)].runq_wait_ms_per_s / 1000
            for p, c in rep.snapshot.containers()
            if (p.uid, c.id) in rep.rates.containers and rep.rates.containers[(p.uid, c.id)].runq_wait_ms_per_s is not None}
    assert waits == pytest.approx(want)
    for x in s["pinscope_container_runqueue_wait_seconds_per_second"]:
        assert set(x.labels) == {"node", "namespace", "pod", "container"}


def test_node_samples_come_from_stages_of_at_most_60_lines():
    import inspect

    from pinscope.collectors.exporter import metrics

    for name, fn in inspect.getmembers(metrics, inspect.isfunction):
        if fn.__module__ == metrics.__name__:
            assert len(inspect.getsource(fn).splitlines()) <= 60, name


def test_the_exporters_task_scan_reads_schedstat():
    """The run-queue wait needs each pod task's schedstat ("w"), read with the task scan and only then."""
    from pinscope.collectors.collect import live_depth
    from pinscope.collectors.exporter.serve import exporter_depth

    for tick in range(31):
        d = exporter_depth(tick)
        assert d.startswith(live_depth(tick)) and ("w" in d) == ("t" in d.lower()), (tick, d)
    assert "w" in exporter_depth(10) and exporter_depth(1) == "g"


async def test_container_rates_hold_between_the_exporters_task_scans(tmp_path):
    """The task scan runs every 10th read: the containers' migrations, CPU use and run-queue wait keep the
    rates of their tasks' last window in between (they were in 1 scrape of 10 before), and change when the
    tasks are read again."""
    import asyncio

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.exporter.serve import exporter_depth
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    root = tmp_path / "n"
    sim = SimNode(dual_socket_intel(), root).write()
    fams = ("pinscope_container_runqueue_wait_seconds_per_second", "pinscope_container_cpu_usage_cpus",
            "pinscope_container_migrations_per_second")

    async with asyncio.timeout(60):
        col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
        await col.connect()
        try:
            seen = []
            for _ in range(22):
                rep = await col.tick(exporter_depth(col.ticks))
                s = node_samples("xeon", rep)
                seen.append({f: {tuple(x.labels.values()): x.value for x in s[f]} for f in fams})
                sim.tick(0.5)
        finally:
            await col.close()

    assert all(not v for v in seen[0].values())  # one read: no rate yet
    for i in range(10, 22):
        for f in fams:
            assert len(seen[i][f]) == 5, (i, f)  # every running container, on every read once there is a rate
    assert seen[11] == seen[19]  # held until the tasks are read again
    assert seen[20]["pinscope_container_migrations_per_second"] != seen[19]["pinscope_container_migrations_per_second"]


def test_runqueue_wait_is_the_threads_wait_in_seconds_per_second(tmp_path):
    """A container whose 2 threads each wait 10 % of the time on a run queue: 0.2 s waited per second."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    spec = NodeSpec(hostname="w", sockets=1, cores=4, threads=1, reserved="0", pods=[
        PodSpec("feed-0", "trading", containers=[CtrSpec("feed", cpus="2-3", tasks=2, runq_wait=0.1)]),
        PodSpec("api", "web", qos="Burstable", containers=[CtrSpec("api", tasks=3)])])
    s = node_samples("w", read_sim(spec, tmp_path / "n"))
    waits = {x.labels["container"]: x.value for x in s["pinscope_container_runqueue_wait_seconds_per_second"]}
    assert waits["feed"] == pytest.approx(0.2, rel=0.05) and waits["api"] == 0


@pytest.mark.parametrize("how", ["root removed", "proc and sys gone"])
async def test_a_node_whose_tree_vanished_reads_0_and_says_why(tmp_path, how, capsys):
    """Issue 22 item 6: the exporter's real loop over a --root tree; the tree goes away (the directory
    removed, or /proc and /sys no longer there). read_success turns 0 with the node's other series gone
    (so the unreadable alert fires, the critical ones do not silently resolve), and stderr says why."""
    import asyncio
    import shutil

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.exporter.serve import node_loop
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    root = tmp_path / "n"
    SimNode(dual_socket_intel(), root).write()
    store = LatestReports()
    seen: list[tuple[bool, int]] = []

    stop = asyncio.Event()
    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    task = asyncio.create_task(node_loop(col, "xeon", 0.01, store, stop, 5.0))
    for _ in range(2000):  # reads, not seconds: each step waits for the loop to publish
        await asyncio.sleep(0.005)
        st = store.get("xeon")
        if st is None:
            continue
        if not seen or seen[-1] != (st.success, len(st.samples.get("pinscope_cpu_info", ()))):
            seen.append((st.success, len(st.samples.get("pinscope_cpu_info", ()))))
        if len(seen) == 1 and st.success and (root / "sys").exists():
            if how == "root removed":
                shutil.rmtree(root)
            else:
                shutil.rmtree(root / "proc")
                shutil.rmtree(root / "sys")
        if not st.success:
            break
    stop.set()
    await task

    assert seen[0] == (True, 48) and seen[-1] == (False, 0), seen
    assert all(n == 48 for ok, n in seen if ok), seen  # never "read" with zero CPUs
    st = store.get("xeon")
    assert st.samples == {} and self_samples(st)["pinscope_read_success"][0].value == 0.0
    err = capsys.readouterr().err
    # the read that finds the tree gone says so; when the probe ended with it (the directory removed under
    # a loaded machine's slow tick) the reconnect says the --root is gone: either way, why
    why = ("nothing of the node could be read (no CPU): /sys/devices/system/cpu/online: missing",
           f"--root {root}: no such directory")
    assert st.error.startswith(why if how == "root removed" else why[:1]), st.error
    assert f"pinscope exporter: xeon: {st.error}\n" in err


async def test_a_state_file_that_becomes_a_fifo_is_gone_from_the_next_read_not_carried(tmp_path):
    """Issue 22 item 5: the deeper frames carried between reads kept the old checkpoint after the file
    became a FIFO (exclusive CPUs and no STATE_UNREADABLE for the next 9 reads). The read that finds the
    FIFO drops it: no exclusive CPU from it, the finding fires, the file is named as refused."""
    import asyncio
    import os

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.exporter.serve import exporter_depth
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    root = tmp_path / "n"
    SimNode(dual_socket_intel(), root).write()
    state = root / "var/lib/kubelet/cpu_manager_state"

    async with asyncio.timeout(60):
        col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
        await col.connect()
        try:
            out = []
            for i in range(4):
                if i == 2:
                    state.unlink()
                    os.mkfifo(state)
                rep = await col.tick(exporter_depth(col.ticks))
                out.append((rep, node_samples("xeon", rep)))
            seen = out
        finally:
            await col.close()

    for rep, s in seen[:2]:
        roles = {x.labels["role"]: x.value for x in s["pinscope_cpus"]}
        assert roles["exclusive"] == 8.0
        assert [x.labels["roles_from"] for x in s["pinscope_node_info"]] == ["state"]
        assert "STATE_UNREADABLE" not in {x.labels["code"] for x in s["pinscope_finding"]}
    for rep, s in seen[2:]:
        assert "c" not in rep.snapshot.request.split(" ")[0]  # grid reads: the deeper frame is carried
        # the cgroups' cpusets may still show CPUs exclusive (the kernel's word); kubelet's is gone: the
        # roles now come from the cgroups, never from the old checkpoint
        assert rep.snapshot.state_status == "unreadable"
        assert [x.labels["roles_from"] for x in s["pinscope_node_info"]] == ["cgroups"]
        assert "STATE_UNREADABLE" in {x.labels["code"] for x in s["pinscope_finding"]}
        assert any(p.source == "/var/lib/kubelet/cpu_manager_state" and "fifo" in p.message
                   for p in rep.snapshot.problems)
        assert rep.snapshot.state is None
