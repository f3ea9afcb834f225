"""Snapshot tests (pytest-textual-snapshot): each screen at 80x24 and 200x60, frozen data; the node screen
of a node in trouble at every size a war room has (issue 24), its text checked as well as its picture.

A snapshot is pinscope's own output: regenerated, it would bless a wrong screen. So each test also reads
the screen's text and checks the few facts that matter (the node, the worst finding, a pinned CPU's label
and pod tag, the pane's subject), written here by hand from the fixture's spec (tests/nodes.py), never
copied from the output (issue 34 item 23).

Frozen: fixture trees read through the real probe, two samples of a seeded simulation one node-second
apart (the node's uptime is the clock), no live workers. Update with: pytest -n 0 --snapshot-update
"""
import asyncio
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tui"))

from frozen import FrozenApp, frozen_node, frozen_samples, screen_lines
from nodes import dual_socket_intel, epyc_512, trouble_16, trouble_96, trouble_512

SCREENS = {
    "main": [],
    "findings": ["f"],
    "cpu": ["enter"],
    "container": ["right", "right", "enter"],
    "node": ["n"],
    "help": ["question_mark"],
}


# What each screen of xeon-2s (dual_socket_intel) must say, from its spec: 2 x 12 cores, HT (CPU n's sibling
# n + 24), reserved 0,24; md-feed-0/feed pinned to 1-2,25-26 (the first pinned CPU: tag A), matcher-7d9f/engine
# to 13-14,37-38 (tag B); PID 1's affinity unset, so the worst finding is SYSTEM_NOT_CONFINED (info) about
# the exclusive CPUs 1-2,13-14,25-26,37-38; the shared pool is the rest: 0,3-12,15-24,27-36,39-47.
XEON_GRID = [r"xeon-2s\b.*\blive\b.*✖0 ▲0", r"^· SYSTEM_NOT_CONFINED\b"]  # the status line, the worst finding
XEON_FACTS = {
    "main": (XEON_GRID, [("1", "A"), ("2", "A"), ("13", "B"), ("38", "B")], [r"\bA\b.*md-feed-0.*\b1-2,25-26\b",
                                                                             r"\bB\b.*matcher.*\b13-14,37-38\b"]),
    "findings": (XEON_GRID, [("1", "A")], [r"SYSTEM_NOT_CONFINED.*PID 1"]),
    "cpu": ([r"xeon-2s\b.*\bCPU 0\b", r"^CPU 0: reserved\b"], [], [r"SMT siblings 0,24\b"]),
    "container": ([r"xeon-2s\b.*\bcontainer feed\b", r"^trading/md-feed-0\s+container feed\b"], [],
                  [r"QoS Guaranteed", r"kubelet assignment: 1-2,25-26\s+kernel cpuset\.cpus\.effective: 1-2,25-26\b"]),
    "node": ([r"xeon-2s\b.*\bnode\b"], [], [r"cpuManagerPolicy\s+static\b", r"reservedSystemCPUs\s+0,24\b",
                                              r"topologyManagerPolicy\s+single-numa-node\b",
                                              r"defaultCpuSet 0,3-12,15-24,27-36,39-47\b"]),
    "help": ([], [], [r"pinscope\b.*\bkeys\b", r"\bq\s+Quit\b", r"\?\s+Help\b"]),
}


GLYPH = r"[#R.ix?]"  # a CPU's role (collectors.model.Role's glyphs)
SHADE = r"[ ▁▂▃▄▅▆▇█]"  # its load, where the density shows one beside the glyph


