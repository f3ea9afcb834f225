"""Latency readiness through the real probe on fixture trees (issue 37): each finding both ways (present;
silent on a node that does not use the mechanism), the checklist's score, and the probe's bounds on the
admins' files (a FIFO refused, an endless file not read)."""
import asyncio
import os

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode

CPU = "sys/devices/system/cpu"


def spec(**kw) -> NodeSpec:
    """8 CPUs (4 cores x 2 threads, amd numbering), reserved 0-1, "rt/engine" pinned to 2-5."""
    base = dict(hostname="rt-node", sockets=1, cores=4, threads=2, numbering="amd", cgroup=2, driver="systemd",
                policy="static", reserved="0-1", pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="2-5")])])
    base.update(kw)
    return NodeSpec(**base)


def write(root, files: dict) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def read(root) -> dict:
    return asyncio.run(asyncio.wait_for(snapshot("local", Options(root=str(root), frame_timeout=10)), 30)).to_json()


def node(tmp_path, files: dict | None = None, **kw) -> dict:
    root = tmp_path / "node"
    SimNode(spec(**kw), root).write()
    write(root, files or {})
    return read(root)


def codes(o) -> dict:
    return {f["code"]: f for f in o["findings"]}


def cpufreq(cpus, governor) -> dict:
    out = {}
    for c in cpus:
        d = f"{CPU}/cpu{c}/cpufreq"
        out |= {f"{d}/scaling_driver": "intel_pstate\n", f"{d}/scaling_governor": f"{governor}\n",
                f"{d}/scaling_min_freq": "800000\n", f"{d}/scaling_max_freq": "3500000\n",
                f"{d}/cpuinfo_min_freq": "800000\n", f"{d}/cpuinfo_max_freq": "3500000\n"}
    return out


def cpuidle(cpus, c6_disabled: bool, qos: str = "0") -> dict:
    out = {}
    for c in cpus:
        d = f"{CPU}/cpu{c}/cpuidle"
        for i, (name, lat, dis) in enumerate((("POLL", 0, 0), ("C1", 2, 0), ("C6", 133, int(c6_disabled)))):
            out |= {f"{d}/state{i}/name": f"{name}\n", f"{d}/state{i}/latency": f"{lat}\n",
                    f"{d}/state{i}/disable": f"{dis}\n"}
        out[f"{CPU}/cpu{c}/power/pm_qos_resume_latency_us"] = f"{qos}\n"
    return out


# ----------------------------------------------------------------------------- isolation


def test_exclusive_not_isolated_while_the_node_isolates_others(tmp_path):
    o = node(tmp_path, isolated="6-7")
    f = codes(o)["EXCLUSIVE_NOT_ISOLATED"]
    assert f["cpus"] == [2, 3, 4, 5] and f["severity"] == "warning"
    assert any("isolcpus=6-7" in e for e in f["evidence"]) and "nohz_full=" in f["hint"]
    assert set(o["readiness"]["checks"][0].items()) >= {("check", "isolated"), ("status", "no")}


def test_silent_when_the_node_isolates_nothing_or_the_pinned_cpus(tmp_path):
    assert "EXCLUSIVE_NOT_ISOLATED" not in codes(node(tmp_path / "a"))
    o = node(tmp_path / "b", isolated="2-5", nohz_full="2-5\n")
    assert "EXCLUSIVE_NOT_ISOLATED" not in codes(o)
    assert {c["check"]: c["status"] for c in o["readiness"]["checks"]}["nohz_full"] == "ok"


def test_reserved_tickless_both_ways(tmp_path):
    f = codes(node(tmp_path / "a", nohz_full="1-7\n"))["RESERVED_TICKLESS"]
    assert f["cpus"] == [1] and any("reservedSystemCPUs = 0-1" in e for e in f["evidence"])
    assert "RESERVED_TICKLESS" not in codes(node(tmp_path / "b", nohz_full="2-7\n"))


