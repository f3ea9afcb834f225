"""The grid at any size: L3 tiles on AMD nodes, every pod tag whole in every density (monochrome: the
text alone must tell pods apart), the roomy layout of a war-room screen, middle-elided cgroup paths and
the `e` export. Frozen data: simulated nodes read through the real probe."""
import csv
import io
import json
import re

import pytest

from frozen import FrozenApp, frozen_node, frozen_samples
from nodes import dual_socket_intel, epyc_512
from pinscope.tui.elide import elide_middle, elide_path
from pinscope.tui.widgets.coregrid import CoreGrid


@pytest.fixture(scope="module")
def big():
    return {"epyc-512": frozen_node(epyc_512)}


@pytest.fixture(scope="module")
def xeon(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


def grid_text(g: CoreGrid) -> list[str]:
    return [g._paint(y, max(g.size.width, g.virtual_size.width)).text for y in range(len(g.rows))]


def test_512_cpus_read_whole(big):
    """70 pinned pods: kubelet's one-line state file is ~4.4 KB, past the probe's old 4 KB line cap."""
    rep = big["epyc-512"]
    snap, rates = rep.snapshot, rep.rates
    assert len(snap.topology.cpus) == 512 and rates is not None
    assert not any(p.source.endswith("cpu_manager_state") for p in snap.problems), snap.problems
    assert sum(1 for r in snap.roles if r.role == "exclusive") == 62 * 4 + 8 * 16
    assert len({c.l3 for c in snap.topology.cpus}) == 32


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
@pytest.mark.parametrize("density", ["full", "compact", "cores"])
async def test_every_pod_tag_whole_in_every_density(big, size, density):
    app = FrozenApp(big)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        g.use_density(density)
        v = app.views["epyc-512"]
        assert len(v.tags) == 70 and max(map(len, v.tags.values())) == 2
        roles = {r.id: r for r in v.snap.roles}
        lines = grid_text(g)
        seen = set()
        for ri, row in enumerate(g.rows):
            for cell in row.cells or ():
                owners = [o for m in cell.members for o in (roles[m].owners if m in roles else ())]
                if not owners:
                    continue
                tag = v.tags[owners[0].pod_uid]
                text = lines[ri][cell.x:cell.x + cell.width]
                # the whole tag, as its own word: "AB" is never shown as "A" (which is another pod)
                assert re.search(rf"(^|[^A-Z]){tag}([^A-Z]|$)", text), (density, cell.cpu, tag, text)
                seen.add(tag)
        assert seen == set(v.tags.values())
        await pilot.press("q")


async def test_l3_tiles_hold_exactly_their_cache(big):
    """Several L3s per NUMA node: each tile's title names one L3; the cells under it are that L3's CPUs."""
    app = FrozenApp(big)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        g = app.screen.query_one(CoreGrid)
        assert "scrolling" not in g.density
        l3_of = {c.id: c.l3 for c in app.views["epyc-512"].snap.topology.cpus}
        tiles = {}  # (title row, x) -> l3
        title = None
        for ri, row in enumerate(g.rows):
            if row.kind == "l3":
                title = {x: int(text.split()[1]) for x, text in row.labels}
            elif row.kind == "cells" and title is not None:
                xs = sorted(title)
                for cell in row.cells:
                    x0 = max(x for x in xs if x <= cell.x)
                    assert l3_of[cell.cpu] == title[x0], (cell.cpu, title[x0])
                    tiles.setdefault(title[x0], set()).add(cell.cpu)
            else:
                title = None
        assert len(tiles) == 32 and all(len(cpus) == 16 for cpus in tiles.values())
        await pilot.press("q")


async def test_one_l3_per_numa_has_no_tiles(xeon):
    app = FrozenApp(xeon)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not any(r.kind == "l3" for r in app.screen.query_one(CoreGrid).rows)


async def test_war_room_screen_puts_pods_and_findings_under_the_grid(xeon):
    app = FrozenApp(xeon)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        scr = app.screen
        main, g = scr.query_one("#main"), scr.query_one(CoreGrid)
        pods, fs = scr.query_one("#pods"), scr.query_one("#findings")
        assert main.has_class("roomy") and fs.display
        assert "scrolling" not in g.density and g.region.height == len(g.rows)
        assert g.region.width >= 190  # the whole width
        assert pods.region.y >= g.region.bottom and fs.region.y >= g.region.bottom
        assert fs.region.x > pods.region.x and fs.row_count >= 1
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        # 48 CPUs still fit over a laptop's width (issue 24): stacked, the findings on screen at any size
        assert main.has_class("roomy") and fs.display and "scrolling" not in g.density
        await pilot.press("q")


def test_elide_keeps_the_file_name():
    p = "/sys/fs/cgroup/kubepods.slice/kubepods-pod0f1e2d3c_4b5a_6978_8796_a5b4c3d2e1f0.slice/cri-containerd-" + "ab" * 32 + ".scope/cpuset.cpus.effective"
    for w in (30, 40, 60, 79):
        e = elide_path(p, w)
        assert len(e) == w and e.endswith("/cpuset.cpus.effective") and "…" in e and e.startswith("/sys")
    assert elide_path(p, len(p)) == p
    assert elide_middle("abcdef", 4) == "ab…f" and elide_middle("abc", 1) == "…"


async def test_container_pane_paths_keep_their_file_names_at_80_columns(xeon):
    app = FrozenApp(xeon)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"matcher", "enter", "enter")
        files = ""
        for _ in range(600):  # a loaded machine: give the pane its first render (a 30 s hang guard)
            await pilot.pause(0.05)
            if app.screen.query("#ctr-files") and "cpuset" in (files := str(app.screen.query_one("#ctr-files").render())):
                break
        heads = [ln for ln in files.splitlines() if ln.startswith("/")]
        assert heads and all(len(ln) <= 76 for ln in heads)
        assert any(ln.endswith("/cpuset.cpus.effective") and "…" in ln for ln in heads)
        await pilot.press("q")


async def test_e_exports_the_view_as_csv_and_json_beside_the_svg(xeon, tmp_path, monkeypatch):
    monkeypatch.setenv("PINSCOPE_SCREENSHOTS", str(tmp_path))

    app = FrozenApp(xeon)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"matcher", "enter")  # a filter: the view lights the matcher's CPUs
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("q")
    files = sorted(p.suffix for p in tmp_path.iterdir())
    assert files == [".csv", ".json", ".svg"]
    stem = next(tmp_path.glob("*.csv")).stem
    assert stem.startswith("pinscope-xeon-2s-")
    rows = list(csv.DictReader(io.StringIO((tmp_path / f"{stem}.csv").read_text())))
    assert len(rows) == 48 and list(rows[0])[:8] == ["node", "cpu", "socket", "numa", "l3", "role", "owner", "load"]
    r13 = next(r for r in rows if r["cpu"] == "13")
    assert r13["role"] == "exclusive" and "trading/matcher-7d9f/engine" in r13["owner"] and r13["highlighted"] == "true"
    assert next(r for r in rows if r["cpu"] == "0")["role"] == "reserved"
    assert all(r["load"] == "" or 0 <= float(r["load"]) <= 1 for r in rows)
    doc = json.loads((tmp_path / f"{stem}.json").read_text())
    assert doc["schema"] == 1 and doc["filter"] == "matcher" and doc["screen"] == "NodeScreen"
    (node,) = doc["nodes"]
    assert node["node"] == "xeon-2s" and len(node["cpus"]) == 48 and isinstance(node["findings"], list)
    assert [c["cpu"] for c in node["cpus"] if c["highlighted"]] == [13, 14, 37, 38]
