"""An unprivileged SSH user: cpu_manager_state (0600, root) is reported unreadable, never fatal; with
--sudo and no usable `sudo -n`, the probe says so and goes on."""
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

import sshd as sshd_mod
from pinscope.collectors.sim.node import SimNode
from helpers import need, run_cli, shared_tmpdir
from nodes import dual_socket_intel


@pytest.fixture
def user():
    need(os.geteuid() == 0 and shutil.which("useradd") is not None, "needs root and useradd")
    name = f"pst{uuid.uuid4().hex[:8]}"
    home = Path(shared_tmpdir("pinscope-home-"))  # the user's to enter: not in a TMPDIR of 0700 (CI's)
    subprocess.run(["useradd", "-M", "-d", str(home), "-s", "/bin/sh", name], check=True, capture_output=True)
    subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)  # no password, not locked
    os.chmod(home, 0o755)
    shutil.chown(home, name)
    yield name, home
    subprocess.run(["userdel", name], capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


def test_unreadable_state_file_is_reported_not_fatal(user, tmp_path):
    user, home = user
    ok, why = sshd_mod.available()
    need(ok, why)
    root = Path(shared_tmpdir("pinscope-node-"))
    try:
        spec = dual_socket_intel()
        spec.pods[0].containers[0].quota_cores = 4  # md-feed-0/feed: pinned to 1-2,25-26, CFS quota kept (kubelet < 1.33)
        SimNode(spec, root).write()
        for d, _, files in os.walk(root):
            os.chmod(d, 0o755)
            for f in files:
                if not os.path.islink(os.path.join(d, f)):  # the simulated node's links dangle, as kubelet's do
                    os.chmod(os.path.join(d, f), 0o644)
        state = root / "var/lib/kubelet/cpu_manager_state"
        os.chmod(state, 0o600)  # as kubelet writes it
        srv = sshd_mod.Sshd(tmp_path / "s")
        ssh = home / ".ssh"
        ssh.mkdir(mode=0o700)
        (ssh / "authorized_keys").write_text((tmp_path / "s" / "user_ed25519.pub").read_text())
        for p in (ssh, ssh / "authorized_keys"):
            shutil.chown(p, user)
        srv.cfg.write_text(srv.cfg.read_text().replace(f"AuthorizedKeysFile {tmp_path / 's'}/authorized_keys",
                                                       "AuthorizedKeysFile .ssh/authorized_keys"))
        srv.start()
        target = f"{user}@127.0.0.1:{srv.port}"
        try:
            r = run_cli("snapshot", "--json", "--root", str(root), *srv.args(), target)
            assert r.returncode == 0, r.stderr
            o = json.loads(r.stdout)
            msgs = [e["message"] for e in o["errors"]]
            assert ("cpu_manager_state is not readable by this user (root-only): run with --sudo, or as root or a user "
                    "in a group that may read it") in msgs
            assert o["roles_from"] == "cgroups" and len(o["cpus"]) == 48
            # not a fault of the node: the node was read in part, said as such (check exits 4, not 2)
            codes = {f["code"] for f in o["findings"]}
            assert "READ_PARTIAL" in codes and "STATE_UNREADABLE" not in codes
            # issue 22 item 1: the report shows feed's kernel cpuset exclusive to it; no finding says otherwise
            feed = {c["id"]: (c["role"], tuple((w["pod"], w["container"]) for w in c["owners"])) for c in o["cpus"]}
            assert {feed[x] for x in (1, 2, 25, 26)} == {("exclusive", (("md-feed-0", "feed"),))}
            assert [f["code"] for f in o["findings"] if f["severity"] != "info"] == []
            assert "GUARANTEED_NOT_PINNED" not in codes
            # issue 34 item 7: kubelet's assignment is unknown, not "shared" (it said `kubelet shared` for feed)
            ctr = {c["name"]: c for p in o["pods"] for c in p["containers"] if c["name"]}
            assert ctr["feed"]["exclusive"] is None and ctr["api"]["exclusive"] is None, ctr["feed"]
            r = run_cli("snapshot", "--root", str(root), *srv.args(), target)
            assert r.returncode == 0, r.stderr
            feed_line = next(x for x in r.stdout.splitlines() if " feed [" in x)
            assert "kubelet unknown" in feed_line and "kernel 1-2,25-26" in feed_line, feed_line
            assert "kubelet shared" not in r.stdout, r.stdout
            (rp,) = [f for f in o["findings"] if f["code"] == "READ_PARTIAL"]
            assert "checks not run: " in rp["message"] and "GUARANTEED_NOT_PINNED" in rp["message"]
            r = run_cli("check", "--root", str(root), *srv.args(), target)
            assert r.returncode == 4, r.stdout + r.stderr
            assert "READ_PARTIAL" in r.stdout and "cpu_manager_state not readable by this user; run with --sudo" in r.stdout
            assert "GUARANTEED_NOT_PINNED" in r.stdout.split("checks not run: ", 1)[1]  # named as not run, only there
            assert "warning  GUARANTEED_NOT_PINNED" not in r.stdout
            r = run_cli("snapshot", "--json", "--sudo", "--root", str(root), *srv.args(), target)
            assert r.returncode == 0, r.stderr
            o = json.loads(r.stdout)
            msgs = [e["message"] for e in o["errors"]]
            assert any("sudo -n was refused" in m for m in msgs)
            assert not any("run with --sudo" in m for m in msgs)  # said once, and not the advice just followed
        finally:
            srv.kill()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_root_only_cgroup_tree_is_read_in_part_not_a_node_without_cpusets(user, tmp_path):
    """Issue 34 item 8 over SSH as an unprivileged user: /sys/fs/cgroup chmod 700 (root's) was read as "no cgroup
    v1 cpuset hierarchy is mounted", a critical CPUSET_NOT_ENABLED (exit 2) on a healthy node. It is a node
    read in part: READ_PARTIAL names the directory, CPUSET_NOT_ENABLED is among the checks not run, exit 4."""
    user, home = user
    ok, why = sshd_mod.available()
    need(ok, why)
    root = Path(shared_tmpdir("pinscope-node-"))
    try:
        SimNode(dual_socket_intel(), root).write()
        for d, _, files in os.walk(root):
            os.chmod(d, 0o755)
            for f in files:
                if not os.path.islink(os.path.join(d, f)):
                    os.chmod(os.path.join(d, f), 0o644)
        os.chmod(root / "sys/fs/cgroup", 0o700)
        srv = sshd_mod.Sshd(tmp_path / "s")
        ssh = home / ".ssh"
        ssh.mkdir(mode=0o700)
        (ssh / "authorized_keys").write_text((tmp_path / "s" / "user_ed25519.pub").read_text())
        for p in (ssh, ssh / "authorized_keys"):
            shutil.chown(p, user)
        srv.cfg.write_text(srv.cfg.read_text().replace(f"AuthorizedKeysFile {tmp_path / 's'}/authorized_keys",
                                                       "AuthorizedKeysFile .ssh/authorized_keys"))
        srv.start()
        target = f"{user}@127.0.0.1:{srv.port}"
        try:
            r = run_cli("check", "--root", str(root), *srv.args(), target)
            assert r.returncode == 4, r.stdout + r.stderr
            assert "READ_PARTIAL" in r.stdout and "/sys/fs/cgroup/ not readable by this user" in r.stdout, r.stdout
            assert ": 0 critical, 0 warning," in r.stdout, r.stdout
            assert "CPUSET_NOT_ENABLED" in r.stdout.split("checks not run: ", 1)[1].split("\n", 1)[0], r.stdout
            r = run_cli("snapshot", "--root", str(root), *srv.args(), target)
            assert r.returncode == 0 and "cgroup version unknown" in r.stdout.splitlines()[0], r.stdout + r.stderr
        finally:
            srv.kill()
    finally:
        shutil.rmtree(root, ignore_errors=True)