def test_reserved_isolated_both_ways(tmp_path):
    """Reserved 0-1, pinned 2-5. isolcpus=0,2-5 (no flag: domain; sysfs isolated the same): reserved CPU 0 is out
    of the scheduler's load balancing: RESERVED_ISOLATED names it, the housekeeping check says no, and
    ISOLATED_IN_SHARED_POOL (0 is in the shared pool too) leaves it to RESERVED_ISOLATED."""
    o = node(tmp_path / "a", isolated="0,2-5")
    f = codes(o)["RESERVED_ISOLATED"]
    assert f["cpus"] == [0] and f["message"] == "reserved CPU 0 is isolated from the scheduler (isolcpus)"
    assert "/proc/cmdline: isolcpus=0,2-5" in f["evidence"] and "reservedSystemCPUs = 0-1" in f["evidence"]
    assert "ISOLATED_IN_SHARED_POOL" not in codes(o)
    hk = next(c for c in o["readiness"]["checks"] if c["check"] == "housekeeping")
    assert (hk["status"], hk["detail"]) == ("no", "0 in isolcpus (domain) / isolated = 0,2-5")
    # isolated 2-5 only (the pinned ones): silent, and the check names what it judged
    o = node(tmp_path / "b", isolated="2-5")
    assert "RESERVED_ISOLATED" not in codes(o)
    hk = next(c for c in o["readiness"]["checks"] if c["check"] == "housekeeping")
    assert (hk["status"], hk["detail"]) == ("ok", "0-1 not in nohz_full = (empty), isolcpus (domain) / isolated = 2-5")


def test_reserved_under_managed_irq_only_is_not_domain_isolated(tmp_path):
    """isolcpus=managed_irq,0-5: managed IRQs kept off 0-5, the scheduler still balances there (no domain flag;
    sysfs isolated empty): not RESERVED_ISOLATED."""
    o = node(tmp_path, {"proc/cmdline": "BOOT_IMAGE=/vmlinuz ro isolcpus=managed_irq,0-5\n",
                        f"{CPU}/isolated": "\n"})
    assert "RESERVED_ISOLATED" not in codes(o)
    assert o["readiness"]["kernel"]["isolcpus_flags"] == ["managed_irq"]


def test_isolated_in_the_shared_pool_never_advises_the_reserved_set(tmp_path):
    """isolcpus=2-7 with 2-5 pinned: 6-7 isolated in the shared pool. The fix drops them from isolcpus; it no
    longer says to move them into reservedSystemCPUs (reserved CPUs must never be isolated, issue 37 item 1)."""
    f = codes(node(tmp_path, isolated="2-7"))["ISOLATED_IN_SHARED_POOL"]
    assert f["cpus"] == [6, 7] and "drop these CPUs from isolcpus=" in f["hint"]
    assert "put isolated CPUs in reservedSystemCPUs" not in f["hint"] and "must never be isolated" in f["hint"]


# ----------------------------------------------------------------------------- IRQ steering


def test_irqbalance_running_without_a_ban_is_a_finding(tmp_path):
    o = node(tmp_path, {"etc/default/irqbalance": "#IRQBALANCE_BANNED_CPULIST=\n"},
             other_tasks=[("irqbalance", 0, False)])
    f = codes(o)["IRQBALANCE_NOT_BANNED"]
    assert f["cpus"] == [2, 3, 4, 5] and any("default" in e for e in f["evidence"])
    assert o["readiness"]["irqbalance"]["running"] is True


def test_irqbalance_ban_by_list_or_hex_or_not_running_is_silent(tmp_path):
    o = node(tmp_path / "a", {"etc/default/irqbalance": 'IRQBALANCE_BANNED_CPULIST="2-5"\n'},
             other_tasks=[("irqbalance", 0, False)])
    assert "IRQBALANCE_NOT_BANNED" not in codes(o) and o["readiness"]["irqbalance"]["banned"] == [2, 3, 4, 5]
    o = node(tmp_path / "b", {"etc/sysconfig/irqbalance": "IRQBALANCE_BANNED_CPUS=3c\n"},
             other_tasks=[("irqbalance", 0, False)])
    assert "IRQBALANCE_NOT_BANNED" not in codes(o)
    o = node(tmp_path / "c", {"etc/default/irqbalance": "\n"})  # installed, not running
    assert "IRQBALANCE_NOT_BANNED" not in codes(o) and o["readiness"]["irqbalance"]["running"] is False
    assert {c["check"]: c["status"] for c in o["readiness"]["checks"]}["irqbalance"] == "n/a"


