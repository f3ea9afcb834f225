"""Latency readiness, the issue 37 audit: each finding both ways where test_readiness_findings.py left a side
out, on files shaped as real nodes write them (expected values worked out by hand, in the comments).

Shapes: a kernel built with NO_HZ_FULL but booted without nohz_full= prints "(null)" in
/sys/devices/system/cpu/nohz_full; one built without it has no file (this CI's VM); RHEL's stock
/etc/sysconfig/irqbalance is all comments but IRQBALANCE_ARGS; a KVM guest with cpuidle-haltpoll has the
states POLL (0 µs) and "haltpoll idle" (1 µs); acpi_idle on a Xeon names C1 (1 µs), C2 (41 µs) and C3 (1000 µs);
tuned's shipped cpu-partitioning-variables.conf has isolated_cores=${f:calc_isolated_cores:1} until an admin
writes a list; kubelet's memory_manager_state v1 with checksum 0 (accepted as is: collectors/parse/memstate.py).
"""
import json

from test_readiness_findings import READINESS, codes, node, read, spec, write

from pinscope.collectors.sim.node import CtrSpec, PodSpec, SimNode

CPU = "sys/devices/system/cpu"


def status(o) -> dict:
    return {c["check"]: c["status"] for c in o["readiness"]["checks"]}


def mine(o) -> set:
    return {f["code"] for f in o["findings"]} & READINESS


# ----------------------------------------------------------------------------- RESERVED_TICKLESS


def test_reserved_tickless_silent_when_the_kernel_has_no_tickless_cpu(tmp_path):
    """Reserved 0-1, pinned 2-5. "(null)": the mask was never allocated (no nohz_full= given): no CPU is
    tickless, so reserved CPUs keep their tick (housekeeping ok); no file at all: the same from the command line
    (read, no nohz_full=)."""
    for name, kw in (("null", dict(nohz_full="(null)\n")), ("nofile", {})):
        o = node(tmp_path / name, **kw)
        assert "RESERVED_TICKLESS" not in codes(o), name
        assert status(o)["housekeeping"] == "ok" and status(o)["nohz_full"] == "no", name
        assert o["readiness"]["nohz_full"] == ([] if name == "null" else None)


def test_reserved_tickless_names_only_the_reserved_cpus_in_nohz_full(tmp_path):
    """nohz_full=0-7 on the command line and in sysfs (an admin's "every CPU" list): of reserved 0-1 both
    are tickless; the pinned 2-5 are not named."""
    o = node(tmp_path, {"proc/cmdline": "BOOT_IMAGE=/vmlinuz ro nohz_full=0-7\n"}, nohz_full="0-7\n")
    f = codes(o)["RESERVED_TICKLESS"]
    assert f["cpus"] == [0, 1] and "/proc/cmdline: nohz_full=0-7" in f["evidence"]
    assert status(o)["housekeeping"] == "no"


# ----------------------------------------------------------------------------- IRQBALANCE_NOT_BANNED


def test_irqbalance_absent_altogether_is_not_applicable(tmp_path):
    """No irqbalance installed (no file) and none running: nothing to judge."""
    o = node(tmp_path)
    assert "IRQBALANCE_NOT_BANNED" not in codes(o)
    assert status(o)["irqbalance"] == "n/a" and o["readiness"]["irqbalance"] == {
        "running": False, "banned": [], "banned_from": "irqbalance's default: isolated ∪ nohz_full", "files": []}


def test_irqbalance_rhel_stock_file_without_a_ban_on_a_plain_node(tmp_path):
    """RHEL's shipped file sets no ban; the node isolates nothing: irqbalance's own ban is empty, and it runs,
    so all pinned CPUs 2-5 may get device IRQs."""
    stock = ("# irqbalance is a daemon process that distributes interrupts across\n"
             "#IRQBALANCE_ONESHOT=\n#IRQBALANCE_BANNED_CPUS=\n#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ARGS=\n")
    o = node(tmp_path, {"etc/sysconfig/irqbalance": stock}, other_tasks=[("irqbalance", 0, False)])
    f = codes(o)["IRQBALANCE_NOT_BANNED"]
    assert f["cpus"] == [2, 3, 4, 5]
    assert "banned CPUs = (none) (irqbalance's default: isolated ∪ nohz_full)" in f["evidence"]
    assert o["readiness"]["irqbalance"]["files"] == [{"path": "/etc/sysconfig/irqbalance"}]


