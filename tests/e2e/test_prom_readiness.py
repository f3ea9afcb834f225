"""The Prometheus-fed fleet overview shows each node's latency readiness score, as the SSH overview does
(e1607f8), from pinscope_readiness_checks: a real exporter reads fixture trees through the real probe, a real
Prometheus scrapes it, `pinscope --prometheus`'s source and map read it back.

Nodes (1 socket, 4 cores x 2 threads, reserved 0-1, rt/engine pinned to 2-5; the spec of
tests/tui/test_readiness_marks.py), scores by hand: the checks that apply are isolated, nohz_full and rcu_nocbs
(no: the node isolates nothing), housekeeping (ok: nothing tickless or isolated), cfs_quota (ok: cpu.max
"max"), and with cpufreq the governor (no: powersave): "tuned-off" 2 of 6, "no-cpufreq" 2 of 5. "idle": the
same node with no pod: no CPU to judge, every check n/a: "ready -". "gone": --root not there, never read:
no readiness series at all, its row says it cannot be read.
"""
from __future__ import annotations

import asyncio
import re
import time

import pytest
import yaml

from pinscope.collectors.promql import PromSource
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import need
from promserver import Exporter, Prometheus, have_prometheus, podmonitor_scrape_config

pytestmark = pytest.mark.timeout(300)


def spec(powersave: bool, pods: bool = True) -> NodeSpec:
    files = {}
    for c in range(8) if powersave else ():
        d = f"/sys/devices/system/cpu/cpu{c}/cpufreq"
        files |= {f"{d}/scaling_driver": "intel_pstate\n", f"{d}/scaling_governor": "powersave\n",
                  f"{d}/scaling_min_freq": "800000\n", f"{d}/scaling_max_freq": "3500000\n",
                  f"{d}/cpuinfo_min_freq": "800000\n", f"{d}/cpuinfo_max_freq": "3500000\n"}
    return NodeSpec(hostname="rt-node", sockets=1, cores=4, threads=2, numbering="amd", cgroup=2, driver="systemd",
                    policy="static", reserved="0-1", extra_files=files,
                    pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="2-5")])] if pods else [])


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    d = tmp_path_factory.mktemp("ready")
    nodes = {"tuned-off": spec(True), "no-cpufreq": spec(False), "idle": spec(False, pods=False)}
    for name, s in nodes.items():
        SimNode(s, d / name).write()
    inv = d / "inv.yaml"
    inv.write_text(yaml.safe_dump({"nodes": [{"name": n, "host": "local", "root": str(d / n)} for n in nodes]
                                   + [{"name": "gone", "host": "local", "root": str(d / "no-such-dir")}]}))
    exp = Exporter("--interval", "1", "--inventory", str(inv), "--connect-timeout", "3").start()
    try:
        with Prometheus(scrape_configs=[podmonitor_scrape_config([exp.addr])]) as prom:
            for n in nodes:
                prom.wait_for(f'count(pinscope_readiness_checks{{node="{n}"}})', 4.0, deadline=60)
            prom.wait_for('pinscope_read_success{node="gone"}', 0.0, deadline=60)
            yield prom
    finally:
        exp.close()


def test_the_source_reads_each_nodes_score(stack):
    got = asyncio.run(PromSource(stack.url, timeout=20).fleet())
    assert {n: got[n].ready for n in ("tuned-off", "no-cpufreq", "idle", "gone")} == {
        "tuned-off": (2, 6), "no-cpufreq": (2, 5), "idle": (0, 0), "gone": None}


async def _lines(url: str, size: tuple[int, int]) -> dict[str, str]:
    """Each node's first line on the map, once every node is there and the maps on screen are fetched."""
    from pinscope.tui.promapp import PromApp
    from pinscope.tui.widgets.promfleetmap import PromFleetMap

    app = PromApp(PromSource(url, timeout=20))
    async with app.run_test(size=size) as pilot:
        end = time.monotonic() + 60
        while time.monotonic() < end and (len(app.overview.rows) < 4 or any(
                r.cpus is None for r in app.overview.rows.values() if r.node.read_ok)):
            await pilot.pause(0.1)
        await pilot.pause(0.3)
        fm = app.screen.query_one(PromFleetMap)
        return {fm.views[cell[0]].target: fm.render_line(y).text
                for y, line in enumerate(fm.rows) for cell in line if cell is not None and cell[1] == 0}



@pytest.mark.parametrize("width", [160, 80])
async def test_the_overview_shows_the_score_column(stack, width):
    """At 80 columns the worst code's column goes (the map keeps its 8 CPUs on one line); at 160 it stays."""
    by = await _lines(stack.url, (width, 20))
    assert "ready 2/6" in by["tuned-off"] and "ready 2/5" in by["no-cpufreq"] and "ready -" in by["idle"]
    assert "ready ?" in by["gone"] and "cannot be read" in by["gone"]
    for n in ("tuned-off", "no-cpufreq", "idle"):
        assert re.search(r"\S{8}$", by[n].rstrip()) and not re.search(r"\S{9}$", by[n].rstrip()), by[n]
    assert ("PINNED_CPU_POWERSAVE" in by["tuned-off"]) is (width == 160)
