"""Every layout of the corpus (tests/layouts.py), healthy and with each planted fault, read in one
`pinscope snapshot --json` both under --root locally and over a real OpenSSH sshd: the same snapshot,
no critical finding on the healthy node, the planted fault found by both."""
import json

import pytest

from pinscope.collectors.sim.node import SimNode
from helpers import run_cli
from layouts import LAYOUTS


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_reads_the_same_over_ssh(server, tmp_path, name):
    for fault, code in ((None, None), ("drift", "STATE_CGROUP_DRIFT"), ("intruder", "INTRUDER_TASK")):
        root = tmp_path / (fault or "healthy")
        SimNode(LAYOUTS[name](fault).spec, root).write()
        r = run_cli("snapshot", "--json", "--root", str(root), *server.args(), "local", server.target)
        assert r.returncode == 0, r.stderr
        local, remote = json.loads(r.stdout)
        # kubelet's socket: none in the tree locally, not forwarded with --root over SSH (tests/e2e/test_ssh.py)
        assert local.pop("podresources")["asked"] is remote.pop("podresources")["asked"] is False
        assert local == remote, fault
        crit = sorted({f["code"] for f in local["findings"] if f["severity"] == "critical"})
        assert crit == ([code] if code else []), (fault, crit)
        assert all(c["name"] for p in local["pods"] for c in p["containers"])
