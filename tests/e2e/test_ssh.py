"""Over a real OpenSSH sshd on 127.0.0.1: same truth as local, strict host keys, bounded failures,
a killed connection reported and recovered."""
import asyncio
import json
import socket
import time

import pytest

import sshd as sshd_mod
from pinscope.collectors.collect import NodeCollector, Options, live
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import need, run_cli


@pytest.fixture(scope="module")
def node_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("node")
    spec = NodeSpec(hostname="ssh-node", sockets=2, cores=4, reserved="0,8",
                    pods=[PodSpec("db", "prod", containers=[CtrSpec("pg", cpus="1-2,9-10")]),
                          PodSpec("web", qos="Burstable", containers=[CtrSpec("nginx")])])
    SimNode(spec, root).write()
    return str(root)


def test_ssh_snapshot_equals_local(server, node_root):
    loc = run_cli("snapshot", "--json", "--root", node_root, "local")
    rem = run_cli("snapshot", "--json", "--root", node_root, *server.args(), server.target)
    assert loc.returncode == 0 and rem.returncode == 0, rem.stderr
    a, b = json.loads(loc.stdout), json.loads(rem.stdout)
    # kubelet's socket: looked for inside the tree locally (there is none), not forwarded with --root over SSH
    live_a, live_b = a.pop("podresources"), b.pop("podresources")
    assert "no such socket" in live_a["note"] and "not forwarded with --root over SSH" in live_b["note"]
    assert a == b
    end = time.monotonic() + 30  # the probe exits when its channel closes: give sshd a moment (a hang guard)
    while server.probes() and time.monotonic() < end:
        time.sleep(0.05)
    assert server.probes() == [], "a probe outlived its connection"
    assert a["node"] == "ssh-node" and [c["role"] for c in a["cpus"]][:3] == ["reserved", "exclusive", "exclusive"]


def test_unknown_host_key_is_refused_naming_the_key(server, node_root, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    r = run_cli("snapshot", "--json", "-i", str(server.userkey), "--ssh-config", str(server.ssh_config),
                "--known-hosts", str(empty), server.target)
    assert r.returncode != 0
    fp = __import__("subprocess").run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(server.hostkey) + ".pub"],
                                      capture_output=True, text=True).stdout.split()[1]
    assert fp in r.stderr and "host key" in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1


def test_accept_new_host_key_records_it_then_refuses_a_changed_one(server, node_root, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    r = run_cli("snapshot", "--json", "--root", node_root, "-i", str(server.userkey), "--ssh-config",
                str(server.ssh_config), "--known-hosts", str(kh), "--accept-new-host-key", server.target)
    assert r.returncode == 0, r.stderr
    assert f"[127.0.0.1]:{server.port} ssh-ed25519 " in kh.read_text()
    # a different key for the same host: accept-new must NOT overwrite it
    other = tmp_path / "other"
    __import__("subprocess").run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kh.write_text(f"[127.0.0.1]:{server.port} {(tmp_path / 'other.pub').read_text()}")
    r = run_cli("snapshot", "--json", "-i", str(server.userkey), "--ssh-config", str(server.ssh_config),
                "--known-hosts", str(kh), "--accept-new-host-key", server.target)
    assert r.returncode != 0 and "does not match" in r.stderr


def test_dead_port_fails_at_once_and_silent_port_on_its_connect_timeout(server):
    """A refused port is one plain line, exit 1; a port that accepts and never speaks SSH is given up by the
    connect timeout, once: counted in connections the port saw, not timed (run_cli's deadline only guards
    against a hang)."""
    dead = sshd_mod.free_port()
    r = run_cli("snapshot", *server.args(), f"root@127.0.0.1:{dead}")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    # a port that accepts but never speaks SSH: the connect timeout bounds it
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)  # the kernel completes the handshakes; nobody answers
        r = run_cli("snapshot", "--connect-timeout", "2", *server.args(), f"root@127.0.0.1:{s.getsockname()[1]}")
        s.setblocking(False)
        tried = 0
        while True:
            try:
                s.accept()[0].close()
            except BlockingIOError:
                break
            tried += 1
    assert r.returncode == 1 and "no answer within 2 s" in r.stderr, r.stderr
    assert tried == 1  # one attempt, given up on its timeout, not retried


