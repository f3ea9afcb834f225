"""Issue 34 item 8: a directory this user may not list is not an absent one.

The probe runs as `nobody` (runuser) on a copy tree whose directories are chmod 700, as a root-only
/sys/fs/cgroup, cgroup v1's cpuset hierarchy, kubepods or kubelet's and the pod logs' directories are to an
unprivileged user. Before: an unreadable /sys/fs/cgroup was read as "no cgroup v1 cpuset hierarchy is
mounted" (CPUSET_NOT_ENABLED, critical: exit 2 on a healthy node) and every pod as one whose cgroup "was not
found". Now the probe says such a directory unreadable (X<dir>/), the node is read in part (READ_PARTIAL
names the directory: `check` exits 4), and no check concludes from what it could not see.
(Over SSH as an unprivileged user: tests/e2e/test_ssh_unprivileged.py.)
"""
import asyncio
import os
import shutil
import subprocess
import tempfile

import pytest

from helpers import need, shared_tmpdir
from nodes import amd_multi_numa_v1, dual_socket_intel
from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport import base, local
from pinscope.cli import render_table


@pytest.fixture
def as_nobody(monkeypatch):
    """The local probe started as `nobody` (the rest of pinscope as this user, root)."""
    need(os.geteuid() == 0 and shutil.which("runuser") is not None, "needs root and runuser")
    monkeypatch.setattr(local, "probe_command",
                        lambda root=None, sudo=False: "exec runuser -u nobody -- " + base.probe_command(root, sudo)[5:])


@pytest.fixture
def tree():
    """A fresh copy tree that `nobody` may walk (pytest's own tmp_path is 0700 root, and so is CI's TMPDIR)."""
    made = []

    def make(spec):
        root = shared_tmpdir("pinscope-unlisted-")
        made.append(root)
        SimNode(spec, root).write()
        for d, _, files in os.walk(root):
            os.chmod(d, 0o755)
            for f in files:
                if not os.path.islink(os.path.join(d, f)):
                    os.chmod(os.path.join(d, f), 0o644)
        return root

    yield make
    for root in made:
        shutil.rmtree(root, ignore_errors=True)


def read(root) -> dict:
    return asyncio.run(asyncio.wait_for(snapshot("local", Options(root=root, frame_timeout=20)), 60)).to_json()


def codes(o, worse_than_info=False) -> set[str]:
    return {f["code"] for f in o["findings"] if not worse_than_info or f["severity"] != "info"}


CASES = {
    "v2 /sys/fs/cgroup": (dual_socket_intel, "sys/fs/cgroup"),
    "v1 /sys/fs/cgroup": (amd_multi_numa_v1, "sys/fs/cgroup"),
    "v1 /sys/fs/cgroup/cpuset": (amd_multi_numa_v1, "sys/fs/cgroup/cpuset"),
    "v2 kubepods.slice": (dual_socket_intel, "sys/fs/cgroup/kubepods.slice"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_cgroup_directory_this_user_may_not_list_is_read_partial_not_absent(as_nobody, tree, case):
    shape, closed = CASES[case]
    root = tree(shape())
    os.chmod(os.path.join(root, closed), 0o700)
    o = read(root)
    rp = [f for f in o["findings"] if f["code"] == "READ_PARTIAL"]
    assert rp, o["findings"]
    assert f"/{closed}/" in rp[0]["message"] and "not readable by this user" in rp[0]["message"], rp[0]["message"]
    assert any(e["source"] == f"/{closed}/" for e in o["errors"]), o["errors"]
    # nothing concluded from what could not be seen: no critical, no warning, no pod "whose cgroup was not found"
    assert codes(o, worse_than_info=True) == set(), o["findings"]
    assert not any("no pod cgroup was found" in f["message"] for f in o["findings"]), o["findings"]
    if closed == "sys/fs/cgroup":
        assert o["cgroup"]["version"] is None  # not known: not "v1 without a cpuset mount"
        assert "CPUSET_NOT_ENABLED" in rp[0]["message"]  # named among the checks not run
        assert "cgroup version unknown" in render_table(o).splitlines()[0]


def test_the_pod_logs_and_kubelet_s_directory_unlisted_are_read_partial(as_nobody, tree):
    root = tree(dual_socket_intel())
    os.chmod(os.path.join(root, "var/log/pods"), 0o700)
    os.chmod(os.path.join(root, "var/lib/kubelet"), 0o700)  # as kubelet leaves it: its state file inside too
    o = read(root)
    (rp,) = [f for f in o["findings"] if f["code"] == "READ_PARTIAL"]
    assert "/var/log/pods/" in rp["message"] and "/var/lib/kubelet/" in rp["message"], rp["message"]
    assert codes(o, worse_than_info=True) == set(), o["findings"]


def test_a_tree_nobody_may_read_whole_is_read_whole(as_nobody, tree):
    o = read(tree(dual_socket_intel()))
    assert "READ_PARTIAL" not in codes(o) and o["cgroup"]["version"] == 2, o["findings"]
    assert codes(o, worse_than_info=True) == set(), o["findings"]


def test_the_tree_is_one_nobody_may_walk_whatever_the_tmpdir(as_nobody, tree, monkeypatch):
    """.ci/run gives its run a TMPDIR of its own, 0700 root: a tree made there could not be entered by nobody,
    and every test above read a node where everything was "absent" (CI failed them all, here green)."""
    private = tempfile.mkdtemp(prefix="pinscope-private-tmp-")  # as .ci/run's: mktemp -d, 0700
    try:
        monkeypatch.setenv("TMPDIR", private)
        monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR once: read it again
        root = tree(dual_socket_intel())
        r = subprocess.run(["runuser", "-u", "nobody", "--", "cat", os.path.join(root, "proc/sys/kernel/hostname")],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert "READ_PARTIAL" not in codes(read(root))
    finally:
        shutil.rmtree(private, ignore_errors=True)
