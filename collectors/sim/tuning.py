"""Latency tuning files for simulated nodes (issue 37): what tuned's cpu-partitioning leaves on a node, whole
or in part, as NodeSpec.extra_files ({path: text}, written after everything else, so /proc/cmdline here wins).
"""
from __future__ import annotations

from ..parse.cpuset import format_cpuset, parse_cpuset


def _mask(cpus: frozenset[int]) -> str:
    """A kernel bitmap in 32-bit groups, as /proc/irq/default_smp_affinity prints it."""
    v = sum(1 << c for c in cpus)
    n = max(1, (max(cpus, default=0) + 32) // 32)
    return ",".join(f"{(v >> (32 * i)) & 0xFFFFFFFF:08x}" for i in reversed(range(n)))


def _cpu_files(ncpus: int, governor: str, deep_ok: frozenset[int]) -> dict:
    """cpufreq and four idle states per CPU; C6 disabled except on `deep_ok`."""
    out = {}
    for c in range(ncpus):
        d = f"/sys/devices/system/cpu/cpu{c}"
        for k, v in (("scaling_driver", "intel_pstate"), ("scaling_governor", governor), ("scaling_min_freq", "800000"),
                     ("scaling_max_freq", "3500000"), ("cpuinfo_min_freq", "800000"), ("cpuinfo_max_freq", "3500000")):
            out[f"{d}/cpufreq/{k}"] = v + "\n"
        for i, (name, lat) in enumerate((("POLL", 0), ("C1", 2), ("C1E", 10), ("C6", 133))):
            out[f"{d}/cpuidle/state{i}/name"] = name + "\n"
            out[f"{d}/cpuidle/state{i}/latency"] = f"{lat}\n"
            out[f"{d}/cpuidle/state{i}/disable"] = "0\n" if name != "C6" or c in deep_ok else "1\n"
        out[f"{d}/power/pm_qos_resume_latency_us"] = "0\n"
    return out


def tuned(ncpus: int, reserved: str) -> dict:
    """A node tuned as cpu-partitioning leaves it: every CPU but the reserved ones isolated (managed IRQs),
    tickless, RCU offloaded; IRQs, workqueues and irqbalance kept to the reserved CPUs; performance governor,
    no C-state deeper than C1E; RT throttling and timer migration off; THP never."""
    res = parse_cpuset(reserved)
    iso = format_cpuset(frozenset(range(ncpus)) - res)
    out = _cpu_files(ncpus, "performance", frozenset())
    out |= {
        "/proc/cmdline": f"BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro isolcpus=managed_irq,{iso} nohz_full={iso} "
                         f"rcu_nocbs={iso} irqaffinity={reserved} intel_pstate=passive skew_tick=1\n",
        "/sys/devices/system/cpu/nohz_full": iso + "\n",
        "/proc/irq/default_smp_affinity": _mask(res) + "\n",
        "/proc/sys/kernel/sched_rt_runtime_us": "-1\n", "/proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "/proc/sys/kernel/timer_migration": "0\n",
        "/sys/devices/virtual/workqueue/cpumask": _mask(res) + "\n",
        "/sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
        "/sys/devices/system/cpu/intel_pstate/status": "passive\n",
        "/etc/tuned/active_profile": "cpu-partitioning\n",
        "/etc/tuned/cpu-partitioning-variables.conf": f"# Examples:\n# isolated_cores=2,4-7\nisolated_cores={iso}\n",
        "/etc/default/irqbalance": f'IRQBALANCE_BANNED_CPULIST="{iso}"\n',
    }
    return out


def half_tuned(ncpus: int, isolated: str, deep_ok: str) -> dict:
    """A node half done: nohz_full and isolcpus over `isolated` (not all the pinned CPUs), irqbalance running
    with no ban of its own, powersave governor, C6 left on for `deep_ok`, RT throttling on, THP always."""
    out = _cpu_files(ncpus, "powersave", frozenset(parse_cpuset(deep_ok)))
    out |= {
        "/proc/cmdline": f"BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro isolcpus=managed_irq,{isolated} nohz_full={isolated}\n",
        "/sys/devices/system/cpu/nohz_full": isolated + "\n",
        "/proc/irq/default_smp_affinity": _mask(frozenset(range(ncpus))) + "\n",
        "/proc/sys/kernel/sched_rt_runtime_us": "950000\n", "/proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "/proc/sys/kernel/timer_migration": "1\n",
        "/sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never\n",
        "/sys/devices/system/cpu/intel_pstate/status": "active\n",
        "/etc/default/irqbalance": "#IRQBALANCE_BANNED_CPULIST=\nIRQBALANCE_ONESHOT=\n",
    }
    return out
