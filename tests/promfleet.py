"""A simulated fleet as Prometheus holds it: OpenMetrics text in the exporter's metrics contract, for
`promtool tsdb create-blocks-from openmetrics` (tests/, bench/ and screenshots/ backfill thousands of nodes).
Here, not in collectors/sim/: nothing pinscope ships uses it (issue 35: out of the wheel).

Real exporters for 5,000 nodes cannot run on one machine; their series can. Names, types and label sets
come from collectors.exporter.metrics.CONTRACT (checked here), so the backfill cannot drift from what the
exporter serves. The generator returns the truth it wrote, for the tests to compare PromQL answers with.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from pinscope.collectors.exporter.metrics import BY_NAME

SIZES = (8, 16, 16, 32, 32, 48, 64)


@dataclass
class SimFleetNode:
    name: str
    ncpus: int
    roles: list = field(default_factory=list)  # per CPU
    owners: list = field(default_factory=list)  # per CPU: (namespace, pod, container) or None
    read_ok: bool = True
    findings: list = field(default_factory=list)  # (code, severity, namespace, pod, container)
    ready: dict = field(default_factory=dict)  # latency readiness checks per status (ok, no, n/a, unknown)

    def count(self, role: str) -> int:
        return sum(1 for r in self.roles if r == role)


def make_fleet(n: int, seed: int = 11, sizes=SIZES) -> list[SimFleetNode]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        ncpu = rng.choice(sizes)
        node = SimFleetNode(f"node-{i:05d}", ncpu)
        roles = ["shared"] * ncpu
        owners: list[tuple[str, str, str] | None] = [None] * ncpu
        roles[0] = roles[ncpu // 2] = "reserved"
        free = [c for c in range(ncpu) if roles[c] == "shared"]
        pods = rng.randint(0, max(1, ncpu // 8))
        for k in range(pods):
            take = min(len(free) - 1, rng.choice((2, 2, 4, 4, 8)))
            if take <= 0:
                break
            cpus, free = free[:take], free[take:]
            for c in cpus:
                roles[c], owners[c] = "exclusive", ("trading", f"app-{k}", "main")
        node.roles, node.owners = roles, owners
        x = rng.random()
        if x < 0.02:
            node.read_ok = False
        elif x < 0.05 and pods:
            node.findings.append(("STATE_CGROUP_DRIFT", "critical", "trading", "app-0", "main"))
        elif x < 0.15:
            node.findings.append(("SMT_SIBLING_SHARED", "warning", "", "", ""))
        out.append(node)
    _readiness(out, seed)
    return out


def _readiness(fleet: list[SimFleetNode], seed: int) -> None:
    """Each node's 15 readiness checks by status (pinscope_readiness_checks). Its own generator, so the
    rest of the fleet is what it was before readiness existed. A node without exclusive CPUs judges nothing
    (every check n/a, "ready -"); the others a few n/a, the rest ok or no."""
    rng = random.Random(seed + 37)
    for n in fleet:
        if not n.count("exclusive"):
            n.ready = {"ok": 0, "no": 0, "n/a": 15, "unknown": 0}
            continue
        na, unknown = rng.randint(1, 5), rng.randint(0, 2)
        no = rng.randint(0, 15 - na - unknown)
        n.ready = {"ok": 15 - na - unknown - no, "no": no, "n/a": na, "unknown": unknown}


def _labels(fam: str, **kv) -> str:
    want = BY_NAME[fam].labels
    assert tuple(sorted(kv)) == tuple(sorted(want)), (fam, kv)  # the contract's label set, exactly
    return ",".join(f'{k}="{v}"' for k, v in kv.items())


def write_openmetrics(fleet: list[SimFleetNode], out, timestamps: list[float], seed: int = 3) -> int:
    """Every family grouped (OpenMetrics' rule), one sample per series per timestamp. Returns the lines."""
    rng = random.Random(seed)
    lines = 0

    def fam(name, series):
        nonlocal lines
        f = BY_NAME[name]
        out.write(f"# HELP {f.name} {f.help}\n# TYPE {f.name} {f.type}\n")
        for labels, value in series:
            for t in timestamps:
                v = value(t) if callable(value) else value
                out.write(f"{f.sample_name}{{{labels}}} {v} {t:.3f}\n")
                lines += 1

    up = [n for n in fleet if n.read_ok]
    fam("pinscope_read_success", ((_labels("pinscope_read_success", node=n.name), 1 if n.read_ok else 0) for n in fleet))
    fam("pinscope_cpus", ((_labels("pinscope_cpus", node=n.name, role=r), n.count(r))
                          for n in up for r in ("exclusive", "reserved", "isolated", "shared", "offline", "unassigned")))
    fam("pinscope_cpu_info", (
        (_labels("pinscope_cpu_info", node=n.name, cpu=c, socket=0, numa_node=0 if c < n.ncpus // 2 else 1,
                 core=c % (n.ncpus // 2), role=n.roles[c], namespace=(n.owners[c] or ("", "", ""))[0],
                 pod=(n.owners[c] or ("", "", ""))[1], container=(n.owners[c] or ("", "", ""))[2],
                 owner_level="container" if n.owners[c] else ""), 1)
        for n in up for c in range(n.ncpus)))
    fam("pinscope_cpu_utilization_ratio", (
        (_labels("pinscope_cpu_utilization_ratio", node=n.name, cpu=c),
         round(0.9 if n.roles[c] == "exclusive" else rng.random() * 0.4, 3))
        for n in up for c in range(n.ncpus)))
    fam("pinscope_node_cpu_utilization_ratio", ((_labels("pinscope_node_cpu_utilization_ratio", node=n.name),
                                                  round(sum(0.9 if r == "exclusive" else 0.2 for r in n.roles) / n.ncpus, 3))
                                                 for n in up))
    fam("pinscope_finding", ((_labels("pinscope_finding", node=n.name, code=code, severity=sev, namespace=ns, pod=pod,
                                      container=ctr), 1)
                             for n in up for code, sev, ns, pod, ctr in n.findings))
    fam("pinscope_findings", ((_labels("pinscope_findings", node=n.name, severity=s),
                               sum(1 for f in n.findings if f[1] == s))
                              for n in up for s in ("critical", "warning", "info")))
    fam("pinscope_readiness_checks", ((_labels("pinscope_readiness_checks", node=n.name, status=st), v)
                                       for n in up for st, v in n.ready.items()))
    out.write("# EOF\n")
    return lines
