"""Checks that need a rate over a window of two samples (and the note that says when there was one only)."""
from __future__ import annotations

from .base import check, finding


@check({"NUMA_MISS_HIGH": ("warning", "numa_miss / (numa_hit + numa_miss) over the window is above 5 % on a node",
                           "Memory is allocated away from the preferred node: align memory (memoryManagerPolicy: Static) and check the pod's mems."),
        "SAMPLES_NEEDED": ("info", "some checks need a rate over a window and were not run with one sample",
                           "Run with --samples 2 (or more) and --interval S.")},
       needs="gr")
def numa_miss(ctx):
    rates = ctx.rates
    if rates is None:
        yield finding("SAMPLES_NEEDED", "NUMA_MISS_HIGH and THROTTLED_EXCLUSIVE rates need two samples (--samples 2)")
        return
    for n, r in sorted(rates.numa.items()):
        if r["miss_ratio"] > 0.05 and r["numa_miss_per_s"] > 0:
            yield finding("NUMA_MISS_HIGH", f"NUMA node {n}: {r['miss_ratio'] * 100:.1f} % of allocations missed over {rates.dt:.1f} s",
                          [f"/sys/devices/system/node/node{n}/numastat: numa_miss {r['numa_miss_per_s']:.0f}/s, "
                           f"numa_hit {r['numa_hit_per_s']:.0f}/s"], next((x.cpus for x in ctx.topo.numa_nodes if x.id == n), ()))
