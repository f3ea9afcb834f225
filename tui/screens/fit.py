"""The "what fits" pane (issue 36): per NUMA node the free whole cores and the largest pinned container
kubelet could give there; type N and the CPUs kubelet would give the next Guaranteed container of N CPUs
light up on the grid, or its refusal shows as kubelet words it, with the reason in pinscope's words. A memory
size typed beside N (1Gi, 1.5Gi; hugepages after it: 4Gi 1Gi=2Gi), read as `fit --memory` reads it, adds the
NUMA node(s) kubelet's memory manager would take it from, or its refusal; bad text is said, never raised.

The answers come from collectors/fit/summary.py, cached by the node's files: a tick whose checkpoint and
configuration did not change recomputes nothing (the pane repaints only when its text changed)."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal, VerticalScroll
from textual.widgets import Footer, Input, Static

from pinscope.collectors.fit.memory import MEMORY_UNKNOWN
from pinscope.collectors.fit.predict import FitAnswer
from pinscope.collectors.fit.quantity import format_size, parse_memory_field
from pinscope.collectors.fit.summary import free_count, node_fit, reason, request_fit
from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display
from pinscope.tui.presenter import Line, live_lines, live_summary
from pinscope.tui.screens.base import ReportScreen
from pinscope.tui.state import NodeView
from pinscope.tui.widgets.coregrid import CoreGrid
from pinscope.tui.widgets.field import OrderedInput

MAX_REQUEST = 100_000  # more CPUs than any node has: refused by kubelet's own words, never a long loop


def parse_request(text: str) -> tuple[int | None, str]:
    """(N, "") for a whole number of CPUs, else (None, what is wrong): bad input is said, never raised."""
    s = text.strip()
    if not s:
        return None, ""
    if not s.isdecimal() or not s.isascii():
        return None, f"{s!r} is not a whole number of CPUs (exclusive CPUs come in whole CPUs)"
    n = int(s)
    if n < 1:
        return None, "a container with exclusive CPUs asks for at least 1"
    if n > MAX_REQUEST:
        return None, f"{n} CPUs: more than any node has"
    return n, ""


def _per_numa(t: Text, ans: FitAnswer) -> None:
    t.append("free CPUs, and the largest container kubelet could give\nfrom each NUMA node alone\n", style="bold")
    t.append("  NUMA   free  whole cores  largest: CPUs  as whole cores\n", style="bold")
    for p in ans.per_numa:
        lf = p.get("largest_fit") or {}
        t.append(f"  {p['numa_node']:<4} {p['free_count']:>6} {p['free_whole_cores']:>12} "
                 f"{lf.get('cpus', '-'):>14} {lf.get('whole_cores', '-'):>15}\n")
        t.append(display(f"         {p['free_cpus'] or '-'}") + "\n", style="dim")


def _request(t: Text, n: int, ans: FitAnswer, numa_of: dict[int, int | None]) -> None:
    m = ans.memory
    asked = f" and {' + '.join(f'{format_size(v)} {r}' for r, v in m['request'].items())}" if m else ""
    t.append(f"the next Guaranteed container of {n} CPU{'s' if n != 1 else ''}{asked}\n", style="bold")
    placed = m is not None and m.get("note") is None
    if ans.error is not None:
        t.append(display(f"  kubelet: {ans.error['kind']}: {ans.error['message']}") + "\n", style="bold red")
        t.append(display(f"  why: {reason(ans.error, n, free_count(ans), memory=placed)}") + "\n")
    elif ans.cpus is not None:
        nodes = sorted({x for c in ans.cpus if (x := numa_of.get(c)) is not None})
        t.append(f"  kubelet would give CPUs {format_cpuset(ans.cpus)} (NUMA {format_cpuset(nodes) or '?'}): "
                 "lit on the grid\n")
    _memory(t, ans)
    for w in ans.warnings:  # kubelet's own admission would be slow: pinscope's answer is not
        t.append(display(f"  ▲ {w}") + "\n", style="bold")
    if ans.how_many is not None:
        with_memory = " with that memory" if placed and m and m.get("numa_nodes") else ""
        t.append(f"  containers of {n} CPU{'s' if n != 1 else ''}{with_memory} that fit one after another: "
                 f"{ans.how_many}\n")


def _memory(t: Text, ans: FitAnswer) -> None:
    """Where kubelet's memory manager would take the memory from, or why that is not predicted; the free
    memory of each NUMA node for each resource asked."""
    m = ans.memory
    if m is None:
        return
    if m.get("note"):
        t.append(display(f"  memory: not predicted: {m['note']}") + "\n")
        return
    if m.get("numa_nodes"):
        nodes = m["numa_nodes"]
        t.append(f"  memory: kubelet's memory manager would take it from NUMA node{'s' if len(nodes) > 1 else ''} "
                 f"{','.join(map(str, nodes))}\n")
    for res in m["request"]:
        free = ", ".join(f"{p['numa_node']}: {format_size(p['free'].get(res, 0))}" for p in m.get("per_numa") or ())
        t.append(f"  {res} free per NUMA node: {free or 'not known'}\n", style="dim")


STYLE = {"": "", "bold": "bold", "warn": "bold", "dim": "dim"}  # a presenter Line's look, in Rich's words


def _lines(t: Text, lines: list[Line]) -> None:
    for ln in lines:  # already made safe for the terminal by the presenter
        t.append(ln.text + "\n", style=STYLE.get(ln.style, ""))


def fit_text(snap, n: int | None, bad: str, version: str | None = None, report=None,
             width: int = 60, memory: tuple[dict[str, int] | None, str] = (None, "")) -> tuple[Text, frozenset[int]]:
    """The pane's text and the CPUs to light on the grid, for the request typed (None: none yet); `version`:
    the node's kubelet release as the API said it (--kube, node/NAME), else the release is assumed. `report`:
    the NodeReport whose kubelet's live view (PodResources) is shown, its one line under the title and its
    details after what fits (`width`: the columns they have). `memory`: parse_memory_field's answer for the
    memory typed (bytes per resource, or None and what is wrong)."""
    t = Text()
    base = node_fit(snap, version)
    rel = display(base.kubelet_version) if base.kubelet_version else base.release + ", assumed"
    t.append(f"what fits on {display(snap.node)} (kubelet {rel})\n", style="bold")
    if report is not None:
        _lines(t, [live_summary(report, width)])
    lit = _answers(t, snap, (n, bad), version, base, memory)
    if report is not None:  # after what fits, before what is assumed: an incident's next question
        _lines(t, live_lines(report, width))
        t.append("\n")
    if base.readable and not base.note and (base.error is None or base.per_numa):
        _assumed(t, base, memory[0] is not None)
    return hang(t, width), lit


def hang(t: Text, width: int) -> Text:
    """`t` with each line longer than `width` broken at spaces, the rest indented two past the line's own indent:
    a wrapped reason stays under its own text instead of reading as a line of its own at the pane's edge."""
    lines = []
    for line in t.split("\n", allow_blank=True):
        plain = line.plain
        if len(plain) <= width:
            lines.append(line)
            continue
        indent = " " * min(len(plain) - len(plain.lstrip(" ")) + 2, width // 2)
        start, room = 0, width
        while start < len(plain):
            end = len(plain) if len(plain) - start <= room else plain.rfind(" ", start + 1, start + room + 1)
            end = end if end > start else start + room  # no space to break at: cut the word
            lines.append(line[start:end] if start == 0 else Text(indent) + line[start:end])
            start, room = end, width - len(indent)
            while start < len(plain) and plain[start] == " ":
                start += 1
    return Text("\n").join(lines)


def _answers(t: Text, snap, typed: tuple[int | None, str], version: str | None, base,
             memory: tuple[dict[str, int] | None, str]) -> frozenset[int]:
    """What fits, appended to `t`; the CPUs to light. `typed`: N and what is wrong with it; `memory`: the
    memory typed and what is wrong with it (or a note on it)."""
    n, bad = typed
    if not base.readable or base.note:
        t.append(display(f"  {'not known' if not base.readable else 'no exclusive CPUs'}: {base.note}") + "\n\n")
        return frozenset()
    if base.error is not None and not base.per_numa:  # kubelet refuses its own configuration or state
        t.append(display(f"  kubelet: {base.error['kind']}: {base.error['message']}") + "\n", style="bold red")
        t.append(display(f"  why: {reason(base.error)}") + "\n\n")
        return frozenset()
    lit: frozenset[int] = frozenset()
    req, said = memory
    if said:  # what is wrong with the memory typed (the CPUs are then predicted alone), or a note on it
        t.append(display(said + ("" if req else "; the CPUs alone are predicted")) + "\n",
                 style="" if req else "bold")
    if bad:
        t.append(display(bad) + "\n", style="bold")
    elif n is None:
        t.append("type a number of CPUs below: what kubelet would give it lights up on the grid\n", style="italic")
    else:
        ans = request_fit(snap, n, version, req)
        _request(t, n, ans, {c.id: c.numa_node for c in snap.topology.cpus})
        lit = frozenset(ans.cpus or ())
    t.append("\n")
    _per_numa(t, base)
    t.append("\n")
    return lit


def _assumed(t: Text, base, memory_typed: bool = False) -> None:
    for a in base.assumed:
        t.append(display(f"assumed: {a}") + "\n", style="dim")
    t.append("not known from the node's files:\n", style="dim")
    for u in base.unknown:
        if not (memory_typed and u.startswith(MEMORY_UNKNOWN)):  # the memory typed is the next pod's
            t.append(display(f"  - {u}") + "\n", style="dim")


def offgrid_line(where: dict[str, list[int]]) -> str:
    """"CPUs 52-53 below the grid's view: scroll the grid (...)", or "" when every lit CPU is shown."""
    parts = [f"{format_cpuset(cpus)} {side}" for side, cpus in where.items() if cpus]
    if not parts:
        return ""
    n = sum(len(c) for c in where.values())
    return f"CPU{'s' if n != 1 else ''} {', '.join(parts)} the grid's view: scroll the grid (Tab to it, or the mouse)"


class Field(OrderedInput):
    """A field of the pane that leaves '?' to the help: no number of CPUs nor size has one, and Textual drops a
    screen's binding of a key the focused Input would take."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character != "?" and super().check_consume_key(key, character)


class FitScreen(ReportScreen):
    # the typed N keeps the focus: the text beside the grid scrolls with the page keys (at 80x24 it has ~9 rows);
    # before the Input's own page keys (priority), which scroll nothing on one line and hide these from the footer
    BINDINGS = [Binding("escape", "back", "Back", id="fit.back"),
                Binding("pagedown", "page(1)", "More", id="fit.page_down", priority=True),
                Binding("pageup", "page(-1)", "Back up", id="fit.page_up", show=False, priority=True),
                # in `?`: the second field, and how to reach it (Tab goes on to the grid, as before)
                Binding("tab", "app.focus_next", "Next: CPUs, memory, grid", id="fit.next",
                        show=False),
                # '?' is neither a number of CPUs nor a size: from a field too it opens the help (before the Input)
                Binding("question_mark", "app.help", "Help, from a field too", id="fit.help", show=False,
                        priority=True)]

    def __init__(self, view: NodeView) -> None:
        super().__init__(view)
        self._shown: Text | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        with Container(id="fit-main"):
            yield CoreGrid(id="grid")
            with VerticalScroll(id="fit-side"):
                yield Static("", id="fit-offgrid")  # lit CPUs the grid's scroll leaves off screen, said
                yield Static("", id="fit-text")
        # nothing typed is dropped (a filter would read "1.5" as 15): parse_request and parse_memory_field say
        # what is not a number or a size
        with Horizontal(id="fit-inputs"):
            yield Field(placeholder="CPUs (N) of the next container", id="fit-n", max_length=7)
            yield Field(placeholder="memory: 4Gi, 1Gi=2Gi (Tab)", id="fit-mem", max_length=60)
        yield Footer()

    @property
    def grid_widget(self) -> CoreGrid:
        return self.query_one(CoreGrid)

    def on_mount(self) -> None:
        self.query_one("#fit-n", Input).focus()
        grid = self.query_one(CoreGrid)
        self.watch(grid, "scroll_y", lambda *_: self._say_offgrid(), init=False)
        self.watch(grid, "scroll_x", lambda *_: self._say_offgrid(), init=False)
        self.refresh_view()

    def on_resize(self) -> None:
        self.query_one("#fit-main").set_class(self.size.width < 110, "narrow")
        self.call_after_refresh(self.refresh_view)  # the side's width changed: the live view's lines follow

    def _text_width(self) -> int:
        """The columns the pane's text has (its side, less the scroll bar); 60 before the first layout."""
        w = self.query_one("#fit-side", VerticalScroll).scrollable_content_region.width
        return max(30, w - 2) if w else 60

    def refresh_view(self) -> None:
        v = self.view
        self.show_status("what fits")
        grid = self.query_one(CoreGrid)
        grid.set_glyphs(self.nav.big_glyphs)
        lit: frozenset[int] = frozenset()
        if v.snap is not None:
            n, bad = parse_request(self.query_one("#fit-n", Input).value)
            mem_input = self.query_one("#fit-mem", Input)
            memory = parse_memory_field(mem_input.value)
            mem_input.set_class(memory[0] is None and bool(memory[1]), "-invalid")  # the field says it too
            api = v.report.api if v.report is not None else None
            text, lit = fit_text(v.snap, n, bad, api.now.kubelet_version if api is not None else None, v.report,
                                 self._text_width(), memory)
            if text != self._shown:
                self._shown = text
                self.query_one("#fit-text", Static).update(text)
        grid.set_view(v, lit)
        self.call_after_refresh(self._say_offgrid)  # once the grid is laid out for this size

    def _say_offgrid(self) -> None:
        """Lit CPUs the grid does not show at its size and scroll (at 80x24 the last NUMA node is off screen):
        said above the text, or nothing."""
        if not self.is_attached:  # left before the refresh came
            return
        grid = self.query_one(CoreGrid)
        line = offgrid_line(grid.out_of_view(grid.highlight))
        box = self.query_one("#fit-offgrid", Static)
        box.display = bool(line)
        box.update(Text(line, style="bold"))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.refresh_view()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.refresh_view()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_page(self, direction: int) -> None:
        side = self.query_one("#fit-side", VerticalScroll)
        (side.scroll_page_down if direction > 0 else side.scroll_page_up)(animate=False)
