"""Regenerate the screenshots in this folder: the app saves SVGs of itself, running the demo cluster
(simulated nodes read through the real probe). One per theme, plus the drill-downs and the findings.

Run: python3 screenshots/make.py
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from collectors.collect import Options  # noqa: E402
from collectors.sim.demo import DemoCluster  # noqa: E402
from tui.app import PinscopeApp  # noqa: E402

SIZE = (160, 48)


async def main() -> None:
    cluster = DemoCluster()
    targets = cluster.targets()
    app = PinscopeApp(targets, Options(), 0.5, "dark", cleanup=cluster.close, start=targets[0][0])
    async with app.run_test(size=SIZE) as pilot:
        v = app.views[app.targets[0]]
        for _ in range(200):
            await asyncio.sleep(0.1)
            if v.ticks >= 12:  # enough samples for the sparklines and the slow-cadence scans
                break

        def save(name):
            app.save_screenshot(filename=f"{name}.svg", path=str(HERE))
            print("saved", HERE / f"{name}.svg")

        for key in ("dark", "light", "warroom", "okabe-ito"):
            while app.theme_key != key:
                await pilot.press("t")
            await pilot.pause()
            save(f"theme-{key}")
        while app.theme_key != "dark":
            await pilot.press("t")
        await pilot.press("slash", *"matcher", "enter")
        await pilot.press("enter")
        await asyncio.sleep(1.2)
        save("drill-container")
        await pilot.press("escape", "c")
        await asyncio.sleep(0.6)
        save("drill-cpu")
        await pilot.press("escape", "n")
        await asyncio.sleep(0.3)
        save("drill-node")
        await pilot.press("escape", "escape", "f")
        await asyncio.sleep(0.3)
        save("findings")
        await pilot.press("escape", "right_square_bracket")
        await asyncio.sleep(1.5)
        save("node-epyc-4numa")
        await pilot.press("escape")
        await asyncio.sleep(0.8)
        save("fleet")
        await pilot.press("q")
    cluster.close()


if __name__ == "__main__":
    asyncio.run(main())
