"""The corpus of real node layouts (tests/layouts.py), read through the real probe under --root: the
values written by hand are found, the healthy node has no critical finding, and a planted drift or
intruder is still found. (Over SSH, the same snapshot: tests/e2e/test_layouts_ssh.py.)"""

import pytest

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.jsonout import to_json
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport
from helpers import run_cli
from layouts import AGENT_ID, API_ID, FEED_ID, LAYOUTS, SHARED


async def read(root, layout, focus=None) -> dict:
    SimNode(layout.spec, root).write()

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        col.focus = focus
        r = await col.tick("gcTain")
        return to_json(r.snapshot, None, r.findings)
    finally:
        await col.close()



def findings(o) -> list[tuple]:
    """(code, severity, "ns/pod/container" or None, CPUs) of every finding, sorted."""
    return sorted((f["code"], f["severity"], f"{f['namespace']}/{f['pod']}/{f['container']}" if f["pod"] else None,
                   tuple(f["cpus"])) for f in o["findings"])


# one tick: rates need a second sample (SAMPLES_NEEDED, info); PID 1 is kept to the reserved 0,4
# (init_affinity), so no SYSTEM_NOT_CONFINED; no container has a CFS quota
ONE_TICK = ("SAMPLES_NEEDED", "info", None, ())


def containers(o) -> dict:
    return {(p["namespace"], p["name"], c["name"]): dict(c, qos=p["qos"], pod_cgroup=p["cgroup"], uid=p["uid"])
            for p in o["pods"] for c in p["containers"]}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
async def test_healthy_layout_reads_right(tmp_path, name):
    lay = LAYOUTS[name]()
    o = await read(tmp_path, lay)
    assert o["cgroup"] == lay.cgroup and o["kubelet"]["cgroup_root"] == lay.cgroup_root
    cs = containers(o)
    # every pod and container named, the sandbox (and CRI-O's conmon) not listed as containers
    assert sorted(cs) == sorted([("trading", lay.feed_pod, "feed"), ("web", "api", "api"),
                                 ("kube-system", "agent", "agent")]), sorted(cs)
    feed = cs[("trading", lay.feed_pod, "feed")]
    assert feed["id"] == FEED_ID and feed["uid"] == lay.feed_uid and feed["qos"] == "Guaranteed"
    assert feed["cgroup"] == lay.feed_cgroup and feed["runtime"] == lay.runtime
    assert feed["cpuset"] == [1, 5] and feed["cpus_effective"] == [1, 5] and feed["exclusive"]
    api = cs[("web", "api", "api")]
    assert api["id"] == API_ID and api["qos"] == "Burstable" and api["pod_cgroup"] == lay.api_pod_cgroup
    assert api["cpuset"] is None and api["cpus_effective"] == SHARED and len(api["tasks"]) == 3
    agent = cs[("kube-system", "agent", "agent")]
    assert agent["id"] == AGENT_ID and agent["qos"] == "BestEffort" and agent["cpus_effective"] == SHARED
    roles = {c["id"]: c["role"] for c in o["cpus"]}
    assert roles == {0: "reserved", 1: "exclusive", 2: "shared", 3: "shared", 4: "reserved", 5: "exclusive",
                     6: "shared", 7: "shared"}
    feed_owner = {"pod_uid": lay.feed_uid, "namespace": "trading", "pod": lay.feed_pod, "container": "feed"}
    assert {c["id"]: c["owners"] for c in o["cpus"]} == {0: [], 1: [feed_owner], 2: [], 3: [], 4: [], 5: [feed_owner],
                                                         6: [], 7: []}
    assert findings(o) == [ONE_TICK], [f"{f['code']}: {f['message']}" for f in o["findings"]]
    errs = [e for e in o["errors"] if "reservedSystemCPUs" not in e["message"]]
    assert errs == [], errs


