"""How much work kubelet's own admission of the next pod is: its topology manager crosses every provider's hints.

kubelet's policy.Merge (pkg/kubelet/cm/topologymanager/policy.go: filterProvidersHints, then
iterateAllProviderTopologyHints) walks the full cross product of the hint lists: one list per provider and
resource (the CPU manager's "cpu"; the memory manager's "memory" and each hugepages-<size>, every one with
the same masks; the device manager's per resource), a provider with no preference counting as one hint. On 8
NUMA nodes each list holds up to 255 masks: the CPUs, memory and two hugepages sizes are up to 255^4 (4.2e9)
combinations, which kubelet's admission takes minutes over. pinscope's port merges the distinct masks
instead (kubelet.py _merged_permutations) and answers at once: what is counted here is kubelet's loop, so
`fit` and the pane can say when kubelet itself would be slow. The count is the product of the hint counts
pinscope's port computes for kubelet's providers; no time is guessed from it.
"""

from __future__ import annotations

from .kubelet import Hint
from .memory import pod_requests, requests_of

# Above this, kubelet's admission is said to be slow. Measured with kubelet 1.37's own code (tests/kubeletsim,
# 8 NUMA nodes, restricted, 2026-12-07, a 2-core VM at load 10): 65,025 combinations (the CPUs and memory) took
# 0.1 s, 16,581,375 (and one hugepages size) 12 s, 4,228,250,625 (both sizes) did not end in 150 s. 10^6 would
# be under a second: said, it would cry wolf.
SLOW_COMBINATIONS = 10**7


def hint_counts(tm_policy: str, providers: list[tuple[str, list[Hint] | None]]) -> list[tuple[str, int]]:
    """(resource, hints kubelet's merge iterates for it) per list, as filterProvidersHints and, under
    single-numa-node, filterSingleNumaHints leave them: None (no preference) is one hint, [] one unpreferred."""
    out = []
    for res, hints in providers:
        listed = [Hint(None, True)] if hints is None else hints or [Hint(None, False)]
        if tm_policy == "single-numa-node":
            listed = [h for h in listed if h.preferred and (h.mask is None or h.mask.bit_count() == 1)]
        out.append((res, len(listed)))
    return out


def admission_cost(k, decision, memory: list[dict] | None,
                   devices: dict[str, int] | None = None) -> tuple[int | None, list[tuple[str, int]]]:
    """(how many hint combinations kubelet's topology manager would iterate admitting the next container,
    its lists) for the decision `k.admit` just made (its CPU hints), `memory` (as Kubelet.admit takes it) and
    `devices` (resource -> count, where the case has kubelet's device manager); None: kubelet merges no hints
    (topology manager policy none)."""
    if k.tm.policy == "none":
        return None, []
    providers: list[tuple[str, list[Hint] | None]] = []
    if devices and getattr(k, "devices", None) is not None:  # the device manager's hints come first in kubelet
        providers += sorted((k.devices.hints(devices) or {}).items())
    providers.append(("cpu", list(decision.hints)))
    if memory is not None and k.memory is not None:
        req = pod_requests(memory) if k.tm.scope == "pod" else requests_of(memory[0])
        mem = k.memory.hints(req)
        providers += sorted(mem.items()) if mem else [("memory", None)]
    counts = hint_counts(k.tm.policy, providers)
    total = 1
    for _res, n in counts:
        total *= n
    return total, counts


def slow_note(total: int | None, counts: list[tuple[str, int]]) -> str | None:
    """What `fit` and the pane say when kubelet's own admission would iterate more than SLOW_COMBINATIONS."""
    if total is None or total <= SLOW_COMBINATIONS:
        return None
    parts = " x ".join(f"{n} {res}" for res, n in counts)
    return (f"kubelet's own admission of this pod would iterate about {total:,} hint combinations in its topology "
            f"manager ({parts} hints) and may take long; pinscope's answer does not wait for it")
