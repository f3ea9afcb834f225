"""Cases for the differential test of pinscope's kubelet port (collectors/fit/kubelet.py)
against kubelet's own code (tests/kubeletsim): hypothesis draws the shape (1-8 sockets, 1-8
NUMA nodes per socket, SMT 1-4, how CPUs are numbered, uncore caches, offline CPUs) and the
configuration (every CPU manager option, every topology manager policy, scope and option,
reserved CPUs given or chosen by kubelet, existing assignments, the request); a seed drawn
with them places the offline CPUs, the reserved set and the assignments.
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
def cases(draw, max_cpus: int = 256, focus: str = "") -> dict:
    """focus="distribute": distribute-cpus-across-numa (and mostly align-by-socket) on 2+ sockets of
    2+ NUMA nodes with requests that span NUMA nodes: where kubelet 1.35 and 1.37 differ."""
    dist = focus == "distribute"
    sockets = draw(st.integers(2, 4)) if dist else draw(st.integers(1, 8))
    numa_per_socket = draw(st.integers(2, 3)) if dist else draw(st.integers(1, 8))
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
