"""Node shapes this machine can't have, as small descriptions modelled on real nodes.

Each builds a tree with collectors.sim.node and is read through the real probe (--root) in the tests.
"""
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec


def dual_socket_intel() -> NodeSpec:
    """2 x 12-core Xeon, HT on (48 CPUs, siblings N and N+24), cgroup v2, systemd, containerd, static."""
    return NodeSpec(
        hostname="xeon-2s", sockets=2, cores=12, threads=2, numbering="intel", cgroup=2, driver="systemd",
        runtime="containerd", policy="static", reserved="0,24", topology_policy="single-numa-node",
        policy_options={"full-pcpus-only": "true"},
        pods=[
            PodSpec("md-feed-0", "trading", containers=[CtrSpec("feed", cpus="1-2,25-26", busy=0.9)]),
            PodSpec("matcher-7d9f", "trading", containers=[
                CtrSpec("init-tune", cpus="13,37", init=True),
                CtrSpec("engine", cpus="13-14,37-38", busy=0.95),
                CtrSpec("metrics", busy=0.05)]),
            PodSpec("api-5c8d", "web", qos="Burstable", containers=[CtrSpec("api", tasks=4)]),
            PodSpec("logs-x1", "kube-system", qos="BestEffort", containers=[CtrSpec("fluent")]),
        ])


def amd_multi_numa_v1() -> NodeSpec:
    """EPYC 1 socket, 16 cores x 2 threads, NPS4 (4 NUMA nodes), siblings adjacent; cgroup v1,
    cgroupfs driver, kubelet under --root-dir /data/kubelet with its config at /etc/kubernetes."""
    return NodeSpec(
        hostname="epyc-nps4", sockets=1, cores=16, threads=2, numa_per_socket=4, numbering="amd", cgroup=1,
        driver="cgroupfs", runtime="containerd", policy="static", reserved="0-1",
        kubelet_root="/data/kubelet", config_path="/etc/kubernetes/kubelet.yaml",
        pods=[
            PodSpec("infer-0", "ml", containers=[CtrSpec("triton", cpus="8-15", busy=0.8, tasks=3)]),
            PodSpec("encoder-a", "media", containers=[CtrSpec("ffmpeg", cpus="16-19")]),
            PodSpec("shell", "default", qos="BestEffort", containers=[CtrSpec("sh")]),
        ])


def policy_none() -> NodeSpec:
    return NodeSpec(hostname="plain", sockets=1, cores=4, threads=2, policy="none", reserved=None,
                    cgroup=2, driver="systemd",
                    pods=[PodSpec("guar", "default", containers=[CtrSpec("app")]),
                          PodSpec("burst", "default", qos="Burstable", containers=[CtrSpec("app")])])


def offline_isolated() -> NodeSpec:
    """CPUs 6-7 offline, 4-5 isolcpus (in the shared pool: not load-balanced)."""
    return NodeSpec(hostname="plc-edge", sockets=1, cores=4, threads=2, numbering="amd", offline="6-7",
                    isolated="4-5", policy="static", reserved="0", cgroup=2, driver="cgroupfs",
                    pods=[PodSpec("plc", "ot", containers=[CtrSpec("loop", cpus="2-3")])])


def broken() -> NodeSpec:
    """Everything that goes wrong at once: a truncated state file, a config that is not YAML."""
    return NodeSpec(hostname="broken", sockets=1, cores=2, threads=2, policy="static",
                    state_text='{"policyName":"static","defaultCpuSet":"0-3","entries":{"abc',
                    config_text="cpuManagerPolicy: [static\n",
                    pods=[PodSpec("lost", "default", logs=False, containers=[CtrSpec("x", cpus="2")])])


