"""The "what fits" pane (issue 36), driven with Pilot on the demo's fragmented node (db-numa-32: 2 x 8
cores, HT, single-numa-node, full-pcpus-only, reserved 0,16; free NUMA 0 = 5-7,21-23, NUMA 1 = 13-15,29-31):
its own key, listed in the help; per NUMA node the free whole cores and the largest container; N typed
lights kubelet's CPUs on the grid, a refusal is kubelet's words plus pinscope's reason; what cannot be read
is said; a tick with the same files recomputes nothing."""
import dataclasses
import re

import pytest
from frozen import FrozenApp, frozen_samples

from pinscope.collectors.fit import summary
from pinscope.collectors.fit.predict import predict
from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.sim.demo import demo_specs
from pinscope.tui.screens.fit import FitScreen, offgrid_line, parse_request
from pinscope.tui.screens.help import HelpScreen
from pinscope.tui.widgets.coregrid import CoreGrid

NAME = "db-numa-32"


@pytest.fixture(scope="module")
def frag(tmp_path_factory):
    (spec,) = [s for s in demo_specs() if s.hostname == NAME]
    return frozen_samples(spec, tmp_path_factory.mktemp("frag"))


def _text(app) -> str:
    return str(app.screen.query_one("#fit-text").render())


async def _open(app, pilot):
    for _ in range(50):  # a loaded machine may take more than two pauses to show the node
        await pilot.pause(0.05)
        if app.views[NAME].snap is not None and not isinstance(app.screen, FitScreen):
            break
    await pilot.press("w")
    await pilot.pause()
    assert isinstance(app.screen, FitScreen)


async def test_the_pane_answers_what_fits_and_lights_kubelets_cpus(frag):
    want = set(predict(frag.snapshot, 4).cpus)
    assert want and want <= {5, 6, 7, 21, 22, 23}

    app = FrozenApp({NAME: frag})
    async with app.run_test(size=(160, 40)) as pilot:
        await _open(app, pilot)
        text = _text(app)
        assert len(re.findall(r"^  [01] +6 +3 +6 +6$", text, re.M)) == 2, text
        assert "kubelet 1.37, assumed" in text  # the node's release is not in its files
        await pilot.press("4")
        await pilot.pause()
        assert app.screen.query_one(CoreGrid).highlight == want
        assert "kubelet would give CPUs" in _text(app)
        await pilot.press("backspace", "1", "0")
        await pilot.pause()
        text = " ".join(_text(app).split())  # kubelet's words, wherever the pane's width broke the line
        assert "TopologyAffinityError: Resources cannot be allocated with Topology locality" in text
        assert "why: the topology manager" in text
        assert app.screen.query_one(CoreGrid).highlight == frozenset()
        await pilot.press("escape")
        assert not isinstance(app.screen, FitScreen)



async def test_the_key_is_in_the_help(frag):
    app = FrozenApp({NAME: frag})
    async with app.run_test(size=(160, 40)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.views[NAME].snap is not None:
                break
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("Static").render())
        assert "What fits" in help_text and "node.fit" in help_text



async def test_same_files_recompute_nothing(frag):
    app = FrozenApp({NAME: frag})
    async with app.run_test(size=(160, 40)) as pilot:
        await _open(app, pilot)
        await pilot.press("8")
        await pilot.pause()
        before = summary.computed
        for _ in range(5):  # ticks with the same files
            app.screen.refresh_view()
        assert summary.computed == before



async def test_an_unreadable_checkpoint_is_said_not_guessed(frag):
    """Not root: cpu_manager_state is 0600, so which CPUs are free is unknown: the pane says so."""
    snap = dataclasses.replace(frag.snapshot, state=None, state_status="unreadable")
    unread = dataclasses.replace(frag, snapshot=snap)

    app = FrozenApp({NAME: unread})
    async with app.run_test(size=(100, 30)) as pilot:  # narrow: the text under the grid
        await _open(app, pilot)
        await pilot.press("4")
        await pilot.pause()
        text = _text(app)
        assert "not known: cpu_manager_state is unreadable" in text and "run with --sudo, or as root" in " ".join(text.split())
        assert app.screen.query_one(CoreGrid).highlight == frozenset()



@pytest.mark.parametrize("typed, n", [("", None), ("4", 4), (" 12 ", 12), ("0", None), ("x", None), ("٣", None),
                                      ("99999999", None)])
def test_bad_input_is_said_never_raised(typed, n):
    got, why = parse_request(typed)
    assert got == n
    assert (why == "") == (n is not None or typed.strip() == "")


