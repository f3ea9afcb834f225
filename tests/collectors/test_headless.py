"""collectors/ never imports the UI: checked in a fresh interpreter, through every module."""
import pkgutil
import subprocess
import sys
from pathlib import Path

import pinscope.collectors

ROOT = Path(__file__).resolve().parents[2]


def test_collectors_import_no_ui():
    mods = [m.name for m in pkgutil.walk_packages(pinscope.collectors.__path__, "pinscope.collectors.")]
    assert "pinscope.collectors.transport.ssh" in mods and "pinscope.collectors.assemble" in mods
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'tui', 'themes')\n"
            "             or m.split('.')[:2] in (['pinscope', 'tui'], ['pinscope', 'themes']))\n"
            "print(','.join(bad))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""
