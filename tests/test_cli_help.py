"""Help that helps (issue 34, item 15): `pinscope --help` first says what pinscope is, in one line, then the
commands; `check --help` says what it checks and its exit codes; `--theme` names the themes; the exporter's
--interval default is the one it runs with; snapshot and check say that no TARGET reads 'local'. The real
command in a subprocess."""
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import run_cli

REPO = Path(__file__).resolve().parent.parent


def test_pinscope_help_says_what_it_is_then_the_commands():
    out = run_cli("--help").stdout
    lines = out.splitlines()
    assert lines[0].startswith("pinscope") and "CPU" in lines[0] and "Kubernetes" in lines[0], lines[0]
    assert len(lines[0]) <= 100 and lines[1] == "", lines[:2]
    commands = out.index("commands:")
    assert commands < out.index("usage:") and commands < out.index("options:"), out[:600]
    for cmd in ("snapshot TARGET", "check TARGET", "demo", "replay FILE", "serve -- ARGS", "exporter", "gc"):
        assert re.search(rf"^  {re.escape(cmd)}", out[commands:], re.M), cmd


def test_check_help_says_what_it_checks_and_its_exit_codes():
    from pinscope.collectors.findings import CODES

    r = run_cli("check", "--help")
    out = r.stdout
    assert r.returncode == 0
    head = out[:out.index("options:")]
    assert "kubelet" in head and "cgroup" in head, head  # what it compares
    for code in CODES:  # every check, by its code
        assert code in out, code
    codes = out[out.index("exit status"):]
    for n, words in ((0, "no warning"), (1, "warning"), (2, "critical"), (3, "could not be read"),
                     (4, "read only in part")):
        assert re.search(rf"^\s+{n}\s+.*{words}", codes, re.M), (n, codes)


@pytest.mark.parametrize("cmd", ["", "demo", "replay"])
def test_theme_lists_its_choices(cmd):
    out = run_cli(*([cmd] if cmd else []), "--help").stdout
    text = " ".join(out.split())
    m = re.search(r"--theme THEME (.*?)(?= --|$)", text)
    assert m and all(t in m.group(1) for t in ("dark", "light", "warroom", "okabe-ito")), m and m.group(1)


def test_themes_named_in_help_are_the_themes():
    from pinscope.themes import THEME_KEYS
    from pinscope.themes.themes import ORDER, THEMES

    assert list(THEME_KEYS) == ORDER and set(ORDER) == set(THEMES)


@pytest.mark.parametrize("cmd", ["snapshot", "check"])
def test_no_target_reads_local_and_the_help_says_so(cmd):
    out = " ".join(run_cli(cmd, "--help").stdout.split())
    assert re.search(r"TARGET .*none: 'local', this machine", out), out[:1200]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_exporter_interval_default_is_what_it_runs_with():
    out = " ".join(run_cli("exporter", "--help").stdout.split())
    m = re.search(r"--interval INTERVAL seconds between samples \(default (\d+(?:\.\d+)?)\)", out)
    assert m, out[:1500]
    p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "exporter", "--listen", f"127.0.0.1:{_free_port()}",
                          "demo"], cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        said = ""
        deadline = time.monotonic() + 60
        while "reading every" not in said and time.monotonic() < deadline:
            line = p.stderr.readline()
            if not line:
                break
            said += line
        ran = re.search(r"reading every ([\d.]+) s", said)
        assert ran, said
        assert float(ran.group(1)) == float(m.group(1)), (ran.group(0), m.group(0))
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _fit_error_kinds() -> set[str]:
    """Every error.kind `fit --json` can give: kubelet's (the port raises them by name; its "alloc" is said as
    UnexpectedAdmissionError, a loop that never ends as Hang) and NotRead, a node not read at all."""
    src = "".join(p.read_text() for p in sorted((REPO / "collectors" / "fit").glob("*.py")))
    kinds = set(re.findall(r'KubeletError\(\s*"(\w+)"', src)) - {"alloc"}
    assert {"SMTAlignmentError", "TopologyAffinityError", "PolicyError"} <= kinds, kinds
    return kinds | {"UnexpectedAdmissionError", "Hang", "NotRead"}


def test_fit_help_and_doc_say_every_exit_status_and_error_kind():
    """A script must tell "rejected" (1) from "not read" (3) by the exit status or error.kind: fit --help and
    docs/fit.md say the statuses (2: bad usage too), the not-read object's shape and every kind."""
    r = run_cli("fit", "--help")
    assert r.returncode == 0
    out = r.stdout
    codes = out[out.index("exit status"):]
    for n, words in ((0, "fits"), (1, "reject"), (2, "command line"), (3, "not")):
        assert re.search(rf"^\s+{n}\s+.*{words}", codes, re.M), (n, codes)
    doc = (REPO / "docs" / "fit.md").read_text()
    flat = " ".join(out.split())
    for kind in _fit_error_kinds():
        assert kind in flat, ("fit --help", kind)
        assert kind in doc, ("docs/fit.md", kind)
    for text in (flat, " ".join(doc.split())):
        assert '{"node": NAME, "error": {"kind": "NotRead", "message": WHY}, "cpus": null}' in text


def test_fit_not_read_and_bad_usage_are_as_said(tmp_path):
    """What the help says, the command does: a node not read is exit 3 with the NotRead object; bad usage is 2."""
    import json

    r = run_cli("fit", "local", "--root", str(tmp_path / "gone"), "--cpus", "2", "--json")
    assert r.returncode == 3, r.stderr
    o = json.loads(r.stdout)
    assert set(o) == {"node", "error", "cpus"} and o["cpus"] is None and o["error"]["kind"] == "NotRead"
    assert o["node"] == "local" and o["error"]["message"] in r.stderr
    for bad in (["fit", "local"], ["fit", "local", "--cpus", "0"], ["fit", "local", "--cpus", "2", "--bogus"]):
        r = run_cli(*bad)
        assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, (bad, r.stderr)
