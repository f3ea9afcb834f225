"""Fixture node trees, read through the real probe under --root: golden JSON plus the facts spelled out.

Set PINSCOPE_UPDATE_GOLDEN=1 to rewrite the golden files (then read the diff before committing). A golden
file is pinscope's own output, so it cannot tell a right answer from a wrong one it was made with: every
fact in it that matters (each CPU's role, each exclusive CPU's owners, the findings: code, severity, whom
and which CPUs) is also asserted from BUILT below, worked out by hand from how tests/nodes.py and
collectors/sim/node.py build the tree.
"""
import asyncio
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.sim.node import SimNode
from nodes import SHAPES

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def read(tmp_path, shape: str) -> dict:
    spec = SHAPES[shape]()
    SimNode(spec, tmp_path).write()
    return asyncio.run(snapshot("local", Options(root=str(tmp_path)))).to_json()


def by_id(o):
    return {c["id"]: c for c in o["cpus"]}


def ids(text: str) -> tuple[int, ...]:
    """ "1-2,25-26" -> (1, 2, 25, 26): the fixture's own notation, parsed here, not by pinscope."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return tuple(sorted(out))


@dataclass(frozen=True)
class Built:
    """A fixture node as its builder makes it. Roles: `offline`, `isolated`, `reserved`, the CPUs of
    `owners` exclusive, every other CPU of the `cpus` shared. `owners`: CPUs -> who holds them, (namespace,
    pod, container) each (None where the node does not say). `findings`: (code, severity, "ns/pod/container"
    or None, CPUs) of a one-sample snapshot."""
    cpus: int
    roles_from: str
    reserved: str = ""
    isolated: str = ""
    offline: str = ""
    owners: dict = field(default_factory=dict)
    findings: tuple = ()

    def roles(self) -> dict[int, str]:
        got = {c: "shared" for c in range(self.cpus)}
        for kind, text in (("reserved", self.reserved), ("isolated", self.isolated), ("offline", self.offline)):
            got.update({c: kind for c in ids(text)})
        got.update({c: "exclusive" for text in self.owners for c in ids(text)})
        return got

    def owner_map(self) -> dict[int, list]:
        got: dict[int, list] = {c: [] for c in range(self.cpus)}
        for text, who in self.owners.items():
            for c in ids(text):
                got[c] = sorted(got[c] + list(who), key=str)
        return got


# Every snapshot here is one sample: SAMPLES_NEEDED (info, no rates yet). The simulator gives PID 1 every
# online CPU (NodeSpec.init_affinity None), so where a node has exclusive CPUs, SYSTEM_NOT_CONFINED (info)
# names all of them. No container has a CFS quota (CtrSpec.quota_cores None: cpu.max "max"), so no
# GUARANTEED_NOT_PINNED however the pods are pinned.
BUILT = {
    # 2 sockets x 12 cores x 2 threads, intel numbering: socket 0 is 0-11 and 24-35, sibling N+24;
    # reservedSystemCPUs 0,24; feed pinned to 1-2,25-26 (socket 0, whole cores); engine to 13-14,37-38
    # (socket 1, whole cores), and the finished init-tune's 13,37 reused by it: both are owners; metrics,
    # api, fluent on the shared pool. full-pcpus-only and whole cores: no SMT finding; each pinned set on
    # one socket: no cross-NUMA finding.
    "dual_socket_intel": Built(
        cpus=48, roles_from="state", reserved="0,24",
        owners={"1-2,25-26": [("trading", "md-feed-0", "feed")],
                "14,38": [("trading", "matcher-7d9f", "engine")],
                "13,37": [("trading", "matcher-7d9f", "engine"), ("trading", "matcher-7d9f", "init-tune")]},
        findings=(("SAMPLES_NEEDED", "info", None, ""),
                  ("SYSTEM_NOT_CONFINED", "info", None, "1-2,13-14,25-26,37-38"))),
    # 1 socket x 16 cores x 2 threads, amd numbering (siblings 2c, 2c+1), NPS4: NUMA node k is 8k..8k+7;
    # reserved 0-1; triton 8-15 (node 1, whole cores), ffmpeg 16-19 (node 2, whole cores)
    "amd_multi_numa_v1": Built(
        cpus=32, roles_from="state", reserved="0-1",
        owners={"8-15": [("ml", "infer-0", "triton")], "16-19": [("media", "encoder-a", "ffmpeg")]},
        findings=(("SAMPLES_NEEDED", "info", None, ""), ("SYSTEM_NOT_CONFINED", "info", None, "8-19"))),
    # policy none: no exclusive CPU, no reserved set; the Guaranteed "guar" has no quota
    "policy_none": Built(cpus=8, roles_from="policy-none", findings=(("SAMPLES_NEEDED", "info", None, ""),)),
    # 4 cores x 2 threads, amd numbering; 6-7 offline, 4-5 isolcpus left in the shared pool (defaultCpuSet
    # is online minus exclusive: 0-1,4-5), reserved 0, loop pinned to 2-3 (a whole core); PID 1 may run on
    # the online 0-5
    "offline_isolated": Built(
        cpus=8, roles_from="state", reserved="0", isolated="4-5", offline="6-7",
        owners={"2-3": [("ot", "plc", "loop")]},
        # the node isolates 4-5 but kubelet pins 2-3: not isolated (EXCLUSIVE_NOT_ISOLATED, issue 37)
        findings=(("EXCLUSIVE_NOT_ISOLATED", "warning", None, "2-3"),
                  ("ISOLATED_IN_SHARED_POOL", "warning", None, "4-5"), ("SAMPLES_NEEDED", "info", None, ""),
                  ("SYSTEM_NOT_CONFINED", "info", None, "2-3"))),
    # 2 cores x 2 threads, intel numbering (siblings 0,2 and 1,3); the checkpoint is cut mid-entry (not
    # JSON: critical, and roles come from the cgroups), the config is not YAML (the policy and reserved set
    # unknown: no reserved CPU). The pod has no log dir: only kubelet's pods dir names its container "x",
    # whose cgroup holds CPU 2, so 2 is exclusive (to a pod of no known name) and its sibling 0 shared
    # (no full-pcpus-only read).
    "broken": Built(
        cpus=4, roles_from="cgroups",
        owners={"2": [(None, None, "x")]},
        findings=(("KUBELET_CONFIG_UNREADABLE", "warning", None, ""), ("SAMPLES_NEEDED", "info", None, ""),
                  ("SMT_SIBLING_SHARED", "warning", None, "0,2"), ("STATE_UNREADABLE", "critical", None, ""),
                  ("SYSTEM_NOT_CONFINED", "info", None, "2"))),
}


def _who(f: dict) -> str | None:
    if f["pod"] is None and f["container"] is None:
        return None
    return f"{f['namespace']}/{f['pod']}/{f['container']}"


def test_every_golden_shape_has_a_hand_written_expectation():
    assert sorted(BUILT) == sorted(SHAPES) == sorted(p.stem for p in GOLDEN.glob("*.json"))


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_roles_owners_and_findings_as_built(tmp_path, shape):
    """The golden file's facts that matter, from BUILT (by hand), not from a file pinscope wrote."""
    want = BUILT[shape]
    o = read(tmp_path, shape)
    assert o["roles_from"] == want.roles_from
    assert {c["id"]: c["role"] for c in o["cpus"]} == want.roles()
    owners = {c["id"]: sorted(((w["namespace"], w["pod"], w["container"]) for w in c["owners"]), key=str)
              for c in o["cpus"]}
    assert owners == want.owner_map()
    got = sorted((f["code"], f["severity"], _who(f), tuple(f["cpus"])) for f in o["findings"])
    assert got == sorted((code, sev, who, ids(cpus)) for code, sev, who, cpus in want.findings)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_golden(tmp_path, shape):
    o = read(tmp_path, shape)
    text = json.dumps(o, indent=1, sort_keys=True) + "\n"
    g = GOLDEN / f"{shape}.json"
    if os.environ.get("PINSCOPE_UPDATE_GOLDEN"):
        g.write_text(text)
    assert g.exists(), f"no golden file {g}: run with PINSCOPE_UPDATE_GOLDEN=1"
    assert json.loads(text) == json.loads(g.read_text())


