"""What fits on a node: kubelet's next CPU decision, from pinscope's NodeSnapshot (pure functions).

`case_from_snapshot` turns the node's files (topology as cadvisor reports it to kubelet, the
kubelet configuration, cpu_manager_state) into the case collectors/fit/kubelet.py decides;
`predict` answers for the next Guaranteed container of N CPUs: the CPUs kubelet would give, or
its admission error, plus per NUMA node and socket the largest container kubelet could give from
there alone (capacity.py), and how many of N fit one after another. What the node's files cannot
tell is listed in `unknown`; what pinscope had to assume (the kubelet release, above all) in `assumed`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .active import checkpoint_uids, inactive_pods, said
from .capacity import places
from .combinations import admission_cost, slow_note
from .devices import UNHEALTHY_UNSEEN, DeviceManager, checkpoint_case, device_answer, devices_case
from .kubelet import (DEFAULT_RELEASE, RELEASES, TOPOLOGY_AFFINITY_MESSAGE, Kubelet, KubeletError, cpuset_str,
                      new_topology_manager)
from .memory import memory_answer, with_memory

# What no file on the node says, whatever pinscope reads.
ALWAYS_UNKNOWN = (
    "the next pod's other containers (each Guaranteed container with whole CPUs takes its own)",
    "CPUs of init containers kubelet holds in memory for reuse (cpusToReuse, not in the checkpoint)",
    "pods admitted between now and the next pod (admission order)",
)


@dataclass
class FitAnswer:
    node: str
    kubelet_version: str | None
    release: str
    assumed: list[str] = field(default_factory=list)
    cpus: list[int] | None = None
    error: dict | None = None
    per_numa: list[dict] = field(default_factory=list)
    per_socket: list[dict] = field(default_factory=list)
    how_many: int | None = None
    unknown: list[str] = field(default_factory=list)
    readable: bool = True  # False: the inputs could not be read (exit 3)
    note: str = ""
    live: dict | None = None  # kubelet's PodResources view (collectors/podresources.py summary), where asked
    memory: dict | None = None  # the memory manager's placement of the asked memory (memory.py memory_answer)
    hint_combinations: int | None = None  # the cross product kubelet's topology manager walks (combinations.py)
    warnings: list[str] = field(default_factory=list)  # where kubelet itself would do badly: a slow admission
    devices: dict | None = None  # the device manager's placement of the asked devices (devices.py device_answer)

    def fits(self) -> bool:
        return self.readable and self.error is None

    def as_json(self) -> dict:
        out = {
            "node": self.node,
            "kubelet_version": self.kubelet_version,
            "assumed": self.assumed,
            "cpus": self.cpus,
            "error": self.error,
            "per_numa": self.per_numa,
            "per_socket": self.per_socket,
            "how_many_fit": self.how_many,
            "unknown": self.unknown,
            "note": self.note,
            "readable": self.readable,  # False: read too little to say (exit 3), whatever cpus and error are
            "live": self.live,
            "hint_combinations": self.hint_combinations,
            "warnings": self.warnings,
        }
        if self.memory is not None:  # asked with --memory
            out["memory"] = self.memory
        if self.devices is not None:  # asked with --device
            out["devices"] = self.devices
        return out


def release_of(version: str | None) -> tuple[str, str | None]:
    """(the port to use, what was assumed) for a kubelet version such as "v1.36.2"."""
    if not version:
        return DEFAULT_RELEASE, f"kubelet release unknown: kubelet {DEFAULT_RELEASE}'s code assumed"
    m = re.match(r"v?(\d+)\.(\d+)", version)
    if not m:
        return DEFAULT_RELEASE, f"kubelet release {version!r} not understood: kubelet {DEFAULT_RELEASE}'s code assumed"
    minor = int(m.group(2))
    rel = f"1.{minor}"
    if rel in RELEASES:
        return rel, None
    # 1.36 has the 1.35 distribute-across-NUMA code (the align-by-socket change came in 1.37)
    if minor == 36:
        return "1.35", None
    if minor < 35:
        return "1.35", f"kubelet {rel}: kubelet 1.35's code assumed (older releases are not ported)"
    return DEFAULT_RELEASE, f"kubelet {rel}: kubelet {DEFAULT_RELEASE}'s code assumed (1.38 adds allocation strategies not ported)"


def _cpu_quantity(text) -> float:
    s = str(text).strip()
    if s.endswith("m"):
        return float(s[:-1]) / 1000
    return float(s)


def _cpu_rows(online: list) -> tuple[list[list[int]], bool]:
    """The case's CPU rows [id, socket, numa, core, uncore] of the online CPUs -> (rows, some L3 id unread)."""
    # cadvisor groups a NUMA node's threads into cores by (core_id, physical_package_id); kubelet names
    # a core by its lowest thread. An L3 shared by exactly the node's threads is a *node* cache for
    # cadvisor, not an uncore cache: kubelet then falls back to the socket (cadvisor sysinfo.addCacheInfo)
    rows = []
    core_threads: dict[tuple[int, int, int], int] = {}
    node_cores: dict[int, set] = {}
    l3_cpus: dict[int, int] = {}
    for c in online:
        key = (c.numa_node or 0, c.socket or 0, c.core if c.core is not None else c.id)
        core_threads[key] = core_threads.get(key, 0) + 1
        node_cores.setdefault(key[0], set()).add(key)
        if c.l3 is not None:
            l3_cpus[c.l3] = l3_cpus.get(c.l3, 0) + 1
    no_l3 = False
    for c in sorted(online, key=lambda c: c.id):
        numa, socket = c.numa_node or 0, c.socket or 0
        core = c.core if c.core is not None else c.id
        per_node = len(node_cores[numa]) * core_threads[(numa, socket, core)]
        uncore = -1
        if c.l3 is None:
            no_l3 = True
        elif l3_cpus[c.l3] != per_node:
            uncore = c.l3
        rows.append([c.id, socket, numa, core, uncore])
    return rows, no_l3