def test_irqbalance_default_ban_of_isolated_cpus_covers_the_pinned_ones(tmp_path):
    """No variable set, isolcpus=2-5 (sysfs isolated 2-5): irqbalance bans 2-5 itself: silent."""
    o = node(tmp_path, {"etc/default/irqbalance": "#IRQBALANCE_BANNED_CPULIST=\n"}, isolated="2-5",
             other_tasks=[("irqbalance", 0, False)])
    assert "IRQBALANCE_NOT_BANNED" not in codes(o)
    assert o["readiness"]["irqbalance"]["banned"] == [2, 3, 4, 5] and status(o)["irqbalance"] == "ok"


def test_irqbalance_partial_ban_names_only_the_cpus_left_out(tmp_path):
    """IRQBALANCE_BANNED_CPULIST=2-3 of pinned 2-5: 4 and 5 are left to irqbalance."""
    o = node(tmp_path, {"etc/default/irqbalance": "IRQBALANCE_BANNED_CPULIST=2-3\n"},
             other_tasks=[("irqbalance", 0, False)])
    assert codes(o)["IRQBALANCE_NOT_BANNED"]["cpus"] == [4, 5]
    assert [c["not_ready"] for c in o["readiness"]["cpus"] if c["id"] in (3, 4)] == [
        [], ["irqbalance may steer IRQs here"]]


# ----------------------------------------------------------------------------- EXCLUSIVE_NOT_ISOLATED by tuned


def test_tuned_names_an_isolated_set_the_kernel_was_not_booted_with(tmp_path):
    """tuned cpu-partitioning applied, isolated_cores=6-7, no reboot yet (no kernel parameter): the node's
    intent is 6-7, not the pinned 2-5: a finding, its evidence the tuned file and the active profile."""
    o = node(tmp_path, {"etc/tuned/active_profile": "cpu-partitioning\n",
                        "etc/tuned/cpu-partitioning-variables.conf": "# Examples:\n# isolated_cores=2,4-7\nisolated_cores=6-7\n"})
    f = codes(o)["EXCLUSIVE_NOT_ISOLATED"]
    assert f["cpus"] == [2, 3, 4, 5] and "while the node isolates 6-7" in f["message"]
    assert ("/etc/tuned/cpu-partitioning-variables.conf: isolated_cores=6-7 (active profile cpu-partitioning)"
            in f["evidence"])


def test_tuned_shipped_expression_is_unknown_not_intent(tmp_path):
    """The shipped file's ${f:calc_isolated_cores:1} is tuned's to work out: no intent read, silent."""
    o = node(tmp_path, {"etc/tuned/active_profile": "cpu-partitioning\n",
                        "etc/tuned/cpu-partitioning-variables.conf": "isolated_cores=${f:calc_isolated_cores:1}\n"})
    assert not mine(o) - {"IRQ_DEFAULT_ON_EXCLUSIVE"} and "EXCLUSIVE_NOT_ISOLATED" not in codes(o)
    assert o["readiness"]["tuned"] == {"profile": "cpu-partitioning", "isolated_cores": "${f:calc_isolated_cores:1}"}
    assert o["readiness"]["target_from"] == "exclusive"


# ----------------------------------------------------------------------------- C-states, real drivers


def _idle(cpus, states) -> dict:
    out = {}
    for c in cpus:
        for i, (name, lat, dis) in enumerate(states):
            d = f"{CPU}/cpu{c}/cpuidle/state{i}"
            out |= {f"{d}/name": name + "\n", f"{d}/latency": f"{lat}\n", f"{d}/disable": f"{dis}\n"}
        out[f"{CPU}/cpu{c}/power/pm_qos_resume_latency_us"] = "0\n"
    return out


def test_haltpoll_guest_is_never_a_deep_cstate(tmp_path):
    """KVM guest (this CI's shape): POLL 0 µs, "haltpoll idle" 1 µs: deepest 1 µs, within 10: ok, silent."""
    o = node(tmp_path, _idle(range(8), (("POLL", 0, 0), ("haltpoll idle", 1, 0))))
    assert "PINNED_CPU_DEEP_CSTATE" not in codes(o)
    assert status(o)["cstates"] == "ok"
    cpu2 = next(c for c in o["readiness"]["cpus"] if c["id"] == 2)
    assert (cpu2["deepest_cstate"], cpu2["deepest_cstate_latency_us"]) == ("haltpoll idle", 1)