def test_dual_socket_intel(tmp_path):
    o = read(tmp_path, "dual_socket_intel")
    cpus = by_id(o)
    assert o["cgroup"] == {"version": 2, "driver": "systemd"}
    assert len(cpus) == 48 and {c["socket"] for c in cpus.values()} == {0, 1}
    assert cpus[0]["siblings"] == [0, 24] and cpus[24]["core"] == cpus[0]["core"] == 0
    assert cpus[5]["core"] == 8  # core_id gaps, as on Xeons
    assert cpus[13]["socket"] == 1 and cpus[13]["core"] == 1  # core_id repeats across packages
    assert [n["cpus"][:3] for n in o["numa_nodes"]] == [[0, 1, 2], [12, 13, 14]]
    assert o["numa_nodes"][0]["distances"] == [10, 32]
    assert cpus[0]["role"] == cpus[24]["role"] == "reserved"
    assert {cpus[i]["role"] for i in (1, 2, 25, 26)} == {"exclusive"}
    assert cpus[1]["owners"][0]["pod"] == "md-feed-0" and cpus[1]["owners"][0]["container"] == "feed"
    # init container's CPUs reused by the app container: both are owners, that is legit
    assert sorted(w["container"] for w in cpus[13]["owners"]) == ["engine", "init-tune"]
    assert cpus[3]["role"] == "shared" and cpus[47]["role"] == "shared"
    k = o["kubelet"]
    assert k["cpu_manager_policy"] == "static" and k["reserved_cpus"] == [0, 24]
    assert k["topology_manager_policy"] == "single-numa-node"
    assert k["cpu_manager_policy_options"] == {"full-pcpus-only": "true"}
    pods = {p["name"]: p for p in o["pods"]}
    assert pods["api-5c8d"]["qos"] == "Burstable" and pods["logs-x1"]["qos"] == "BestEffort"
    eng = next(c for c in pods["matcher-7d9f"]["containers"] if c["name"] == "engine")
    assert eng["cpuset"] == [13, 14, 37, 38] == eng["cpus_effective"] and eng["runtime"] == "containerd"
    init = next(c for c in pods["matcher-7d9f"]["containers"] if c["name"] == "init-tune")
    assert init["id"] is None and init["cpus_effective"] is None  # finished: no cgroup, entry kept
    metrics = next(c for c in pods["matcher-7d9f"]["containers"] if c["name"] == "metrics")
    assert metrics["cpuset"] is None and metrics["exclusive"] is False
    assert len(metrics["cpus_effective"]) == 48 - 8  # reserved CPUs stay in the shared pool (no strict-cpu-reservation)
    assert o["errors"] == []


