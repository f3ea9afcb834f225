"""The headless commands never import Textual (issue 35 item 2): the command line is pinscope.cli, beside
the app (pinscope.tui), and `snapshot`, `check`, `exporter` and `gc` run in a process where Textual cannot
be imported at all. The exporter's image and a cron job's `pinscope check` do not walk through the UI."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodes import dual_socket_intel

REPO = Path(__file__).resolve().parent.parent
# a meta path finder, first, that refuses textual and every textual.* (a test, not a mock: the real command
# runs, only the import fails, loudly, on stderr, so a caught ImportError cannot hide it)
RUN = """
import runpy, sys

class NoTextual:
    def find_spec(self, name, path=None, target=None):
        if name == "textual" or name.startswith("textual."):
            sys.stderr.write(f"TEXTUAL IMPORTED: {name}\\n")
            raise ImportError(f"textual is not importable here: {name}")
        return None

sys.meta_path.insert(0, NoTextual())
sys.argv = ["pinscope", *sys.argv[1:]]
runpy.run_module("pinscope.cli", run_name="__main__", alter_sys=True)
"""


def headless(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, timeout=90,
                          cwd="/")


def test_the_blocker_blocks():
    r = subprocess.run([sys.executable, "-c", RUN.replace("runpy.run_module", "import textual.app  #"), "x"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode != 0 and "TEXTUAL IMPORTED: textual" in r.stderr


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    from pinscope.collectors.sim.node import SimNode

    root = tmp_path_factory.mktemp("node")
    SimNode(dual_socket_intel(), root).write()
    return root


def test_snapshot_json_without_textual(tree):
    r = headless("snapshot", "--json", "--root", str(tree), "local")
    assert "TEXTUAL IMPORTED" not in r.stderr and r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["cpus"] and "findings" in doc, sorted(doc)


def test_check_without_textual(tree):
    r = headless("check", "--root", str(tree), "local")
    assert "TEXTUAL IMPORTED" not in r.stderr and r.returncode in (0, 1, 2), r.stderr
    assert " critical, " in r.stdout, r.stdout


@pytest.mark.parametrize("command", ["exporter", "gc"])
def test_help_without_textual(command):
    r = headless(command, "--help")
    assert "TEXTUAL IMPORTED" not in r.stderr and r.returncode == 0, r.stderr
    assert f"usage: pinscope {command}" in r.stdout