def test_default_irq_affinity_on_exclusive_only_with_intent(tmp_path):
    files = {"proc/irq/default_smp_affinity": "ff\n"}
    f = codes(node(tmp_path / "a", files, isolated="6-7"))["IRQ_DEFAULT_ON_EXCLUSIVE"]
    assert f["cpus"] == [2, 3, 4, 5] and f["severity"] == "info"
    assert "IRQ_DEFAULT_ON_EXCLUSIVE" not in codes(node(tmp_path / "b", files))
    assert "IRQ_DEFAULT_ON_EXCLUSIVE" not in codes(node(tmp_path / "c", {"proc/irq/default_smp_affinity": "03\n"},
                                                       isolated="6-7"))


# ----------------------------------------------------------------------------- power


def test_powersave_governor_on_a_pinned_cpu(tmp_path):
    f = codes(node(tmp_path, cpufreq(range(8), "powersave")))["PINNED_CPU_POWERSAVE"]
    assert f["cpus"] == [2, 3, 4, 5]
    assert any("scaling_governor = powersave" in e and "3500 MHz" in e for e in f["evidence"])


def test_performance_governor_and_no_cpufreq_are_silent(tmp_path):
    o = node(tmp_path / "a", cpufreq(range(8), "performance"))
    assert "PINNED_CPU_POWERSAVE" not in codes(o)
    assert {c["check"]: c["status"] for c in o["readiness"]["checks"]}["governor"] == "ok"
    o = node(tmp_path / "b")  # a VM: no cpufreq
    assert "PINNED_CPU_POWERSAVE" not in codes(o)
    assert {c["check"]: c["status"] for c in o["readiness"]["checks"]}["governor"] == "n/a"


def test_deep_cstate_allowed_on_a_pinned_cpu(tmp_path):
    o = node(tmp_path, cpuidle(range(8), c6_disabled=False))
    f = codes(o)["PINNED_CPU_DEEP_CSTATE"]
    assert f["cpus"] == [2, 3, 4, 5] and any("C6, latency 133 µs" in e for e in f["evidence"])
    cpu2 = next(c for c in o["readiness"]["cpus"] if c["id"] == 2)
    assert cpu2["deepest_cstate"] == "C6" and cpu2["deepest_cstate_latency_us"] == 133


def test_cstates_disabled_or_limited_by_pm_qos_or_absent_are_silent(tmp_path):
    assert "PINNED_CPU_DEEP_CSTATE" not in codes(node(tmp_path / "a", cpuidle(range(8), c6_disabled=True)))
    o = node(tmp_path / "b", cpuidle(range(8), c6_disabled=False, qos="n/a"))
    assert "PINNED_CPU_DEEP_CSTATE" not in codes(o)
    assert next(c for c in o["readiness"]["cpus"] if c["id"] == 2)["deepest_cstate"] == "POLL"
    assert "PINNED_CPU_DEEP_CSTATE" not in codes(node(tmp_path / "c"))  # no cpuidle files


# ----------------------------------------------------------------------------- scheduler, memory


def test_rt_throttling_with_isolation_intent_only(tmp_path):
    files = {"proc/sys/kernel/sched_rt_runtime_us": "950000\n", "proc/sys/kernel/sched_rt_period_us": "1000000\n"}
    f = codes(node(tmp_path / "a", files, isolated="2-5", nohz_full="2-5\n"))["RT_THROTTLING_ON"]
    assert f["severity"] == "info" and "950000" in f["message"]
    assert "RT_THROTTLING_ON" not in codes(node(tmp_path / "b", files))
    assert "RT_THROTTLING_ON" not in codes(node(tmp_path / "c", {"proc/sys/kernel/sched_rt_runtime_us": "-1\n"},
                                                isolated="2-5"))


def _leaf(o) -> str:
    return next(p for p in o["pods"] if p["name"] == "engine-0")["containers"][0]["cgroup"]