def _reserved(cfg, problems: list[str]) -> tuple[int, str]:
    """(how many CPUs kubelet reserves, its reservedSystemCPUs as text or ""); a reservation that cannot be
    used is added to `problems`."""
    reserved = cfg.reserved_cpus
    if reserved:
        return len(reserved), cpuset_str(reserved)
    total = 0.0
    for d in (cfg.kube_reserved or {}, cfg.system_reserved or {}):
        if "cpu" in d:
            try:
                total += _cpu_quantity(d["cpu"])
            except ValueError:
                problems.append(f"reserved cpu {d['cpu']!r} is not a quantity")
    num_reserved = math.ceil(total)
    if num_reserved == 0:
        problems.append("the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero")
    return num_reserved, ""


def case_from_snapshot(snap, containers: list[int], inactive: dict[str, str] | None = None) -> tuple[dict, list[str], list[str]]:
    """(case, assumed, problems); problems non-empty: no prediction can be made. `inactive`: the checkpoint's pods
    kubelet no longer counts (active.py inactive_pods, uid -> why); None: judged from the node's files alone."""
    topo, cfg, state = snap.topology, snap.kubelet, snap.state
    assumed: list[str] = []
    problems: list[str] = []
    online = [c for c in topo.cpus if c.id in topo.online]
    if not online:
        problems.append("no online CPU was read")
    rows, no_l3 = _cpu_rows(online)
    if no_l3:
        assumed.append("no L3 cache id read for some CPUs: their uncore cache is their socket (kubelet's fallback)")
    with_cpus = {r[2] for r in rows}
    cpuless = sorted(n.id for n in topo.numa_nodes if n.id not in with_cpus)
    distances = {str(n.id): list(n.distances) for n in topo.numa_nodes if n.distances}
    opts = {str(k): str(v) for k, v in (cfg.cpu_manager_policy_options or {}).items()}
    tm_opts = dict(getattr(cfg, "topology_manager_policy_options", None) or {})
    num_reserved, reserved_text = _reserved(cfg, problems)
    case: dict = {
        "cpus": rows, "cpuless_numa": cpuless, "distances": distances, "cpu_options": opts,
        "tm_policy": cfg.topology_manager_policy or "none", "tm_scope": cfg.topology_manager_scope or "container",
        "tm_options": tm_opts, "reserved": reserved_text, "num_reserved": num_reserved,
        "assignments": {}, "containers": list(containers),
    }
    if state is not None:
        case["default"] = cpuset_str(state.default_cpuset)
        case["assignments"] = {
            (uid or "?"): {name: cpuset_str(cpus) for name, cpus in ctrs.items()}
            for uid, ctrs in state.entries.items()
        }
        gone = inactive_pods(snap) if inactive is None else inactive
        held = set(checkpoint_uids(snap))
        gone = {uid: why for uid, why in gone.items() if uid in held}
        if gone:  # kubelet frees them first (removeStaleState): collectors/fit/active.py
            case["inactive"] = sorted(gone)
            assumed.extend(said(snap, gone))
    return case, assumed, problems


