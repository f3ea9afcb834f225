"""Bad input on the command line (issue 15): each is refused before anything connects, with one plain line
and exit 2; --help lists the commands; --version; a closed pipe ends quietly."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli

REPO = Path(__file__).resolve().parent.parent


def last_line(r) -> str:
    return r.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("args, message", [
    (["snapshto", "local"], "pinscope: 'snapshto' is not a command or a target; did you mean the command 'snapshot'? "
                            "(a host of that name: write user@snapshto or snapshto:22)"),
    (["check", "loacl"], "pinscope: 'loacl' is not a command or a target; did you mean the target 'local'? "
                         "(a host of that name: write user@loacl or loacl:22)"),
    (["check", "root@h:99999"], "pinscope: 'root@h:99999': the port must be a number from 1 to 65535"),
    (["check", "bad..host"], "pinscope: 'bad..host': a host name's parts between dots are 1 to 63 characters"),
    (["check", "a" * 64 + ".example"], f"pinscope: '{'a' * 64}.example': a host name's parts between dots are 1 to "
                                       "63 characters"),
    (["check", "h;reboot"], "pinscope: 'h;reboot': a host name is letters, digits, '.', '-' and '_' "
                            "('local', [user@]host[:port] or node/NAME)"),
    (["snapshot", "node/Worker_1"], "pinscope: 'Worker_1' is not a node name: a Kubernetes node name is lowercase "
                                    "letters, digits, '-' and '.'"),
    (["check", "--interval", "0", "local"], "pinscope check: error: argument --interval: must be greater than 0 (got 0)"),
    (["check", "--interval", "-1", "local"], "pinscope check: error: argument --interval: must be greater than 0 (got -1)"),
    (["check", "--samples", "0", "local"], "pinscope check: error: argument --samples: must be greater than 0 (got 0)"),
    (["check", "--connect-timeout", "-5", "local"],
     "pinscope check: error: argument --connect-timeout: must be greater than 0 (got -5)"),
    (["snapshot", "--interval", "abc", "local"], "pinscope snapshot: error: argument --interval: 'abc' is not a number"),
    (["check", "--samples", "two", "local"], "pinscope check: error: argument --samples: 'two' is not a number"),
    # a count given as a fraction is not "not a number" (the user trial of `fit --cpus 2.5`)
    (["check", "--samples", "2.5", "local"], "pinscope check: error: argument --samples: '2.5' is not a whole number"),
    (["fit", "local", "--cpus", "2.5"], "pinscope fit: error: argument --cpus: '2.5' is not a whole number"),
    (["check", "--bogus", "local"], "pinscope check: error: unrecognized arguments: --bogus"),
    (["serve", "--port", "99999"], "pinscope serve: error: argument --port: a port is a number from 1 to 65535 (got 99999)"),
    (["demo", "--theme", "bogus"], "pinscope: no theme 'bogus'; the themes are dark, light, okabe-ito, warroom"),
    (["demo"], "pinscope: the live view needs a terminal (stdin and stdout are not both one); for text use "
               "'pinscope snapshot' or 'pinscope check', or 'pinscope serve' for a browser"),
    # the shared sampling options work on the demo too (issue 24: `demo --interval 0.5` was "unrecognized"):
    # parsed, so the next refusal is the missing terminal; a bad value is refused as on every command
    *[(args, "pinscope: the live view needs a terminal (stdin and stdout are not both one); for text use "
             "'pinscope snapshot' or 'pinscope check', or 'pinscope serve' for a browser")
      for args in (["demo", "--interval", "0.5"], ["--interval", "0.5", "demo"],
                   ["demo", "--runq-wait-ms", "5", "--noise-pct", "20"], ["demo", "--record", "demo.rec"])],
    (["demo", "--interval", "0"], "pinscope demo: error: argument --interval: must be greater than 0 (got 0)"),
    (["local"], "pinscope: the live view needs a terminal (stdin and stdout are not both one); for text use "
                "'pinscope snapshot' or 'pinscope check', or 'pinscope serve' for a browser"),
])
def test_refused_before_connecting(args, message, tmp_path):
    log = tmp_path / "reached"
    r = run_watched(log, *args)
    assert (r.returncode, last_line(r)) == (2, message), r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr  # one plain line, not argparse's usage first
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert log.read_text() == "", log.read_text()  # no connection, no name lookup, no process was tried


# what trying a node takes: a name lookup or a connection (SSH, the API), or a process (the local probe)
REACHING = ("socket.getaddrinfo", "socket.connect", "subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork")


def run_watched(log: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI, as run_cli runs it, under an audit hook (PEP 578) that writes to `log` every event that
    reaches out: whether anything was tried is read from what the interpreter did, not from how long it took."""
    log.write_text("")
    code = ("import runpy, sys\n"
            f"def hook(event, args, watch={REACHING!r}):\n"
            "    if event in watch:\n"
            f"        with open({str(log)!r}, 'a') as f: f.write(event + ' ' + repr(args)[:200] + '\\n')\n"
            "sys.addaudithook(hook)\n"
            "sys.argv[0] = 'pinscope'\n"
            "runpy.run_module('pinscope.cli', run_name='__main__', alter_sys=True)\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60,
                          cwd=REPO)


