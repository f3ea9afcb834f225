"""The latency-readiness models (issue 37): what the static frame says of a node's tuning (Readiness, filled by
parse/readiness.py) and what pinscope judges of it, CPU by CPU and as a checklist (NodeReadiness, filled by
assemble/readiness.py; NodeSnapshot.readiness holds it). Frozen dataclasses in raw units, no logic but their
properties: on the bottom floor beside model.py, so the model names them without importing a stage.
"""
from __future__ import annotations

from dataclasses import dataclass, field

OK, NO, NA, UNKNOWN = "ok", "no", "n/a", "unknown"  # a ReadinessCheck's status


@dataclass(frozen=True, slots=True)
class KernelParams:
    """The isolation parameters of /proc/cmdline. None: not given."""

    isolcpus: frozenset[int] | None = None
    isolcpus_flags: tuple[str, ...] = ()  # as the kernel takes them: ("domain",) when none is given
    nohz_full: frozenset[int] | None = None
    rcu_nocbs: frozenset[int] | None = None  # "rcu_nocbs" alone (5.17+): offloading possible, none offloaded
    irqaffinity: frozenset[int] | None = None
    raw: dict = field(default_factory=dict)  # name -> the value as written, for the evidence
    read: bool = False  # /proc/cmdline was read: a parameter not given is known not given


@dataclass(frozen=True, slots=True)
class IrqbalanceConf:
    """One irqbalance environment file. None: the variable is not set (or empty)."""

    path: str
    banned_list: frozenset[int] | None = None
    banned_hex: frozenset[int] | None = None
    raw: dict = field(default_factory=dict)  # variable -> value as written


@dataclass(frozen=True, slots=True)
class CpuPower:
    """One CPU's cpufreq (kHz); None where the file is not there."""

    driver: str | None = None
    governor: str | None = None
    min_khz: int | None = None
    max_khz: int | None = None
    hw_min_khz: int | None = None
    hw_max_khz: int | None = None


@dataclass(frozen=True, slots=True)
class IdleState:
    index: int
    name: str
    latency_us: int | None
    disabled: bool | None


@dataclass(frozen=True, slots=True)
class CgroupTuning:
    """A Guaranteed pod's container cgroup: CRI-O's load-balancing switch and hugetlb per NUMA node."""

    partition: str | None = None  # v2 cpuset.cpus.partition: member, root, isolated (+ " invalid (...)")
    load_balance: bool | None = None  # v1 cpuset.sched_load_balance
    hugetlb_numa: dict = field(default_factory=dict)  # hugetlb.<size>.numa_stat: size ("2MB") -> {node: bytes}
    hugetlb_bytes: dict = field(default_factory=dict)  # v1 hugetlb.<size>.usage_in_bytes: size -> bytes (no NUMA split)
    hugetlb_dir: str | None = None  # where the hugetlb files were read (v1: the hugetlb hierarchy's twin)


@dataclass(frozen=True, slots=True)
class Readiness:
    """Everything the static frame says of the node's latency tuning (raw units)."""

    kernel: KernelParams = KernelParams()
    isolated: frozenset[int] | None = None  # /sys/devices/system/cpu/isolated
    nohz_full: frozenset[int] | None = None  # /sys/devices/system/cpu/nohz_full
    default_irq_affinity: frozenset[int] | None = None
    irqbalance: tuple[IrqbalanceConf, ...] = ()
    power: dict = field(default_factory=dict)  # cpu -> CpuPower (only CPUs with cpufreq)
    idle: dict = field(default_factory=dict)  # cpu -> tuple[IdleState, ...]
    pm_qos_us: dict = field(default_factory=dict)  # cpu -> the limit in µs, None for "0" (no limit)
    intel_pstate: str | None = None
    no_turbo: bool | None = None
    rt_runtime_us: int | None = None
    rt_period_us: int | None = None
    timer_migration: bool | None = None
    workqueue_cpumask: frozenset[int] | None = None
    thp: str | None = None
    tuned_profile: str | None = None
    tuned_isolated: frozenset[int] | None = None
    tuned_isolated_raw: str | None = None
    hugepages: tuple[tuple[int, int, int, int], ...] = ()  # (node, size kB, nr, free)
    cgroups: dict = field(default_factory=dict)  # container cgroup dir -> CgroupTuning


