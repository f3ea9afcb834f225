"""Regenerate the screenshots in this folder: the app saves SVGs of itself, running the demo cluster
(simulated nodes read through the real probe). One per theme, the grid's noise shade, plus the drill-downs
and the findings;
a laptop's 80x24, the war-room screen (200x60), a wall (320x90) and a 512-CPU EPYC node; and `pinscope serve -- demo` photographed in
headless Chromium (serve-chromium.png; skipped when chromium is not installed); `--prometheus` over a real
Prometheus holding 5,000 simulated nodes (prom-fleet.svg; skipped without prometheus).

Run: python3 screenshots/make.py [NAME ...]     (names without .svg/.png: only those are rewritten)
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # the 512-CPU node's shape, the DevTools client

from pinscope.collectors.collect import Options  # noqa: E402
from pinscope.collectors.sim.demo import DemoCluster  # noqa: E402
from pinscope.tui.app import PinscopeApp  # noqa: E402

SIZE = (160, 48)
ONLY = set(sys.argv[1:])


def wanted(name: str) -> bool:
    return not ONLY or name in ONLY


async def main() -> None:
    cluster = DemoCluster()
    targets = cluster.targets()
    app = PinscopeApp(targets, Options(), 0.5, "dark", cleanup=cluster.close, start=targets[0].name)
    async with app.run_test(size=SIZE) as pilot:
        v = app.views[app.targets[0]]
        for _ in range(200):
            await asyncio.sleep(0.1)
            if v.ticks >= 12:  # enough samples for the sparklines and the slow-cadence scans
                break

        def save(name):
            if wanted(name):
                app.save_screenshot(filename=f"{name}.svg", path=str(HERE))
                print("saved", HERE / f"{name}.svg")

        for key in ("dark", "light", "warroom", "okabe-ito"):
            while app.theme_key != key:
                await pilot.press("t")
            await pilot.pause()
            save(f"theme-{key}")
        while app.theme_key != "dark":
            await pilot.press("t")
        await pilot.press("v")  # the grid's shade: kernel noise (CPU 6 takes a NIC queue's softirqs)
        await pilot.pause()
        save("grid-noise")
        await pilot.press("v")
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
        # the planted cross-NUMA GPU: triton-0's pane (its CPUs on NUMA 1, its GPU on NUMA 3)
        await pilot.press("slash", *"triton-0", "enter")
        await pilot.press("enter")
        await asyncio.sleep(1.0)
        save("drill-gpu-container")
        await pilot.press("escape", "escape")
        await pilot.press("escape")
        await asyncio.sleep(0.8)
        save("fleet")
        await pilot.press("q")
    cluster.close()


async def large() -> None:
    """The demo's first node on a laptop (80x24), a war-room screen (200x60) and a wall (320x90), and a
    2 x 128-core EPYC (512 CPUs, 16 L3 caches per NUMA node, 70 pinned pods) at 200x60."""
    from nodes import epyc_512

    from pinscope.collectors.sim.demo import demo_specs

    for name, specs, size in (("laptop-80x24", demo_specs()[:1], (80, 24)),
                              ("warroom-200x60", demo_specs()[:1], (200, 60)),
                              ("wall-320x90", demo_specs()[:1], (320, 90)),
                              ("node-512-epyc", [epyc_512()], (200, 60))):
        if not wanted(name):
            continue
        cluster = DemoCluster(specs)
        targets = cluster.targets()
        app = PinscopeApp(targets, Options(), 0.5, "dark", cleanup=cluster.close)
        async with app.run_test(size=size):
            v = app.views[app.targets[0]]
            for _ in range(300):
                await asyncio.sleep(0.1)
                if v.ticks >= 4:
                    break
            app.save_screenshot(filename=f"{name}.svg", path=str(HERE))
            print("saved", HERE / f"{name}.svg")
            await app.action_quit()
        cluster.close()


def browser() -> None:
    """`pinscope serve -- demo` as a browser shows it (headless Chromium over the DevTools protocol)."""
    import os
    import secrets
    import signal
    import socket
    import subprocess
    import time
    import urllib.request

    from browser import CHROMIUM, Browser

    if not wanted("serve-chromium"):
        return
    if not Path(CHROMIUM).exists():
        print("skipped serve-chromium.png: no chromium")
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # the page wants its token in the URL (no cookie carries it: issue 34); one of this run's own, given
    # through the environment as a user would (out of `ps`)
    token = secrets.token_urlsafe(32)
    url = f"http://127.0.0.1:{port}/?token={token}"
    srv = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "serve", "--port", str(port), "--", "demo"],
                           cwd=HERE.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                           env={**os.environ, "PINSCOPE_SERVE_TOKEN": token})
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:  # not listening yet (a refusal, an HTTP error, would be one too: then the page says)
                time.sleep(0.2)

        async def shoot():
            async with Browser(1600, 1000) as b:
                await b.goto(url)
                await b.wait_text("live", "Socket 0", timeout=60)
                await asyncio.sleep(6)  # a few ticks: load shades and rates
                await b.screenshot(HERE / "serve-chromium.png")
                print("saved", HERE / "serve-chromium.png")

        asyncio.run(asyncio.wait_for(shoot(), 120))
    finally:
        os.killpg(srv.pid, signal.SIGINT)
        try:
            srv.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(srv.pid, signal.SIGKILL)


async def prometheus() -> None:
    """`pinscope --prometheus` over a real Prometheus holding 5,000 simulated nodes (backfilled with promtool,
    as tests/e2e/test_prom_overview.py does); skipped when prometheus is not installed."""
    import tempfile

    from promserver import Prometheus, backfill, have_prometheus

    from pinscope.collectors.promql import PromSource
    from promfleet import make_fleet
    from pinscope.tui.promapp import PromApp

    if not wanted("prom-fleet"):
        return
    if not have_prometheus():
        print("skipped prom-fleet.svg: no prometheus")
        return
    with tempfile.TemporaryDirectory() as tmp:
        backfill(make_fleet(5000), Path(tmp) / "data")
        with Prometheus(storage=str(Path(tmp) / "data"), lookback="1h") as prom:
            app = PromApp(PromSource(prom.url, timeout=20))
            async with app.run_test(size=SIZE) as pilot:
                for _ in range(300):
                    await asyncio.sleep(0.1)
                    rows = app.overview.rows
                    if len(rows) == 5000 and all(rows[n].cpus is not None for n in app.overview.wanted()):
                        break
                await pilot.pause(0.5)
                app.save_screenshot(filename="prom-fleet.svg", path=str(HERE))
                print("saved", HERE / "prom-fleet.svg")
                await app.action_quit()


if __name__ == "__main__":
    asyncio.run(main())
    asyncio.run(large())
    browser()
    asyncio.run(prometheus())
