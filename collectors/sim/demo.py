"""`pinscope demo`: an embedded simulated cluster that needs nothing installed.

Each demo node is a tree written by collectors.sim.node under a temporary directory, and is read through
the REAL probe and parsers (sim/transport.py, a LocalTransport with --root): no second code path.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

from .. import piddirs
from ..fleet import NodeTarget
from .node import CtrSpec, NodeSpec, PodSpec, SimNode
from .transport import DemoTransport
from .tuning import half_tuned, tuned


_GPU_FAR = "GPU-3f6c2a9e-81d4-4b7a-9e0c-5a1d2b3c4d5e"
_GPU_NEAR = "GPU-b2d8e4f1-6a3c-4e9b-8d7f-0c1e2a3b4c5d"
_GPU_FREE = "GPU-7a1e9c3d-2b4f-4c6a-8e0d-1f3a5b7c9d2e"  # on NUMA 0, held by no pod: `fit --device` places one


def demo_specs() -> list[NodeSpec]:
    trading = NodeSpec(
        hostname="trade-xeon-96", sockets=2, cores=24, threads=2, numbering="intel", cgroup=2, driver="systemd",
        policy="static", reserved="0-1,48-49", topology_policy="single-numa-node",
        policy_options={"full-pcpus-only": "true"}, init_affinity="0-1,48-49",
        pods=[
            # a thread on each of its CPUs; logrotate (below) runs on its CPU 3: the feed thread there waits
            PodSpec("md-feed-0", "trading", containers=[CtrSpec("feed", cpus="2-3,50-51", busy=0.85, tasks=4)]),
            PodSpec("matcher-7d9f", "trading", containers=[
                CtrSpec("init-tune", cpus="4-5,52-53", init=True),
                CtrSpec("engine", cpus="4-7,52-55", busy=0.95, tasks=6), CtrSpec("metrics", busy=0.05)]),
            PodSpec("risk-calc-2", "trading", containers=[CtrSpec("risk", cpus="24-27,72-75", busy=0.6, tasks=4)]),
            # a planted fault: the kernel runs this one on more CPUs than kubelet gave it
            PodSpec("gateway-5f", "trading", containers=[CtrSpec("fix-gw", cpus="28,76", effective="28-29,76-77", busy=0.4)]),
            PodSpec("api-5c8d", "web", qos="Burstable", containers=[CtrSpec("api", tasks=4, busy=0.2)]),
            PodSpec("fluent-bit-x1", "kube-system", qos="BestEffort", containers=[CtrSpec("fluent-bit", busy=0.05)]),
        ],
        other_tasks=[("kworker/4:1", 4, True), ("backup-agent", 30, False), ("logrotate", 3, False)],
        irqs={40: "0", 41: "1", 42: "6"},
        noise={6: 0.12},  # IRQ 42 (a NIC queue) and its NET_RX softirqs land on the matcher's CPU 6
        extra_files=tuned(96, "0-1,48-49"),  # latency readiness: tuned cpu-partitioning, all of it
    )
    inference = NodeSpec(
        hostname="infer-epyc-64", sockets=1, cores=32, threads=2, numa_per_socket=4, l3_per_numa=2,  # Rome: 4-core CCX
        numbering="amd", cgroup=1,
        driver="cgroupfs", policy="static", reserved="0-1", kubelet_root="/var/lib/kubelet",
        init_affinity="0-1", numa_miss_per_tick=800,
        # latency readiness half done: nohz_full on triton-0's 16-31 only, powersave, C6 left on the encoder's
        # 48-51, irqbalance running with no ban of its own (it then bans 16-31 only)
        extra_files=half_tuned(64, "16-31", "48-51"), other_tasks=[("irqbalance", 0, False)],
        nvidia_gpus={_GPU_FAR: "0000:c1:00.0", _GPU_NEAR: "0000:81:00.0", _GPU_FREE: "0000:01:00.0"},
        pci_numa={"0000:c1:00.0": 3, "0000:81:00.0": 2, "0000:01:00.0": 0},
        free_devices=[("nvidia.com/gpu", _GPU_FREE)],  # registered by the plugin (the device checkpoint names it)
        pods=[
            # a planted fault: triton-0's CPUs are on NUMA 1, its GPU on NUMA 3 (topologyManagerPolicy none)
            PodSpec("triton-0", "ml", containers=[CtrSpec("triton", cpus="16-31", busy=0.7, tasks=8,
                                                          devices=[("nvidia.com/gpu", _GPU_FAR, 3)])]),
            PodSpec("triton-1", "ml", containers=[CtrSpec("triton", cpus="32-47", busy=0.65, tasks=8,
                                                          devices=[("nvidia.com/gpu", _GPU_NEAR, 2)])]),
            PodSpec("encoder-a", "media", containers=[CtrSpec("ffmpeg", cpus="48-51", busy=0.9, tasks=2,
                                                              quota_cores=4, throttled=3)],
                    claims=[("encoder-a-nic-7xq2p", "dra.net", "infer-epyc-64", "enp193s0f1v3")]),  # a DRA NIC
            PodSpec("tokenizer", "ml", containers=[CtrSpec("tok", cpus="8-9,12", busy=0.5)]),
            PodSpec("shell", "default", qos="BestEffort", containers=[CtrSpec("sh", busy=0.02)]),
        ],
    )
    plain = NodeSpec(
        hostname="batch-16", sockets=1, cores=8, threads=2, policy="none", reserved=None, cgroup=2,
        driver="systemd",
        pods=[PodSpec("etl-job", "batch", containers=[CtrSpec("spark", tasks=6, busy=0.4, quota_cores=4)]),
              PodSpec("web-1", "web", qos="Burstable", containers=[CtrSpec("nginx", busy=0.1)])],
    )
    return [trading, inference, plain, fragmented()]


# planted: the CPUs a node's kubelet holds in memory for a container where that differs from its checkpoint and
# the kernel (as after both were put back from a backup behind kubelet's back): PODRESOURCES_DISAGREES once held
# two rounds, the three sets in the "what fits" pane (w). trade-xeon-96: risk-calc-2/risk 24-27,72-75 -> whole
# cores 24,25,30,31 (CPU n's sibling n + 48; 30-31 are free)
KUBELET_MEMORY = {"trade-xeon-96": {("risk-calc-2", "risk"): "24-25,30-31,72-73,78-79"}}


def fragmented() -> NodeSpec:
    """db-numa-32, the node whose free exclusive CPUs are fragmented (issue 36, EXCLUSIVE_FRAGMENTED)."""
    # exclusive CPUs fragmented over NUMA nodes (issue 36, EXCLUSIVE_FRAGMENTED): 12 CPUs are free (6 whole
    # cores), yet a container of 10, the replica's size, is refused: single-numa-node wants them on one NUMA
    # node, and each has 6 (2 x 8 cores, HT: CPU n's sibling n + 16; NUMA 0 = cores 0-7, NUMA 1 = cores 8-15)
    return NodeSpec(
        hostname="db-numa-32", sockets=2, cores=8, threads=2, numbering="intel", cgroup=2, driver="systemd",
        policy="static", reserved="0,16", topology_policy="single-numa-node",
        policy_options={"full-pcpus-only": "true"}, init_affinity="0,16", seed=36,
        pods=[
            PodSpec("pg-primary-0", "db", containers=[CtrSpec("postgres", cpus="1-4,17-20", busy=0.5, tasks=4)]),
            PodSpec("pg-replica-1", "db", containers=[CtrSpec("postgres", cpus="8-12,24-28", busy=0.3, tasks=4)]),
            PodSpec("pgbouncer-6b", "db", qos="Burstable", containers=[CtrSpec("pgbouncer", busy=0.1)]),
        ],
    )


SHM = "/dev/shm"
SHM_FREE = 48 << 20  # bytes free on it before the demo's trees go there (they take ~18 MB; Docker gives 64 MB)
PREFIX = "pinscope-demo-"


def tree_dir() -> str | None:
    """Where the demo's trees go: the in-memory /dev/shm when it is a writable directory with room, else
    tempfile's default (TMPDIR, /tmp: None). Each demo tick writes its nodes' files, and quitting removes
    ~6,000 of them: on a disk with both cores busy that took 3-6 s of the quit (the UI frozen), on tmpfs
    ~0.4 s (bench/bench_quit.py). So /dev/shm even when TMPDIR is set (a user trial with TMPDIR=/tmp waited
    3-5 s at each quit); TMPDIR is where they go when /dev/shm cannot take them."""
    try:
        st = os.statvfs(SHM)
    except OSError:
        return None
    if not os.path.isdir(SHM) or not os.access(SHM, os.W_OK | os.X_OK) or st.f_bavail * st.f_frsize < SHM_FREE:
        return None
    return SHM


def stale_trees(where: str) -> list[Path]:
    """The trees in `where` of demos that died without removing them (kill -9: ~18 MB of memory each, in
    /dev/shm): named with their process's pid, owned by this user, that process gone (piddirs.stale)."""
    return piddirs.stale(where, PREFIX)


class DemoCluster:
    """Writes the demo nodes under one temporary directory; `close()` removes it. `write=False`: each
    node's tree is written when its transport first connects, in a thread (`pinscope demo`: the UI is up
    before the trees are, and no tree is written on the UI thread)."""

    def __init__(self, specs: list[NodeSpec] | None = None, root: str | None = None, write: bool = True) -> None:
        if root is None:
            where = tree_dir()
            stale = stale_trees(where or tempfile.gettempdir())
            if stale:  # removed beside the demo, never in its way
                threading.Thread(target=piddirs.sweep, args=(stale,), name="pinscope-demo-sweep", daemon=True).start()
            root = str(piddirs.make(PREFIX, where))
        self.dir = Path(root)
        self.written = write
        self.sims = []
        for spec in specs or demo_specs():
            sim = SimNode(spec, self.dir / spec.hostname)
            self.sims.append(sim.write() if write else sim)

    def targets(self) -> list[NodeTarget]:
        return [NodeTarget(f"demo/{s.spec.hostname}", transport=DemoTransport(
                    s, written=self.written, memory=KUBELET_MEMORY.get(s.spec.hostname))) for s in self.sims]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