def test_help_lists_the_commands_and_version():
    r = run_cli("--help")
    assert r.returncode == 0
    for cmd in ("snapshot TARGET", "check TARGET", "demo", "replay FILE", "serve -- ARGS", "exporter", "gc"):
        assert cmd in r.stdout
    assert "4 read only in part" in r.stdout and "3 a target could not be read" in r.stdout
    v = run_cli("--version")
    assert v.returncode == 0 and v.stdout.startswith("pinscope ") and v.stdout.split()[1][0].isdigit()
    assert run_cli("check", "--version").stdout == v.stdout


def test_inventory_names_are_targets(tmp_path):
    inv = tmp_path / "inv.yaml"
    inv.write_text("nodes:\n  - name: snapshto\n    host: local\n    root: /nonexistent-root\n")
    r = run_cli("check", "--inventory", str(inv), "snapshto", timeout=30)
    assert "is not a command or a target" not in r.stderr


def test_a_closed_pipe_ends_quietly(tmp_path):
    from pinscope.collectors.sim.node import SimNode
    from nodes import dual_socket_intel

    SimNode(dual_socket_intel(), tmp_path).write()
    # without PYTHONUNBUFFERED (as on a fresh machine) the output waited in Python's buffer and the pipe's
    # end was found at exit: "Exception ignored ... BrokenPipeError" and status 120 (a loaded CI series)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "snapshot", "--root", str(tmp_path), "local"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, env=env)
    p.stdout.close()  # `| head -0`: gone before the first line (a short output would fit the pipe's buffer)
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 141 and err == ""


def test_an_inventory_host_the_resolver_refuses_is_that_node_down_not_the_run(tmp_path):
    """bad..host in an inventory (not checked as a command-line word) made the resolver's idna codec raise
    UnicodeError: 'internal error' and no output for the nodes that were read; the TUI kept it 'waiting'."""
    from pinscope.collectors.sim.node import SimNode
    from nodes import dual_socket_intel

    SimNode(dual_socket_intel(), tmp_path / "n").write()
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"nodes:\n  - {{name: good, host: local, root: {tmp_path / 'n'}}}\n  - {{name: weird, host: bad..host}}\n")
    r = run_cli("check", "--connect-timeout", "2", "--inventory", str(inv), timeout=60)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "good:" in r.stdout
    assert "bad..host: cannot resolve host (not a valid host name)" in r.stderr


def test_inventory_names_are_used_everywhere(tmp_path):
    """An inventory's node is named by the inventory in the text, the JSON and the error lines (the JSON said
    the read node's hostname, the error line its address, the error object the inventory's name)."""
    import json

    from pinscope.collectors.sim.node import SimNode
    from nodes import dual_socket_intel

    SimNode(dual_socket_intel(), tmp_path / "n").write()
    inv = tmp_path / "inv.yaml"
    inv.write_text(f"nodes:\n  - {{name: good, host: local, root: {tmp_path / 'n'}}}\n"
                   "  - {name: down, host: '127.0.0.1:1'}\n")
    r = run_cli("snapshot", "--json", "--connect-timeout", "2", "--inventory", str(inv), timeout=60)
    objs = json.loads(r.stdout)
    assert [o["node"] for o in objs] == ["good", "down"], r.stdout[:300]
    assert objs[1]["error"] and last_line(r).startswith("pinscope: down: "), r.stderr
    r = run_cli("check", "--connect-timeout", "2", "--inventory", str(inv), timeout=60)
    assert r.stdout.startswith("good:") and "xeon-2s" not in r.stdout, r.stdout[:300]
    assert last_line(r).startswith("pinscope: down: "), r.stderr


