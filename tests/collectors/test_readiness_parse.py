"""Latency readiness parsers (issue 37): a literal string and an assertion each."""
from pinscope.collectors.parse.readiness import (IdleState, deepest_allowed, irqbalance_banned, parse_cmdline,
                                                 parse_hugetlb_numa, parse_irqbalance, parse_pm_qos, parse_readiness,
                                                 parse_thp, parse_tuned_vars)

CPU = "/sys/devices/system/cpu"


def test_cmdline_isolation_parameters_with_flags():
    k = parse_cmdline("BOOT_IMAGE=/vmlinuz ro isolcpus=managed_irq,domain,2-5,8 nohz_full=2-5 rcu_nocbs=2-5 "
                      "irqaffinity=0-1 quiet\n", 15)
    assert k.isolcpus == {2, 3, 4, 5, 8} and k.isolcpus_flags == ("managed_irq", "domain")
    assert k.nohz_full == {2, 3, 4, 5} and k.rcu_nocbs == {2, 3, 4, 5} and k.irqaffinity == {0, 1}
    assert k.raw["isolcpus"] == "managed_irq,domain,2-5,8"


def test_cmdline_isolcpus_without_flags_is_domain_and_unknown_flags_are_skipped():
    assert parse_cmdline("isolcpus=1-2").isolcpus_flags == ("domain",)
    k = parse_cmdline("isolcpus=nohz,frob,3")
    assert k.isolcpus == {3} and k.isolcpus_flags == ("nohz",)


def test_cmdline_absent_parameters_are_none_and_init_args_are_not_the_kernels():
    k = parse_cmdline("console=ttyS0 quiet -- --isolcpus=1 nohz_full=1")
    assert k.isolcpus is None and k.nohz_full is None and k.rcu_nocbs is None and k.irqaffinity is None


def test_cmdline_rcu_nocbs_alone_offloads_none_and_last_word_wins():
    assert parse_cmdline("rcu_nocbs").rcu_nocbs == frozenset()
    assert parse_cmdline("nohz_full=1 nohz_full=2-3").nohz_full == {2, 3}
    assert parse_cmdline("nohz_full=2-N", 7).nohz_full == {2, 3, 4, 5, 6, 7}


def test_cmdline_bad_list_is_a_problem_and_unknown():
    probs: list = []
    assert parse_cmdline("nohz_full=a-b", None, probs).nohz_full is None
    assert probs and "nohz_full" in probs[0].source


def test_irqbalance_debian_list_and_rhel_hex():
    deb = parse_irqbalance("/etc/default/irqbalance", '#IRQBALANCE_BANNED_CPULIST=0\nIRQBALANCE_BANNED_CPULIST="2-5"\n'
                           'IRQBALANCE_ARGS="--banirq=40"\n')
    assert deb.banned_list == {2, 3, 4, 5} and deb.banned_hex is None
    rhel = parse_irqbalance("/etc/sysconfig/irqbalance", "IRQBALANCE_BANNED_CPUS=0000003c\n")
    assert rhel.banned_hex == {2, 3, 4, 5} and rhel.banned_list is None
    assert parse_irqbalance("/etc/default/irqbalance", "#IRQBALANCE_BANNED_CPUS=\nIRQBALANCE_BANNED_CPUS=\n").banned_hex is None


def test_irqbalance_default_ban_is_isolated_union_nohz_full():
    none = parse_irqbalance("/etc/default/irqbalance", "IRQBALANCE_ONESHOT=\n")
    banned, how = irqbalance_banned((none,), frozenset({4}), frozenset({5, 6}))
    assert banned == {4, 5, 6} and "default" in how
    assert irqbalance_banned((), None, None)[0] is None
    conf = parse_irqbalance("/etc/default/irqbalance", "IRQBALANCE_BANNED_CPULIST=2\n")
    assert irqbalance_banned((conf,), frozenset({4}), None) == (frozenset({2}), "/etc/default/irqbalance: IRQBALANCE_BANNED_CPULIST=2")


def test_pm_qos_zero_is_no_limit_and_na_is_zero():
    assert parse_pm_qos("0\n") == (True, None)
    assert parse_pm_qos("n/a\n") == (True, 0)
    assert parse_pm_qos("20\n") == (True, 20)
    assert parse_pm_qos("x")[0] is False


def test_thp_tuned_hugetlb():
    assert parse_thp("always [madvise] never\n") == "madvise"
    assert parse_tuned_vars("# Examples:\n# isolated_cores=2,4-7\nisolated_cores=2-23\nno_balance_cores=\n") == "2-23"
    assert parse_tuned_vars("no_balance_cores=5\n") is None
    assert parse_hugetlb_numa("total=4194304 N0=0 N1=4194304\n") == {0: 0, 1: 4194304}


def test_deepest_allowed_idle_state_honours_disable_and_pm_qos():
    st = (IdleState(0, "POLL", 0, False), IdleState(1, "C1", 2, False), IdleState(2, "C1E", 10, False),
          IdleState(3, "C6", 133, False))
    assert deepest_allowed(st, None).name == "C6"
    assert deepest_allowed(st, 20).name == "C1E"
    assert deepest_allowed(st, 0).name == "POLL"
    off = st[:3] + (IdleState(3, "C6", 133, True),)
    assert deepest_allowed(off, None).name == "C1E"
    assert deepest_allowed((), None) is None