async def test_a_typed_fraction_is_said_not_read_as_another_number(frag):
    """'1.5' typed is not a whole number of CPUs: said so, nothing lit; never read as 15 (the dot dropped)."""
    app = FrozenApp({NAME: frag})
    async with app.run_test(size=(160, 40)) as pilot:
        await _open(app, pilot)
        await pilot.press("1", "full_stop", "5")
        await pilot.pause()
        text = _text(app)
        assert "'1.5' is not a whole number of CPUs" in text, text
        assert "container of 15 CPUs" not in text
        assert app.screen.query_one(CoreGrid).highlight == frozenset()


async def test_a_long_line_wraps_under_its_own_text(frag):
    """At 80x24 a reason longer than the pane breaks at a space and goes on indented under its own text, not
    at the pane's left edge where it reads as a line of its own."""
    snap = dataclasses.replace(frag.snapshot, state=None, state_status="unreadable")
    app = FrozenApp({NAME: dataclasses.replace(frag, snapshot=snap)})
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot)
        await pilot.press("4")
        await pilot.pause()
        width = app.screen._text_width()
        lines = _text(app).splitlines()
        assert all(len(x) <= width for x in lines), [x for x in lines if len(x) > width]
        i = next(i for i, x in enumerate(lines) if "not known: cpu_manager_state" in x)
        assert lines[i].startswith("  not known") and lines[i + 1].startswith("    ") and lines[i + 1].strip(), lines


def test_the_per_numa_header_names_each_unit_once(frag):
    """The last column counts CPUs taken as whole cores, not cores: its header says so, as `fit` says
    "32 CPUs, 32 as whole cores"; "whole cores" names the free cores' column alone."""
    from pinscope.tui.screens.fit import fit_text

    text, _ = fit_text(frag.snapshot, None, "", width=200)
    (header,) = [x for x in text.plain.splitlines() if x.startswith("  NUMA ")]
    assert header.split() == ["NUMA", "free", "whole", "cores", "largest:", "CPUs", "as", "whole", "cores"], header
    assert len(re.findall(r"^  [01] +6 +3 +6 +6$", text.plain, re.M)) == 2, text.plain


def test_the_pane_never_asks_for_a_flag_it_cannot_take(frag):
    """memoryManagerPolicy Static: the next pod's memory is not known, said; "give --memory" is `fit`'s advice
    (the pane has no --memory), never the pane's."""
    from pinscope.tui.screens.fit import fit_text

    kubelet = dataclasses.replace(frag.snapshot.kubelet, memory_manager_policy="Static")
    text, _ = fit_text(dataclasses.replace(frag.snapshot, kubelet=kubelet), None, "", width=200)
    assert "memoryManagerPolicy Static places it on NUMA nodes too" in text.plain, text.plain
    assert "--memory" not in text.plain, text.plain


@pytest.fixture(scope="module")
def infer(tmp_path_factory):
    (spec,) = [s for s in demo_specs() if s.hostname == "infer-epyc-64"]
    return frozen_samples(spec, tmp_path_factory.mktemp("infer"))


async def test_lit_cpus_off_the_grid_are_said(infer):
    """At 80x24 the grid of infer-epyc-64 (64 CPUs, 4 NUMA nodes) does not show them all: CPUs kubelet would
    give that the grid's view leaves out are said in the pane, with how to see them; scrolled, the line follows."""
    app = FrozenApp({"infer-epyc-64": infer})
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.views["infer-epyc-64"].snap is not None and not isinstance(app.screen, FitScreen):
                break
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("1", "2")
        await pilot.pause()
        await pilot.pause()
        grid = app.screen.query_one(CoreGrid)
        hidden = grid.out_of_view(grid.highlight)
        assert grid.highlight and hidden["below"], (grid.highlight, hidden)  # the case of the user trial
        said = str(app.screen.query_one("#fit-offgrid").render())
        assert app.screen.query_one("#fit-offgrid").display
        assert said.startswith(f"CPUs {format_cpuset(hidden['below'])} below") and "scroll the grid" in said, said
        grid.scroll_end(animate=False)
        await pilot.pause()
        await pilot.pause()
        now = grid.out_of_view(grid.highlight)
        assert not now["below"] and now["above"], now  # scrolled down: the first NUMA nodes' CPUs are above now
        assert str(app.screen.query_one("#fit-offgrid").render()) == offgrid_line(now)


# --- the memory field: `fit --memory` in the pane --------------------------------------------------------