@pytest.mark.parametrize("name", sorted(LAYOUTS))
async def test_planted_drift_is_found(tmp_path, name):
    lay = LAYOUTS[name]("drift")
    o = await read(tmp_path, lay)
    assert findings(o) == [ONE_TICK, ("STATE_CGROUP_DRIFT", "critical", f"trading/{lay.feed_pod}/feed", (2, 6))]
    (d,) = [f for f in o["findings"] if f["code"] == "STATE_CGROUP_DRIFT"]
    assert d["severity"] == "critical" and (d["pod"], d["container"]) == (lay.feed_pod, "feed")
    assert d["cpus"] == [2, 6]
    assert any(e.startswith(lay.feed_cgroup + "/cpuset.") and e.endswith(" = 1-2,5-6") for e in d["evidence"])


@pytest.mark.parametrize("name", sorted(LAYOUTS))
async def test_planted_intruder_is_found(tmp_path, name):
    lay = LAYOUTS[name]("intruder")
    o = await read(tmp_path, lay)
    hits = [f for f in o["findings"] if f["code"] == "INTRUDER_TASK"]
    assert [(f["message"].split()[0], f["cpus"], f["pod"], f["container"]) for f in hits] == \
        [("stress-ng", [5], lay.feed_pod, "feed")]
    assert any("/system.slice/stress-ng.service (outside that pod)" in e for e in hits[0]["evidence"])
    assert findings(o) == [("INTRUDER_TASK", "critical", f"trading/{lay.feed_pod}/feed", (5,)), ONE_TICK]


@pytest.mark.parametrize("name", ["containerd_systemd_v2", "crio_systemd_v2", "docker_cgroupfs_v1_pre118"])
def test_check_exits_0_or_1_on_the_healthy_layout(tmp_path, name):
    SimNode(LAYOUTS[name]().spec, tmp_path).write()
    r = run_cli("check", "--root", str(tmp_path), "local")
    assert r.returncode in (0, 1), r.stdout + r.stderr


async def test_kernel_nothing_values_read_as_nothing(tmp_path):
    o = await read(tmp_path, LAYOUTS["kernel_nothing_values"]())
    assert o["nohz_full"] == [] and {c["socket"] for c in o["cpus"]} == {None} and {c["die"] for c in o["cpus"]} == {None}
    assert [(n["id"], n["cpus"]) for n in o["numa_nodes"]] == [(0, list(range(8))), (1, [])]
    assert not [e for e in o["errors"] if "nohz_full" in e["source"] or "topology" in e["source"]]


async def test_memory_per_numa_node_for_the_container_in_focus(tmp_path):
    lay = LAYOUTS["containerd_systemd_v2"]()
    lay.spec.cpuless_numa = 1  # node 1: memory only; feed's 64 MiB is all on node 0
    o = await read(tmp_path, lay, focus=FEED_ID[:12])
    cs = containers(o)
    assert cs[("trading", "md-feed", "feed")]["memory_numa"] == {
        "unit": "bytes", "nodes": {"0": {"anon": 64 << 20, "file": 0}, "1": {"anon": 0, "file": 0}}}
    assert cs[("web", "api", "api")]["memory_numa"] is None  # not in focus: not read


async def test_memory_per_numa_node_v1_in_pages(tmp_path):
    o = await read(tmp_path, LAYOUTS["containerd_cgroupfs_v1"](), focus=FEED_ID)
    assert containers(o)[("trading", "md-feed", "feed")]["memory_numa"] == {
        "unit": "pages", "nodes": {"0": {"anon": 16384, "file": 0}}}


