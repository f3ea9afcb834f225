"""The real node changing under pinscope (issue 33, part two), for each kubelet release: a pod deleted gives its
CPU back to the shared pool in the live view within two ticks of kubelet's checkpoint; a container's cpuset
written by hand is STATE_CGROUP_DRIFT for as long as the kernel keeps it, and gone once kubelet restores it
(its restart: the same view as before); a task pinned onto the exclusive CPU with `taskset` is a critical
INTRUDER_TASK; run as `nobody`, pinscope reads the node in part (exit 4) and says nothing false.

Every expected fact is read from kubelet (its checkpoint, the API) or the kernel (cgroupfs, /proc), never
from pinscope (tests/cluster/realnode.py).
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from cluster import realnode as rn
from cluster.pytest_cluster import Cluster, run_up


def _guaranteed(cluster: Cluster):
    """One Guaranteed pod holding one exclusive CPU -> (cluster, pod, its container's id, the CPU)."""
    s = rn.spec(cluster, f"x-{uuid.uuid4().hex[:6]}", [rn.box(cluster, "work", "1", "64Mi")])
    try:
        (pod,) = rn.start(cluster, [s])
        uid = pod["metadata"]["uid"]
        (cpu,) = rn.cpuset(rn.cpu_state(cluster)["entries"][uid]["work"])
        yield cluster, pod, rn.running_containers(pod)["work"], cpu
    finally:
        rn.delete(cluster, [s])


@pytest.fixture
def guaranteed(cluster: Cluster):
    """A pod of the test's own: the tests that delete it, write its cpuset, restart kubelet under it."""
    yield from _guaranteed(cluster)


@pytest.fixture(scope="module")
def pinned(cluster: Cluster):
    """One pod for the tests that only read the node with it (a pod made and deleted costs seconds a test)."""
    yield from _guaranteed(cluster)


def _roles(report) -> dict[int, tuple[str, tuple]]:
    return {r.id: (r.role, tuple((o.pod, o.container) for o in r.owners)) for r in report.snapshot.roles}


async def test_a_deleted_pods_cpu_is_shared_again_within_two_ticks(guaranteed) -> None:
    """The live view's own loop (collectors.collect.live, as the TUI runs it, one tick a second): the tick kubelet's
    checkpoint lets the pod go is noted (read after each report), and within two ticks of it the CPU is shared."""
    from pinscope.collectors.collect import NodeCollector, live, live_depth

    c, pod, _, cpu = guaranteed
    uid, name = pod["metadata"]["uid"], pod["metadata"]["name"]
    seen: list[tuple[bool, str]] = []  # per report: (kubelet's checkpoint still holds the pod, pinscope's role)

    stop = asyncio.Event()

    def on_report(report) -> None:
        held = uid in (c.kubelet_root / "cpu_manager_state").read_text()
        seen.append((held, _roles(report)[cpu][0]))
        gone = [i for i, (h, _) in enumerate(seen) if not h]
        if gone and len(seen) - gone[0] > 3:
            stop.set()

    task = asyncio.create_task(live(NodeCollector("local"), 1.0, live_depth, on_report,
                                    lambda *_: None, stop))
    try:
        end = time.monotonic() + rn.DEADLINE
        while not any(role == "exclusive" for _, role in seen):
            assert time.monotonic() < end and not task.done(), f"no report with CPU {cpu} exclusive: {seen}"
            await asyncio.sleep(0.2)
        await asyncio.to_thread(c.kubectl, "delete", "pod", "-n", "default", name, "--wait=false")
        await asyncio.wait_for(stop.wait(), rn.DEADLINE)
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)

    first = next(i for i, (held, _) in enumerate(seen) if not held)
    assert all(role == "exclusive" for held, role in seen[:first] if held), seen
    assert "shared" in [role for _, role in seen[first:first + 3]], (first, seen)
    assert all(role == "shared" for _, role in seen[first + 3:]), seen
    assert cpu in rn.cpuset(rn.cpu_state(c)["defaultCpuSet"])


def _drift(c: Cluster, check: rn.Check, name: str) -> list[dict]:
    return [f for f in check.findings if f["code"] == "STATE_CGROUP_DRIFT" and f.get("pod") == name]


