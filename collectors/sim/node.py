"""Simulated node trees: a small description -> the files a real node has, under a root directory.

Used by the fixtures in tests/, by bench/, and by `pinscope demo` (which then reads the tree through the
real probe and parsers: no second code path). Shapes are modelled on real machines:
- "intel" numbering: SMT siblings are N and N + ncpus/2, core_id has gaps (0-4, 8-12, 16-20, ...);
- "amd" numbering: siblings adjacent (2k, 2k+1), dense core_ids, several NUMA nodes per socket (NPS2/4).
Nothing here reads the real machine; it only writes below `root`.

The counters come from one model of each CPU's second (`_run_tasks`), so they agree the way a kernel's do:
each thread is runnable a share of the time, split into running and waiting on its run queue; a thread
waits only while something else has its CPU (another thread, a competitor a test names with `runq_wait`,
the system's daemons on the CPUs they may use), and a CPU's threads run at most what the interrupts leave
(/proc/stat, schedstat, utime and cpu.stat all add up); cpu.pressure "some" is the share of time at least
one of a cgroup's threads waited, and its avg10/60/300 are the kernel's running averages of it.
"""
from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..parse.cpuset import format_cpuset
from ..parse.kubelet import checksum_v1, checksum_v2
from . import layout


def go_json(obj: Any) -> str:
    """Go's encoding/json.Marshal of a value decoded into the same Go types: compact; <, >, & and U+2028/9
    escaped, other text as UTF-8. Struct fields come in declaration order and map keys sorted: the caller builds
    the dicts in that order."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                    ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def device_checkpoint(rows: list, free: list) -> str:
    """kubelet's device-manager checkpoint as kubelets 1.35 and 1.37 write it (k/k pkg/kubelet/cm/devicemanager
    manager.go writeCheckpoint, checkpoint/checkpoint.go; the real files in tests/device_samples.py):
    PodDeviceEntries null when no container holds a device (a nil slice), else one entry per (pod, container,
    resource), DeviceIDs keyed by NUMA node ("-1": none); RegisteredDevices every healthy device of each plugin,
    held or free (`{}` with none); map keys sorted as encoding/json writes them; Checksum kubelet's.
    rows: (pod uid, container, resource, device id, NUMA node); free: (resource, device id)."""
    from ..parse.devices import device_checkpoint_checksum

    entries: dict = {}
    registered: dict[str, set[str]] = {}
    for uid, cname, res, dev, numa in rows:
        e = entries.setdefault((uid, cname, res), {"PodUID": uid, "ContainerName": cname, "ResourceName": res,
                                                   "DeviceIDs": {}, "AllocResp": "EgA="})
        e["DeviceIDs"].setdefault(str(numa), []).append(dev)
        registered.setdefault(res, set()).add(dev)
    for res, dev in free:
        registered.setdefault(res, set()).add(dev)
    for e in entries.values():
        e["DeviceIDs"] = {k: e["DeviceIDs"][k] for k in sorted(e["DeviceIDs"])}
    data = {"PodDeviceEntries": list(entries.values()) or None,
            "RegisteredDevices": {r: sorted(registered[r]) for r in sorted(registered)}}
    return go_json({"Data": data, "Checksum": device_checkpoint_checksum(data)})


@dataclass
class CtrSpec:
    name: str
    cpus: str | None = None  # kubelet's exclusive assignment; None = shared pool
    effective: str | None = None  # what the kernel shows, when it differs from kubelet (drift)
    tasks: int = 2
    busy: float = 0.3  # share of a CPU each task burns, for the simulated counters
    quota_cores: float | None = None  # CFS quota; None = unlimited
    throttled: int = 0  # nr_throttled growth per second (at most its 10 periods; only under a quota)
    init: bool = False  # an init container: in the state file, no cgroup left
    cgroup_left: bool = False  # init: its cgroup is still there, empty (exited, not yet removed by the runtime)
    mems: str | None = None
    id: str = ""  # "": SimNode makes one up
    # share of wall time each task waits on its run queue behind a competitor the model runs on its CPU
    # (taken from its runnable time: it then runs that much less)
    runq_wait: float = 0.0
    # devices kubelet's device manager gave it: (resource, device id, the checkpoint's NUMA key: -1 = none)
    devices: list[tuple[str, str, int]] = field(default_factory=list)


@dataclass
class PodSpec:
    name: str
    namespace: str = "default"
    qos: str = "Guaranteed"
    containers: list[CtrSpec] = field(default_factory=list)
    uid: str = ""  # "": SimNode makes one up
    logs: bool = True
    cgroup: bool = True
    static: bool = False  # a static pod: its uid is 32 hex digits, no dashes
    # DRA ResourceClaims kubelet prepared for it: (claim name, driver, pool, device), a row per device
    claims: list[tuple[str, str, str, str]] = field(default_factory=list)
    # the CPU its sandbox (pause) last ran on, as on a real node: kubelet's CPU manager sets only the containers'
    # cpusets, so the sandbox's cgroup keeps every online CPU and pause, asleep since the pod started, stays on the
    # CPU it started on (an exclusive one, given away later, too); None: the sandbox on the shared pool
    sandbox_cpu: int | None = None


@dataclass
class NodeSpec:
    hostname: str = "node-1"
    sockets: int = 1
    cores: int = 4  # per socket
    threads: int = 2
    numa_per_socket: int = 1
    l3_per_numa: int = 1  # AMD: one L3 per CCX, several per NUMA node (NPS1 EPYC: 8-16 per socket)
    numbering: str = "intel"
    offline: str = ""
    isolated: str = ""
    cgroup: int = 2
    driver: str = "systemd"
    runtime: str = "containerd"
    policy: str = "static"
    policy_options: dict = field(default_factory=dict)
    topology_policy: str = "none"
    reserved: str | None = "0"
    kubelet_root: str = "/var/lib/kubelet"
    config_path: str = "/var/lib/kubelet/config.yaml"
    flags: list[str] = field(default_factory=list)
    state_version: int = 2
    state_text: str | None = None  # raw override (broken nodes)
    config_text: str | None = None
    kubelet_running: bool = True
    pods: list[PodSpec] = field(default_factory=list)
    irqs: dict = field(default_factory=dict)  # irq number -> cpulist
    other_tasks: list = field(default_factory=list)  # (comm, cpu, kthread[, cgroup[, busy[, allowed cpulist]]]) tasks outside pods
    noise: dict = field(default_factory=dict)  # cpu -> share of its time in softirqs (NET_RX) and IRQs
    steal: dict = field(default_factory=dict)  # cpu -> share of its time stolen by the hypervisor
    numa_miss_per_tick: int = 0
    init_affinity: str | None = None  # PID 1's Cpus_allowed_list (systemd CPUAffinity); None = all online
    seed: int = 1
    # layouts of real nodes (collectors/sim/layout.py names the sources)
    cgroup_root: str = ""  # kubelet's cgroupRoot (kind: "/kubelet")
    cgroup_root_flag: bool = False  # given as --cgroup-root rather than in the config file
    log_links: str = "absolute"  # /var/log/containers: "absolute" symlinks (kubelet), "file", "none"
    kubelet_pods_dir: bool = True  # <root-dir>/pods/<uid>/containers/<name>/
    crun_subgroup: bool = False  # crun's "container" sub-cgroup below each scope (v2)
    nohz_full: str | None = None  # raw text of /sys/devices/system/cpu/nohz_full; None = no file
    package_id: int | None = None  # every CPU's physical_package_id and die_id (-1 on odd platforms)
    cpuless_numa: int = 0  # extra NUMA nodes with memory and no CPUs (CXL, PMEM)
    cpuset_delegated: bool = True  # v2: cpuset in the subtree_control on the way to the pods
    cgroupns_prefix: str = ""  # /proc/<pid>/cgroup as read from a private cgroup namespace ("/../../..")
    pci_numa: dict = field(default_factory=dict)  # PCI address -> /sys/bus/pci/devices/<addr>/numa_node (-1 none)
    nvidia_gpus: dict = field(default_factory=dict)  # GPU UUID -> PCI address (/proc/driver/nvidia/gpus/...)
    device_text: str | None = None  # raw device-manager checkpoint (broken nodes); None: from the pods' devices
    orphan_devices: list = field(default_factory=list)  # (pod uid, container, resource, id, numa) no pod has
    free_devices: list = field(default_factory=list)  # (resource, id) a plugin registered that no container holds
    dra_text: str | None = None  # raw DRA manager checkpoint (broken nodes); None: from the pods' claims
    extra_files: dict = field(default_factory=dict)  # path -> text, written last (latency tuning: sim/tuning.py)

    @property
    def ncpus(self) -> int:
        return self.sockets * self.cores * self.threads


def _uid(rng: random.Random) -> str:
    h = "%032x" % rng.getrandbits(128)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _cset(text: str | None) -> set[int]:
    from ..parse.cpuset import parse_cpuset

    return set(parse_cpuset(text or ""))


class SimNode:
    """Writes a NodeSpec's tree once (`write()`), then advances its counters (`tick()`)."""

    def __init__(self, spec: NodeSpec, root: str | os.PathLike) -> None:
        self.spec = spec
        self.root = Path(root)
        self.rng = random.Random(spec.seed)
        self.t = 0.0  # simulated seconds since start
        self.cpu_busy: dict[int, float] = {}
        self.counters: dict = {}
        self._layout()

    # ------------------------------------------------------------------ layout
    def _layout(self) -> None:
        s = self.spec
        n = s.ncpus
        per_sock = s.cores * s.threads
        self.topo = {}  # cpu -> (socket, core_id, siblings, numa, l3)
        cores_per_numa = max(1, s.cores // s.numa_per_socket)
        for sock in range(s.sockets):
            for c in range(s.cores):
                if s.numbering == "intel":
                    ids = [t * (s.sockets * s.cores) + sock * s.cores + c for t in range(s.threads)]
                    core_id = c + (c // 5) * 3  # gaps, as on real Xeons
                else:
                    ids = [sock * per_sock + c * s.threads + t for t in range(s.threads)]
                    core_id = c
                numa = sock * s.numa_per_socket + min(c // cores_per_numa, s.numa_per_socket - 1)
                in_numa = c - (numa - sock * s.numa_per_socket) * cores_per_numa
                l3 = numa * s.l3_per_numa + min(in_numa // max(1, cores_per_numa // s.l3_per_numa), s.l3_per_numa - 1)
                for cid in ids:
                    self.topo[cid] = (sock, core_id, ids, numa, l3)
        self.online = set(range(n)) - _cset(s.offline)
        self.nnuma = s.sockets * s.numa_per_socket
        for p in s.pods:
            p.uid = p.uid or (layout.static_uid(self.rng) if p.static else _uid(self.rng))
            for ctr in p.containers:
                ctr.id = ctr.id or "%064x" % self.rng.getrandbits(256)
        exclusive = set()
        for p in s.pods:
            for ctr in p.containers:
                if ctr.cpus and not ctr.init:
                    exclusive |= _cset(ctr.cpus)
        self.default = self.online - exclusive if s.policy == "static" else set()
        self.exclusive = exclusive & self.online  # no system daemon runs there (their cpuset leaves them out)
        self.pid = 1000

    def w(self, rel: str, text: str | bytes) -> None:
        p = self.root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, str):
            text = text.encode()
        p.write_bytes(text)

    def cg_rel(self, pod: PodSpec, ctr: CtrSpec | None, conmon: bool = False) -> str:
        """The cgroup of a pod or container, relative to the hierarchy's root (as /proc/<pid>/cgroup)."""
        s = self.spec
        d = layout.pod_cgroup(s.driver, s.cgroup_root, pod.qos, pod.uid)
        if ctr is not None:
            d += "/" + (layout.conmon_leaf(s.driver, ctr.id) if conmon else layout.leaf(s.driver, s.runtime, ctr.id))
        return d

    def cg_dir(self, pod: PodSpec, ctr: CtrSpec | None, controller: str = "cpuset", conmon: bool = False) -> str:
        base = "/sys/fs/cgroup" if self.spec.cgroup == 2 else f"/sys/fs/cgroup/{controller}"
        return base + self.cg_rel(pod, ctr, conmon)

    # ------------------------------------------------------------------ static files
    def write(self) -> "SimNode":
        """The whole tree: CPUs and caches, NUMA nodes, the kernel command line, the cgroup roots, kubelet's
        files, the pods, the IRQs, then a first tick of the counters."""
        s = self.spec
        self._cpus()
        self._numa()
        cmd = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro"
        if s.isolated:
            cmd += f" isolcpus={s.isolated}"
        self.w("/proc/cmdline", cmd + "\n")
        self.w("/proc/sys/kernel/hostname", s.hostname + "\n")
        self._cgroup_roots()
        self._kubelet()
        self._devices()
        self._dra()
        self._pods()
        for irq, cl in sorted(s.irqs.items()):
            self.w(f"/proc/irq/{irq}/effective_affinity_list", cl + "\n")
            self.w(f"/proc/irq/{irq}/smp_affinity_list", cl + "\n")
        for rel, text in sorted(s.extra_files.items()):
            self.w(rel, text)
        self.tick()
        return self

    def _cpus(self) -> None:
        """/sys/devices/system/cpu: the masks, and each online CPU's topology and caches."""
        s = self.spec
        n = s.ncpus
        cpu = "/sys/devices/system/cpu"
        self.w(f"{cpu}/possible", f"0-{n - 1}\n")
        self.w(f"{cpu}/present", f"0-{n - 1}\n")
        self.w(f"{cpu}/online", format_cpuset(self.online) + "\n")
        self.w(f"{cpu}/offline", format_cpuset(set(range(n)) - self.online) + "\n")
        self.w(f"{cpu}/isolated", format_cpuset(_cset(s.isolated)) + "\n")
        self.w(f"{cpu}/kernel_max", "8191\n")
        if s.nohz_full is not None:
            self.w(f"{cpu}/nohz_full", s.nohz_full)
        for cid, (sock, core, sib, numa, l3) in self.topo.items():
            d = f"{cpu}/cpu{cid}"
            if cid != 0:
                self.w(f"{d}/online", "1\n" if cid in self.online else "0\n")
            if cid not in self.online:
                continue  # offline CPUs have no topology/ directory
            self.w(f"{d}/topology/physical_package_id", f"{sock if s.package_id is None else s.package_id}\n")
            self.w(f"{d}/topology/die_id", f"{0 if s.package_id is None else s.package_id}\n")
            self.w(f"{d}/topology/core_id", f"{core}\n")
            sib_on = [x for x in sib if x in self.online]
            self.w(f"{d}/topology/core_cpus_list", format_cpuset(sib_on) + "\n")
            self.w(f"{d}/topology/thread_siblings_list", format_cpuset(sib_on) + "\n")
            for k, (lvl, typ) in enumerate([(1, "Data"), (1, "Instruction"), (2, "Unified"), (3, "Unified")]):
                ix = f"{d}/cache/index{k}"
                self.w(f"{ix}/level", f"{lvl}\n")
                self.w(f"{ix}/type", f"{typ}\n")
                self.w(f"{ix}/id", f"{l3 if lvl == 3 else core}\n")
                shared = [x for x, v in self.topo.items() if v[4] == l3 and x in self.online] if lvl == 3 else sib_on
                self.w(f"{ix}/shared_cpu_list", format_cpuset(shared) + "\n")

    def _numa(self) -> None:
        """/sys/devices/system/node: the masks, each node's CPUs and distances (memory-only nodes last)."""
        s = self.spec
        node = "/sys/devices/system/node"
        nall = self.nnuma + s.cpuless_numa
        self.w(f"{node}/possible", f"0-{nall - 1}\n")
        self.w(f"{node}/online", f"0-{nall - 1}\n")
        self.w(f"{node}/has_cpu", f"0-{self.nnuma - 1}\n")
        self.w(f"{node}/has_memory", f"0-{nall - 1}\n")
        for nn in range(self.nnuma, nall):  # memory only: an empty cpulist, farther than any socket
            self.w(f"{node}/node{nn}/cpulist", "\n")
            self.w(f"{node}/node{nn}/distance", " ".join("10" if m == nn else "50" for m in range(nall)) + "\n")
        for nn in range(self.nnuma):
            cl = [x for x, v in self.topo.items() if v[3] == nn and x in self.online]
            self.w(f"{node}/node{nn}/cpulist", format_cpuset(cl) + "\n")
            sock = nn // s.numa_per_socket
            dist = [10 if m == nn else (12 if m // s.numa_per_socket == sock else 32) for m in range(self.nnuma)]
            dist += [50] * s.cpuless_numa
            self.w(f"{node}/node{nn}/distance", " ".join(map(str, dist)) + "\n")

    def _cgroup_roots(self) -> None:
        """The cgroup root (v2: controllers and their delegation down to kubepods; v1: the cpuset root)."""
        s = self.spec
        if s.cgroup != 2:
            self.w("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", format_cpuset(self.online) + "\n")
            return
        self.w("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n")
        self.w("/sys/fs/cgroup/cpuset.cpus.effective", format_cpuset(self.online) + "\n")
        ctl = "cpuset cpu io memory hugetlb pids\n" if s.cpuset_delegated else "cpu io memory hugetlb pids\n"
        self.w("/sys/fs/cgroup/cgroup.subtree_control", ctl)
        kp = "/sys/fs/cgroup" + layout.pod_cgroup(s.driver, s.cgroup_root, "Burstable", "x").rsplit("/", 2)[0]
        parts = kp[len("/sys/fs/cgroup"):].strip("/").split("/")
        for i in range(1, len(parts) + 1):  # every level down to kubepods: the same delegation
            d = "/sys/fs/cgroup/" + "/".join(parts[:i])
            self.w(f"{d}/cgroup.controllers", ctl)
            self.w(f"{d}/cgroup.subtree_control", ctl)

    def _kubelet(self) -> None:
        s = self.spec
        kr = s.kubelet_root
        if s.kubelet_running:
            argv = ["/usr/bin/kubelet", f"--config={s.config_path}"]
            if kr != "/var/lib/kubelet":
                argv += ["--root-dir", kr]
            if s.cgroup_root and s.cgroup_root_flag:
                argv += [f"--cgroup-root={s.cgroup_root}"]
            argv += s.flags
            self.w("/proc/1/comm", "systemd\n")
            self.w("/proc/1/cmdline", b"/sbin/init\0")
            aff = s.init_affinity if s.init_affinity is not None else format_cpuset(self.online)
            self.w("/proc/1/status", f"Name:\tsystemd\nTgid:\t1\nPid:\t1\nCpus_allowed_list:\t{aff}\n"
                   "voluntary_ctxt_switches:\t100\nnonvoluntary_ctxt_switches:\t5\n")
            self.w("/proc/700/comm", "kubelet\n")
            self.w("/proc/700/cmdline", "\0".join(argv).encode() + b"\0")
        if s.config_text is not None:
            cfg = s.config_text
        else:
            cfg = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                   f"cgroupDriver: {s.driver}\ncpuManagerPolicy: {s.policy}\n"
                   f"topologyManagerPolicy: {s.topology_policy}\n")
            if s.reserved is not None:
                cfg += f'reservedSystemCPUs: "{s.reserved}"\n'
            if s.policy_options:
                cfg += "cpuManagerPolicyOptions:\n" + "".join(f'  {k}: "{v}"\n' for k, v in s.policy_options.items())
            cfg += "systemReserved:\n  cpu: 500m\n  memory: 1Gi\n"
            if s.cgroup_root and not s.cgroup_root_flag:
                cfg += f"cgroupRoot: {s.cgroup_root}\n"
        self.w(s.config_path, cfg)
        if s.state_text is not None:
            self.w(f"{kr}/cpu_manager_state", s.state_text)
            return
        default = format_cpuset(self.default)
        entries: dict = {}
        for p in s.pods:
            for c in p.containers:
                if c.cpus:
                    entries.setdefault(p.uid, {})[c.name] = c.cpus
        policy = s.policy
        if s.state_version == 1:  # before 1.18: entries keyed by container id (CPUManagerCheckpointV1)
            v1 = {c.id: c.cpus for p in s.pods for c in p.containers if c.cpus and not c.init}
            doc: dict[str, Any] = {"policyName": policy, "defaultCpuSet": default if policy == "static" else ""}
            if v1 and policy == "static":
                doc["entries"] = v1
            doc["checksum"] = checksum_v1(doc["policyName"], doc["defaultCpuSet"], doc.get("entries", {}))
            self.w(f"{kr}/cpu_manager_state", json.dumps(doc))
            return
        doc = {"policyName": policy, "defaultCpuSet": default if policy == "static" else ""}
        if entries and policy == "static":
            doc["entries"] = entries
        doc["checksum"] = checksum_v2(doc["policyName"], doc["defaultCpuSet"], doc.get("entries", {}))
        if s.state_version == 4:
            data = json.dumps({k: v for k, v in doc.items() if k != "checksum"})
            from ..parse.kubelet import fnv1a32

            doc = {**doc, "checksum": 0, "data": data, "dataChecksum": fnv1a32("(string)" + data)}
        self.w(f"{kr}/cpu_manager_state", json.dumps(doc))

    def _devices(self) -> None:
        """kubelet's device-manager checkpoint as kubelet writes it (checksum included), and where each device
        sits: PCI functions' numa_node, NVIDIA's per-GPU information file (format of the 5xx drivers)."""
        s = self.spec
        for addr, numa in sorted(s.pci_numa.items()):
            self.w(f"/sys/bus/pci/devices/{addr}/numa_node", f"{numa}\n")
        for uuid, addr in sorted(s.nvidia_gpus.items()):
            self.w(f"/proc/driver/nvidia/gpus/{addr}/information",
                   f"Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ:   \t\t 190\nGPU UUID: \t {uuid}\n"
                   f"Video BIOS: \t 92.00.36.00.01\nBus Type: \t PCIe\nDMA Size: \t 47 bits\n"
                   f"DMA Mask: \t 0x7fffffffffff\nBus Location: \t {addr}\nDevice Minor: \t 0\n")
        rows = [(p.uid, c.name, r, d, n) for p in s.pods for c in p.containers for r, d, n in c.devices]
        rows += list(s.orphan_devices)
        path = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"  # kubelet's fixed path, any --root-dir
        if s.device_text is not None:
            self.w(path, s.device_text)
        elif rows or s.free_devices:  # kubelet writes it once it hands out a device or a plugin registers
            self.w(path, device_checkpoint(rows, s.free_devices))

    def _dra(self) -> None:
        """kubelet's DRA manager checkpoint as kubelet 1.32+ writes it: Data the JSON text of a DRACheckpoint,
        Checksum its CRC-32 (k/k pkg/kubelet/cm/dra/state/checkpoint.go NewCheckpoint)."""
        s = self.spec
        path = f"{s.kubelet_root}/dra_manager_state"
        if s.dra_text is not None:
            self.w(path, s.dra_text)
            return
        entries = []
        for p in s.pods:
            by: dict = {}
            for name, driver, pool, dev in p.claims:
                state = by.setdefault(name, {}).setdefault(driver, {"Devices": []})
                state["Devices"].append({"PoolName": pool, "DeviceName": dev, "RequestNames": ["dev"],
                                         "CDIDeviceIDs": [f"{driver}/claim={dev}"]})
            for name, ds in by.items():
                entries.append({"ClaimUID": _uid(random.Random(f"{p.uid}/{name}")), "ClaimName": name,
                                "Namespace": p.namespace, "PodUIDs": {p.uid: {}}, "DriverState": ds})
        if not entries:
            return
        from ..parse.dra import dra_checksum

        data = json.dumps({"kind": "DRACheckpoint", "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
                           "Entries": entries}, separators=(",", ":"))
        self.w(path, json.dumps({"Data": data, "Checksum": dra_checksum(data)}, separators=(",", ":")))

    def _pods(self) -> None:
        s = self.spec
        self.tasks = []  # (tid, pid, comm, cpuset, busy, ctr-key, migrations, clock ticks on CPU, last CPU, ...)
        self.waits: dict = {}  # tid -> share of wall time it waits behind a named competitor (CtrSpec.runq_wait)
        self.step: dict = {}  # tid -> (share of the last tick on CPU, share waiting on its run queue)
        self._placed: dict = {}  # cpu -> busy share of the threads placed there (the first placement)
        for p in s.pods:
            if p.logs:
                self.w(f"/var/log/pods/{p.namespace}_{p.name}_{p.uid}/.keep", "")
            if s.kubelet_pods_dir and (p.cgroup or p.logs):  # a pod with neither is gone: kubelet forgot it too
                self.w(f"{s.kubelet_root}/pods/{p.uid}/etc-hosts", "")
            if not p.cgroup:
                continue
            pdir = self.cg_dir(p, None)
            self._cg(pdir, p, None, self.online)
            sandbox = "%064x" % self.rng.getrandbits(256)
            sb = CtrSpec("POD", id=sandbox, tasks=1, busy=0.0)
            for c in [sb] + p.containers:
                if c.init and not c.cgroup_left:
                    continue
                if c is not sb:
                    self._names(p, c)
                eff = _cset(c.effective) if c.effective else (_cset(c.cpus) if c.cpus else self.default or self.online)
                if c is sb and p.sandbox_cpu is not None:
                    eff = set(self.online)  # kubelet never sets the sandbox's cpuset
                d = self.cg_dir(p, c)
                self._cg(d, p, c, eff)
                rel = self.cg_rel(p, c)
                if c.init:
                    self.w(f"{d}/cgroup.procs", "")  # exited: no process left in it
                    continue
                if s.crun_subgroup and s.cgroup == 2 and s.driver == "systemd":
                    d, rel = d + "/container", rel + "/container"
                    self._cg(d, p, c, eff)
                if c is sb and p.sandbox_cpu is not None:
                    self._sandbox(d, rel, p, eff, (p.uid, c.id))
                    continue
                self._procs(d, rel, c.tasks, c.name[:15] if c is not sb else "pause", eff, c.busy, (p.uid, c.id),
                            c.runq_wait)
                if s.runtime == "crio" and c is not sb:  # conmon: the pod's, runs where the pod may
                    d = self.cg_dir(p, c, conmon=True)
                    self._cg(d, p, None, self.online)
                    self._procs(d, self.cg_rel(p, c, conmon=True), 1, "conmon", eff, 0.01, (p.uid, None))
        for t in s.other_tasks:
            comm, cpu, kthread = t[:3]
            rel = t[3] if len(t) > 3 else ("/" if kthread else f"/system.slice/{comm}.service")
            self.pid += 1
            if rel is not None:  # None: the process left before its cgroup was read
                self.w(f"/proc/{self.pid}/cgroup", layout.proc_cgroup(s.cgroup, rel, s.cgroupns_prefix))
            # the share of a CPU it burns: a process half a CPU, a per-CPU kernel thread (kworker, ksoftirqd,
            # migration) next to nothing, as on an idle node
            busy = t[4] if len(t) > 4 else (0.01 if kthread else 0.5)
            # its allowed CPUs: a per-CPU kernel thread's own CPU; else what it was given (taskset -c), else
            # every online CPU (a process of an unconfined node; on a confined one, widened to reach its CPU)
            # (it keeps to its CPU here all the same: a fixture's tasks stay where the test put them)
            allowed = [cpu] if kthread else sorted(_cset(t[5]) if len(t) > 5 else self.online)
            self.tasks.append([self.pid, self.pid, comm, [cpu], busy, None, 0, 0.0, cpu, kthread, allowed])

    def _names(self, p: PodSpec, c: CtrSpec) -> None:
        """The log layout (kubelet's absolute symlinks) and kubelet's per-container dir."""
        s = self.spec
        if s.kubelet_pods_dir:
            self.w(f"{s.kubelet_root}/pods/{p.uid}/containers/{c.name}/{c.id[:8]}", "")
        if not p.logs:
            return
        link = f"/var/log/containers/{p.name}_{p.namespace}_{c.name}-{c.id}.log"
        pod_log, docker_log = layout.log_target(s.runtime, p.namespace, p.name, p.uid, c.name, c.id)
        if s.log_links == "file":
            self.w(pod_log, "")
            self.w(link, "")
        elif s.log_links == "absolute":
            if docker_log:
                self.w(docker_log, "")
                self._link(pod_log, docker_log)
            else:
                self.w(pod_log, "")
            self._link(link, pod_log)
        else:
            self.w(pod_log, "")

    def _link(self, rel: str, target: str) -> None:
        p = self.root / rel.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or p.exists():
            p.unlink()
        os.symlink(target, p)  # absolute, as on the node: it dangles under a --root prefix

    def _sandbox(self, d: str, rel: str, p: PodSpec, eff: set[int], key) -> None:
        """A real node's sandbox (PodSpec.sandbox_cpu): pause, asleep, allowed every online CPU, last ran on
        `p.sandbox_cpu` (the one CPU the model keeps it on: it never wakes to move)."""
        self.pid += 1
        cpu = p.sandbox_cpu
        self.tasks.append([self.pid, self.pid, "pause", [cpu], 0.0, key, 0, 0.0, cpu, False, sorted(eff)])
        self.w(f"{d}/cgroup.procs", f"{self.pid}\n")
        self.w(f"/proc/{self.pid}/cgroup", layout.proc_cgroup(self.spec.cgroup, rel, self.spec.cgroupns_prefix))

    def _procs(self, d: str, rel: str, ntasks: int, comm: str, eff: set[int], busy: float, key,
               runq_wait: float = 0) -> None:
        pids: list[int] = []
        for k in range(ntasks):
            self.pid += 1
            if k == 0:
                pids.append(self.pid)
            # placed as the scheduler would: on the least loaded of its CPUs (by the threads placed so far)
            low = min(self._placed.get(x, 0.0) for x in eff)
            cpu = self.rng.choice([x for x in sorted(eff) if self._placed.get(x, 0.0) <= low + 1e-9])
            self._placed[cpu] = self._placed.get(cpu, 0.0) + busy
            self.tasks.append([self.pid, pids[0], comm, sorted(eff), busy, key, 0, 0.0, cpu])
            if runq_wait:
                self.waits[self.pid] = runq_wait
        self.w(f"{d}/cgroup.procs", "".join(f"{x}\n" for x in pids))
        for pid in pids:
            self.w(f"/proc/{pid}/cgroup", layout.proc_cgroup(self.spec.cgroup, rel, self.spec.cgroupns_prefix))

    def _cg(self, d: str, p: PodSpec, c: CtrSpec | None, eff: set[int]) -> None:
        s = self.spec
        mems = c.mems if c and c.mems else format_cpuset(sorted({self.topo[x][3] for x in eff if x in self.topo}))
        quota = int(c.quota_cores * 100000) if c and c.quota_cores else None
        nodes = sorted(_cset(mems)) or [0]
        if c is not None:  # 64 MiB of anon memory per container, spread over its mems (bytes on v2, pages on v1)
            share = {n: (64 << 20) // len(nodes) if n in nodes else 0 for n in range(self.nnuma + s.cpuless_numa)}
            if s.cgroup == 2:
                per = " ".join(f"N{n}={b}" for n, b in share.items())
                self.w(f"{d}/memory.numa_stat", f"anon {per}\nfile " + " ".join(f"N{n}=0" for n in share) + "\n")
            else:
                pages = {n: b // 4096 for n, b in share.items()}
                per = " ".join(f"N{n}={v}" for n, v in pages.items())
                tot = sum(pages.values())
                self.w(d.replace("/sys/fs/cgroup/cpuset/", "/sys/fs/cgroup/memory/", 1) + "/memory.numa_stat",
                       f"total={tot} {per}\nfile=0 " + " ".join(f"N{n}=0" for n in pages) + f"\nanon={tot} {per}\n")
        if s.cgroup == 2:
            if s.cpuset_delegated:  # without the controller, the cpuset files do not exist
                self.w(f"{d}/cpuset.cpus", (c.effective or c.cpus or "") + "\n" if c else "\n")
                self.w(f"{d}/cpuset.cpus.effective", format_cpuset(eff) + "\n")
                self.w(f"{d}/cpuset.mems.effective", mems + "\n")
            self.w(f"{d}/cpu.max", f"{quota if quota else 'max'} 100000\n")
            self.w(f"{d}/cpu.weight", "100\n")
            self.w(f"{d}/cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
        else:
            self.w(f"{d}/cpuset.cpus", format_cpuset(eff) + "\n")
            self.w(f"{d}/cpuset.effective_cpus", format_cpuset(eff) + "\n")
            self.w(f"{d}/cpuset.effective_mems", mems + "\n")
            cd = d.replace("/sys/fs/cgroup/cpuset/", "/sys/fs/cgroup/cpu/", 1)
            self.w(f"{cd}/cpu.cfs_quota_us", f"{quota if quota else -1}\n")
            self.w(f"{cd}/cpu.cfs_period_us", "100000\n")
            self.w(f"{cd}/cpu.shares", "1024\n")

    # ------------------------------------------------------------------ dynamic files
    SOFTIRQS = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")

    def _noise(self, dt: float, lines: list[str], tot: list[int]):
        """Kernel time (irq, softirq, steal) per CPU in /proc/stat, /proc/softirqs (every possible CPU,
        offline ones frozen) and /proc/interrupts (device IRQs, the LOC timer and RES IPI rows)."""
        s = self.spec
        hz = 100
        out = []
        for c, line in zip(sorted(self.online), lines):
            f = line.split()
            noisy = s.noise.get(c, 0.0)
            irq, soft, steal = self.counters.get(("noise", c), (0.0, 0.0, 0.0))
            irq += (0.002 + noisy * 0.2) * hz * dt
            soft += (0.003 + noisy * 0.8) * hz * dt
            steal += s.steal.get(c, 0.0) * hz * dt
            self.counters[("noise", c)] = (irq, soft, steal)
            ni, ns, nt = int(irq), int(soft), int(steal)
            # idle already leaves the kernel's time out (_write_stat): the CPU's total stays hz per second
            out.append(f"{f[0]} {f[1]} 0 0 {f[4]} 0 {ni} {ns} {nt} 0 0")
            tot[5] += ni
            tot[6] += ns
            tot[7] += nt
        possible = sorted(self.topo) if self.topo else sorted(self.online)
        rows = ["                    " + "".join(f"CPU{c:<8}" for c in possible)]
        rate = {"HI": 0, "TIMER": 120, "NET_TX": 2, "NET_RX": 15, "BLOCK": 8, "IRQ_POLL": 0, "TASKLET": 1,
                "SCHED": 60, "HRTIMER": 0, "RCU": 90}
        for kind in self.SOFTIRQS:
            cells = []
            for c in possible:
                n = self.counters.get(("softirq", kind, c), 0.0)
                if c in self.online:
                    extra = 40000 * s.noise.get(c, 0.0) if kind == "NET_RX" else 0.0
                    n += (rate[kind] + extra) * dt
                    self.counters[("softirq", kind, c)] = n
                cells.append(f" {int(n):10d}")
            rows.append(f"{kind:>12}:" + "".join(cells))
        self.w("/proc/softirqs", "\n".join(rows) + "\n")
        on = sorted(self.online)
        irq_lines = ["           " + "".join(f"CPU{c:<8}" for c in on)]
        for irq, cl in sorted(s.irqs.items()):
            aff = _cset(cl)
            cnt = []
            for c in on:
                n = self.counters.get(("irq", irq, c), 1000.0 if c in aff else 0.0)
                if c in aff:
                    n += (50 + 20000 * s.noise.get(c, 0.0)) * dt
                self.counters[("irq", irq, c)] = n
                cnt.append(str(int(n)))
            irq_lines.append(f" {irq:>3}: " + " ".join(cnt) + f"  PCI-MSI {irq}-edge  eth0-rx-{irq}")
        for kind, per_s, desc in (("LOC", 250, "Local timer interrupts"), ("RES", 5, "Rescheduling interrupts")):
            cnt = []
            for c in on:
                n = self.counters.get((kind, c), 0.0) + per_s * dt
                self.counters[(kind, c)] = n
                cnt.append(f"{int(n):10d}")
            irq_lines.append(f"{kind}: " + " ".join(cnt) + f"   {desc}")
        self.w("/proc/interrupts", "\n".join(irq_lines) + "\n")
        return out, tot

    def tick(self, dt: float = 1.0, load: dict | None = None) -> None:
        """Advance the counters by `dt` seconds and rewrite the files that change."""
        self.t += dt
        busy = self._run_tasks(dt, load)
        self._write_stat(dt, busy)
        self.w("/proc/uptime", f"{1000 + self.t:.2f} {2000 + self.t:.2f}\n")
        for nn in range(self.nnuma):
            hit, miss = self.counters.get(("numa", nn), (100000, 0))
            hit += 10000
            miss += self.spec.numa_miss_per_tick
            self.counters[("numa", nn)] = (hit, miss)
            self.w(f"/sys/devices/system/node/node{nn}/numastat",
                   f"numa_hit {hit}\nnuma_miss {miss}\nnuma_foreign 0\ninterleave_hit 0\nlocal_node {hit}\nother_node {miss}\n")
        for t in self.tasks:
            self._write_task(t, dt)
        self._write_cgroups(dt)
        self._cgroup_stat()

    def _cgroup_stat(self) -> None:
        """v2: the kubepods root's cgroup.stat, as the kernel counts: every cgroup below it (directories; a
        fixture's hand-made ones too), then the dying ones (none here). Counted again every tick, so a test
        that adds or removes a cgroup between ticks is seen as on a node."""
        if self.spec.cgroup != 2:
            return
        kp = self.root / ("sys/fs/cgroup" + layout.pod_cgroup(self.spec.driver, self.spec.cgroup_root,
                                                              "Burstable", "x").rsplit("/", 2)[0]).lstrip("/")
        if not kp.is_dir():
            return
        n = sum(len(dirs) for _, dirs, _ in os.walk(kp))
        (kp / "cgroup.stat").write_text(f"nr_descendants {n}\nnr_dying_descendants 0\n")

    def kernel_share(self, cpu: int) -> float:
        """The share of a CPU's time in interrupts, softirqs and steal: what `_noise` counts for it."""
        noisy = self.spec.noise.get(cpu, 0.0)
        return (0.002 + noisy * 0.2) + (0.003 + noisy * 0.8) + self.spec.steal.get(cpu, 0.0)

    def _run_tasks(self, dt: float, load: dict | None) -> dict[int, float]:
        """One tick of every CPU, the model every counter is written from. Each thread is runnable a share
        of the time (its busy share with a wobble, at most all of it) and now and then moves to another of
        its CPUs, one no busier for its coming (the scheduler balances). On each CPU: the daemons of the
        system (not on exclusive CPUs), the competitor of a thread with `runq_wait` and its threads share the
        CPU; asked for more than all of it, each gets its share and the rest of its runnable time is run-queue
        wait. The interrupts take their time from whoever runs (no wait: the thread is still current).
        -> each CPU's busy share outside the kernel; `self.step[tid]` = (on-CPU share, wait share)."""
        hz = 100
        # background load: system daemons, uneven across CPUs, drifting over time; never on exclusive CPUs
        bg = {c: 0.0 if c in self.exclusive else max(0.0, 0.04 + 0.06 * math.sin(self.t / 5.0 + c * 0.7))
              for c in self.online}
        placed: dict[int, float] = {}
        for t in self.tasks:
            placed[t[8]] = placed.get(t[8], 0.0) + t[4]
        on: dict[int, list] = {}
        for t in self.tasks:
            tid, pid, comm, cpus, b, key, *_ = t
            wob = 1.0 + 0.4 * ((self.rng.random() - 0.5) if load is None else load.get(key, 0.0))
            runnable = min(1.0, b * wob)  # a thread is on one CPU at a time: never more than all of it
            cpu = t[8]
            if len(cpus) > 1 and self.rng.random() <= 0.1:
                here = placed.get(cpu, 0.0)
                to = [x for x in cpus if x != cpu and placed.get(x, 0.0) + b <= here + 1e-9]
                if to:
                    cpu = self.rng.choice(to)
                    placed[t[8]] = here - b
                    placed[cpu] = placed.get(cpu, 0.0) + b
                    t[6] += 1
            t[8] = cpu
            named = min(self.waits.get(tid, 0.0), runnable)  # behind the competitor the spec names
            on.setdefault(cpu, []).append((t, runnable, named))
        busy = dict(bg)
        self.step = {}
        for cpu in self.online | set(on):
            ts = on.get(cpu, [])
            rival = max((w for _, _, w in ts), default=0.0)  # a thread's named competitor runs on its CPU
            want = sum(r - w for _, r, w in ts) + bg.get(cpu, 0.0) + rival
            f = 1.0 if want <= 1.0 else 1.0 / want  # more asked than the CPU has: each its share
            k = self.kernel_share(cpu)
            g = 1.0 if want * f + k <= 1.0 else (1.0 - k) / (want * f)  # the interrupts' time, from the runners
            used = 0.0
            for t, r, w in ts:
                run = (r - w) * f * g
                self.step[t[0]] = (run, w + (r - w) * (1.0 - f))
                t[7] += run * hz * dt
                used += run
            busy[cpu] = used + (bg.get(cpu, 0.0) + rival) * f * g
        return busy

    def _write_stat(self, dt: float, busy: dict[int, float]) -> None:
        """/proc/stat: each CPU's user ticks from its busy share, its kernel time (`_noise`), idle the rest of
        its time; the totals."""
        hz = 100
        lines = []
        tot = [0] * 8
        for c in sorted(self.online):
            u, idle = self.counters.get(("cpu", c), (0.0, 0.0))
            u += busy[c] * hz * dt
            idle += max(0.0, 1.0 - busy[c] - self.kernel_share(c)) * hz * dt
            self.counters[("cpu", c)] = (u, idle)
            lines.append(f"cpu{c} {int(u)} 0 0 {int(idle)} 0 0 0 0 0 0")
            tot[0] += int(u)
            tot[3] += int(idle)
        lines, tot = self._noise(dt, lines, tot)
        self.w("/proc/stat", f"cpu  {tot[0]} 0 0 {tot[3]} 0 {tot[5]} {tot[6]} {tot[7]} 0 0\n" + "\n".join(lines)
               + f"\nctxt {int(self.t * 1000)}\nbtime 1700000000\nprocesses 5000\nprocs_running 3\n")

    def _write_task(self, t: list, dt: float) -> None:
        """One task's stat, status, schedstat and sched."""
        tid, pid, comm, cpus, b, key, migr, ticks, cpu = t[:9]
        kth = t[9] if len(t) > 9 else False
        allowed = t[10] if len(t) > 10 else cpus  # its Cpus_allowed_list (a task outside pods: see _tasks)
        flags = 0x00208040 if kth else 0x00400100
        d = f"/proc/{pid}/task/{tid}"
        self.w(f"{d}/stat", f"{tid} ({comm}) R 1 {pid} {pid} 0 -1 {flags} 0 0 0 0 {int(ticks)} 0 0 0 20 0 1 0 100 "
               f"1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 {cpu} 0 0 0 0 0\n")
        self.w(f"{d}/status", f"Name:\t{comm}\nTgid:\t{pid}\nPid:\t{tid}\nCpus_allowed_list:\t{format_cpuset(allowed)}\n"
               f"Mems_allowed_list:\t0\nvoluntary_ctxt_switches:\t{int(self.t * 10)}\nnonvoluntary_ctxt_switches:\t{migr}\n")
        wait = self.counters.get(("wait", tid), 0.0) + self.step.get(tid, (0.0, 0.0))[1] * dt * 1e9
        self.counters[("wait", tid)] = wait
        self.w(f"{d}/schedstat", f"{int(ticks * 10_000_000)} {int(wait)} {int(ticks) + migr + int(self.t * 10)}\n")
        self.w(f"{d}/sched", f"{comm} ({tid}, #threads: 1)\n{'-' * 67}\n"
               f"se.nr_migrations                             :{migr:>21}\nnr_switches                                  :{int(self.t * 10) + migr:>21}\n"
               f"nr_voluntary_switches                        :{int(self.t * 10):>21}\nnr_involuntary_switches                      :{migr:>21}\n")

    PSI_WINDOWS = (10.0, 60.0, 300.0)  # avg10, avg60, avg300

    def _pressure(self, key, waits: list[float], dt: float) -> str:
        """cpu.pressure of a cgroup whose threads waited these shares of the tick: "some" (at least one
        waited) is the longest wait (they wait behind the same runners: their waits overlap), "full" (all
        waited at once) the shortest; each avg is the kernel's running average of that share in percent
        (kernel/sched/psi.c calc_avgs), from a node up long before the first tick (started at its value)."""
        some, full = (max(waits), min(waits)) if waits else (0.0, 0.0)
        lines = []
        for kind, share in (("some", some), ("full", full)):
            total, avgs = self.counters.get(("psi", kind, key), (0.0, None))
            total += share * dt * 1e6
            pct = share * 100
            avgs = [pct] * 3 if avgs is None else [a * math.exp(-dt / win) + pct * (1 - math.exp(-dt / win))
                                                   for a, win in zip(avgs, self.PSI_WINDOWS)]
            self.counters[("psi", kind, key)] = (total, avgs)
            lines.append(f"{kind} avg10={avgs[0]:.2f} avg60={avgs[1]:.2f} avg300={avgs[2]:.2f} total={int(total)}\n")
        return "".join(lines)

    def _write_cgroups(self, dt: float) -> None:
        """Each running container's cpu.stat (periods, throttling, its threads' time on CPU) and, on v2,
        cpu.pressure, its pod's as well."""
        s = self.spec
        by_ctr: dict = {}
        for t in self.tasks:
            if t[5] is not None:
                by_ctr.setdefault(t[5], []).append(t)
        for p in s.pods:
            if not p.cgroup:
                continue
            pod_waits: list[float] = []
            for c in p.containers:
                if c.init:
                    continue
                d = self.cg_dir(p, c, "cpu")
                # both grow with the time the tick covers (10 periods of 100 ms a second, `throttled` of them
                # a second), so no interval the demo runs at counts more throttled periods than periods
                per, thr = self.counters.get(("cg", c.id), (0.0, 0.0))
                per += 10 * dt if c.quota_cores else 0.0
                thr += min(c.throttled, 10) * dt if c.quota_cores else 0.0
                self.counters[("cg", c.id)] = (per, thr)
                per, thr = int(per + 1e-9), int(thr + 1e-9)
                ts = by_ctr.get((p.uid, c.id), [])
                usage = int(sum(t[7] for t in ts) * 10_000)  # clock ticks on CPU -> µs
                if s.cgroup == 2:
                    waits = [self.step.get(t[0], (0.0, 0.0))[1] for t in ts if t[4] > 0]
                    pod_waits += waits
                    self.w(f"{d}/cpu.pressure", self._pressure(c.id, waits, dt))
                    self.w(f"{d}/cpu.stat", f"usage_usec {usage}\nuser_usec {usage}\nsystem_usec 0\n"
                           f"nr_periods {per}\nnr_throttled {thr}\nthrottled_usec {thr * 5000}\nnr_bursts 0\nburst_usec 0\n")
                else:
                    self.w(f"{d}/cpu.stat", f"nr_periods {per}\nnr_throttled {thr}\nthrottled_time {thr * 5000000}\n")
            if s.cgroup == 2:
                self.w(f"{self.cg_dir(p, None, 'cpu')}/cpu.pressure", self._pressure(p.uid, pod_waits, dt))
