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