@dataclass(frozen=True, slots=True)
class CpuReadiness:
    """One CPU: each None where the node does not say."""

    cpu: int
    isolated: bool | None
    nohz_full: bool | None
    rcu_nocb: bool | None
    irqs_allowed: bool | None  # may IRQs be steered here (default_smp_affinity, and irqbalance when it runs)
    governor: str | None = None
    min_khz: int | None = None
    max_khz: int | None = None
    hw_max_khz: int | None = None
    deepest: IdleState | None = None  # the deepest idle state allowed (enabled, within the PM QoS limit)
    qos_us: int | None = None  # PM QoS resume latency limit (None: no limit, or not read)


@dataclass(frozen=True, slots=True)
class ReadinessCheck:
    key: str
    title: str
    status: str  # ok | no | n/a | unknown
    detail: str  # the file and value it was judged by
    fix: str = ""


@dataclass(frozen=True, slots=True)
class ContainerReadiness:
    """A pinned container's tuning: CRI-O's switches and where its memory sits."""

    pod_uid: str
    namespace: str | None
    pod: str | None
    container: str | None
    cpus: frozenset[int]
    cpu_nodes: frozenset[int]
    cgroup: str | None
    partition: str | None = None
    load_balance: bool | None = None
    quota_us: int | None = None
    quota_known: bool = False
    mems: frozenset[int] | None = None
    hugetlb_nodes: dict = field(default_factory=dict)  # size -> {node: bytes}: numa_stat, or v1 through mems
    memory_manager_nodes: frozenset[int] | None = None  # kubelet memory manager's assignment
    hugetlb_dir: str | None = None  # where its hugetlb files were read
    hugetlb_via_mems: frozenset[str] = frozenset()  # v1 sizes placed by usage_in_bytes on its one mems node
    hugetlb_unplaced: dict = field(default_factory=dict)  # v1 size -> bytes in use, NUMA node unknown (mems > 1)
    memory_manager_blocks: tuple = ()  # its MemoryAssignments (type "memory" or "hugepages-<size>")
    cpus_unplaced: frozenset[int] = frozenset()  # its CPUs whose NUMA node is unknown (no node*/cpulist names it)

    @property
    def cpu_nodes_known(self) -> bool:
        """Is every CPU's NUMA node known? Not where /sys/devices/system/node is missing (CONFIG_NUMA=n, or a
        --root tree without node*/cpulist): "far" is then a guess, never judged."""
        return bool(self.cpu_nodes) and not self.cpus_unplaced

    @property
    def remote_hugepages(self) -> dict:
        """size -> {node: bytes} of hugepages in use on nodes none of its CPUs sit on (none when the CPUs'
        nodes are not all known)."""
        if not self.cpu_nodes_known:
            return {}
        out = {}
        for size, per in self.hugetlb_nodes.items():
            far = {n: b for n, b in per.items() if b and n not in self.cpu_nodes}
            if far:
                out[size] = far
        return out

    @property
    def remote_assignments(self) -> tuple:
        """The memory manager's blocks (memory or hugepages) on a NUMA node none of its CPUs sit on (none when
        the CPUs' nodes are not all known)."""
        if not self.cpu_nodes_known:
            return ()
        return tuple(b for b in self.memory_manager_blocks if not set(b.numa_nodes) <= self.cpu_nodes)


@dataclass(frozen=True, slots=True)
class NodeReadiness:
    raw: Readiness
    target: frozenset[int]
    target_from: str  # "exclusive" | "isolated" | ""
    intent: frozenset[int]  # the isolated set the node names (tuned, isolcpus, nohz_full)
    cpus: dict  # cpu -> CpuReadiness
    checks: tuple[ReadinessCheck, ...]
    irqbalance_running: bool | None
    irq_banned: frozenset[int] | None
    irq_banned_from: str
    containers: tuple[ContainerReadiness, ...] = ()
    reasons: dict = field(default_factory=dict)  # cpu -> tuple of short reasons (the findings' defects)
    memory_manager: dict = field(default_factory=dict)  # NUMA node -> resource -> MemoryTable (machineState)

    @property
    def score(self) -> tuple[int, int]:
        """(checks ok, checks applicable)."""
        ok = sum(c.status == OK for c in self.checks)
        return ok, ok + sum(c.status == NO for c in self.checks)

    @property
    def not_ready(self) -> frozenset[int]:
        return frozenset(self.reasons)