def test_hugepages_on_another_numa_node(tmp_path):
    kw = dict(sockets=2, cores=2, threads=2, numbering="intel", reserved="0",
              pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="1,5")])])
    root = tmp_path / "node"
    SimNode(spec(**kw), root).write()
    leaf = _leaf(read(root))
    write(root, {leaf.lstrip("/") + "/hugetlb.2MB.numa_stat": "total=4194304 N0=0 N1=4194304\n",
                 leaf.lstrip("/") + "/cpuset.cpus.partition": "isolated\n"})
    o = read(root)
    f = codes(o)["PINNED_MEMORY_REMOTE"]
    assert f["container"] == "engine" and any("N1=4194304" in e for e in f["evidence"])
    assert {c["check"]: c["status"] for c in o["readiness"]["checks"]}["load_balance"] == "ok"
    write(root, {leaf.lstrip("/") + "/hugetlb.2MB.numa_stat": "total=4194304 N0=4194304 N1=0\n"})
    o = read(root)
    assert "PINNED_MEMORY_REMOTE" not in codes(o)
    assert {c["check"]: c["status"] for c in o["readiness"]["checks"]}["numa_memory"] == "ok"


# ----------------------------------------------------------------------------- the checklist, the bounds


def test_a_tuned_node_scores_full_and_a_plain_one_scores_only_what_applies(tmp_path):
    tuned = {"proc/irq/default_smp_affinity": "03\n", "proc/sys/kernel/sched_rt_runtime_us": "-1\n",
             "proc/sys/kernel/timer_migration": "0\n", "sys/devices/virtual/workqueue/cpumask": "03\n",
             "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
             "etc/tuned/active_profile": "cpu-partitioning\n",
             "etc/tuned/cpu-partitioning-variables.conf": "isolated_cores=2-7\n"}
    tuned |= cpufreq(range(8), "performance") | cpuidle(range(8), c6_disabled=True)
    o = node(tmp_path / "a", tuned, isolated="2-7", nohz_full="2-7\n")
    r = o["readiness"]
    bad = [c for c in r["checks"] if c["status"] == "no"]
    assert not bad, bad
    assert r["tuned"] == {"profile": "cpu-partitioning", "isolated_cores": "2-7"}
    assert r["score"] == {"ok": 12, "applicable": 12} and not [f for f in o["findings"] if f["code"] in READINESS]
    st = {c["check"]: c["status"] for c in r["checks"]}
    assert st["irqbalance"] == "n/a" and st["load_balance"] == "unknown"  # not running; partition file not there
    plain = node(tmp_path / "b")["readiness"]
    assert plain["target"] == [2, 3, 4, 5] and plain["score"]["ok"] < plain["score"]["applicable"]
    st = {c["check"]: c["status"] for c in plain["checks"]}
    assert st["governor"] == st["cstates"] == "n/a"


READINESS = {"EXCLUSIVE_NOT_ISOLATED", "RESERVED_TICKLESS", "RESERVED_ISOLATED", "IRQBALANCE_NOT_BANNED", "IRQ_DEFAULT_ON_EXCLUSIVE",
             "PINNED_CPU_POWERSAVE", "PINNED_CPU_DEEP_CSTATE", "RT_THROTTLING_ON", "PINNED_MEMORY_REMOTE"}


def test_admins_files_a_fifo_is_refused_and_a_huge_file_not_read(tmp_path):
    root = tmp_path / "node"
    SimNode(spec(), root).write()
    (root / "etc/default").mkdir(parents=True)
    os.mkfifo(root / "etc/default/irqbalance")  # opened, it would block the probe forever
    (root / "etc/tuned").mkdir(parents=True)
    (root / "etc/tuned/cpu-partitioning-variables.conf").write_text("isolated_cores=" + "1," * 600_000 + "\n")
    o = read(root)
    errs = {e["source"]: e["message"] for e in o["errors"]}
    assert "fifo" in errs["/etc/default/irqbalance"]
    assert "not read" in errs["/etc/tuned/cpu-partitioning-variables.conf"]
    assert o["readiness"]["tuned"]["isolated_cores"] is None and o["readiness"]["irqbalance"]["files"] == []


def test_every_readiness_code_is_tested_here():
    from pinscope.collectors.findings.base import REGISTRY

    mine = {code for c in REGISTRY if c.fn.__module__.endswith("findings.readiness") for code in c.codes}
    assert mine == READINESS