def test_amd_v1_cgroupfs_nondefault_root(tmp_path):
    o = read(tmp_path, "amd_multi_numa_v1")
    cpus = by_id(o)
    assert o["cgroup"] == {"version": 1, "driver": "cgroupfs"}
    assert o["kubelet"]["state_file"] == "/data/kubelet/cpu_manager_state"
    assert o["kubelet"]["config"] == "/etc/kubernetes/kubelet.yaml"
    assert cpus[8]["siblings"] == [8, 9] and len(o["numa_nodes"]) == 4
    assert [n["cpus"] for n in o["numa_nodes"]][2] == list(range(16, 24))
    assert o["numa_nodes"][1]["distances"] == [12, 10, 12, 12]
    assert {cpus[i]["role"] for i in range(8, 16)} == {"exclusive"}
    assert cpus[0]["role"] == cpus[1]["role"] == "reserved"
    tri = next(p for p in o["pods"] if p["name"] == "infer-0")["containers"][0]
    assert tri["cpus_effective"] == list(range(8, 16)) and tri["mems_effective"] == [1]
    assert len(tri["tasks"]) == 3 and all(8 <= t["last_cpu"] <= 15 for t in tri["tasks"])
    assert o["errors"] == []


def test_policy_none(tmp_path):
    o = read(tmp_path, "policy_none")
    assert o["roles_from"] == "policy-none"
    assert {c["role"] for c in o["cpus"]} == {"shared"}
    assert all(not c["exclusive"] for p in o["pods"] for c in p["containers"])


def test_offline_and_isolated(tmp_path):
    o = read(tmp_path, "offline_isolated")
    cpus = by_id(o)
    assert [cpus[i]["role"] for i in range(8)] == ["reserved", "shared", "exclusive", "exclusive",
                                                    "isolated", "isolated", "offline", "offline"]
    assert cpus[6]["online"] is False and cpus[6]["socket"] is None
    assert o["isolated"] == [4, 5]


def test_broken_node_is_partial_not_fatal(tmp_path):
    o = read(tmp_path, "broken")
    msgs = " | ".join(f"{e['source']}: {e['message']}" for e in o["errors"])
    assert "cpu_manager_state: not valid JSON" in msgs and "truncated" not in msgs
    assert "kubelet config is not valid YAML" in msgs
    assert "no log directory" in msgs
    assert o["roles_from"] == "cgroups" and "roles inferred from cgroups" in msgs
    assert len(o["cpus"]) == 4 and all(c["online"] for c in o["cpus"])
    (p,) = o["pods"]
    assert p["name"] is None and p["containers"][0]["cpus_effective"] == [2]


def test_a_simulated_thread_never_runs_more_than_all_of_one_cpu(tmp_path):
    """The simulator wobbles each thread's share by up to +-20 %: a thread that burns a whole CPU showed
    1060 ms on CPU per second (106 % of the one CPU it can run on). Clamped: at most dt per tick."""
    from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

    spec = NodeSpec(hostname="spin", sockets=1, cores=4, threads=1, policy="static", reserved="0", cgroup=2,
                    driver="systemd", pods=[PodSpec("spin", "default", containers=[CtrSpec("app", cpus="1-2", tasks=2,
                                                                                           busy=1.0)])])
    sim = SimNode(spec, tmp_path / "n").write()
    spinners = [t for t in sim.tasks if t[4] == 1.0]
    assert len(spinners) == 2
    steps = []
    for _ in range(50):
        before = [t[7] for t in spinners]
        sim.tick(1.0)
        steps += [t[7] - b for t, b in zip(spinners, before)]
    assert max(steps) <= 100 and sum(steps) > 0.8 * 100 * len(steps), steps  # clock ticks at 100 Hz