def hostile() -> NodeSpec:
    """Names holding escape sequences, newlines, backslashes, C1 and bidi controls (issue 15), and an
    intruder whose comm is one (any unprivileged user can set 15 bytes with prctl(PR_SET_NAME))."""
    # PID 1 confined to 0-1 (systemd CPUAffinity=): a task on the exclusive 2-3 is an INTRUDER_TASK at once
    return NodeSpec(hostname="h\x1b[2Jost", sockets=1, cores=4, threads=1, cgroup=2, driver="systemd", reserved="0",
                    init_affinity="0-1",
                    pods=[PodSpec(HOSTILE["pod"], HOSTILE["ns"], containers=[CtrSpec(HOSTILE["ctr"], cpus="2-3")])],
                    other_tasks=[(HOSTILE["comm"], 2, False)], irqs={"40": "2"})


HOSTILE = {"ns": "ns\x1b[2J\x1b[31m", "pod": "pod\nname\\x\x1b]0;pwned\x07", "ctr": "c\u202eevil\x85\x7f",
           "comm": "\x1b[31mev\nil\x07"}

SHAPES = {"dual_socket_intel": dual_socket_intel, "amd_multi_numa_v1": amd_multi_numa_v1,
          "policy_none": policy_none, "offline_isolated": offline_isolated, "broken": broken}


def epyc_512() -> NodeSpec:
    """2 x 128-core EPYC (Bergamo-like), SMT 2: 512 CPUs, NPS1, 16 L3 caches (8-core CCX) per NUMA node;
    70 pinned pods, so tags run past Z to two letters (the compact layouts used to cut them to one)."""
    pods = [PodSpec(f"shard-{i:02d}", "trading", containers=[CtrSpec("engine", cpus=f"{8 + 4 * i}-{11 + 4 * i}", busy=0.6)])
            for i in range(62)]
    pods += [PodSpec(f"pricer-{i}", "risk", containers=[CtrSpec("calc", cpus=f"{256 + 16 * i}-{271 + 16 * i}", busy=0.8)])
             for i in range(8)]
    pods += [PodSpec("batch-etl", "batch", qos="Burstable", containers=[CtrSpec("spark", tasks=4)])]
    return NodeSpec(hostname="epyc-512", sockets=2, cores=128, threads=2, numbering="amd", numa_per_socket=1,
                    l3_per_numa=16, cgroup=2, driver="systemd", policy="static", reserved="0-7",
                    policy_options={"full-pcpus-only": "true"}, pods=pods)


def _trouble(hostname: str, sockets: int, cores: int, reserved: str) -> NodeSpec:
    """A node in trouble for the every-size tests (issue 24): one critical finding (a container whose
    kernel cpuset drifted from kubelet's assignment) and one warning (a core's SMT siblings split between
    a pinned container and the shared pool). Intel numbering: CPU n's sibling is n + sockets*cores."""
    n = sockets * cores
    return NodeSpec(
        hostname=hostname, sockets=sockets, cores=cores, threads=2, numbering="intel", cgroup=2, driver="systemd",
        runtime="containerd", policy="static", reserved=reserved, topology_policy="single-numa-node",
        policy_options={"full-pcpus-only": "true"},
        pods=[
            PodSpec("md-feed-0", "trading", containers=[CtrSpec("feed", cpus=f"1-2,{n + 1}-{n + 2}", busy=0.9)]),
            PodSpec("matcher-7d9f", "trading", containers=[
                CtrSpec("engine", cpus=f"3,{n + 3}", effective=f"3-4,{n + 3}-{n + 4}", busy=0.95)]),
            PodSpec("risk-calc", "risk", containers=[CtrSpec("calc", cpus="5", busy=0.7, tasks=1)]),
            PodSpec("api-5c8d", "web", qos="Burstable", containers=[CtrSpec("api", tasks=4)]),
        ])


def trouble_16() -> NodeSpec:
    return _trouble("edge-16", 1, 8, "0,8")


def trouble_96() -> NodeSpec:
    return _trouble("trade-96", 2, 24, "0,48")


def trouble_512() -> NodeSpec:
    """epyc_512 with shard-30's kernel cpuset drifted from its assignment onto shard-31's 132-135 (critical), its
    busy engine running on shard-31's CPUs 133 and 135 (two critical INTRUDER_TASKs: pinned there, measured)."""
    spec = epyc_512()
    pod = next(p for p in spec.pods if p.name == "shard-30")
    pod.containers[0].effective = "128-135"
    return spec