GI = 2**30


def _memory_table(free: int, alloc: int = 30 * GI) -> dict:
    return {"total": alloc + GI, "systemReserved": GI, "allocatable": alloc, "reserved": alloc - free, "free": free}


@pytest.fixture(scope="module")
def static_mem(frag):
    """db-numa-32 with memoryManagerPolicy Static and its memory_manager_state (v1, checksum 0, which kubelet
    accepts): NUMA 0 has 1Gi free of 30Gi, NUMA 1 all its 30Gi. 4 CPUs alone go to NUMA 0; with 8Gi the
    memory fits NUMA 1 alone, and single-numa-node moves the CPUs there."""
    import json

    from pinscope.collectors.parse.memstate import parse_memory_manager_state

    machine = {str(n): {"numberOfAssignments": 0, "cells": [n], "memoryMap": {"memory": _memory_table(free)}}
               for n, free in ((0, GI), (1, 30 * GI))}
    problems: list = []
    state = parse_memory_manager_state(json.dumps({"policyName": "Static", "machineState": machine, "entries": {},
                                                   "checksum": 0}), "/var/lib/kubelet/memory_manager_state", problems)
    assert state is not None and not problems
    kubelet = dataclasses.replace(frag.snapshot.kubelet, memory_manager_policy="Static")
    return dataclasses.replace(frag, snapshot=dataclasses.replace(frag.snapshot, kubelet=kubelet, memory_state=state))


async def _type_memory(app, pilot, keys: str) -> None:
    field = app.screen.query_one("#fit-mem")
    field.focus()
    field.value = ""
    await pilot.press(*keys)
    await pilot.pause()


async def test_typing_a_memory_size_shows_its_numa_node_and_moves_the_cpus(static_mem):
    """At 80x24: N, then 8Gi in the memory field: the memory manager's NUMA node is said and kubelet's CPUs,
    moved to that node by the merged hints, light on the grid (as `fit --cpus 4 --memory 8Gi` predicts)."""
    alone = set(predict(static_mem.snapshot, 4).cpus)
    want = predict(static_mem.snapshot, 4, memory={"memory": 8 * GI})
    numa_of = {c.id: c.numa_node for c in static_mem.snapshot.topology.cpus}
    assert {numa_of[c] for c in alone} == {0} and {numa_of[c] for c in want.cpus} == {1}

    app = FrozenApp({NAME: static_mem})
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot)
        await pilot.press("4")
        await pilot.pause()
        assert app.screen.query_one(CoreGrid).highlight == alone
        await _type_memory(app, pilot, "8Gi")
        text = " ".join(_text(app).split())
        assert "container of 4 CPUs and 8Gi memory" in text, text
        assert "memory: kubelet's memory manager would take it from NUMA node 1" in text, text
        assert app.screen.query_one(CoreGrid).highlight == set(want.cpus)
        assert "memoryManagerPolicy Static places it" not in text  # the memory typed is the next pod's
        for box in ("#fit-n", "#fit-mem"):  # both fields on the screen at 80x24
            region = app.screen.query_one(box).region
            assert region.width >= 25 and region.bottom <= 24, (box, region)
        await _type_memory(app, pilot, "40Gi")
        text = " ".join(_text(app).split())
        assert "UnexpectedAdmissionError: Allocate failed due to [memorymanager]" in text, text
        assert "why: kubelet's memory manager" in text
        assert app.screen.query_one(CoreGrid).highlight == frozenset()


@pytest.mark.parametrize("typed, said", [("500K", "not a memory size: '500K'"), ("٣Gi", "not a memory size: '٣Gi'"),
                                         ("0", "is not above zero"), ("4Gi 2Mi=3Mi", "not positive integer multiple"),
                                         ("4Gi x", "is not 2Mi=SIZE or 1Gi=SIZE")])
async def test_bad_memory_says_why_and_the_cpus_still_light(static_mem, typed, said):
    """Bad memory text is said in the pane and marks its field, as `fit --memory` refuses it (exit 2 there);
    nothing is raised, and the CPUs are predicted alone, lit on the grid, said to be without the memory."""
    alone = set(predict(static_mem.snapshot, 4).cpus)
    app = FrozenApp({NAME: static_mem})
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot)
        await pilot.press("4")
        await _type_memory(app, pilot, typed)
        text = " ".join(_text(app).split())
        assert said in text and "the CPUs alone are predicted" in text, text
        assert app.screen.query_one("#fit-mem").has_class("-invalid")
        assert app.screen.query_one(CoreGrid).highlight == alone


