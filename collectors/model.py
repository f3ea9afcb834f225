"""The immutable models the rest of pinscope speaks. Raw units (jiffies, µs, ns, pages).

Frozen, slotted dataclasses, except the few built per container, per task or per CPU on every tick
(CpuTimes, CgroupFiles, Task, Container, Pod, Owner, CpuRole): those are NamedTuples, because a frozen
dataclass's __init__ pays one object.__setattr__ per field (measured: 1.9 µs vs 0.4 µs for CgroupFiles),
and the client's budget is 1 ms per node-tick for 100 containers. Both are immutable.
Formatting is the widgets' job; arithmetic over two samples is rates.py's.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from .errors import Problem
from .readinessmodel import NodeReadiness


class Role(StrEnum):
    """What a CPU is for. A StrEnum, so `Role.EXCLUSIVE == "exclusive"` and JSON keeps the plain word.
    Definition order is the legend's order; `glyph` is the one-character class mark every text frontend
    uses (grid, CLI, fleet map), so the grid reads in monochrome."""

    EXCLUSIVE = "exclusive"
    RESERVED = "reserved"
    ISOLATED = "isolated"
    SHARED = "shared"
    OFFLINE = "offline"
    UNASSIGNED = "unassigned"

    @property
    def glyph(self) -> str:
        return _ROLE_GLYPH[self]

    @property
    def big_glyph(self) -> str:
        """The war-room theme's larger marks."""
        return _ROLE_BIG_GLYPH[self]


_ROLE_GLYPH = {Role.EXCLUSIVE: "#", Role.RESERVED: "R", Role.ISOLATED: "i", Role.SHARED: ".",
               Role.OFFLINE: "x", Role.UNASSIGNED: "?"}
_ROLE_BIG_GLYPH = {Role.EXCLUSIVE: "\u25a0", Role.RESERVED: "R", Role.ISOLATED: "\u25c7", Role.SHARED: "\u25a1",
                   Role.OFFLINE: "\u00d7", Role.UNASSIGNED: "?"}
ROLES = tuple(Role)


class Severity(StrEnum):
    """How bad a finding is. Definition order is the rank: critical first (rank 0)."""

    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _SEV_RANK[self]


_SEV_RANK = {s: i for i, s in enumerate(Severity)}
SEVERITIES = tuple(Severity)


class NodeState(StrEnum):
    """A node's connection state, as every frontend shows it. Order: the worst first."""

    DOWN = "down"
    STALE = "stale"
    CONNECTING = "connecting"
    UP = "up"


@dataclass(frozen=True, slots=True)
class Cpu:
    id: int
    online: bool
    socket: int | None = None
    die: int | None = None
    core: int | None = None  # core_id: NOT unique across packages; key cores by (socket, die, core)
    siblings: tuple[int, ...] = ()
    l3: int | None = None  # L3 group: cache id, or the lowest CPU of shared_cpu_list when id is absent
    numa_node: int | None = None


@dataclass(frozen=True, slots=True)
class NumaNode:
    id: int
    cpus: tuple[int, ...]
    distances: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Topology:
    cpus: tuple[Cpu, ...]
    numa_nodes: tuple[NumaNode, ...]
    online: frozenset[int]
    possible: frozenset[int]
    isolated: frozenset[int] = frozenset()
    nohz_full: frozenset[int] = frozenset()
    cmdline: str = ""

    def cpu(self, cid: int) -> Cpu | None:
        for c in self.cpus:
            if c.id == cid:
                return c
        return None


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """What kubelet was told (file, drop-ins, then flags, which win). `sources` says where each came from."""

    found: bool = False
    pid: int | None = None
    config_path: str | None = None
    root_dir: str = "/var/lib/kubelet"
    cpu_manager_policy: str | None = "none"  # None: the config could not be read
    cpu_manager_policy_options: dict = field(default_factory=dict)
    reserved_cpus: frozenset[int] | None = None
    topology_manager_policy: str = "none"
    topology_manager_scope: str = "container"
    topology_manager_policy_options: dict = field(default_factory=dict)
    memory_manager_policy: str = "None"
    cgroup_driver: str | None = None
    cgroup_root: str = ""
    pod_logs_dir: str = "/var/log/pods"
    kube_reserved: dict = field(default_factory=dict)
    system_reserved: dict = field(default_factory=dict)
    reconcile_period: str = "10s"
    sources: dict = field(default_factory=dict)
    parsed: bool = True
    # the name kubelet registers its node under when --hostname-override says one (lowercased, as kubelet does:
    # nodeutil.GetHostname); None: the hostname's
    node_name: str | None = None