def test_task_scan_reads_the_cgroup_only_of_processes_not_placed_yet(tmp_path):
    """In a frame that read the pods' cgroup.procs, the every-task scan asks /proc/<pid>/cgroup only of the
    other processes, and never of kernel threads (most processes of a real node)."""
    import subprocess

    from pinscope.collectors.frames import parse_frame
    from pinscope.collectors.transport.base import probe_command

    lay = LAYOUTS["containerd_systemd_v2"]("intruder")
    lay.spec.other_tasks += [("kworker/5:1", 5, True)]
    sim = SimNode(lay.spec, tmp_path).write()
    out = subprocess.run(["sh", "-c", probe_command(str(tmp_path))], input=b"sgTa\nq\n", capture_output=True,
                         timeout=60).stdout
    fr = parse_frame(out[:out.index(b"\nZ") + 4])
    read = sorted(int(p.split("/")[2]) for p in fr.files if p.startswith("/proc/") and p.endswith("/cgroup"))
    by_comm = {t[2]: t[1] for t in sim.tasks}
    assert read == [by_comm["stress-ng"]]  # not feed, api, pause, conmon ..., not the kworker
    assert fr.files[f"/proc/{read[0]}/cgroup"] == "0::/system.slice/stress-ng.service\n"


async def test_v1_without_a_cpuset_hierarchy_is_named_not_orphaned(tmp_path):
    """cgroup v1 with no cpuset mount: the readiness finding, and the pods kubelet's state names are known
    to the logs and kubelet's pods dir, so no ORPHAN_STATE_ENTRY (their cgroups are what is missing)."""
    import shutil

    SimNode(LAYOUTS["containerd_cgroupfs_v1"]().spec, tmp_path).write()
    shutil.rmtree(tmp_path / "sys/fs/cgroup/cpuset")

    col = NodeCollector("local", Options(root=str(tmp_path)), LocalTransport(str(tmp_path)))
    await col.connect()
    try:
        r = await col.tick("gcTain")
        o = to_json(r.snapshot, None, r.findings)
    finally:
        await col.close()

    by = {f["code"]: f for f in o["findings"]}
    assert by["CPUSET_NOT_ENABLED"]["severity"] == "critical"
    assert "ORPHAN_STATE_ENTRY" not in by
    assert by["IDENTITY_UNRESOLVED"]["severity"] == "info" and "no pod cgroup was found" in by["IDENTITY_UNRESOLVED"]["message"]


async def test_a_leaf_no_node_source_names_is_unresolved_then_named_by_the_api(tmp_path):
    """No /var/log/containers link, no log dir, no kubelet pods dir: the feed leaf is kept, unresolved (an
    info note, no critical guess), kubelet's entry for "feed" listed apart; --kube's containerStatuses
    (containerd://<id>) names it and joins the entry."""
    from pinscope.collectors.jsonout import enrich
    from pinscope.collectors.kube import ApiPod, container_ids
    from layouts import FEED_UID

    lay = LAYOUTS["containerd_systemd_v2"]()
    lay.spec.kubelet_pods_dir = False
    lay.spec.pods[0].logs = False
    o = await read(tmp_path, lay)
    (pod,) = [p for p in o["pods"] if p["uid"] == FEED_UID]
    leaf = next(c for c in pod["containers"] if c["id"] == FEED_ID)
    assert leaf["name"] is None and "no /var/log/containers link names container f1f1f1f1f1f1" in leaf["unresolved"]
    assert [c["name"] for c in pod["containers"] if c["id"] is None] == ["feed"]  # kubelet's entry, apart
    assert [f["code"] for f in o["findings"] if f["severity"] == "critical"] == []
    assert any(f["code"] == "IDENTITY_UNRESOLVED" and f["severity"] == "info" for f in o["findings"])
    ids = container_ids({"containerStatuses": [{"name": "feed", "containerID": f"containerd://{FEED_ID}"}]})
    enrich(o, {FEED_UID: ApiPod(FEED_UID, "trading", "md-feed", "Guaranteed", None, (), ids)})
    (pod,) = [p for p in o["pods"] if p["uid"] == FEED_UID]
    assert pod["name"] == "md-feed" and [(c["name"], c["id"], c["cpuset"], c["cpus_effective"]) for c in pod["containers"]] \
        == [("feed", FEED_ID, [1, 5], [1, 5])]
