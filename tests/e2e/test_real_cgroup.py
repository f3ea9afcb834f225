"""The real kernel: a kubelet-shaped cpuset cgroup (v1 or v2, whichever the machine has) with a real busy
process pinned in it."""
import json

from helpers import RealPod, need, run_cli


def test_real_pinned_pod_is_exclusive_busy_and_still():
    ok, why = RealPod.available()
    need(ok, why)
    with RealPod(cpus="1", reserved="0") as pod:
        r = run_cli("snapshot", "--json", "--samples", "2", "local")
        assert r.returncode == 0, r.stderr
        o = json.loads(r.stdout)
    assert o["cgroup"]["version"] == {"v1": 1, "v2": 2}[pod.kind]
    cpu1 = next(c for c in o["cpus"] if c["id"] == 1)
    assert cpu1["role"] == "exclusive"
    assert cpu1["owners"] == [{"pod_uid": pod.uid, "namespace": "e2e", "pod": "busy-pod", "container": "busy"}]
    assert cpu1["util"] > 0.7
    assert next(c for c in o["cpus"] if c["id"] == 0)["role"] == "reserved"
    (p,) = [p for p in o["pods"] if p["uid"] == pod.uid]
    assert p["qos"] == "Guaranteed" and p["name"] == "busy-pod"
    (c,) = p["containers"]
    assert c["id"] == pod.cid and c["cpuset"] == [1] and c["cpus_effective"] == [1] and c["exclusive"]
    assert [t["last_cpu"] for t in c["tasks"]] == [1]
    assert c["migrations_per_s"] is not None and c["migrations_per_s"] < 0.5
    assert o["kubelet"]["cpu_manager_policy"] == "static" and o["kubelet"]["reserved_cpus"] == [0]


def _check(*args):
    r = run_cli("check", "--json", *args, "local")
    assert r.returncode in (0, 1, 2), r.stderr
    return r.returncode, json.loads(r.stdout)


def test_real_intruder_on_exclusive_cpu():
    ok, why = RealPod.available()
    need(ok, why)
    with RealPod(cpus="1", reserved="0") as pod:
        intruder = pod.spawn_busy(in_pod=False, cpu=1)
        import time

        time.sleep(0.3)
        # two samples: the share of CPU 1 it takes over the window is the evidence (issue 22 item 9); with
        # one sample it only last ran there, on a node whose PID 1 may run anywhere: SYSTEM_NOT_CONFINED
        rc, o = _check("--samples", "2", "--interval", "0.5")
    hits = [f for f in o["findings"] if f["code"] == "INTRUDER_TASK"]
    assert rc == 2
    assert any(f"pid {intruder.pid}," in f["message"] for f in hits), [f["message"] for f in o["findings"]]
    (f,) = [f for f in hits if f"pid {intruder.pid}," in f["message"]]
    assert f["cpus"] == [1] and f["pod"] == "busy-pod" and f["severity"] == "critical"
    # the pod's own busy task is not an intruder
    assert not any(f"pid {pod.busy.pid}," in x["message"] for x in hits)


def test_real_cfs_quota_throttles_exclusive_container():
    ok, why = RealPod.available()
    need(ok, why)
    ok, why = RealPod.can_throttle()
    need(ok, why)
    with RealPod(cpus="1", reserved="0", quota_us=20000) as pod:
        rc, o = _check("--samples", "2", "--interval", "0.5")
    (f,) = [f for f in o["findings"] if f["code"] == "THROTTLED_EXCLUSIVE"]
    assert f["pod"] == "busy-pod" and f["container"] == "busy" and "periods/s" in f["message"]
    (p,) = [p for p in o["pods"] if p["uid"] == pod.uid]
    (c,) = p["containers"]
    assert c["cpu_quota_cores"] == 0.2 and c["throttled_per_s"] > 1
    assert rc >= 1