def how_many_fit(k: Kubelet, n: int, limit: int = 4096, memory: list[dict] | None = None) -> int:
    """How many containers of n CPUs (and `memory`, as Kubelet.admit takes it) kubelet admits one after
    another (on a copy of its state)."""
    if n <= 0:
        return 0
    saved, saved_memory = set(k.default), k.memory.copy() if k.memory is not None else None
    count = 0
    try:
        while count < limit:
            d = k.admit([n], commit=True, memory=memory)
            if d.error is not None:
                break
            count += 1
    finally:
        k.default, k.memory = saved, saved_memory
    return count


def predict(snap, cpus: int, kubelet_version: str | None = None, count: bool = True, with_largest: bool = True,
            unknown_why: str | None = None, inactive: dict[str, str] | None = None, memory: dict | None = None,
            devices: dict[str, int] | None = None, live=None) -> FitAnswer:
    """The next Guaranteed container of `cpus` CPUs on this node, as its kubelet would decide (its release:
    `kubelet_version`; None: assumed, `unknown_why` saying why it is not known). `inactive`: as case_from_snapshot's.
    `memory`: its memory and hugepages-<size> in bytes, placed by the memory manager (memory.py) where it pins;
    `devices` {resource: count}, by the device manager from kubelet's PodResources view `live` (_with_devices)."""
    release, why = release_of(kubelet_version)
    ans = FitAnswer(node=snap.node, kubelet_version=kubelet_version, release=release)
    if why:
        ans.assumed.append(why + (f" ({unknown_why})" if unknown_why and not kubelet_version else ""))
    ans.unknown = list(ALWAYS_UNKNOWN)
    cfg = snap.kubelet
    if cfg.cpu_manager_policy is None or not cfg.found:
        ans.readable = False
        ans.note = ("no kubelet process was found, nor its configuration: its CPU manager policy is unknown"
                    if cfg.pid is None and not cfg.found else
                    "kubelet's configuration could not be read: its CPU manager policy is unknown")
        return ans
    if cfg.cpu_manager_policy != "static":
        return _shared_pool(ans, snap, devices, live, inactive)
    status = getattr(snap, "state_status", "ok")
    if snap.state is None or status != "ok":
        ans.readable = False
        why_state = {"unreadable": "cpu_manager_state is unreadable (mode 0600, root's: run with --sudo, or as root)",
                     "missing": "cpu_manager_state is missing"}.get(status, f"cpu_manager_state is {status}")
        ans.note = f"{why_state}: which CPUs are free is unknown, so no prediction is made"
        return ans
    if snap.state.policy != "static":
        ans.readable = False
        ans.note = f"cpu_manager_state says policy {snap.state.policy!r} while the configuration says static"
        return ans
    case, assumed, problems = case_from_snapshot(snap, [cpus], inactive)
    ans.assumed.extend(assumed)
    if problems:
        ans.readable = False
        ans.note = "; ".join(problems)
        return ans
    mem, mem_note = with_memory(case, snap, memory, ans.unknown)
    dev_req = _with_devices(case, ans, snap, devices, live, inactive)
    try:
        k = Kubelet(case, release)
    except KubeletError as e:
        ans.error = {"kind": e.kind, "message": e.message}
        return ans
    d = k.admit([cpus], memory=mem, devices=None if dev_req is None else [dev_req])
    ans.error, ans.devices = d.error, _placed(ans, dev_req, d)
    ans.hint_combinations, counts = admission_cost(k, d, mem, dev_req)
    if (slow := slow_note(ans.hint_combinations, counts)) is not None:
        ans.warnings.append(slow)
    if memory is not None:
        ans.memory = memory_answer(k, memory, d.memory, mem_note)
    if d.error is None and d.sets:
        ans.cpus = sorted(d.sets[0] or ())
    ans.per_numa, ans.per_socket = places(k, with_largest)
    if count:
        _count(ans, k, cpus, mem)
    return ans


