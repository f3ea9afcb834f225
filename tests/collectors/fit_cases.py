"""Cases for the differential test of pinscope's kubelet port (collectors/fit/kubelet.py)
against kubelet's own code (tests/kubeletsim): hypothesis draws the shape (1-8 sockets, 1-8
NUMA nodes per socket, SMT 1-4, how CPUs are numbered, uncore caches, offline CPUs) and the
configuration (every CPU manager option, every topology manager policy, scope and option,
reserved CPUs given or chosen by kubelet, existing assignments, the request); a seed drawn
with them places the offline CPUs, the reserved set and the assignments. `memory_cases` adds the
memory manager's Static policy on 1-8 NUMA nodes.
"""

from __future__ import annotations

import random

from hypothesis import strategies as st

from pinscope.collectors.fit.kubelet import CPU_OPTIONS, cpuset_str


def machine(rng: random.Random, sockets: int, numa_per_socket: int, cores_per_numa: int, smt: int,
            numbering: str, uncore: str) -> list[list[int]]:
    """[[id, socket, numa, core, uncore]] for every CPU of the machine (offline ones dropped later)."""
    total_cores = sockets * numa_per_socket * cores_per_numa
    rows = []
    for s in range(sockets):
        for p in range(numa_per_socket):
            numa = s * numa_per_socket + p
            for c in range(cores_per_numa):
                core = numa * cores_per_numa + c  # machine-wide core index
                if uncore == "none":
                    u = -1
                elif uncore == "numa":
                    u = numa
                elif uncore == "socket":  # one L3 per socket over several NUMA nodes (SNC)
                    u = s
                else:  # CCX-like groups of 2-4 cores inside a NUMA node
                    size = int(uncore[3:])
                    u = numa * 100 + c // size
                for t in range(smt):
                    if numbering == "threads-apart":  # Intel-style: siblings N apart
                        cid = t * total_cores + core
                    else:  # siblings adjacent
                        cid = core * smt + t
                    rows.append([cid, s, numa, c, u])
    if numbering == "shuffled":
        ids = [r[0] for r in rows]
        rng.shuffle(ids)
        for r, i in zip(rows, ids):
            r[0] = i
    return rows


def _subset(rng: random.Random, pool: list[int], n: int) -> list[int]:
    n = max(0, min(n, len(pool)))
    return rng.sample(pool, n)