def cpu_cell(lines: list[str], cpu: str, siblings: int | None = None) -> tuple[str, str, str] | None:
    """What the grid shows of CPU `cpu`: (its role's glyph, its pod's tag or "", its mark: "!" a finding names
    it, "~" pinned and not latency-ready, " " none), or None when no cell shows it.

    A cell with its own number reads "13 # B", the mark between the number and the glyph ("5!# C"), a load
    shade may sit before the tag ("13!#▆B"). A compact row names its first CPU ("6:R   R   # A !.  "), its
    cells the CPUs after it, each ending in its mark: in order (AMD numbering, siblings 2k and 2k+1), or core
    by core with each core's two threads side by side (Intel numbering, `siblings`: CPU n's sibling is
    n + siblings: "0:R   R   # A # A " is 0, 48, 1, 49); at density "cores" a cell is a whole core (the status
    line names the density)."""
    own = re.compile(rf"(?:^|\s){cpu}([ !~])({GLYPH}){SHADE}?([A-Z]*)(?=\s|$)")
    cores = "density: cores" in lines[0]
    n = int(cpu)
    for ln in lines:
        m = own.search(ln)
        if m:
            return m.group(2), m.group(3), m.group(1)
        for row in re.finditer(r"(\d+):([^\d│]*)", ln):  # tiles side by side: a row of each on one line
            cells = re.findall(rf"({GLYPH}){SHADE}?([A-Z]*) *([!~]?)", row.group(2))
            first = int(row.group(1))
            for k, (glyph, tag, mark) in enumerate(cells):
                if cores:
                    held = {first + k, first + k + siblings} if siblings else {first + 2 * k, first + 2 * k + 1}
                else:
                    held = {first + k // 2 + (k % 2) * siblings} if siblings else {first + k}
                if n in held:
                    return glyph, tag, mark or " "
    return None


def cpu_label(lines: list[str], cpu: str, tag: str, siblings: int | None = None, mark: str | None = None) -> bool:
    """Does the grid show CPU `cpu` as exclusive ("#") to the pod tagged `tag` (with the mark `mark`, when
    given: "!", "~" or " ")?"""
    cell = cpu_cell(lines, cpu, siblings)
    return cell is not None and cell[:2] == ("#", tag) and (mark is None or cell[2] == mark)


def check(lines: list[str], head: list[str], cpus: list[tuple[str, str]], anywhere: list[str]) -> None:
    """`head`: patterns of the first lines, in order; `cpus`: (cpu, tag) the grid shows; `anywhere`: patterns
    some line below matches."""
    shown = [ln for ln in lines if ln.strip()]
    text = "\n".join(shown)
    for i, pat in enumerate(head):
        assert re.search(pat, shown[i].strip()), (pat, shown[i], text)
    for cpu, tag in cpus:
        assert cpu_label(shown, cpu, tag), (cpu, tag, text)
    for pat in anywhere:
        assert any(re.search(pat, ln.strip()) for ln in shown), (pat, text)


def screen_text(app, press: list[str], size) -> list[str]:
    async def go() -> list[str]:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            for key in press:
                await pilot.press(key)
            await pilot.pause()
            await pilot.pause()
            return screen_lines(app)

    return asyncio.run(go())


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
@pytest.mark.parametrize("screen", sorted(SCREENS))
def test_screen(snap_compare, frozen, screen, size):
    check(screen_text(FrozenApp(frozen), SCREENS[screen], size), *XEON_FACTS[screen])
    assert snap_compare(FrozenApp(frozen), press=["_", *SCREENS[screen], "_"], terminal_size=size)


# epyc-512 (epyc_512): shard-NN pinned to 8+4NN..11+4NN, tagged in CPU order with letters that skip I and O:
# shard-00 on 8-11 is A, shard-26 on 112-115 is AC; reserved 0-7; PID 1 unconfined (SYSTEM_NOT_CONFINED).
EPYC_FACTS = ([r"epyc-512\b.*\blive\b.*✖0 ▲0", r"^· SYSTEM_NOT_CONFINED\b"], [("8", "A")], [])


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_512_cpus(snap_compare, size):
    """2 x 128-core EPYC: L3 tiles (16 per NUMA node), 70 pods, two-letter tags shown whole."""
    data = {"epyc-512": frozen_node(epyc_512)}
    head, cpus, anywhere = EPYC_FACTS
    check(screen_text(FrozenApp(data), [], size), head, cpus + ([("112", "AC")] if size[0] >= 200 else []), anywhere)
    assert snap_compare(FrozenApp(data), press=["_", "_"], terminal_size=size)


def test_512_cpus_monochrome(snap_compare, monkeypatch):
    """NO_COLOR: the pods are told apart by their whole tags alone."""
    monkeypatch.setenv("NO_COLOR", "1")
    app = FrozenApp({"epyc-512": frozen_node(epyc_512)})
    assert app.no_color
    check(screen_text(FrozenApp({"epyc-512": frozen_node(epyc_512)}), [], (80, 24)), *EPYC_FACTS)
    assert snap_compare(app, press=["_", "_"], terminal_size=(80, 24))


class FrozenReplay(FrozenApp):
    """The node screen as a replay shows it (the real ReplayApp is driven in tests/warroom/test_record.py)."""

    replay_status = "replay 2026-03-01 03:12:05  [65s of 600s]  ×1  PAUSED"


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=["80x24", "200x60"])
def test_replay_header(snap_compare, frozen, size):
    lines = screen_text(FrozenReplay(frozen), [], size)
    assert any("xeon-2s" in ln for ln in lines[:2]), lines[:2]
    assert any("replay 2026-03-01 03:12:05" in ln and "PAUSED" in ln for ln in lines[:3]), lines[:3]
    check(lines, [], [("1", "A")], [])
    assert snap_compare(FrozenReplay(frozen), press=["_", "_"], terminal_size=size)