async def test_sshd_killed_mid_stream_is_reported_and_reconnected(tmp_path, node_root):
    ok, why = sshd_mod.available()
    need(ok, why)
    srv = sshd_mod.Sshd(tmp_path / "s").start()
    opts = Options(root=node_root, identity=str(srv.userkey), known_hosts=str(srv.known_hosts),
                   ssh_config=str(srv.ssh_config), connect_timeout=2)
    states, snaps = [], []

    try:
        async with asyncio.timeout(90):
            col = NodeCollector(srv.target, opts)
            stop = asyncio.Event()
            task = asyncio.create_task(live(col, 0.2, lambda n: "g", lambda r: snaps.append(r.snapshot),
                                            lambda st, msg: states.append((st, msg)), stop))
            async def until(cond, t=15):
                end = time.time() + t
                while not cond() and time.time() < end:
                    await asyncio.sleep(0.05)
                assert cond(), states
            await until(lambda: len(snaps) >= 2)
            await srv.akill()  # off the loop: the collector must keep running while sshd dies
            await until(lambda: any(s == "down" for s, _ in states))
            n = len(snaps)
            await srv.astart()
            await until(lambda: len(snaps) > n + 1 and states[-1][0] == "up", 30)
            stop.set()
            await asyncio.wait_for(task, 20)  # stop is seen within a tick: 20 s only guards a hang
    finally:
        srv.kill()
    down = [m for s, m in states if s == "down"]
    assert down and ("connection lost" in down[0] or "ended" in down[0])
    assert snaps[-1].node == "ssh-node"


@pytest.mark.parametrize("case", ["auth", "dns", "refused", "unknown-host-key", "changed-host-key", "silent"])
async def test_every_ssh_error_class_is_its_kind_and_one_plain_line(server, node_root, tmp_path, case):
    """Each way an SSH node can fail: the transport raises its kind (errors.py), the CLI prints one line
    naming the target and the reason, exit 1, no traceback."""
    from pinscope.collectors.errors import AuthFailed, HostKeyRejected, Unreachable
    from pinscope.collectors.transport.ssh import SSHTransport

    args = dict(identity=str(server.userkey), known_hosts=str(server.known_hosts), ssh_config=str(server.ssh_config),
                connect_timeout=3)
    target = server.target
    listener = None
    if case == "auth":  # a key the server does not know
        other = tmp_path / "stranger"
        __import__("subprocess").run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
        args["identity"] = str(other)
        kind, words = AuthFailed, "authentication failed"
    elif case == "dns":
        target, kind, words = "root@nosuchhost.invalid", Unreachable, "cannot resolve host"
    elif case == "refused":
        target, kind, words = f"root@127.0.0.1:{sshd_mod.free_port()}", Unreachable, "connection refused"
    elif case == "unknown-host-key":
        (tmp_path / "kh").write_text("")
        args["known_hosts"] = str(tmp_path / "kh")
        kind, words = HostKeyRejected, "is not in"
    elif case == "changed-host-key":
        other = tmp_path / "otherhost"
        __import__("subprocess").run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
        (tmp_path / "kh").write_text(f"[127.0.0.1]:{server.port} {(tmp_path / 'otherhost.pub').read_text()}")
        args["known_hosts"] = str(tmp_path / "kh")
        kind, words = HostKeyRejected, "does not match"
    else:  # accepts TCP, never speaks SSH
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(5)
        target = f"root@127.0.0.1:{listener.getsockname()[1]}"
        kind, words = Unreachable, "no answer within 3 s"
    try:
        with pytest.raises(kind, match=words):
            async with asyncio.timeout(30):
                t = SSHTransport(target, root=node_root, **args)
                try:
                    await t.connect()
                finally:
                    await t.close()
        r = run_cli("snapshot", "--connect-timeout", "3", "-i", args["identity"], "--known-hosts", args["known_hosts"],
                    "--ssh-config", args["ssh_config"], target)
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"pinscope: {target}: ") and words in r.stderr, r.stderr
    finally:
        if listener is not None:
            listener.close()


def test_a_fifo_and_a_1gb_line_over_ssh_are_refused_and_a_stuck_probe_ends_whole(server, tmp_path):
    """Issue 22 item 4 over a real sshd: the FIFO and the endless line are said, never opened, and the
    probe reads far less than that file; a probe whose awk is stuck in a read is ended whole on the node
    when the run's deadline passes (SSH does not forward signals: the probe's forwarder sees its stdin end
    and kills its process group)."""
    from probe_procs import StopAwk, fifo_and_endless_line, gone

    root = tmp_path / "node"
    fifo, big, link, _ = fifo_and_endless_line(root)
    r = run_cli("snapshot", "--json", "--root", str(root), *server.args(), server.target)
    assert r.returncode == 0, r.stderr
    errs = {(e["source"], e["message"]) for e in json.loads(r.stdout)["errors"]}
    assert (fifo, "is a fifo, not a regular file: not opened") in errs
    assert (big, "larger than 1048576 bytes: not read") in errs
    assert (link, "is a symlink, not a regular file: not opened") in errs
    assert gone(root) == []
    with StopAwk(root) as stop:
        r = run_cli("snapshot", "--timeout", "3", "--samples", "2", "--root", str(root), *server.args(),
                    server.target)
    assert stop.stopped and r.returncode == 1, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"pinscope: {server.target}: ") and "no answer within 3 s" in line, line
    assert gone(root) == [], "the probe outlived its connection"