def test_the_memory_field_reads_as_fit_memory_reads():
    """One parser for `fit --memory` and the pane (collectors/fit/quantity.py): what one takes the other takes."""
    from pinscope.collectors.fit.quantity import parse_memory_field, parse_size

    assert parse_memory_field("1.5Gi") == ({"memory": parse_size("1.5Gi")}, "")
    assert parse_memory_field("4Gi 1Gi=2Gi hugepages-2Mi=4Mi") == (
        {"memory": 4 * GI, "hugepages-1Gi": 2 * GI, "hugepages-2Mi": 4 * 2**20}, "")
    got, note = parse_memory_field("256m")
    assert got == {"memory": 1} and "did you mean 256Mi?" in note  # taken, with fit's note
    assert parse_memory_field("") == (None, "")


async def test_the_memory_field_is_in_the_help(static_mem):
    app = FrozenApp({NAME: static_mem})
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        help_text = str(app.screen.query_one("Static").render())
        assert re.search(r"tab +Next: CPUs, memory, grid +fit.next", help_text), help_text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, FitScreen) and app.screen.query_one("#fit-n").value == ""  # no '?' typed


def test_a_slow_kubelet_admission_is_said_in_the_pane(frag):
    """combinations.py's warning (kubelet's own admission would iterate over 10^7 hint combinations) is
    shown with the request's answer, as `fit` shows it."""
    from rich.text import Text

    from pinscope.collectors.fit.combinations import slow_note
    from pinscope.tui.screens.fit import _request

    ans = predict(frag.snapshot, 4)
    ans.warnings = [slow_note(255**4, [("cpu", 255), ("memory", 255), ("hugepages-1Gi", 255), ("hugepages-2Mi", 255)])]
    t = Text()
    _request(t, 4, ans, {c.id: c.numa_node for c in frag.snapshot.topology.cpus})
    assert "▲ kubelet's own admission of this pod would iterate about 4,228,250,625 hint combinations" in t.plain


def test_with_memory_the_same_files_recompute_nothing_and_new_memory_state_does(static_mem):
    """The answer with memory is cached by the memory manager's state too: the same files reuse it, another
    machineState (a pod took NUMA 1's memory) computes it again, and its memory goes elsewhere."""
    from pinscope.collectors.parse.memstate import parse_memory_manager_state
    from pinscope.tui.screens.fit import fit_text

    memory = ({"memory": 8 * GI}, "")
    fit_text(static_mem.snapshot, 4, "", memory=memory)
    before = summary.computed
    for _ in range(3):
        text, lit = fit_text(static_mem.snapshot, 4, "", memory=memory)
    assert summary.computed == before
    import json

    machine = {str(n): {"numberOfAssignments": 0, "cells": [n], "memoryMap": {"memory": _memory_table(free)}}
               for n, free in ((0, 30 * GI), (1, GI))}
    state = parse_memory_manager_state(json.dumps({"policyName": "Static", "machineState": machine, "entries": {},
                                                   "checksum": 0}), "/var/lib/kubelet/memory_manager_state", [])
    moved = dataclasses.replace(static_mem.snapshot, memory_state=state)
    text, lit = fit_text(moved, 4, "", memory=memory, width=200)
    assert summary.computed > before
    assert "would take it from NUMA node 0" in text.plain, text.plain


@pytest.mark.parametrize("box", ["#fit-n", "#fit-mem"])
async def test_keys_of_one_burst_edit_the_field_in_their_order(frag, box):
    """Keys typed fast (or a burst of them) reach the app in one read of the terminal: a backspace among them is
    applied where it was typed. Found in tmux with both cores busy: '500K', then 4 backspaces and '1Gi' left
    'Gi' or nothing, as Textual ran an Input's own keys (backspace, delete, arrows) only once they had bubbled
    up to the app, behind the pane's recomputation, while the characters after them went in at once."""
    from textual import events

    app = FrozenApp({NAME: frag})
    async with app.run_test(size=(80, 24)) as pilot:
        await _open(app, pilot)
        field = app.screen.query_one(box)
        field.focus()
        await pilot.press(*"500")
        await pilot.pause()
        assert field.value == "500"
        for key in ["backspace"] * 3 + ["1", "2", "left", "backspace", "3"]:
            app._driver.send_message(events.Key(key, key if len(key) == 1 else None))  # as the driver posts one read
        for _ in range(20):
            await pilot.pause(0.02)
        assert field.value == "32"