def test_options_before_the_command_word(tmp_path):
    """docs/node-layouts.md's `pinscope --root /host local` (or snapshot/check), written as users write it with the
    command after the shared options, was refused: "'check' is not a command or a target; did you mean the
    command 'check'?"."""
    from pinscope.collectors.sim.node import SimNode
    from nodes import dual_socket_intel

    SimNode(dual_socket_intel(), tmp_path).write()
    r = run_cli("--root", str(tmp_path), "check", "local", timeout=60)
    assert r.returncode == 0 and "xeon-2s: 0 critical" in r.stdout, r.stderr
    r = run_cli("--root", str(tmp_path), "--interval", "0.2", "snapshot", "--json", "local", timeout=60)
    assert r.returncode == 0 and '"node": "xeon-2s"' in r.stdout, r.stderr
    r = run_cli("local", "check", timeout=30)  # after a target it is no command: refused, and said why
    assert (r.returncode, last_line(r)) == (2, "pinscope: 'check' is a command: it comes before the targets "
                                               "(pinscope check [OPTIONS] TARGET...); a host of that name: "
                                               "write user@check or check:22")


def test_snapshot_text_lists_offline_cpus_and_an_unknown_policy(tmp_path):
    """Offline CPUs belong to no NUMA node in sysfs: the text table grouped by NUMA node dropped them (the
    JSON had them); a policy that could not be read printed as 'policy None'."""
    from pinscope.collectors.sim.node import SimNode
    from nodes import broken, offline_isolated

    SimNode(offline_isolated(), tmp_path / "a").write()
    r = run_cli("snapshot", "--root", str(tmp_path / "a"), "local", timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "  no NUMA node (offline):" in lines
    assert [ln.split()[:3] for ln in lines if ln.strip().startswith(("cpu6 ", "cpu7 "))] == [
        ["cpu6", "x", "offline"], ["cpu7", "x", "offline"]]
    assert "None" not in r.stdout
    SimNode(broken(), tmp_path / "b").write()
    r = run_cli("snapshot", "--root", str(tmp_path / "b"), "local", timeout=60)
    assert "  policy unknown  " in r.stdout.splitlines()[0] and "None" not in r.stdout


def test_check_that_reads_nothing_exits_3_not_the_warnings_code(tmp_path):
    """`check` exits 1 for "warnings found"; an inventory it cannot open (or a kubeconfig it cannot use)
    reads no target: 3, as docs/use.md says, not 1 (a script would take it for warnings)."""
    r = run_cli("check", "--inventory", str(tmp_path / "missing.yaml"), timeout=30)
    assert (r.returncode, last_line(r)) == (3, f"pinscope: --inventory {tmp_path / 'missing.yaml'}: No such file or directory")
    r = run_cli("snapshot", "--inventory", str(tmp_path / "missing.yaml"), timeout=30)
    assert r.returncode == 1  # snapshot: 1 when it could not read (unchanged)


def test_check_exit_with_one_node_of_several_unreachable(tmp_path):
    """One node down among several exited 4 ('read only in part', meant for files this user may not read),
    and warnings beside a down node exited 1: a down node is 3, unless a critical was found (2)."""
    from pinscope.collectors.sim.node import SimNode
    from nodes import broken, dual_socket_intel

    SimNode(dual_socket_intel(), tmp_path / "n").write()
    SimNode(broken(), tmp_path / "b").write()
    assert run_cli("check", "--root", str(tmp_path / "n"), "local", timeout=60).returncode == 0
    assert run_cli("check", "--root", str(tmp_path / "b"), "local", timeout=60).returncode == 2
    for tree, want in (("n", 3), ("b", 2)):
        inv = tmp_path / f"inv-{tree}.yaml"
        inv.write_text(f"nodes:\n  - {{name: good, host: local, root: {tmp_path / tree}}}\n"
                       "  - {name: down, host: '127.0.0.1:1'}\n")
        r = run_cli("check", "--connect-timeout", "2", "--inventory", str(inv), timeout=60)
        assert r.returncode == want and last_line(r).startswith("pinscope: down: "), (tree, r.returncode, r.stderr)
        assert r.stdout.startswith("good:")


def test_the_watch_sees_a_node_tried(tmp_path):
    """The control for the test above: the same watch on a command that does try a node logs it."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening: the connection is refused at once
        port = s.getsockname()[1]
        log = tmp_path / "reached"
        r = run_watched(log, "snapshot", f"root@127.0.0.1:{port}")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "socket.connect" in log.read_text(), log.read_text()


def test_a_tree_without_proc_and_sys_is_not_read_and_says_why(tmp_path):
    """Issue 22 item 6: a --root that holds no /proc and no /sys (a wrong prefix, a lost mount) gave zero
    CPUs, policy "none", a CPUSET_NOT_ENABLED warning and exit 1. Nothing of the node was read: `check`
    exits 3 and `snapshot` 1, each with one line that says why."""
    (tmp_path / "empty").mkdir()
    why = (f"pinscope: local: nothing of the node could be read (no CPU): /sys/devices/system/cpu/online: missing, "
           "and no /sys/devices/system/cpu/cpuN: the CPU topology is unknown (no finding about CPUs is made from it); "
           f"probe: no {tmp_path / 'empty'}/proc or {tmp_path / 'empty'}/sys here: is --root right?")
    r = run_cli("check", "--root", str(tmp_path / "empty"), "local", timeout=60)
    assert r.returncode == 3 and last_line(r).startswith(why) and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    r = run_cli("snapshot", "--json", "--root", str(tmp_path / "empty"), "local", timeout=60)
    assert r.returncode == 1 and last_line(r).startswith(why)


def test_a_slow_connect_is_said_when_its_state_changes_and_every_ten_seconds_escaped(capsys, monkeypatch):
    """`snapshot`/`check` on a terminal: what a slow connect waits for, nothing in the first 2 s (a pod that
    starts at once), then a line when the pod's state changes (not its seconds), again every 10 s while it
    holds; the API's words escaped (they are remote data)."""
    from pinscope import cli

    now = [100.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: now[0])
    w = cli._Waiting("node/n1")
    for t, what in ((0, "debug pod ns/p created, waiting for it to run"),
                    (0.5, "debug pod ns/p not running yet (Pending), 0 s of at most 120 s"),
                    (2.5, "debug pod ns/p not running yet (Pending), 2 s of at most 120 s"),
                    (5, "debug pod ns/p not running yet (Pending), 5 s of at most 120 s"),
                    (12.6, "debug pod ns/p not running yet (Pending), 12 s of at most 120 s"),
                    (13, "debug pod ns/p not running yet (ErrImagePull: \x1b]0;owned\x07), 13 s of at most 120 s")):
        now[0] = 100.0 + t
        w(what)
    lines = capsys.readouterr().err.splitlines()
    assert [ln.rsplit("(", 1)[-1] for ln in lines] == [
        "Pending), 2 s of at most 120 s", "Pending), 12 s of at most 120 s",
        "ErrImagePull: \\033]0;owned\\a), 13 s of at most 120 s"], lines
    assert "\x1b" not in "".join(lines)


def test_a_terminal_gone_while_a_connect_waits_ends_the_saying_not_the_run(monkeypatch):
    """The terminal closed while a debug pod was Pending (a run under setsid, or with stdout redirected):
    writing the next wait line failed with EIO and the run ended with no report (exit 1: "warnings" for
    check). The saying stops; the run goes on."""
    from pinscope import cli

    now = [100.0]
    monkeypatch.setattr(cli.time, "monotonic", lambda: now[0])

    def gone(msg):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(cli, "_err", gone)
    w = cli._Waiting("node/n1")
    for t in (0, 3, 20, 40):
        now[0] = 100.0 + t
        w(f"debug pod ns/p not running yet (Pending), {t} s of at most 30 s")
    assert w.gone


def test_a_closed_stderr_still_gives_the_report(tmp_path):
    """`2>&-`: Python's sys.stderr is None. Asking whether it was a terminal raised AttributeError, said as
    "internal error" on stdout (into --json's output), exit 3."""
    from nodes import dual_socket_intel
    from pinscope.collectors.sim.node import SimNode

    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    r = subprocess.run(["sh", "-c", f'exec "$0" -m pinscope.cli snapshot --root {root} local --json 2>&-',
                        sys.executable], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stdout[-2000:]
    assert json.loads(r.stdout)["cpus"], r.stdout[-2000:]