def _with_devices(case: dict, ans: FitAnswer, snap, request: dict[str, int] | None, live,
                  inactive: dict[str, str] | None = None) -> dict[str, int] | None:
    """Add the device manager to the case where the devices' NUMA nodes are known (kubelet's PodResources view),
    or where its checkpoint alone shows a refusal (_from_checkpoint); -> the request to place, or None (not
    asked, or not known: said in ans, never guessed)."""
    if request is None:
        held = getattr(snap, "device_state", None)
        if held is not None and held.allocations:
            ans.unknown.append("the next pod's devices and their NUMA nodes (give --device RESOURCE=COUNT to place them)")
        return None
    if live is None or getattr(live, "error", None):
        why = getattr(live, "error", None) or "not asked"
        gone = set(case.get("inactive") or ()) | set(inactive or ())
        holding = {p.uid for p in snap.pods if p.cgroup_path is not None and p.uid not in gone}
        dev = checkpoint_case(getattr(snap, "device_state", None), request, holding)
        if dev is not None:
            return _from_checkpoint(case, ans, dev, request, why)
        note = (f"the devices' NUMA nodes are unknown: kubelet's PodResources API was not reached ({why}); the "
                "prediction leaves kubelet's device manager out, as if no device were asked")
        ans.assumed.append(note)
        ans.devices = {"request": dict(request), "per_resource": {}, "note": note}
        return None
    case["devices"] = devices_case(live)
    case["devices"]["containers"] = [dict(request)]
    if any(r in case["devices"]["resources"] for r in request):  # else the device manager ignores them: only that
        ans.assumed.append(UNHEALTHY_UNSEEN)
        ans.assumed.append("the device plugins offer no GetPreferredAllocation (where one does, it picks among the "
                           "devices kubelet names)")
        ans.unknown.append("how many such containers fit one after another counts CPUs (and memory), not devices")
    return dict(request)


def _shared_pool(ans: FitAnswer, snap, devices: dict[str, int] | None, live, inactive) -> FitAnswer:
    """cpuManagerPolicy none: no CPUs to place; the devices still may be refused (_devices_alone)."""
    ans.note = (f"cpuManagerPolicy is {snap.kubelet.cpu_manager_policy!r}: no container gets exclusive CPUs; "
                "a container of any size runs on the shared pool")
    _devices_alone(ans, snap, devices, live, inactive)
    return ans


def _devices_alone(ans: FitAnswer, snap, request: dict[str, int] | None, live, inactive: dict[str, str] | None) -> None:
    """No exclusive CPUs to place (cpuManagerPolicy none), yet kubelet's device manager (the topology manager's
    provider still) refuses too many devices, and under restricted or single-numa-node devices no NUMA node holds
    as it prefers (_devices_admitted: from the PodResources view only, which says where the free ones are): from
    kubelet's PodResources view, or its checkpoint alone where that is positive evidence (checkpoint_case). Nothing said otherwise (the CLI says no decision was predicted)."""
    if request is None:
        return
    reached = live is not None and not getattr(live, "error", None)
    holding = {p.uid for p in snap.pods if p.cgroup_path is not None and p.uid not in (inactive or {})}
    dev = devices_case(live) if reached else checkpoint_case(getattr(snap, "device_state", None), request, holding)
    if dev is None:
        return
    m = DeviceManager.from_case(dev, [n.id for n in snap.topology.numa_nodes], release=ans.release)
    refused = m.refusals(request)
    tm = snap.kubelet.topology_manager_policy or "none"
    if reached and tm in ("restricted", "single-numa-node") and not _devices_admitted(snap, m, request, tm):
        ans.error = {"kind": "TopologyAffinityError", "message": TOPOLOGY_AFFINITY_MESSAGE}
    elif not refused:
        return
    elif tm in ("restricted", "single-numa-node") and any(h == [] for h in m.hints(request).values()):
        ans.error = {"kind": "TopologyAffinityError", "message": TOPOLOGY_AFFINITY_MESSAGE}
    else:
        ans.error = {"kind": "UnexpectedAdmissionError", "message": f"Allocate failed due to {refused[0]}, which is unexpected"}
    ans.devices = device_answer(request, None, ans.error)
    if not reached:
        ans.devices["note"] = ("kubelet's PodResources API was not reached: the device checkpoint alone shows fewer "
                               "free devices than asked, which kubelet's device manager refuses; their NUMA nodes are unknown")
        ans.unknown.append("the devices' NUMA nodes (kubelet's PodResources API was not reached)")