@pytest.mark.timeout(900)  # a kubelet restart (up) on two loaded cores
def test_a_cpuset_written_by_hand_is_drift_until_kubelet_restores_it(guaranteed) -> None:
    """Kubelet's reconcile compares what it wants with what it last wrote itself, not with the cgroup
    (cpu_manager.go reconcileState, lastUpdateState, both releases): a hand-written cpuset stays while kubelet
    runs (the issue expected the reconcile to restore it: it does not), and the finding with it; kubelet's
    restart writes every container's cpuset again, and the finding goes. The kernel is read each time."""
    c, pod, cid, cpu = guaranteed
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    before = rn.snapshot()
    cg = rn.container_cgroup(uid, cid)
    everything = ",".join(str(x) for x in sorted(rn.online_cpus()))
    (cg / "cpuset.cpus").write_text(everything)
    assert rn.cpuset((cg / "cpuset.effective_cpus").read_text()) == rn.online_cpus()

    res = rn.check()
    (f,) = _drift(c, res, name)
    assert f["severity"] == "critical" and f["container"] == "work", f
    assert res.rc == 2, (res.rc, res.codes())

    # three reconcile periods: kubelet does not write it back (the kernel says so), and pinscope still says drift
    time.sleep(3 * rn.reconcile_period(c) + 2)
    assert rn.cpuset((cg / "cpuset.cpus").read_text()) == rn.online_cpus(), "kubelet's reconcile restored it"
    assert _drift(c, rn.check(), name), "the cgroup still drifts, the finding is gone"

    # kubelet restarted: it writes the container's cpuset again
    pid = int((c.run / "pids" / "kubelet").read_text())
    os.kill(pid, signal.SIGTERM)
    rn.poll("the kubelet to exit", lambda: rn.gone(pid), timeout=60)
    run_up(c.version, timeout=600)
    rn.poll("kubelet to write the container's cpuset back",
            lambda: rn.cpuset((cg / "cpuset.cpus").read_text()) == {cpu}, timeout=rn.DEADLINE)
    assert _drift(c, rn.check(), name) == []
    after = rn.snapshot()
    assert [(x["id"], x["role"], x["owners"]) for x in after["cpus"]] == \
        [(x["id"], x["role"], x["owners"]) for x in before["cpus"]]


def test_a_task_pinned_onto_the_exclusive_cpu_is_a_critical_intruder(pinned) -> None:
    c, pod, _, cpu = pinned
    p = subprocess.Popen(["taskset", "-c", str(cpu), "sleep", "600"], start_new_session=True)
    try:
        # the kernel: pinned there (taskset sets the affinity, then execs sleep)
        rn.poll("the pinned task to run", lambda: Path(f"/proc/{p.pid}/comm").read_text().strip() == "sleep"
                and rn.allowed_cpus(p.pid) == {cpu}, timeout=30)
        assert "kubepods" not in Path(f"/proc/{p.pid}/cgroup").read_text()  # outside every pod
        res = rn.check()
        mine = [f for f in res.findings if f["code"] == "INTRUDER_TASK" and f"pid {p.pid}," in f["message"]]
        assert len(mine) == 1, res.findings
        assert mine[0]["severity"] == "critical" and mine[0]["cpus"] == [cpu], mine
        assert mine[0]["pod"] == pod["metadata"]["name"], mine
        assert res.rc == 2
        others = [f for f in res.findings if f is not mine[0]]
        for f in others:
            if f["code"] == "INTRUDER_TASK":  # another task the kernel shows pinned onto exclusive CPUs only
                t = int(f["message"].split("(pid ", 1)[1].split(",")[0])
                assert rn.allowed_cpus(t) <= rn.exclusive_cpus(c), f
            else:
                rn.verify_finding(c, f)
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(30)


def test_as_nobody_the_node_is_read_in_part_and_nothing_false_is_said(pinned) -> None:
    """The probe as `nobody`: kubelet's checkpoint (0600) and its pods directory are root's, so the node is read
    in part (READ_PARTIAL; exit 4 unless a warning outranks it: check's exit codes), every finding is true,
    and the roles pinscope infers from the cgroups alone still equal kubelet's."""
    c, pod, _, cpu = pinned
    assert os.stat(c.kubelet_root / "cpu_manager_state").st_mode & 0o077 == 0  # kubelet's: root's only
    res = rn.check(user="nobody")
    assert "READ_PARTIAL" in res.codes(), res.codes()
    worst = {f["severity"] for f in res.findings}
    assert res.rc == (2 if "critical" in worst else 1 if "warning" in worst else 4), (res.rc, res.codes())
    for f in res.findings:
        assert f["severity"] != "critical", f
        rn.verify_finding(c, f)
    snap = rn.snapshot(user="nobody")
    assert snap["roles_from"] == "cgroups"
    roles = {x["id"]: (x["role"], [(o["pod"], o["container"]) for o in x["owners"]]) for x in snap["cpus"]}
    assert roles[cpu] == ("exclusive", [(pod["metadata"]["name"], "work")]), roles