def test_acpi_idle_c3_on_pinned_cpus_and_disabled_on_the_others(tmp_path):
    """acpi_idle: C1 1, C2 41, C3 1000 µs. C3 left on for CPUs 4-5, off (C2 deepest, 41 µs) on 2-3: all four
    over 10 µs; the worst is 1000."""
    files = _idle((0, 1, 2, 3, 6, 7), (("POLL", 0, 0), ("C1", 1, 0), ("C2", 41, 0), ("C3", 1000, 1)))
    files |= _idle((4, 5), (("POLL", 0, 0), ("C1", 1, 0), ("C2", 41, 0), ("C3", 1000, 0)))
    f = codes(node(tmp_path, files))["PINNED_CPU_DEEP_CSTATE"]
    assert f["cpus"] == [2, 3, 4, 5] and "up to 1000 µs" in f["message"]
    assert ("/sys/devices/system/cpu/cpu4/cpuidle/state3: C3, latency 1000 µs, disable 0; "
            "power/pm_qos_resume_latency_us = 0 (no limit)") in f["evidence"]


# ----------------------------------------------------------------------------- PINNED_MEMORY_REMOTE by the memory manager


def _mm_node(tmp_path, numa: list[int]):
    """2 sockets x 2 cores x 2 threads (intel numbering: NUMA 0 = CPUs 0,1,4,5; NUMA 1 = 2,3,6,7), rt/engine
    pinned to 1,5 (NUMA 0); kubelet's memory manager gave its memory NUMA nodes `numa`."""
    kw = dict(sockets=2, cores=2, threads=2, numbering="intel", reserved="0",
              pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="1,5")])])
    root = tmp_path / "node"
    SimNode(spec(**kw), root).write()
    uid = next(p["uid"] for p in read(root)["pods"] if p["name"] == "engine-0")
    mm = {"policyName": "Static", "machineState": {}, "checksum": 0,
          "entries": {uid: {"engine": [{"numaAffinity": numa, "type": "memory", "size": 1073741824}]}}}
    write(root, {"var/lib/kubelet/memory_manager_state": json.dumps(mm)})
    return read(root)


def test_memory_manager_assignment_on_another_numa_node(tmp_path):
    o = _mm_node(tmp_path, [1])
    f = codes(o)["PINNED_MEMORY_REMOTE"]
    assert (f["pod"], f["container"], f["cpus"]) == ("engine-0", "engine", [1, 5])
    assert "memory on NUMA node 1, its CPUs on 0" in f["message"]
    uid = o["readiness"]["containers"][0]["pod_uid"]
    assert (f"/var/lib/kubelet/memory_manager_state: entries[{uid}][engine]: type memory, size 1073741824, "
            "numaAffinity 1") in f["evidence"]
    assert status(o)["numa_memory"] == "no"


def test_memory_manager_assignment_beside_the_cpus_is_silent(tmp_path):
    o = _mm_node(tmp_path, [0])
    assert "PINNED_MEMORY_REMOTE" not in codes(o) and status(o)["numa_memory"] == "ok"
    assert o["readiness"]["containers"][0]["memory_manager_nodes"] == [0]


def test_no_hugepages_and_no_memory_manager_is_not_applicable(tmp_path):
    o = node(tmp_path)
    assert "PINNED_MEMORY_REMOTE" not in codes(o) and status(o)["numa_memory"] == "n/a"


async def test_a_new_memory_manager_assignment_is_judged_on_the_next_static_frame(tmp_path):
    """One collector, two static frames: only memory_manager_state changed (NUMA 0 -> 1) between them. The
    readiness judged on the first was kept (its cache key held the parsed tuning, roles, containers and
    tasks, not the memory manager's state): the finding never came."""
    import asyncio

    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.transport.local import LocalTransport

    o = await asyncio.to_thread(_mm_node, tmp_path, [0])  # it reads the node in an asyncio.run of its own
    root = tmp_path / "node"
    uid = next(p["uid"] for p in o["pods"] if p["name"] == "engine-0")

    def mm(numa):
        return json.dumps({"policyName": "Static", "machineState": {}, "checksum": 0,
                           "entries": {uid: {"engine": [{"numaAffinity": numa, "type": "memory", "size": 1 << 30}]}}})

    async with asyncio.timeout(60):
        col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
        col.static_every = 1  # every tick reads the static files
        await col.connect()
        try:
            first = await col.tick()
            write(root, {"var/lib/kubelet/memory_manager_state": mm([1])})
            second = await col.tick()
        finally:
            await col.close()

    assert "PINNED_MEMORY_REMOTE" not in {f.code for f in first.findings}
    assert [f.code for f in second.findings if f.code == "PINNED_MEMORY_REMOTE"] == ["PINNED_MEMORY_REMOTE"]
    assert second.snapshot.readiness.containers[0].memory_manager_nodes == {1}
