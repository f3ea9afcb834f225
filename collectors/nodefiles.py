"""The node files: every path the probe reads or lists on a node, which request reads it, and what the
kernel or kubelet says of it. One catalog: frames.py takes from it what each request reads anew, and the
tests hold the probe (tests/collectors/test_nodefiles.py: what it reads on simulated nodes is here, and
everything here is read), the simulator and the parsers' paths against it.

A path is a pattern: `<n>` a number (a CPU, a NUMA node, a pid, an IRQ), `<name>` one path part (a PCI
address, a hugepage size, a pod's log directory), `<cg>` none or more parts below a cgroup hierarchy's
root (the kubepods roots, QoS, pod and container cgroups), `<kubepods>` a kubepods root's name,
`<kubelet-root>` kubelet's --root-dir (/var/lib/kubelet), `<kubelet-config>` its --config file,
`<kubelet-config-dir>` its --config-dir.
Requests (probe.sh "Requests"): s static, g grid, c cgroup detail, t pod tasks, T with status, w with
schedstat, a every task, i IRQs, n names; "f": whatever the request, when it names a focused container
(its files) or CPU. How: "sent" the probe sends the file (F/X/T/U/N lines), "shell" the probe's shell reads
it for itself (never sent), "listed" a directory the probe lists (D lines).
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class NodeFile:
    """One path pattern the probe reads. `requests`: the request letters that read it (see the module)."""

    path: str
    requests: str
    note: str
    how: str = "sent"


_SYS_CPU = "/sys/devices/system/cpu"
_SYS_NODE = "/sys/devices/system/node"
_TOPO = "kdoc ABI/stable/sysfs-devices-system-cpu, admin-guide/cputopology.rst"
_CACHE = "kdoc ABI/testing/sysfs-devices-system-cpu; id may be missing (arm64 without PPTT): grouped by shared_cpu_list"
_V2 = "cgroup v2, kdoc admin-guide/cgroup-v2.rst"
_V1 = "cgroup v1, kdoc admin-guide/cgroup-v1/cpusets.rst"
_BWC = "cgroup v1 cpu hierarchy, kdoc scheduler/sched-bwc.rst"
_TASK = "per thread; kdoc filesystems/proc.rst"
_READY = "latency readiness (issue 37), static only"
_PCI = "PCI address"

CATALOG: tuple[NodeFile, ...] = (
    # -- the static topology ("s": the client asks again when the online CPUs change)
    NodeFile(f"{_SYS_CPU}/online", "sg", "cpulist; the grid reads it every tick to see a CPU go or come"),
    *(NodeFile(f"{_SYS_CPU}/{n}", "s", f"cpulist; {_TOPO}") for n in ("offline", "possible", "present")),
    NodeFile(f"{_SYS_CPU}/isolated", "s", "isolcpus= CPUs (domain isolation); kubelet ignores isolcpus"),
    NodeFile(f"{_SYS_CPU}/nohz_full", "s", "nohz_full= CPUs; '(null)' on a NO_HZ_FULL kernel booted without it: none"),
    NodeFile(f"{_SYS_CPU}/kernel_max", "s", "the highest possible CPU index"),
    NodeFile(f"{_SYS_CPU}/smt/active", "s", "1 when SMT siblings are online (kdoc ABI/testing/sysfs-devices-system-cpu)"),
    NodeFile("/proc/cmdline", "s", "isolcpus=, nohz_full=, rcu_nocbs=, irqaffinity= (kdoc kernel-parameters.rst)"),
    NodeFile("/proc/sys/kernel/hostname", "s", "the node's name when no other is given"),
    NodeFile("/proc/1/status", "s", "init's Cpus_allowed_list: the CPUs the system's daemons start on"),
    NodeFile(f"{_SYS_CPU}/cpu<n>/online", "s", "0/1; absent for cpu0 on some architectures"),
    *(NodeFile(f"{_SYS_CPU}/cpu<n>/topology/{n}", "s", f"{_TOPO}; no topology/ when the CPU is offline")
      for n in ("physical_package_id", "die_id", "core_id")),
    NodeFile(f"{_SYS_CPU}/cpu<n>/topology/core_cpus_list", "s", "SMT siblings (5.7+; thread_siblings_list before)"),
    NodeFile(f"{_SYS_CPU}/cpu<n>/topology/thread_siblings_list", "s", "SMT siblings (deprecated name, older kernels)"),
    *(NodeFile(f"{_SYS_CPU}/cpu<n>/cache/index<n>/{n}", "s", _CACHE) for n in ("level", "type", "id", "shared_cpu_list")),
    *(NodeFile(f"{_SYS_NODE}/{n}", "s", "NUMA node lists; kdoc ABI/stable/sysfs-devices-node")
      for n in ("possible", "online", "has_cpu", "has_memory")),
    NodeFile(f"{_SYS_NODE}/node<n>/cpulist", "s", "a NUMA node's CPUs (none: CXL or PMEM memory)"),
    NodeFile(f"{_SYS_NODE}/node<n>/distance", "s", "the SLIT row (10 = local)"),
    # -- kubelet: the process, its flags and its files
    NodeFile("/proc/<n>/comm", "s", "find the kubelet process (comm 'kubelet'); read with the read builtin", "shell"),
    NodeFile("/proc/<n>/status", "s", "the kubelet process's Uid: (a non-root 'kubelet' is passed over)", "shell"),
    NodeFile("/proc/<n>/cmdline", "s", "kubelet's argv (sent as A lines): --config, --root-dir, --config-dir, "
             "--cgroup-root", "shell"),
    NodeFile("<kubelet-config>", "s", "KubeletConfiguration (kubelet.config.k8s.io/v1beta1); the shell reads its "
             "podLogsDir and cgroupRoot from its first 64 KiB (dd)"),
    NodeFile("<kubelet-config-dir>/<name>.conf", "s", "kubelet's config drop-ins (--config-dir, 1.30+), "
             "'.x.conf' and '.conf' too (kubelet's filepath.WalkDir lists dotfiles)"),
    NodeFile("<kubelet-root>/memory_manager_state", "s", "the memory manager's checkpoint (k/k cm/memorymanager/state)"),
    NodeFile("<kubelet-root>/allocated_pods_state", "s", "the resources kubelet admitted each pod with: which pods "
             "have pod-level resources (k/k pkg/kubelet/allocation/state)"),
    NodeFile("<kubelet-root>/cpu_manager_state", "g", "the CPU manager's checkpoint: kubelet writes it whole and "
             "renames it (k/k pkg/kubelet/util/store/filestore.go); sent only when it changed (rks)"),
    NodeFile("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", "g", "the device manager's checkpoint "
             "(issue 26), read as the CPU manager's (rkd); a fixed path, whatever kubelet's --root-dir"),
    NodeFile("<kubelet-root>/dra_manager_state", "g", "the DRA manager's checkpoint (1.32+), read as the CPU "
             "manager's (rkr)"),
    # -- devices (issue 26): where each sits
    NodeFile("/sys/bus/pci/devices/<name>/numa_node", "s", f"a {_PCI} function's NUMA node (-1: none)"),
    NodeFile("/proc/driver/nvidia/gpus/<name>/information", "s", f"NVIDIA's per-GPU file: GPU UUID -> {_PCI}"),
    # -- latency readiness (issue 37)
    NodeFile("/proc/irq/default_smp_affinity", "s", f"the mask new IRQs get; {_READY}"),
    *(NodeFile(f"/proc/sys/kernel/{n}", "s", f"RT throttling (-1: off); {_READY}")
      for n in ("sched_rt_runtime_us", "sched_rt_period_us")),
    NodeFile("/proc/sys/kernel/timer_migration", "s", f"timers follow the busy CPU; {_READY}"),
    NodeFile("/sys/devices/virtual/workqueue/cpumask", "s", f"where unbound workqueues run; {_READY}"),
    NodeFile("/sys/kernel/mm/transparent_hugepage/enabled", "s", f"THP; {_READY}"),
    *(NodeFile(f"{_SYS_CPU}/intel_pstate/{n}", "s", f"absent in many VMs: unknown, not wrong; {_READY}")
      for n in ("status", "no_turbo")),
    *(NodeFile(f"{_SYS_CPU}/cpu<n>/cpufreq/{n}", "s", f"scaling_cur_freq is never read (20 ms a read); {_READY}")
      for n in ("scaling_driver", "scaling_governor", "scaling_min_freq", "scaling_max_freq", "cpuinfo_min_freq",
                "cpuinfo_max_freq")),
    *(NodeFile(f"{_SYS_CPU}/cpu<n>/cpuidle/state<n>/{n}", "s", f"idle states, latency in µs; {_READY}")
      for n in ("name", "latency", "disable")),
    NodeFile(f"{_SYS_CPU}/cpu<n>/power/pm_qos_resume_latency_us", "s", f"0 = no limit; {_READY}"),
    *(NodeFile(f"{_SYS_NODE}/node<n>/hugepages/hugepages-<name>/{n}", "s", f"hugepages per NUMA node; {_READY}")
      for n in ("nr_hugepages", "free_hugepages")),
    *(NodeFile(p, "s", f"an admin's file (irqbalance's banned CPUs, tuned's profile), checked by one find; {_READY}")
      for p in ("/etc/default/irqbalance", "/etc/sysconfig/irqbalance", "/etc/tuned/active_profile",
                "/etc/tuned/cpu-partitioning-variables.conf")),
    NodeFile("/sys/fs/cgroup<cg>/cpuset.cpus.partition", "s", f"CRI-O cpu-load-balancing (isolated); {_V2}"),
    NodeFile("/sys/fs/cgroup<cg>/hugetlb.<name>.numa_stat", "s", f"a container's hugepages per NUMA node; {_V2}"),
    NodeFile("/sys/fs/cgroup/cpuset<cg>/cpuset.sched_load_balance", "s", f"CRI-O cpu-load-balancing (0); {_V1}"),
    NodeFile("/sys/fs/cgroup/hugetlb<cg>/hugetlb.<name>.usage_in_bytes", "s", f"a container's hugepages; {_V1}"),
    NodeFile("/sys/fs/cgroup/hugetlb<cg>/hugetlb.<name>.numa_stat", "s", f"the same per NUMA node, where the kernel "
             f"has it (since late 2021); {_V1}"),
    # -- cgroups: the hierarchy, then every kubepods cgroup (roots, QoS, pods, containers)
    NodeFile("/sys/fs/cgroup/cgroup.controllers", "s", f"there: cgroup v2 (tested, never read); {_V2}", "shell"),
    NodeFile("/sys/fs/cgroup<cg>/cgroup.subtree_control", "s", f"the controllers a cgroup hands down; {_V2}"),
    NodeFile("/sys/fs/cgroup<cg>/cgroup.controllers", "s", f"the controllers a kubepods root has; {_V2}"),
    NodeFile("/sys/fs/cgroup<cg>/cgroup.stat", "g", f"a kubepods root's nr_descendants: the leaves are globbed "
             f"anew only when it changed (each_leaf); {_V2}", "shell"),
    NodeFile("/sys/fs/cgroup<cg>/cpuset.cpus.effective", "g", f"CPUs granted (online only): the map; {_V2}"),
    NodeFile("/sys/fs/cgroup/cpuset.cpus.isolated", "g", f"root only: CPUs of isolated partitions (6.7+); {_V2}"),
    NodeFile("/sys/fs/cgroup<cg>/cpu.stat", "g", f"usage_usec, nr_throttled, throttled_usec; {_V2}"),
    NodeFile("/sys/fs/cgroup/cpuset<cg>/cpuset.effective_cpus", "g", f"CPUs granted; {_V1}"),
    NodeFile("/sys/fs/cgroup/cpu<cg>/cpu.stat", "g", f"nr_throttled, throttled_time (ns); {_BWC}"),
    NodeFile("/sys/fs/cgroup<cg>/cpu.pressure", "cf", f"PSI (CONFIG_PSI; psi=0: absent, not asked for); {_V2}"),
    *(NodeFile(f"/sys/fs/cgroup<cg>/{n}", "cf", f"requested cpuset, mems, quota; {_V2}")
      for n in ("cpuset.cpus", "cpuset.mems.effective", "cpu.max")),
    *(NodeFile(f"/sys/fs/cgroup/cpuset<cg>/{n}", "cf", f"requested cpuset, mems; {_V1}")
      for n in ("cpuset.cpus", "cpuset.effective_mems")),
    *(NodeFile(f"/sys/fs/cgroup/cpu<cg>/{n}", "cf", f"quota (-1: none) and period, µs; {_BWC}")
      for n in ("cpu.cfs_quota_us", "cpu.cfs_period_us")),
    NodeFile("/sys/fs/cgroup<cg>/cpu.weight", "f", f"the focused container's weight (1-10000); {_V2}"),
    NodeFile("/sys/fs/cgroup<cg>/memory.numa_stat", "f", f"the focused container's memory per NUMA node; {_V2}"),
    NodeFile("/sys/fs/cgroup/cpu<cg>/cpu.shares", "f", f"the focused container's shares; {_BWC}"),
    NodeFile("/sys/fs/cgroup/memory<cg>/memory.numa_stat", "f", "the focused container's memory per NUMA node; "
             "cgroup v1 memory hierarchy"),
    NodeFile("/sys/fs/cgroup<cg>/cgroup.procs", "tTwf", "a container's processes: their tasks are read (and the "
             "every-task scan skips their cgroup file)"),
    NodeFile("/sys/fs/cgroup/cpuset<cg>/cgroup.procs", "tTwf", f"the same; {_V1}"),
    # -- counters every grid tick
    NodeFile("/proc/uptime", "g", "the node's clock for rates"),
    NodeFile("/proc/stat", "g", "per-CPU time in USER_HZ (man proc_stat(5)); cpuN lines for online CPUs only"),
    NodeFile("/proc/softirqs", "g", "softirqs per CPU (NET_RX, TIMER, ...): noise"),
    NodeFile(f"{_SYS_NODE}/node<n>/numastat", "g", "numa_hit, numa_miss, ... in pages (kdoc admin-guide/numastat.rst)"),
    # -- tasks
    NodeFile("/proc/<n>/task/<n>/stat", "tTwaf", f"field 39: the CPU it last ran on; {_TASK}"),
    NodeFile("/proc/<n>/task/<n>/sched", "tTwf", "nr_migrations, switches (CONFIG_SCHED_DEBUG before 6.15: may be "
             "absent); read up to them only"),
    NodeFile("/proc/<n>/task/<n>/status", "Taf", "Cpus_allowed_list (read up to it)"),
    NodeFile("/proc/<n>/task/<n>/schedstat", "waf", "run-queue wait (ns), CONFIG_SCHED_INFO"),
    NodeFile("/proc/<n>/cgroup", "a", "who a task belongs to (man cgroups(7)): a process no cgroup.procs named"),
    # -- IRQs
    NodeFile("/proc/interrupts", "if", "IRQs per online CPU; the focused CPU's timer and IPI rows"),
    NodeFile("/proc/irq/<n>/effective_affinity_list", "i", "where an IRQ fires (CONFIG_GENERIC_IRQ_EFFECTIVE_AFF_MASK)"),
    NodeFile("/proc/irq/<n>/smp_affinity_list", "i", "where an IRQ may fire, when there is no effective list"),
    # -- names ("n": the log layout, only when a pod or container has no name yet; k/k kuberuntime/helpers.go)
    NodeFile("/var/log/pods/<name>", "n", "<namespace>_<pod>_<uid> (or podLogsDir)", "listed"),
    NodeFile("/var/log/pods/<name>/<name>", "n", "a container's log directory", "listed"),
    NodeFile("/var/log/containers/<name>", "n", "<pod>_<ns>_<container>-<id>.log: links read by name", "listed"),
    NodeFile("<kubelet-root>/pods/<name>", "n", "every pod kubelet knows (no names)", "listed"),
    NodeFile("<kubelet-root>/pods/<name>/containers/<name>", "n", "a container that ran", "listed"),
    NodeFile("/sys/fs/cgroup<cg>/<kubepods>", "g", "a kubepods root (kubepods, kubepods.slice)", "listed"),
    # -- the probe itself
    NodeFile("/proc/self/schedstat", "sgctTawin", "the probe's own CPU time in ns (CONFIG_SCHED_INFO)", "shell"),
    NodeFile("/proc/self/stat", "sgctTawin", "the same in clock ticks, without schedstat; awk's own pid", "shell"),
)

_PART = {"<n>": "[0-9]+", "<name>": "[^/]+", "<cg>": "(?:/[^/]+)*", "<kubepods>": "[^/]*kubepods[^/]*"}
_KUBELET = {"<kubelet-root>": "/var/lib/kubelet", "<kubelet-config>": "/var/lib/kubelet/config.yaml",
            "<kubelet-config-dir>": "/etc/kubernetes/kubelet.conf.d"}


def pattern(nf: NodeFile, kubelet: dict[str, str] | None = None) -> re.Pattern[str]:
    """The path pattern as a regular expression; kubelet's paths as `kubelet` gives them (else the defaults)."""
    where = {**_KUBELET, **(kubelet or {})}
    out = []
    for part in re.split(r"(<[a-z-]+>)", nf.path):
        out.append(_PART.get(part) or re.escape(where.get(part, part)))
    return re.compile("".join(out))


