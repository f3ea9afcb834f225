"""kubelet's PodResources API over a real OpenSSH sshd (issue 36 item 2): the socket forwarded through an SSH
stream forwarding (a direct-streamlocal channel) to a socket of ours in a 0700 directory, removed on close, and
asked with gRPC; our stand-in of kubelet (tests/podresources_server.py) serves on the "node". As root it
answers; another user is told why not (kubelet's socket is root's), and is asked all the same where the socket
is that user's to open; an sshd that forwards no unix socket, and --root over SSH, are said, never raised."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from podresources_server import StandIn

import sshd as sshd_mod
from helpers import need, run_cli, shared_tmpdir
from pinscope.collectors import podresources as pr
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.ssh import SSHTransport
from nodes import dual_socket_intel

PODS = (pr.LivePod("trading", "md-feed-0", (pr.LiveContainer("feed", frozenset({1, 2, 25, 26})),)),)


def transport(srv, target: str | None = None, **kw) -> SSHTransport:
    return SSHTransport(target or srv.target, identity=str(srv.userkey), known_hosts=str(srv.known_hosts),
                        ssh_config=str(srv.ssh_config), **kw)


async def ask(tr: SSHTransport, *paths: str) -> list[pr.LiveView]:
    await tr.connect(10)
    try:
        return [await tr.podresources(p, 10) for p in paths]
    finally:
        await tr.close()


async def test_as_root_the_socket_is_forwarded_and_asked(server):
    with StandIn(PODS, {3, 4}).start() as kubelet:
        tr = transport(server)
        seen: list = []

        await tr.connect(10)
        try:
            first = await tr.podresources(kubelet.path, 10)
            assert tr.forward is not None and tr.forward.dir is not None
            st = os.stat(tr.forward.dir)
            seen.append((tr.forward.dir, st.st_mode & 0o777, st.st_uid))
            again = await tr.podresources(kubelet.path, 10)
        finally:
            await tr.close()

    assert first.error is None and first.pods == PODS and first.allocatable_cpus == {3, 4}
    assert first.socket == kubelet.path and again.pods == PODS
    assert kubelet.calls == {"List": 2, "GetAllocatableResources": 2}
    (d, mode, uid), = seen
    assert mode == 0o700 and uid == os.geteuid()  # a directory only this user may enter
    assert not os.path.exists(d)  # removed with the connection


async def test_no_private_directory_for_the_forward_is_said(server, tmp_path, monkeypatch):
    """A full or unwritable TMPDIR on pinscope's side: said in the live view, not a failed tick (the node shown
    down, reconnected every cgroup tick)."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "absent"))
    with StandIn(PODS, {3, 4}).start() as kubelet:
        (view,) = await ask(transport(server), kubelet.path)
    assert view.pods == () and "not forwarded (no private directory for its local end" in view.error
    assert view.why == "not forwarded over SSH"  # the fit pane's one line says it so


def test_no_socket_there_is_said(server, tmp_path):
    (view,) = asyncio.run(ask(transport(server), str(tmp_path / "kubelet.sock")))
    assert view.pods == () and view.error.startswith(f"{tmp_path}/kubelet.sock: sshd could not open it for root")
    assert "no such socket on the node" in view.error and view.why == "no socket"


def test_an_sshd_that_forwards_no_unix_socket_is_said(tmp_path):
    ok, why = sshd_mod.available()
    need(ok, why)
    srv = sshd_mod.Sshd(tmp_path / "s")
    srv.cfg.write_text(srv.cfg.read_text() + "AllowStreamLocalForwarding no\n")
    srv.start()
    try:
        with StandIn(PODS).start() as kubelet:
            (view,) = asyncio.run(ask(transport(srv), kubelet.path))
            assert kubelet.calls == {}
    finally:
        srv.kill()
    assert view.error and "sshd could not open it for root" in view.error, view.error


def test_root_over_ssh_with_root_prefix_is_not_forwarded(server, tmp_path):
    """--root over SSH: sshd would follow the tree's links on the node, so the socket is not asked; the report
    says it as a note."""
    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    (root / "var/lib/kubelet/pod-resources").mkdir(parents=True, exist_ok=True)
    with StandIn(PODS).start(str(root / "var/lib/kubelet/pod-resources/kubelet.sock")) as kubelet:
        r = run_cli("snapshot", "--json", "--root", str(root), *server.args(), server.target)
        assert kubelet.calls == {}
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout)["podresources"]
    assert o["asked"] is False and "not forwarded with --root over SSH" in o["note"]


@pytest.fixture
def user(tmp_path):
    """An SSH user who is not root, with the test sshd's key."""
    need(os.geteuid() == 0 and shutil.which("useradd") is not None, "needs root and useradd")
    ok, why = sshd_mod.available()
    need(ok, why)
    name = f"pst{uuid.uuid4().hex[:8]}"
    home = Path(shared_tmpdir("pinscope-home-"))
    subprocess.run(["useradd", "-M", "-d", str(home), "-s", "/bin/sh", name], check=True, capture_output=True)
    subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)  # no password, not locked
    srv = sshd_mod.Sshd(tmp_path / "s")
    ssh = home / ".ssh"
    ssh.mkdir(parents=True, mode=0o700)
    (ssh / "authorized_keys").write_text((tmp_path / "s" / "user_ed25519.pub").read_text())
    for p in (home, ssh, ssh / "authorized_keys"):
        shutil.chown(p, name)
    srv.cfg.write_text(srv.cfg.read_text().replace(f"AuthorizedKeysFile {tmp_path / 's'}/authorized_keys",
                                                   "AuthorizedKeysFile .ssh/authorized_keys"))
    srv.start()
    try:
        yield name, srv
    finally:
        srv.kill()
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_another_user_is_told_why_not_unless_the_socket_is_theirs(user):
    name, srv = user
    d = shared_tmpdir("pinscope-kubelet-")  # a directory every user may walk through
    try:
        with StandIn(PODS).start(os.path.join(d, "kubelet.sock")) as kubelet:
            os.chmod(kubelet.path, 0o600)  # root's, as kubelet makes it
            (refused,) = asyncio.run(ask(transport(srv, f"{name}@127.0.0.1:{srv.port}"), kubelet.path))
            assert kubelet.calls == {}
            os.chmod(kubelet.path, 0o666)  # a socket this user may open: asked all the same
            (asked,) = asyncio.run(ask(transport(srv, f"{name}@127.0.0.1:{srv.port}"), kubelet.path))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert refused.pods == () and f"sshd could not open it for {name}" in refused.error
    assert "kubelet's socket is root's: connect as root, sudo cannot forward it" in refused.error
    assert refused.why == "not root"
    assert asked.error is None and asked.pods == PODS


async def test_root_over_ssh_says_why_in_plain_words(server, tmp_path):
    """The fit pane's one line says why kubelet was not asked (LiveView.why): --root over SSH, not forwarded."""
    with StandIn(PODS).start() as kubelet:
        (view,) = await ask(transport(server, root=str(tmp_path)), kubelet.path)
        assert kubelet.calls == {}
    assert view.why == "not forwarded over SSH" and "not forwarded with --root over SSH" in view.error
