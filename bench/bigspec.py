"""The benchmark node: 96 CPUs (2 sockets x 24 cores x 2 threads), 100 containers, 500 tasks."""
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec


def big_node(hostname: str = "bench-96", seed: int = 7) -> NodeSpec:
    pods = []
    cpu = 2
    for i in range(50):
        # 20 pinned pods with 2 exclusive CPUs each (siblings), 30 shared ones; 2 containers a pod
        if i < 20:
            c0 = cpu
            cpu += 1
            ctrs = [CtrSpec("app", cpus=f"{c0},{c0 + 48}", tasks=5, busy=0.6), CtrSpec("sidecar", tasks=5)]
            pods.append(PodSpec(f"pinned-{i}", "rt", containers=ctrs))
        else:
            pods.append(PodSpec(f"svc-{i}", "web", qos="Burstable",
                                containers=[CtrSpec("app", tasks=5), CtrSpec("proxy", tasks=5)]))
    return NodeSpec(hostname=hostname, sockets=2, cores=24, threads=2, reserved="0,48", cgroup=2,
                    driver="systemd", pods=pods, irqs={i: str(i % 96) for i in range(24, 88)}, seed=seed)