def example(nf: NodeFile) -> str:
    """One concrete path of the pattern (every part the simplest it can be, kubelet's the defaults)."""
    parts = {"<n>": "0", "<name>": "x", "<cg>": "/kubepods", "<kubepods>": "kubepods", **_KUBELET}
    return re.sub(r"<[a-z-]+>", lambda m: parts[m.group()], nf.path)


def find(path: str, kubelet: dict[str, str] | None = None) -> list[NodeFile]:
    """The catalog's entries a concrete path matches."""
    return [nf for nf in CATALOG if pattern(nf, kubelet).fullmatch(path)]


def name(nf: NodeFile) -> str:
    """The file's name (the pattern's last part)."""
    return nf.path.rpartition("/")[2]


def fixed(nf: NodeFile) -> bool:
    """One path on every node (no part of it varies)."""
    return "<" not in nf.path


def read_anew(letter: str) -> tuple[frozenset[str], frozenset[str]]:
    """What a frame of this request letter reads every time it is sent: (names, paths). A file under
    /sys/fs/cgroup or one whose path varies by its name, any other file by its path."""
    names, paths = set(), set()
    for nf in CATALOG:
        if nf.how != "sent" or letter not in nf.requests:
            continue
        if fixed(nf) and not nf.path.startswith("/sys/fs/cgroup/"):
            paths.add(nf.path)
        else:
            names.add(name(nf))
    return frozenset(names), frozenset(paths)