@dataclass(frozen=True, slots=True)
class CpuManagerState:
    """cpu_manager_state, in any of its versions, normalised to v2/v3 meaning."""

    version: int
    policy: str
    default_cpuset: frozenset[int]
    # pod uid -> container name -> cpus (v1 files key by container id: pod uid is then "")
    entries: dict
    pod_entries: dict = field(default_factory=dict)
    checksum: int | None = None
    checksum_ok: bool | None = None  # None: not verified (legacy 0, accepted unchecked as kubelet does)
    checksum_as: str = ""  # what the checksum verified as: the Go struct name, or "data" (v4)

    def pod_level(self, uid: str) -> frozenset[int]:
        """The CPUs pod `uid` holds as a whole (v3+ podEntries, pod-level resources) that none of its
        containers holds: exclusive to the pod, owned by no container."""
        held = self.pod_entries.get(uid)
        if not held:
            return frozenset()
        return held - frozenset().union(*self.entries.get(uid, {}).values())


@dataclass(frozen=True, slots=True)
class MemoryAssignment:
    type: str
    numa_nodes: tuple[int, ...]
    size: int


@dataclass(frozen=True, slots=True)
class MemoryTable:
    """One resource on one NUMA node in the memory manager's machineState (bytes; state.MemoryTable)."""

    total: int
    system_reserved: int
    allocatable: int
    reserved: int
    free: int


@dataclass(frozen=True, slots=True)
class MemoryManagerState:
    policy: str
    entries: dict  # pod uid -> container -> tuple[MemoryAssignment]
    pod_entries: dict = field(default_factory=dict)  # pod uid -> tuple[MemoryAssignment] (pod-level, v2+)
    version: int = 1
    checksum: int | None = None
    checksum_ok: bool | None = None  # as CpuManagerState's
    checksum_as: str = ""
    # machineState: NUMA node -> resource ("memory", "hugepages-2Mi", "hugepages-1Gi") -> MemoryTable
    machine: dict = field(default_factory=dict)
    # machineState's other two fields: NUMA node -> (numberOfAssignments, cells: the group it is used in)
    groups: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceAllocation:
    """One device kubelet's device manager gave one container (its checkpoint's PodDeviceEntries)."""

    pod_uid: str
    container: str
    resource: str  # e.g. nvidia.com/gpu, intel.com/sriov_netdevice
    device: str  # the plugin's id: a GPU UUID, a PCI address (SR-IOV VF), or any name the plugin chose
    numa_node: int | None  # the checkpoint's key ("-1", or a pre-1.20 file without keys: None)


@dataclass(frozen=True, slots=True)
class DeviceCheckpoint:
    """/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint (a fixed path, any --root-dir), parsed."""

    allocations: tuple[DeviceAllocation, ...]
    registered: tuple[tuple[str, tuple[str, ...]], ...]  # resource -> device ids the plugins reported
    checksum: int | None = None
    checksum_ok: bool | None = None  # None: not verified (pre-1.20 layout, or no checksum)


@dataclass(frozen=True, slots=True)
class DraDevice:
    """A device a DRA driver prepared for a claim (kubelet's DRA checkpoint: DriverState.Devices)."""

    driver: str
    pool: str
    device: str
    requests: tuple[str, ...] = ()
    cdi_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DraClaim:
    """A ResourceClaim kubelet prepared on this node, and the pods that use it."""

    uid: str
    name: str
    namespace: str
    pod_uids: tuple[str, ...]
    devices: tuple[DraDevice, ...] = ()


@dataclass(frozen=True, slots=True)
class DraCheckpoint:
    """<root-dir>/dra_manager_state, parsed."""

    claims: tuple[DraClaim, ...]
    checksum_ok: bool | None = None  # None: not verified (the 1.27-1.31 alpha layout, or no checksum)
    version: str = ""  # Data's apiVersion (1.32+), or "v1-alpha"


@dataclass(frozen=True, slots=True)
class ContainerDevice:
    """A device a container holds, placed on a NUMA node where the node says where it sits."""

    resource: str
    device: str
    numa_node: int | None  # None: unknown
    numa_from: str  # "pci" (sysfs numa_node), "nvidia" (/proc/driver/nvidia), "checkpoint", or "" (unknown)
    pci: str | None = None  # the PCI address whose sysfs numa_node placed it (pci, nvidia)