def test_readiness_from_a_static_frame():
    files = {
        "/proc/cmdline": "isolcpus=2-3 nohz_full=2-3\n", f"{CPU}/isolated": "2-3\n", f"{CPU}/nohz_full": "2-3\n",
        "/proc/irq/default_smp_affinity": "3\n", "/proc/sys/kernel/sched_rt_runtime_us": "-1\n",
        "/proc/sys/kernel/timer_migration": "0\n", "/sys/devices/virtual/workqueue/cpumask": "3\n",
        "/sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        f"{CPU}/cpu2/cpufreq/scaling_governor": "performance\n", f"{CPU}/cpu2/cpufreq/scaling_driver": "acpi-cpufreq\n",
        f"{CPU}/cpu2/cpufreq/scaling_max_freq": "3000000\n", f"{CPU}/cpu2/cpufreq/cpuinfo_max_freq": "3500000\n",
        f"{CPU}/cpu2/cpuidle/state0/name": "POLL\n", f"{CPU}/cpu2/cpuidle/state0/latency": "0\n",
        f"{CPU}/cpu2/cpuidle/state0/disable": "0\n", f"{CPU}/cpu2/cpuidle/state1/name": "C6\n",
        f"{CPU}/cpu2/cpuidle/state1/latency": "133\n", f"{CPU}/cpu2/cpuidle/state1/disable": "1\n",
        f"{CPU}/cpu2/power/pm_qos_resume_latency_us": "n/a\n",
        "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages": "512\n",
        "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages": "500\n",
        "/etc/tuned/active_profile": "cpu-partitioning\n",
        "/etc/tuned/cpu-partitioning-variables.conf": "isolated_cores=2-3\n",
        "/sys/fs/cgroup/kubepods.slice/kubepods-podab.slice/cri-containerd-1.scope/cpuset.cpus.partition": "isolated\n",
        "/sys/fs/cgroup/kubepods.slice/kubepods-podab.slice/cri-containerd-1.scope/hugetlb.2MB.numa_stat":
            "total=2097152 N0=2097152\n",
        "/sys/fs/cgroup/cpuset/kubepods/podab/c1/cpuset.sched_load_balance": "0\n",
        "/sys/fs/cgroup/hugetlb/kubepods/podab/c1/hugetlb.2MB.usage_in_bytes": "4194304\n",
    }
    r = parse_readiness(files, 3)
    assert r.kernel.isolcpus == {2, 3} and r.isolated == {2, 3} and r.nohz_full == {2, 3}
    assert r.default_irq_affinity == {0, 1} and r.rt_runtime_us == -1 and r.timer_migration is False
    assert r.workqueue_cpumask == {0, 1} and r.thp == "always"
    assert r.power[2].governor == "performance" and r.power[2].max_khz == 3000000 and r.power[2].hw_max_khz == 3500000
    assert [s.name for s in r.idle[2]] == ["POLL", "C6"] and r.idle[2][1].disabled is True
    assert r.pm_qos_us == {2: 0}
    assert r.hugepages == ((0, 2048, 512, 500),)
    assert r.tuned_profile == "cpu-partitioning" and r.tuned_isolated == {2, 3}
    v2 = r.cgroups["/sys/fs/cgroup/kubepods.slice/kubepods-podab.slice/cri-containerd-1.scope"]
    assert v2.partition == "isolated" and v2.hugetlb_numa == {"2MB": {0: 2097152}}
    v1 = r.cgroups["/sys/fs/cgroup/cpuset/kubepods/podab/c1"]
    assert v1.load_balance is False and v1.hugetlb_bytes == {"2MB": 4194304}


def test_readiness_of_a_node_without_any_of_it_is_all_unknown():
    r = parse_readiness({"/proc/cmdline": "console=ttyS0\n"})
    assert r.isolated is None and r.nohz_full is None and r.power == {} and r.idle == {}
    assert r.rt_runtime_us is None and r.irqbalance == () and r.tuned_profile is None and r.thp is None
    assert r.kernel.isolcpus is None


def test_isolcpus_without_domain_is_no_scheduler_isolation():
    """isolcpus=managed_irq,2-5 (how OpenShift's performance profile and tuned's cpu-partitioning boot) keeps
    managed IRQs off 2-5 but leaves them in the scheduler's domains: /sys/.../isolated is empty and they are
    no "isolated" CPUs. The fallback to the command line is for kernels without that file only."""
    from pinscope.collectors.parse.topology import parse_topology

    base = {f"{CPU}/online": "0-7\n", f"{CPU}/possible": "0-7\n"}
    t = parse_topology(base | {f"{CPU}/isolated": "\n", "/proc/cmdline": "isolcpus=managed_irq,2-5\n"}, [])
    assert t.isolated == frozenset()
    t = parse_topology(base | {"/proc/cmdline": "isolcpus=managed_irq,2-5\n"}, [])  # old kernel: no file
    assert t.isolated == frozenset()
    t = parse_topology(base | {"/proc/cmdline": "isolcpus=domain,managed_irq,2-5\n"}, [])
    assert t.isolated == {2, 3, 4, 5}