def _devices_admitted(snap, m: DeviceManager, request: dict[str, int], tm: str) -> bool:
    """The topology manager's admission with the device manager its only provider of hints (cpuManagerPolicy none:
    the CPU manager gives none; the memory manager's None policy none): its merge, as kubelet.py's. A configuration
    kubelet would not start with is not this function's to judge: admitted."""
    cfg = snap.kubelet
    nodes = sorted(n.id for n in snap.topology.numa_nodes)
    distances = {n.id: list(n.distances) for n in snap.topology.numa_nodes if n.distances}
    try:
        topo_m = new_topology_manager(nodes, tm, cfg.topology_manager_scope or "container",
                                      dict(getattr(cfg, "topology_manager_policy_options", None) or {}), distances)
    except KubeletError:
        return True
    return topo_m.merge([m.hints(request)])[1]


def _from_checkpoint(case: dict, ans: FitAnswer, dev: dict, request: dict[str, int], why: str) -> dict[str, int]:
    """The device manager from its checkpoint alone (checkpoint_case: fewer registered devices free than asked, a
    refusal wherever they are): added to the case, their NUMA nodes said unknown. -> the request to place."""
    case["devices"] = dev
    note = (f"kubelet's PodResources API was not reached ({why}): the device checkpoint alone shows fewer free "
            "devices than asked, which kubelet's device manager refuses; which NUMA nodes they are on is unknown")
    ans.devices = {"request": dict(request), "per_resource": {}, "note": note}
    ans.unknown.append(f"the devices' NUMA nodes ({note.split(':')[0]})")
    ans.unknown.append("how many such containers fit one after another counts CPUs (and memory), not devices")
    aligned = any(n is not None for devs in dev["resources"].values() for n in devs.values())
    if case["tm_policy"] in ("restricted", "single-numa-node") and not aligned:
        ans.unknown.append(f"which refusal kubelet gives: where these devices carry NUMA nodes, topology manager "
                           f"policy {case['tm_policy']} refuses with TopologyAffinityError before the device manager")
    return dict(dev["containers"][0])


def _placed(ans: FitAnswer, request: dict[str, int] | None, d) -> dict | None:
    """`devices` of the answer: where the device manager placed the request (None: not placed, as said before);
    from the checkpoint alone, the whole request and the note said before."""
    if request is None:
        return ans.devices
    out = device_answer(request, d.devices[0] if d.devices else None, d.error)
    if ans.devices is not None:
        out["request"], out["note"] = ans.devices["request"], ans.devices["note"]
    return out


COUNT_MEMORY_NUMA = 8  # beyond, each admission weighs 2^N memory masks: 16 NUMA nodes took 40 s to count (2026-12)


def _count(ans: FitAnswer, k: Kubelet, cpus: int, mem: list[dict] | None) -> None:
    """ans.how_many, unless the memory manager's masks make counting cost more than a prediction should."""
    nodes = len(k.memory.machine) if mem is not None and k.memory is not None else 0
    if nodes > COUNT_MEMORY_NUMA:
        ans.unknown.append(f"how many such containers fit one after another: not counted with memory on {nodes} NUMA "
                           f"nodes (kubelet's memory manager weighs all 2^{nodes} NUMA masks at each admission)")
        return
    ans.how_many = how_many_fit(k, cpus, memory=mem)
