"""The grid's "~": a pinned CPU that is not latency-ready (issue 37), beside a finding's "!" (which wins), its
legend entry only where the grid shows one, and the cursor's line saying why. Frozen data read through the
real probe: 8 CPUs (4 cores x 2 threads, amd numbering: core k = CPUs 2k, 2k+1), reserved 0-1, rt/engine
pinned to 2-5, the powersave governor on every CPU (PINNED_CPU_POWERSAVE on 2-5), logrotate last run on
CPU 3 (INTRUDER_TASK, critical)."""

import pytest

from frozen import FrozenApp, frozen_samples, screen_lines
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from pinscope.tui.widgets.coregrid import CoreGrid


def spec(powersave: bool) -> NodeSpec:
    files = {}
    for c in range(8) if powersave else ():
        d = f"/sys/devices/system/cpu/cpu{c}/cpufreq"
        files |= {f"{d}/scaling_driver": "intel_pstate\n", f"{d}/scaling_governor": "powersave\n",
                  f"{d}/scaling_min_freq": "800000\n", f"{d}/scaling_max_freq": "3500000\n",
                  f"{d}/cpuinfo_min_freq": "800000\n", f"{d}/cpuinfo_max_freq": "3500000\n"}
    return NodeSpec(hostname="rt-node", sockets=1, cores=4, threads=2, numbering="amd", cgroup=2, driver="systemd",
                    policy="static", reserved="0-1", other_tasks=[("logrotate", 3, False)], extra_files=files,
                    pods=[PodSpec("engine-0", "rt", containers=[CtrSpec("engine", cpus="2-5")])])


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"tuned-off": frozen_samples(spec(True), tmp_path_factory.mktemp("a")),
            "no-cpufreq": frozen_samples(spec(False), tmp_path_factory.mktemp("b"))}


def painted_marks(g: CoreGrid) -> dict[int, str]:
    """cpu -> the character right after its id, as painted (full density: "<id><mark><glyph><shade><tag>")."""
    out = {}
    for ry, row in enumerate(g.rows):
        if row.kind != "cells":
            continue
        text = g._paint(ry, max(g.size.width, g.virtual_size.width)).text
        for c in row.cells:
            out[c.cpu] = text[c.x + g.idw]
    return out


async def shown(frozen, node: str, keys=()):
    """The node screen of `node` after `keys`: the grid's painted marks, the screen's lines, the view's marks."""
    app = FrozenApp(frozen, start=node)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        g.use_density("full")
        for k in keys:
            await pilot.press(k)
        await pilot.pause()
        return painted_marks(g), screen_lines(app), app.views[node].cpu_marks()


async def test_pinned_cpus_not_latency_ready_are_marked_and_a_finding_wins(frozen):
    report = frozen["tuned-off"]
    assert report.snapshot.readiness.not_ready == {2, 3, 4, 5}
    codes = {f.code: set(f.cpus) for f in report.findings}
    assert codes["PINNED_CPU_POWERSAVE"] == {2, 3, 4, 5} and 3 in codes["INTRUDER_TASK"]
    marks, lines, by_cpu = await shown(frozen, "tuned-off")
    assert by_cpu == {2: "notready", 3: "critical", 4: "notready", 5: "notready"}
    assert marks == {0: " ", 1: " ", 2: "~", 3: "!", 4: "~", 5: "~", 6: " ", 7: " "}
    assert any("~ = pinned, not latency-ready" in ln for ln in lines)


async def test_no_mark_and_no_legend_entry_where_every_pinned_cpu_is_ready(frozen):
    """No cpufreq (a VM): the governor is not applicable, nothing else is judged wrong: only the intruder's "!"."""
    assert not frozen["no-cpufreq"].snapshot.readiness.not_ready
    marks, lines, _ = await shown(frozen, "no-cpufreq")
    assert set(marks.values()) == {" ", "!"} and marks[3] == "!"
    assert not any("latency-ready" in ln for ln in lines)


async def test_the_cursor_says_why_its_cpu_is_not_ready(frozen):
    _, lines, _ = await shown(frozen, "tuned-off", keys=["right", "right", "right", "right"])  # cpu0 -> cpu4
    text = "\n".join(lines)
    assert "cpu4: exclusive" in text and "~ not latency-ready: governor powersave" in text


async def test_the_fleet_overview_shows_each_nodes_score_and_the_marks(frozen):
    """Checks that apply, by hand from the spec (the rest are n/a or not read): isolated, nohz_full and
    rcu_nocbs no (the node isolates nothing), housekeeping ok (no CPU tickless), cfs_quota ok (cpu.max "max"),
    and with cpufreq the governor no (powersave): 2 of 6; without cpufreq 2 of 5. The mini map (R on 0-1, shared
    6-7): "~" on 2,4,5, "!" on 3 (the intruder) where the governor is powersave; only the "!" on the other."""
    from pinscope.tui.screens.fleet import FleetScreen
    from pinscope.tui.widgets.fleetmap import FleetMap

    app = FrozenApp(frozen)
    async with app.run_test(size=(160, 30)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if isinstance(app.screen, FleetScreen) and app.screen.query(FleetMap) and not app._fleet_dirty:
                break
        fm = app.screen.query_one(FleetMap)
        app._refresh_fleet()
        await pilot.pause()
        by = {v.target: fm.render_line(y).text for y, v in enumerate(fm.views)}
    assert "ready 2/6" in by["tuned-off"] and "ready 2/5" in by["no-cpufreq"]
    assert by["tuned-off"].rstrip().endswith("RR~!~~..") and by["no-cpufreq"].rstrip().endswith("RR#!##..")
