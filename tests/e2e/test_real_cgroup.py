"""The real kernel: a kubelet-shaped cpuset cgroup with a real busy process pinned in it."""
import json

from helpers import RealPod, need, run_cli


def test_real_pinned_pod_is_exclusive_busy_and_still():
    ok, why = RealPod.available()
    need(ok, why)
    with RealPod(cpus="1", reserved="0") as pod:
        r = run_cli("snapshot", "--json", "--samples", "2", "local")
        assert r.returncode == 0, r.stderr
        o = json.loads(r.stdout)
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