class CgroupFiles(NamedTuple):
    """One cgroup directory's CPU-related files: raw text kept for the drill-down, values parsed."""

    path: str
    raw: dict  # file name -> text
    cpus: frozenset[int] | None = None  # requested (cpuset.cpus); empty = inherit on v2
    cpus_effective: frozenset[int] | None = None
    mems_effective: frozenset[int] | None = None
    quota_us: int | None = None  # None = unlimited ("max" / -1)
    period_us: int | None = None
    weight: int | None = None  # v2 cpu.weight, or v1 cpu.shares (see `version`)
    nr_periods: int | None = None
    nr_throttled: int | None = None
    throttled_usec: int | None = None
    pressure_some_total_us: int | None = None
    version: int = 2
    cpu_path: str | None = None  # v1: the same cgroup in the cpu hierarchy (cpu.* files live there)
    pressure_at: float | None = None  # node uptime when cpu.pressure was read (it comes at its own cadence)


class Task(NamedTuple):
    tid: int
    pid: int
    comm: str
    state: str = "?"
    last_cpu: int | None = None
    kthread: bool = False
    utime: int = 0
    stime: int = 0
    allowed: frozenset[int] | None = None
    nr_migrations: int | None = None
    voluntary: int | None = None
    involuntary: int | None = None
    at: float | None = None  # node uptime when these counters were read (tasks come at their own cadence)
    runq: object = None  # parse.noise.SchedStat (run-queue wait, on-CPU ns): focused container/CPU, or "w"
    cgroup: str | None = None  # the process's cgroup (/proc/<pid>/cgroup, read with every task's stat)


class Container(NamedTuple):
    name: str | None
    id: str | None
    pod_uid: str
    cgroup_path: str | None
    cgroup: CgroupFiles | None
    assigned: frozenset[int] | None  # kubelet's exclusive assignment (state file), None if none
    tasks: tuple[Task, ...] = ()
    pids: frozenset[int] = frozenset()
    runtime: str | None = None
    unresolved: str | None = None  # why this cgroup leaf could not be tied to a container name
    memory_numa: dict | None = None  # memory.numa_stat per node (the container in focus only)
    devices: tuple[ContainerDevice, ...] = ()  # from kubelet's device-manager checkpoint


class Pod(NamedTuple):
    uid: str
    namespace: str | None
    name: str | None
    qos: str | None
    cgroup_path: str | None
    containers: tuple[Container, ...]
    cgroup: CgroupFiles | None = None
    pids: frozenset[int] = frozenset()  # every process in the pod's cgroups, the sandbox's included
    sources: tuple[str, ...] = ()  # what knows this pod: cgroup, pod-logs, container-logs, kubelet-pods, state
    claims: tuple[DraClaim, ...] = ()  # DRA ResourceClaims kubelet prepared for it (its containers: the API's)


class PodAllocation(NamedTuple):
    """What kubelet's allocation checkpoint says of a pod (parse/allocstate.py)."""

    pod_level: bool  # it has pod-level resources (kubelet records them since 1.36)
    unlimited: bool  # a container of it has no CPU or memory limit of its own
    unlimited_names: tuple[str, ...] = ()  # those containers' names

    def pod_level_in(self, qos: str | None, ephemeral: frozenset[str] | tuple[str, ...] = ()) -> bool:
        """Has the pod pod-level resources, for a pod of this QoS? A Guaranteed pod with a container without
        limits of its own is Guaranteed by them (a 1.35 kubelet records no PodLevelResources). `ephemeral`: the
        names of the pod's ephemeral containers (kubectl debug; the API says them): kubelets after 1.37 record
        one as `{}`, no limits by its nature, which says nothing of pod-level resources."""
        if self.pod_level:
            return True
        if qos != "Guaranteed":
            return False
        if not ephemeral:
            return self.unlimited
        return any(n not in ephemeral for n in self.unlimited_names)


class Owner(NamedTuple):
    pod_uid: str
    namespace: str | None
    pod: str | None
    container: str | None
    pod_level: bool = False  # held by the pod as a whole (checkpoint v3+ podEntries): container is None


class CpuRole(NamedTuple):
    id: int
    role: str
    owners: tuple[Owner, ...] = ()


class CpuTimes(NamedTuple):
    """One /proc/stat cpuN line, in USER_HZ ticks."""

    busy: int
    total: int
    irq: int = 0  # hard IRQ, softirq and steal ticks (inside busy): the kernel noise of this CPU
    softirq: int = 0
    steal: int = 0


@dataclass(frozen=True, slots=True)
class Irq:
    irq: str
    cpus: frozenset[int]  # effective affinity
    name: str = ""
    count: int = 0
    per_cpu: dict = field(default_factory=dict)  # cpu -> interrupts since boot (/proc/interrupts)


_FIELD_INDEX: dict[type, dict[str, int]] = {}