@st.composite
def cases(draw, max_cpus: int = 256, focus: str = "", max_numa: int = 64) -> dict:
    """focus="distribute": distribute-cpus-across-numa (and mostly align-by-socket) on 2+ sockets of
    2+ NUMA nodes with requests that span NUMA nodes: where kubelet 1.35 and 1.37 differ."""
    dist = focus == "distribute"
    sockets = draw(st.integers(2, 4)) if dist else draw(st.integers(1, min(8, max_numa)))
    numa_per_socket = draw(st.integers(2, 3)) if dist else draw(st.integers(1, max(1, min(8, max_numa // sockets))))
    smt = draw(st.integers(1, 4))
    numas = sockets * numa_per_socket
    most = max(1, max_cpus // (numas * smt))
    cores_per_numa = draw(st.integers(1, min(8, most)))
    numbering = draw(st.sampled_from(["threads-apart", "adjacent", "shuffled"]))
    uncore = draw(st.sampled_from(["none", "numa", "socket", "ccx2", "ccx3", "ccx4"]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = random.Random(seed)
    cpus = machine(rng, sockets, numa_per_socket, cores_per_numa, smt, numbering, uncore)

    offline = draw(st.sampled_from(["none", "none", "none", "few", "thread"]))
    if offline == "few" and len(cpus) > 2:
        drop = set(_subset(rng, [r[0] for r in cpus], rng.randint(1, max(1, len(cpus) // 8))))
        cpus = [r for r in cpus if r[0] not in drop] or cpus[:1]
    elif offline == "thread" and smt > 1:  # SMT off on some cores: their second thread gone
        cpus = [r for r in cpus if not (r[0] % 7 == 0 and (r[3] % 2 == 0))] or cpus[:1]
    cpus.sort()
    ids = [r[0] for r in cpus]

    opts = {}
    for name in CPU_OPTIONS:
        if draw(st.integers(0, 3)) == 0:
            opts[name] = draw(st.sampled_from(["true", "true", "false"]))
    if dist:
        opts["distribute-cpus-across-numa"] = "true"
        opts.pop("distribute-cpus-across-cores", None)
        opts.pop("prefer-align-cpus-by-uncorecache", None)
        if rng.random() < 0.8:
            opts["align-by-socket"] = "true"
    # options kubelet refuses together: mostly one of them dropped (the refusal itself stays covered)
    for a, b in (("full-pcpus-only", "distribute-cpus-across-cores"), ("distribute-cpus-across-numa", "distribute-cpus-across-cores"),
                 ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
                 ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa")):
        if opts.get(a) == "true" and opts.get(b) == "true" and rng.random() < 0.8:
            del opts[rng.choice((a, b))]
    if opts.get("distribute-cpus-across-numa") == "true" and numas > 12:
        # kubelet tries every combination of NUMA nodes: C(64, 32) never ends, in kubelet either
        del opts["distribute-cpus-across-numa"]
    tm_policy = draw(st.sampled_from(["none", "best-effort", "restricted", "single-numa-node"]))
    if tm_policy == "single-numa-node" and opts.get("align-by-socket") == "true" and rng.random() < 0.8:
        del opts["align-by-socket"]
    tm_scope = draw(st.sampled_from(["container", "pod"]))
    tm_opts: dict = {}
    present_numas = sorted({r[2] for r in cpus})
    if tm_policy != "none" and len(present_numas) > 8:
        # kubelet refuses > 8 NUMA nodes unless told; hint generation is 2^NUMA masks, so keep it <= 10
        if len(present_numas) <= 10 and draw(st.booleans()):
            tm_opts["max-allowable-numa-nodes"] = str(draw(st.integers(len(present_numas), 16)))
        elif len(present_numas) > 10 or rng.random() < 0.8:
            tm_policy = "none"
    if tm_policy != "none" and draw(st.booleans()):
        tm_opts["prefer-closest-numa-nodes"] = draw(st.sampled_from(["true", "false"]))
    distances = {}
    if "prefer-closest-numa-nodes" in tm_opts or draw(st.booleans()):
        for a in range(numas):
            row = []
            for b in range(numas):
                if a == b:
                    row.append(10)
                elif a // numa_per_socket == b // numa_per_socket:
                    row.append(11 + (a + b) % 3 * (seed % 5))
                else:
                    row.append(20 + (a * b + seed) % 4 * 4)
            distances[str(a)] = row
        # symmetric
        for a in range(numas):
            for b in range(a):
                distances[str(a)][b] = distances[str(b)][a]

    n_res = draw(st.integers(1, max(1, min(8, len(ids) // 2))))
    reserved = ""
    if draw(st.booleans()):
        how = draw(st.sampled_from(["random", "first", "core"]))
        if how == "random":
            res = _subset(rng, ids, n_res)
        elif how == "first":
            res = ids[:n_res]
        else:  # whole first core(s) in sibling order
            res = [r[0] for r in sorted(cpus, key=lambda r: (r[2], r[3], r[0]))][:n_res]
        reserved = cpuset_str(res)
        n_res = len(res)

    # existing exclusive assignments (disjoint, off the reserved set mostly)
    assignments: dict = {}
    k = draw(st.integers(0, 6))
    res_set = set(_parse(reserved)) if reserved else _kubelet_reserved(cpus, n_res, opts, tm_policy)
    pool = [i for i in ids if i not in res_set] if rng.random() < 0.9 else list(ids)
    rng.shuffle(pool)
    by_core: dict = {}
    core_of = {}
    for r in cpus:
        by_core.setdefault((r[1], r[2], r[3]), []).append(r[0])
        core_of[r[0]] = (r[1], r[2], r[3])
    for j in range(k):
        if len(pool) < 2:
            break
        take = rng.randint(1, max(1, len(pool) // (k + 1)))
        if rng.random() < 0.5:  # whole cores, as kubelet usually gives
            pool_set = set(pool)
            got = []
            for key in dict.fromkeys(core_of[i] for i in pool[:take]):
                got.extend(i for i in by_core[key] if i in pool_set)
        else:
            got = pool[:take]
        pool = [i for i in pool if i not in got]
        if got:
            assignments[f"pod{j}"] = {"app": cpuset_str(got)}

    free = len(pool) + (len(ids) - len(res_set) - sum(len(_parse(v["app"])) for v in assignments.values()) - len(pool))
    hi = max(2, free + 2)
    n_ctr = draw(st.sampled_from([1, 1, 1, 2, 3]))
    containers = [draw(st.integers(1, max(1, hi // n_ctr + 1))) for _ in range(n_ctr)]
    if dist:  # mostly more than one NUMA node's worth
        per_numa = max(1, len(ids) // max(1, len(present_numas)))
        lo = max(1, per_numa // 2)
        containers = [draw(st.integers(lo, max(lo + 1, min(hi, per_numa * 3))))]
    case = {
        "cpus": cpus, "cpu_options": opts, "tm_policy": tm_policy, "tm_scope": tm_scope,
        "tm_options": tm_opts, "reserved": reserved, "num_reserved": n_res,
        "assignments": assignments, "containers": containers,
    }
    if distances:
        case["distances"] = distances
    return case


def _kubelet_reserved(cpus: list, n: int, opts: dict, tm_policy: str) -> set[int]:
    """The CPUs kubelet reserves itself (pinscope's port: only to keep assignments off them)."""
    from pinscope.collectors.fit import kubelet

    try:
        topo = kubelet.discover(cpus)
        tm = kubelet.TopologyManager(tm_policy, "container", sorted(topo.details.idx[kubelet.NUMA]))
        return kubelet.StaticPolicy(topo, n, set(), tm, kubelet.parse_cpu_options(opts), "1.37").reserved
    except (kubelet.KubeletError, kubelet.Hang):
        return set()


def _parse(s: str) -> list[int]:
    from pinscope.collectors.fit.kubelet import cpuset_parse

    return sorted(cpuset_parse(s))


MI, GI = 2**20, 2**30
HUGE = {"2048": "hugepages-2Mi", "1048576": "hugepages-1Gi"}  # page size in KiB (cadvisor) -> resource


@st.composite
def memory_cases(draw) -> dict:
    """A case of `cases` on 1-8 NUMA nodes (sometimes one without CPUs) with the memory manager's Static
    policy: per node its memory and hugepages (2Mi, 1Gi) and kubelet's reservedMemory, existing assignments
    (single nodes and multi-node groups, memory and hugepages; the free memory of a group sometimes spread
    unevenly over its nodes, which kubelet accepts), the next pod's memory and hugepages per container, and
    sometimes pods kubelet no longer counts active (their CPUs and memory released first, as removeStaleState).
    The machine state is kubelet's default one minus the assignments; the oracle's Start checks it."""
    case = draw(cases(max_numa=8))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    nodes = sorted({r[2] for r in case["cpus"]})
    if len(nodes) < 8 and "distances" not in case and rng.random() < 0.15:
        case["cpuless_numa"] = [nodes[-1] + 1]
        nodes.append(nodes[-1] + 1)
    sizes = rng.choice([[], ["2048"], ["2048"], ["2048", "1048576"]])
    machine, reserved, ms = _memory_machine(rng, nodes, sizes)
    assignments = _memory_assignments(rng, nodes, ms)
    # kubelet's topology manager iterates the cross product of the hint lists (CPU, memory, each hugepages
    # size): with 2^N - 1 masks each, four lists on 8 NUMA nodes are 255^4 permutations, an admission that
    # does not return in minutes (the oracle's 5 s): fewer hugepages sizes asked on more NUMA nodes
    asked = sizes if len(nodes) <= 4 else sizes[:1] if len(nodes) <= 6 else []
    containers = [_memory_request(rng, ms, asked) for _ in case["containers"]]
    case["memory"] = {"nodes": machine, "reserved": reserved, "machine_state": ms,
                      "assignments": assignments, "containers": containers}
    pods = sorted(case["assignments"]) + sorted(assignments)
    if pods and rng.random() < 0.25:  # pods kubelet no longer counts active: both managers free them first
        case["inactive"] = sorted(rng.sample(pods, rng.randint(1, len(pods))))
    return case


def _memory_machine(rng: random.Random, nodes: list[int], sizes: list[str]) -> tuple[dict, dict, dict]:
    """(cadvisor's nodes, reservedMemory, getDefaultMachineState) for the drawn memory."""
    machine, reserved, ms = {}, {}, {}
    for n in nodes:
        total = rng.choice([2, 4, 8, 16, 32]) * GI + rng.randint(0, 7) * 128 * MI
        res_mem = rng.choice([0, 0, 256 * MI, 512 * MI, GI])
        pages: dict[str, int] = {}
        room = total - res_mem - 512 * MI
        for kb in sizes:
            size = int(kb) * 1024
            want = rng.choice([0, 1, 2, 4]) if kb == "1048576" else rng.choice([0, 256, 512, 1024, 2048])
            pages[kb] = max(0, min(want, room // size))
            room -= pages[kb] * size
        if sizes and len(nodes) > 1 and rng.random() < 0.02:  # a size missing on a node: kubelet has no table
            pages.pop(rng.choice(sizes))
        machine[str(n)] = {"memory": total, "hugepages": {k: v for k, v in pages.items()}}
        res = {"memory": res_mem} if res_mem else {}
        tables: dict = {}
        for kb, count in pages.items():
            t = count * int(kb) * 1024
            r = int(kb) * 1024 * rng.randint(0, count) if count and rng.random() < 0.1 else 0
            if r:
                res[HUGE[kb]] = r
            tables[HUGE[kb]] = _table(t, r)
        hp = sum(c * int(kb) * 1024 for kb, c in pages.items())
        tables["memory"] = _table(total, res_mem, total - res_mem - hp)
        if res:
            reserved[str(n)] = res
        ms[str(n)] = {"numberOfAssignments": 0, "memoryMap": tables, "cells": [n]}
    if not any("memory" in r for r in reserved.values()):  # kubelet refuses a Static policy without it
        n = str(nodes[0])
        reserved.setdefault(n, {})["memory"] = 256 * MI
        t = ms[n]["memoryMap"]["memory"]
        t["systemReserved"] = 256 * MI
        t["allocatable"] -= 256 * MI
        t["free"] -= 256 * MI
    return machine, reserved, ms


def _table(total: int, reserved: int, allocatable: int | None = None) -> dict:
    alloc = total - reserved if allocatable is None else allocatable
    return {"total": total, "systemReserved": reserved, "allocatable": alloc, "reserved": 0, "free": alloc}


def _memory_assignments(rng: random.Random, nodes: list[int], ms: dict) -> dict:
    """Existing pods' blocks on single nodes and on multi-node groups, taken from the machine state as
    kubelet's validateState counts them (each node of a block counts it; the bytes fill the nodes in order)."""
    order = list(nodes)
    rng.shuffle(order)
    groups = []
    while order:
        k = min(len(order), rng.choice([1, 1, 1, 2, 3]))
        g = sorted(order[:k])
        if len({tuple(sorted(ms[str(n)]["memoryMap"])) for n in g}) > 1:
            # a group whose nodes lack a hugepages size the others have: kubelet's own Start dereferences nil
            # (validateState sums the group per resource); cadvisor lists every size on every node anyway
            groups.extend([n] for n in g)
        else:
            groups.append(g)
        order = order[k:]
    out: dict = {}
    for j in range(rng.choice([0, 0, 1, 2, 3, 5])):
        g = rng.choice(groups)
        blocks = []
        for res in ["memory"] + [r for r in ms[str(g[0])]["memoryMap"] if r != "memory" and rng.random() < 0.3]:
            if any(res not in ms[str(n)]["memoryMap"] for n in g):
                continue
            free = sum(ms[str(n)]["memoryMap"][res]["free"] for n in g)
            unit = GI if res == "hugepages-1Gi" else 2 * MI
            if free < unit:
                continue
            size = unit * rng.randint(1, free // unit)
            blocks.append({"numaAffinity": g, "type": res, "size": size})
            _fill(ms, g, res, size)
        if blocks:
            out[f"mpod{j}"] = {"app": blocks}
    for g in groups:  # a group's free memory unevenly over its nodes: kubelet checks only the group's sums
        if len(g) > 1 and ms[str(g[0])]["numberOfAssignments"] and rng.random() < 0.3:
            a, b = ms[str(g[0])]["memoryMap"]["memory"], ms[str(g[1])]["memoryMap"]["memory"]
            x = rng.randint(0, min(a["free"], b["reserved"]))
            a["free"], a["reserved"], b["free"], b["reserved"] = a["free"] - x, a["reserved"] + x, b["free"] + x, b["reserved"] - x
    return out


def _fill(ms: dict, group: list[int], res: str, size: int) -> None:
    for n in group:
        node = ms[str(n)]
        node["numberOfAssignments"] += 1
        node["cells"] = list(group)
        t = node["memoryMap"][res]
        got = min(t["free"], size)
        t["free"] -= got
        t["reserved"] += got
        size -= got


def _memory_request(rng: random.Random, ms: dict, sizes: list[str]) -> dict:
    """One container's memory (and sometimes hugepages): small, about one node's free, more than one node's
    allocatable, or more than the machine has."""
    frees = [n["memoryMap"]["memory"]["free"] for n in ms.values()]
    allocs = [n["memoryMap"]["memory"]["allocatable"] for n in ms.values()]
    how = rng.choice(["small", "small", "node", "node", "span", "huge"])
    if how == "small":
        mem = rng.randint(1, 1024) * MI
    elif how == "node":
        mem = max(MI, rng.randint(max(frees) // 2, max(frees) + 1))
    elif how == "span":
        mem = rng.randint(max(allocs), max(max(allocs) + 1, sum(frees)))
    else:
        mem = sum(allocs) + rng.randint(1, GI)
    if rng.random() < 0.5:
        mem = max(MI, mem // MI * MI)
    out = {"memory": mem}
    for kb in sizes:
        if rng.random() < 0.35:
            unit = int(kb) * 1024
            most = max(n["memoryMap"].get(HUGE[kb], {"free": 0})["free"] for n in ms.values())
            out[HUGE[kb]] = unit * rng.randint(1, most // unit + 2)
    return out


@st.composite
def device_cases(draw) -> dict:
    """A case of `cases` on 1-8 NUMA nodes (a quarter with the memory manager too, on up to 4 nodes) with the
    device manager: 1-2 device resources whose devices sit on one NUMA node, two, none known (the plugin gave
    no topology), an empty topology or a node cadvisor does not list; some unhealthy; some held by pods (some
    of those pods no longer active); the next pod asks devices per container, each resource from one container
    at most (kubelet picks among equal devices in Go's map order: which ones one container got would decide a
    later container's hints), sometimes more than are free, sometimes a resource no plugin registered or one
    only a pod holds."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    case = draw(memory_cases()) if rng.random() < 0.25 else draw(cases(max_numa=8))
    nodes = sorted({r[2] for r in case["cpus"]} | set(case.get("cpuless_numa") or ()))
    if case.get("memory") is not None and len(nodes) > 4:  # kubelet's merge over one list more: keep it in time
        case["memory"]["containers"] = [{} for _ in case["containers"]]
        del case["memory"]
    resources: dict = {}
    unhealthy: dict = {}
    # kubelet's topology manager walks the cross product of the hint lists (CPU, each memory resource, each device
    # resource), 2^N - 1 masks each: past ~10^6 permutations its admission takes seconds (the oracle's 5 s limit)
    lists = 1 + max((len(c) for c in (case.get("memory") or {}).get("containers") or ()), default=0)
    n_res = rng.choice([1, 1, 2])
    while n_res > 1 and (2 ** len(nodes) - 1) ** (lists + n_res) > 10**6:
        n_res -= 1
    for r in range(n_res):
        res = f"example.com/dev{r}"
        style = rng.choice(["numa", "numa", "numa", "none", "mixed"])
        devs = {}
        for i in range(rng.randint(0, 8)):
            if style == "none" or (style == "mixed" and rng.random() < 0.3):
                where = None if rng.random() < 0.8 else []
            elif rng.random() < 0.1:
                where = sorted(rng.sample(nodes, min(2, len(nodes))))
            elif rng.random() < 0.03:
                where = [nodes[-1] + 1]  # a node cadvisor does not know
            else:
                where = [rng.choice(nodes)]
            devs[f"{res[-4:]}-{i}"] = where
        resources[res] = devs
        if devs and rng.random() < 0.2:
            unhealthy[res] = rng.sample(sorted(devs), rng.randint(1, len(devs)))
    allocated: dict = {}
    pods = sorted(case.get("assignments") or {}) + [f"dpod{j}" for j in range(rng.randint(0, 3))]
    for res, devs in resources.items():
        free = sorted(devs)
        rng.shuffle(free)
        for pod in pods:
            if free and rng.random() < 0.3:
                take = free[: rng.randint(1, max(1, len(free) // 2))]
                free = [d for d in free if d not in take]
                allocated.setdefault(pod, {}).setdefault("app", {})[res] = sorted(take)
    if rng.random() < 0.05:  # a resource only a pod holds: no plugin registered it (any more)
        allocated.setdefault("gone-plugin", {}).setdefault("app", {})["example.com/old"] = ["old-0"]
    asked = sorted(resources) + ["example.com/old", "example.com/unknown"]
    containers: list[dict] = [{} for _ in case["containers"]]
    held = {d for ctrs in allocated.values() for by_res in ctrs.values() for ids in by_res.values() for d in ids}
    for res in asked:
        if res in resources or rng.random() < 0.05:
            if rng.random() < 0.85:
                free = [d for d in resources.get(res, {}) if d not in held and d not in unhealthy.get(res, ())]
                most = len(free) if free and rng.random() < 0.85 else 4  # mostly no more than are free
                containers[rng.randrange(len(containers))][res] = rng.randint(1, max(1, most))
    case["devices"] = {"resources": resources, "unhealthy": unhealthy, "allocated": allocated, "containers": containers}
    if allocated and rng.random() < 0.2:
        case["inactive"] = sorted(set(case.get("inactive") or ()) | set(rng.sample(sorted(allocated), 1)))
    return case
