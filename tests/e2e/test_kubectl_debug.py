"""docs/node-layouts.md's `kubectl debug node/x` recipe, end to end: the host's root at /host (read-only, in a
private mount namespace), built like a real node: /var/log/containers holds kubelet's *absolute* symlinks
(they dangle from inside the debug container), and /proc/<pid>/cgroup reads the way a container in its
own cgroup namespace sees the host's processes ("/../../../kubepods.slice/…"). `pinscope --root /host`
must show pod names, kernel cpusets and the planted drift and intruder."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pinscope.collectors.sim.node import SimNode
from helpers import need
from layouts import FEED_ID, LAYOUTS

ROOT = Path(__file__).resolve().parent.parent.parent


def at_host(tree: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """`pinscope ARGS` with `tree` mounted read-only at /host, in a mount namespace of its own."""
    script = ('mount --make-rprivate / && mount --bind "$1" /host && mount -o remount,bind,ro /host && '
              'shift && exec "$@"')
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(tree), sys.executable, "-m", "pinscope.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture
def host(tmp_path):
    need(os.geteuid() == 0 and shutil.which("unshare") is not None, "needs root and unshare (a mount namespace)")
    made = not os.path.exists("/host")
    if made:
        os.mkdir("/host")  # the mount point only; the bind mount lives in the test's own namespace
    lay = LAYOUTS["containerd_systemd_v2"]("drift")
    lay.spec.other_tasks = [("stress-ng", 5, False)]
    lay.spec.cgroupns_prefix = "/../../.."
    SimNode(lay.spec, tmp_path / "tree").write()
    link = tmp_path / "tree/var/log/containers" / f"md-feed_trading_feed-{FEED_ID}.log"
    assert link.is_symlink() and os.readlink(link).startswith("/var/log/pods/")
    yield tmp_path / "tree"
    if made:
        os.rmdir("/host")


def test_kubectl_debug_recipe_shows_names_cpusets_and_drift(host):
    r = at_host(host, "snapshot", "--json", "--root", "/host", "local")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)
    ctrs = {(p["namespace"], p["name"], c["name"]): c for p in o["pods"] for c in p["containers"]}
    assert sorted(ctrs) == [("kube-system", "agent", "agent"), ("trading", "md-feed", "feed"), ("web", "api", "api")]
    feed = ctrs[("trading", "md-feed", "feed")]
    assert feed["cpuset"] == [1, 5] and feed["cpus_effective"] == [1, 2, 5, 6]
    assert ctrs[("web", "api", "api")]["cpus_effective"] == [0, 2, 3, 4, 6, 7]
    crit = {(f["code"], f["container"]) for f in o["findings"] if f["severity"] == "critical"}
    assert crit == {("STATE_CGROUP_DRIFT", "feed"), ("INTRUDER_TASK", "feed")}
    (i,) = [f for f in o["findings"] if f["code"] == "INTRUDER_TASK"]
    assert "stress-ng" in i["message"] and any("/../../../system.slice/stress-ng.service" in e for e in i["evidence"])
    r = at_host(host, "check", "--root", "/host", "local")
    assert r.returncode == 2 and "STATE_CGROUP_DRIFT" in r.stdout
