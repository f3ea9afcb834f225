"""Issue 25: the wire format is versioned, and a client and a probe of different versions refuse each
other with one clear line naming both versions.

The real probe runs through LocalTransport on a simulated node; "another version" is the probe's own
constant text with its protocol number changed (what a probe of another pinscope release says), or this
client saying another number on the probe's command line.
"""
import asyncio

import pytest

from pinscope.collectors.errors import ProbeFailed
from pinscope.collectors.frames import PROTOCOL
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport import base
from pinscope.collectors.transport.local import LocalTransport
from nodes import SHAPES

OTHER = str(int(PROTOCOL) + 1)


def _probe_of_version(monkeypatch, version: str) -> None:
    text = base.probe_text()
    assert text.count(f"\nPROTO={PROTOCOL} ") == 1  # the probe's one statement of its version
    monkeypatch.setattr(base, "probe_text", lambda: text.replace(f"\nPROTO={PROTOCOL} ", f"\nPROTO={version} "))


async def _first_frame(root: str):
    tr = LocalTransport(root)
    await tr.connect(10)
    try:
        return await tr.request("sg", 15), tr.last_raw
    finally:
        await tr.close()


def test_the_same_version_is_accepted(tmp_path):
    SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()
    frame, _ = asyncio.run(_first_frame(str(tmp_path)))
    assert frame.info["probe-protocol"] == PROTOCOL and "/proc/stat" in frame.files


def test_a_probe_of_another_version_is_refused(tmp_path, monkeypatch):
    SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()
    _probe_of_version(monkeypatch, OTHER)
    with pytest.raises(ProbeFailed) as err:
        asyncio.run(_first_frame(str(tmp_path)))
    msg = str(err.value)
    assert "\n" not in msg and "version mismatch" in msg
    assert f"protocol {PROTOCOL}" in msg and f"speaks {OTHER}" in msg


async def test_the_probe_refuses_a_client_of_another_version_and_reads_nothing(tmp_path, monkeypatch):
    SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()
    monkeypatch.setattr(base, "PROTOCOL", OTHER)  # this client says another version on the command line
    tr = LocalTransport(str(tmp_path))

    with pytest.raises(ProbeFailed) as err:
        await tr.connect(10)
        try:
            await tr.request("sg", 15)
        finally:
            await tr.close()
    msg = str(err.value)
    assert "\n" not in msg and f"client speaks protocol {OTHER}, this probe speaks {PROTOCOL}" in msg
    assert b"\nF" not in tr.last_raw and b"\nX" not in tr.last_raw  # no file was read for it


def test_snapshot_says_the_mismatch_in_one_line(tmp_path, monkeypatch, capsys):
    from pinscope.cli import main

    SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()
    _probe_of_version(monkeypatch, OTHER)
    assert main(["snapshot", "--root", str(tmp_path), "local"]) == 1
    out, errtext = capsys.readouterr()
    assert out == ""
    lines = errtext.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pinscope: ") and "version mismatch" in lines[0]
    assert PROTOCOL in lines[0] and OTHER in lines[0] and "Traceback" not in errtext


async def test_a_request_to_a_probe_that_is_gone_is_a_probe_failure_not_a_crash(tmp_path):
    """The probe died (killed on the node, its session ended) between two frames: writing the next request
    raised ConnectionResetError / BrokenPipeError out of the transport, past `live`'s handler of
    PinscopeError, and ended the node's task with a traceback instead of a "down" state."""
    import os
    import signal

    SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()

    tr = LocalTransport(str(tmp_path))
    await tr.connect(10)
    try:
        await tr.request("sg", 15)
        assert tr.proc is not None
        os.killpg(tr.proc.pid, signal.SIGKILL)
        await tr.proc.wait()
        await asyncio.sleep(0.1)
        with pytest.raises(ProbeFailed) as err:
            for _ in range(3):  # the first write may still land in the pipe's buffer
                await tr.request("g", 15)
        msg = str(err.value)
    finally:
        await tr.close()

    assert "probe" in msg and ("closed" in msg or "ended" in msg), msg


def test_the_sudo_command_runs_the_probe_as_root_and_as_a_user(tmp_path):
    """`--sudo`'s command line (what sshd hands the login shell's -c, one argument) carries the probe once:
    Linux refuses an argument over 128 KiB (MAX_ARG_STRLEN), and three copies of the probe were 133 KB, so
    `--sudo` over SSH never started a probe (a CI run, test_ssh_unprivileged). Run here as root (its first
    branch) and as nobody (no usable sudo: said, then the probe as that user)."""
    import os
    import subprocess

    cmd = base.probe_command(str(tmp_path), sudo=True)
    assert cmd.count("PROTO=") == 1 and len(cmd.encode()) < 128 * 1024
    SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()
    os.chmod(tmp_path, 0o755)
    for d, _, files in os.walk(tmp_path):
        os.chmod(d, 0o755)
        for f in files:
            if not os.path.islink(os.path.join(d, f)):
                os.chmod(os.path.join(d, f), 0o644)
    argvs = [["sh", "-c", cmd]]
    if os.geteuid() == 0:
        argvs.append(["runuser", "-u", "nobody", "--", "sh", "-c", cmd])
    for argv in argvs:
        out = subprocess.run(argv, input=b"sg\nq\n", capture_output=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert b"\nZ1\n" in out.stdout and b"Iprobe-protocol " + PROTOCOL.encode() in out.stdout, out.stderr
        assert (b"Wsudo -n was refused" in out.stdout) == (argv[0] == "runuser"), out.stdout[:200]


def test_the_probes_header_names_the_protocol_it_speaks():
    """Issue 35: the header said protocol 3 while the probe spoke 4."""
    text = base.probe_text()
    header = text[:text.index("\nROOT_DIR=")]
    assert f"\nPROTO={PROTOCOL} " in text
    assert f'# Protocol {PROTOCOL} (' in header and f'"Iprobe-protocol {PROTOCOL}"' in header
    assert [n for n in "0123456789" if n != PROTOCOL and f"Protocol {n}" in header] == []
