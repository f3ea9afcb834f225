"""What fits, for the views that show it all the time (the TUI's "what fits" pane, the exporter): kubelet's
answers computed once per node state and reused, and the reason for a refusal in pinscope's words.

The answers are pure functions of the case the node's files make (collectors/fit/predict.py
case_from_snapshot: topology, kubelet configuration, cpu_manager_state) and of what made predict() refuse
to predict (policy, state unreadable). That is the cache key: a tick whose files did not change reuses
the answer; a pod that comes or goes (a new checkpoint) computes it again (issue 36: "the pane
recomputes only when the assignment changes").
"""

from __future__ import annotations

import json
import threading

from .memory import memory_case
from .predict import FitAnswer, case_from_snapshot, predict

_LOCK = threading.Lock()
_CACHE: dict[tuple, FitAnswer] = {}
_MAX = 64  # nodes x requests kept; the exporter of a fleet asks one per node, the pane a few per node
computed = 0  # answers computed (not taken from the cache): tests count them


def _key(snap, n: int, what: str, version: str | None = None) -> tuple:
    """Everything predict() reads of the snapshot, as text, and the kubelet release it follows."""
    cfg, st = snap.kubelet, snap.state
    case, _assumed, problems = case_from_snapshot(snap, [n])
    return (snap.node, what, n, version, cfg.found, cfg.cpu_manager_policy, getattr(cfg, "memory_manager_policy", None),
            snap.state_status, st.policy if st is not None else None, tuple(problems),
            json.dumps(case, sort_keys=True),
            bool(getattr(snap, "device_state", None) and snap.device_state.allocations))


def _cached(key: tuple, make) -> FitAnswer:
    global computed
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    ans = make()
    with _LOCK:
        computed += 1
        if len(_CACHE) >= _MAX:
            _CACHE.pop(next(iter(_CACHE)))  # the oldest first
        _CACHE[key] = ans
    return ans


def node_fit(snap, version: str | None = None) -> FitAnswer:
    """Per NUMA node and socket: the free CPUs and whole cores, and the largest container kubelet could
    give there (any CPUs; whole cores). `readable` False or a `note`: why nothing is predicted. `version`:
    the node's kubelet release when the API said it (else assumed)."""
    return _cached(_key(snap, 1, "places", version),
                   lambda: predict(snap, 1, version, count=False, with_largest=True))


def request_fit(snap, n: int, version: str | None = None, memory: dict[str, int] | None = None) -> FitAnswer:
    """The next Guaranteed container of n CPUs: the CPUs kubelet would give or its error, and how many of
    n fit one after another (per NUMA node: the free CPUs, without the largest fits). `memory`: its memory
    and hugepages-<size> in bytes, placed by the memory manager as `fit --memory` places them (None: the CPUs
    alone)."""
    return _cached(_key(snap, n, "request", version) + _memory_key(snap, memory),
                   lambda: predict(snap, n, version, count=True, with_largest=False, memory=memory))


def _memory_key(snap, memory: dict[str, int] | None) -> tuple:
    """What predict() reads of the node for the memory: the request and the memory manager's case from its state
    (memory.py memory_case), or why it has none."""
    if memory is None:
        return ()
    return tuple(sorted(memory.items())), json.dumps(memory_case(snap, memory), sort_keys=True, default=str)


def free_count(ans: FitAnswer) -> int | None:
    """CPUs free for exclusive use on the node (the shared pool minus the reserved set), when known."""
    return sum(p["free_count"] for p in ans.per_numa) if ans.per_numa else None


MEMORY_REASONS = {
    "no NUMA nodes with enough memory": "no NUMA node, nor group of them the memory manager may use, has that much "
                                        "free memory",
    "failed to find NUMA nodes to extend": "the memory does not fit on the NUMA node(s) chosen, and no group of "
                                           "nodes holding them can take it (a node used alone never joins a group; "
                                           "a node of a group is used only with that group)",
    "violates NUMA node allocation": "the placement would put a node used alone into a group of nodes, which the "
                                     "memory manager refuses",
    "preferred hint": "the memory fits only on more NUMA nodes than the topology manager's preferred placement",
}


def _device_reason(msg: str) -> str | None:
    """kubelet's device manager's Allocate refusals (devicemanager/manager.go devicesToAllocate), said plainly."""
    if "requested number of devices unavailable for " in msg:
        return "fewer of this resource's healthy devices are free (held by no pod) than asked"
    if "cannot allocate unregistered device " in msg:
        return "no device plugin has this resource registered now (a pod still holds some of its devices)"
    if "no healthy devices present" in msg:
        return "every device of this resource is unhealthy"
    return None


def reason(error: dict | None, n: int | None = None, free: int | None = None, memory: bool = False,
           devices: bool = False) -> str:
    """Why kubelet refuses a container of n CPUs (with memory: and the memory asked), in pinscope's words, beside
    kubelet's own message (`free`: the CPUs free for exclusive use, when known: a refusal for want of CPUs is not
    a placement problem; `devices`: devices were asked and placed by kubelet's device manager)."""
    if not error:
        return ""
    kind, msg = error.get("kind", ""), error.get("message", "")
    if kind == "UnexpectedAdmissionError" and (why := _device_reason(msg)):
        return f"kubelet's device manager: {why}"
    if kind == "TopologyAffinityError" and devices:
        return ("the topology manager's policy found no NUMA placement it accepts for these CPUs and these devices "
                "together (and the memory, if asked): where the CPUs are free the devices are not, or not on few "
                "enough NUMA nodes")
    if kind == "UnexpectedAdmissionError" and "[memorymanager]" in msg:
        why = next((w for k, w in MEMORY_REASONS.items() if k in msg), "kubelet's memory manager refused the placement")
        return f"kubelet's memory manager: {why}"
    if kind in ("TopologyAffinityError", "SMTAlignmentError") and n is not None and free is not None and free < n:
        return (f"only {free} CPU{'s' if free != 1 else ''} free for exclusive use (the reserved set aside), fewer "
                f"than {n}: under this policy kubelet words it as {kind}")
    if kind == "SMTAlignmentError" and "not multiple" in msg:
        return ("full-pcpus-only: a request must be a whole number of physical cores (a multiple of the "
                "threads per core)")
    if kind == "SMTAlignmentError":
        return ("full-pcpus-only: not that many free CPUs once the reserved CPUs' SMT siblings are counted "
                "as taken")
    if kind == "TopologyAffinityError" and memory:
        return ("the topology manager's policy found no NUMA placement it accepts for these CPUs and this memory "
                "together: where the CPUs are free the memory is not (or not on few enough NUMA nodes)")
    if kind == "TopologyAffinityError":
        return ("the topology manager's policy found no NUMA placement it accepts for this many CPUs: "
                "the free CPUs are there, but not on few enough NUMA nodes")
    if kind == "UnexpectedAdmissionError" and "not enough cpus" in msg:
        return "not enough free CPUs outside the reserved set for this request"
    if kind == "UnexpectedAdmissionError":
        return "kubelet's CPU manager could not place this request on the free CPUs"
    if kind == "Panic" and "nil pointer" in msg:
        return ("kubelet's own code dereferences nil here (its memory manager has no table for an asked hugepages "
                "size on some NUMA node): its admission panics instead of answering")
    if kind == "Hang":
        return "kubelet's admission would never return on this node (a kubelet bug of this release)"
    return "kubelet refuses its own configuration or checkpoint as they are: see its message"