def replaced(nt, **changes):
    """`nt._replace(**changes)` for the tuples rebuilt every tick (a container's cgroup files, the container,
    its pod): the fields' places looked up once per type, not the generic map over every field."""
    cls = type(nt)
    index = _FIELD_INDEX.get(cls)
    if index is None:
        index = _FIELD_INDEX[cls] = {f: i for i, f in enumerate(cls._fields)}
    values = list(nt)
    for name, value in changes.items():
        values[index[name]] = value  # a KeyError for a field the type has not, as _replace's ValueError
    return tuple.__new__(cls, values)


class Lazy(Mapping):
    """A read-only dict worked out on first use, then held: for the per-CPU tables a tick makes and most
    ticks never read (a 256-CPU node's /proc/softirqs is 2,560 counters, their rates as many). Equal to a
    dict of the same items; safe to read from two threads (each may work it out; one result is kept)."""

    __slots__ = ("_make", "_d")

    def __init__(self, make: Callable[[], dict]) -> None:
        self._make: Callable[[], dict] | None = make
        self._d: dict | None = None

    def _get(self) -> dict:
        d = self._d
        if d is None:
            make = self._make
            if make is None:  # another thread worked it out in between
                return self._d or {}
            d = self._d = make()
            self._make = None
        return d

    def __getitem__(self, key: Any) -> Any:
        return self._get()[key]

    def get(self, key: Any, default: Any = None) -> Any:
        return self._get().get(key, default)

    def __iter__(self) -> Iterator:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:  # never works it out: a repr (a log line, asyncio's task repr) is no reader
        return f"Lazy({self._d!r})" if self._d is not None else "Lazy(<not read yet>)"


@dataclass(frozen=True, slots=True)
class KernelNoise:
    """Per-CPU kernel counters since boot, each stamped with the node uptime it was read at (the IPIs
    come from /proc/interrupts, which is read at its own cadence, so a rate never mixes two clocks)."""

    softirqs: Mapping  # kind (NET_RX, TIMER, SCHED...) -> {cpu: count} (/proc/softirqs, every grid tick; a Lazy)
    softirqs_at: float | None
    ipis: dict  # "LOC" | "RES" -> {cpu: count}                       (/proc/interrupts)
    ipis_at: float | None


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    node: str
    uptime: float | None
    cgroup_version: int | None
    cgroup_driver: str | None
    topology: Topology
    kubelet: KubeletConfig
    state: CpuManagerState | None
    state_file: str | None
    memory_state: MemoryManagerState | None
    pods: tuple[Pod, ...]
    roles: tuple[CpuRole, ...]
    shared_pool: frozenset[int] | None
    cpu_times: dict  # cpu id -> CpuTimes
    numastat: dict  # node id -> {key: pages}
    irqs: tuple[Irq, ...] | None = None
    all_tasks: tuple[Task, ...] | None = None  # every task on the node (slow cadence), None if not read
    roles_from: str = "state"  # "state" | "cgroups" (fallback) | "policy-none"
    # ok | missing | unreadable | invalid | cut (larger than the read bound: unknown) | refused (root-dir climbs out)
    state_status: str = "ok"
    init_allowed: frozenset[int] | None = None  # PID 1's Cpus_allowed_list (systemd CPUAffinity)
    problems: tuple[Problem, ...] = ()
    request: str = ""
    noise: KernelNoise | None = None
    # the cpuset controller on the way to kubepods: v2 cgroup.controllers / cgroup.subtree_control texts by
    # path, and "mount": "no" when a v1 node has no cpuset hierarchy
    cpuset_files: dict = field(default_factory=dict)
    device_state: DeviceCheckpoint | None = None  # kubelet's device-manager checkpoint (None: absent/unread)
    device_orphans: tuple[DeviceAllocation, ...] = ()  # allocations for pods no other source knows
    dra_state: DraCheckpoint | None = None  # kubelet's DRA manager checkpoint (None: absent/unread)
    readiness: NodeReadiness | None = None  # latency readiness (assemble/readiness.py fills it); None: not assembled
    # pod uid -> what kubelet's allocation checkpoint (<root-dir>/allocated_pods_state, read on static frames) says
    # of its resources; None: unknown (absent, unread, refused)
    pod_level: dict[str, PodAllocation] | None = None

    @property
    def assignment_known(self) -> bool:
        """Is kubelet's CPU assignment known? Not when its state file was not read (this user may not read
        it, it is not JSON, larger than pinscope reads, missing under the static policy): the roles then come
        from the cgroups, and a container kubelet gave no CPUs is not known to be shared, only not known."""
        return self.roles_from != "cgroups"

    def containers(self):
        for p in self.pods:
            for c in p.containers:
                yield p, c

    def role_of(self, cid: int) -> CpuRole | None:
        for r in self.roles:
            if r.id == cid:
                return r
        return None
