"""Issue 25 (first grid): what the first grid does not need is imported when first shown, not at start:
the overview (psutil, the fleet map), the CPU, container, help and node-info screens, promql's
urllib.request, and tomllib when there is no keymap. A fresh interpreter (this one has imported
everything already) runs the real app on a simulated node through the real probe until the node's grid is painted, and reports what it imported;
then help is opened by its key and its screen is imported then."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

LAZY = ["psutil", "urllib.request", "tomllib", "pinscope.collectors.promql", "pinscope.tui.screens.fleet",
        "pinscope.tui.widgets.fleetmap", "pinscope.tui.screens.cpu", "pinscope.tui.screens.container",
        "pinscope.tui.screens.help", "pinscope.tui.screens.nodeinfo"]

SCRIPT = textwrap.dedent("""
    import asyncio, json, sys
    sys.path.insert(0, sys.argv[2])
    from nodes import SHAPES
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.collect import Options
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.tui.app import PinscopeApp
    from pinscope.tui.screens.node import NodeScreen

    SimNode(SHAPES["dual_socket_intel"](), sys.argv[1]).write()
    lazy = json.loads(sys.argv[3])

    async def go():
        app = PinscopeApp([NodeTarget("local")], Options(root=sys.argv[1]), 1.0)
        async with app.run_test(size=(160, 50)) as pilot:
            for _ in range(400):  # the test's timeout guards against a hang; this counts pauses, not time
                await pilot.pause(0.05)
                if app.views["local"].report is not None and isinstance(app.screen, NodeScreen):
                    break
            painted = app.views["local"].report is not None
            at_grid = [m for m in lazy if m in sys.modules]
            await pilot.press("question_mark")
            await pilot.pause()
            return {"painted": painted, "at_grid": at_grid, "help": "pinscope.tui.screens.help" in sys.modules,
                    "screen": type(app.screen).__name__}

    print(json.dumps(asyncio.run(go())))
""")


def test_the_first_grid_imports_none_of_the_other_screens(tmp_path):
    tests = Path(__file__).resolve().parents[1]
    # no keymap.toml (a keymap's ids are checked against every screen's bindings, which imports them all)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "node"), str(tests), json.dumps(LAZY)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["painted"], out
    assert out["at_grid"] == [], out
    assert out["help"] and out["screen"] == "HelpScreen", out