TROUBLE = {"16": trouble_16, "96": trouble_96, "512": trouble_512}
SIZES = [(80, 24), (120, 40), (200, 50), (320, 90)]


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("cpus", sorted(TROUBLE, key=int))
def test_node_in_trouble_at_every_size(snap_compare, cpus, size):
    """A 16-, 96- or 512-CPU node with a critical finding (a drifted cpuset; on the 512-CPU node also the drifted
    container's busy tasks on another pod's CPUs), from a laptop's 80x24 to a wall: the first line names the node, its state and its critical and warning counts; the second, the
    worst finding; the findings pane shows it too, and the grid is there."""
    shape = TROUBLE[cpus]
    name = shape().hostname
    data = {name: frozen_node(shape)}

    async def text() -> list[str]:
        app = FrozenApp(data)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.pause()
            return screen_lines(app)

    lines = asyncio.run(text())
    # the 512-CPU node: shard-30's engine, its cpuset drifted onto 128-135, runs busy on shard-31's CPUs 133 and
    # 135: two INTRUDER_TASKs beside the drift (worst first, then by code), each naming shard-30's engine
    crit = 3 if cpus == "512" else 1
    assert name in lines[0] and "live" in lines[0] and re.search(rf"✖{crit}\s*▲\d", lines[0]), lines[0]
    if cpus == "512":
        assert lines[1].startswith("✖ INTRUDER_TASK  engine (pid ") and " of trading/shard-30/engine last" in lines[1], lines[1]
        assert sum("INTRUDER_TASK" in ln for ln in lines[2:]) == 2, "\n".join(lines)  # the findings pane
        if size[1] > 24:  # at 80x24 the pane shows the first two ("f: all findings")
            assert any("STATE_CGROUP_DRIFT" in ln for ln in lines[2:]), "\n".join(lines)
    else:
        assert lines[1].startswith("✖ STATE_CGROUP_DRIFT") and "kernel runs it" in lines[1], lines[1]
        assert any("STATE_CGROUP_DRIFT" in ln for ln in lines[2:]), "\n".join(lines)  # the findings pane
    assert any("Socket 0" in ln for ln in lines[2:4]), "\n".join(lines)  # the grid right under them
    # md-feed-0/feed on CPUs 1-2 and their siblings n+1, n+2 (n = 8 or 48 CPUs per thread row, tests/nodes.py
    # _trouble): the first pinned CPU, tag A, no finding names it; matcher's engine drifted onto the shared
    # CPU 4 (the critical names it: "!"), risk-calc/calc (tag C) holds CPU 5 alone, its sibling n+5 shared (the
    # warning names 5: "!"). On the 512-CPU node, shard-00 on 8-11 (AMD: no sibling jump) is A, shard-31 on
    # 132-135 is AH (A-Z without I and O, then AA...), and the critical names 132-135 (shard-30 runs there)
    text = "\n".join(lines)
    if cpus == "512":
        assert cpu_label(lines, "8", "A") and cpu_cell(lines, "8")[2] != "!", text
        if size[0] >= 120:  # the grid is cut at 80x24 (it scrolls)
            assert cpu_label(lines, "132", "AH", mark="!"), text
    else:
        n = {"16": 8, "96": 48}[cpus]
        assert cpu_label(lines, "1", "A", n) and cpu_label(lines, str(n + 2), "A", n), text
        assert cpu_cell(lines, "1", n)[2] != "!", text
        assert cpu_label(lines, "5", "C", n, mark="!"), text
        assert cpu_cell(lines, "4", n) == (".", "", "!"), text
    assert snap_compare(FrozenApp(data), press=["_", "_"], terminal_size=size)
