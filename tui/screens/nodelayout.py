"""The node screen by priority, as pure functions (no Textual): what goes where at a given size.

At any size: the node, its state and its critical and warning counts (the status line, fitted to the
width part by part, never wrapped or cut mid-count), then the worst finding in one line; then the grid;
then, as room allows, the findings, the pod list and the legend. Labels are shortened before they are
dropped (the pod list loses its namespace and NUMA columns, the findings their severity words), the
legend goes before the findings, and the help line says what was folded away and which key shows it.

Two arrangements: "side" (grid | legend + pods, the findings under both) and "stacked" (the grid over the
whole width, sized to its rows; legend + pods | findings under it), taken when the grid fits that way
and leaves the tables some room (a war-room screen; a small node on a laptop).
"""
from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pinscope.collectors.text import display
from pinscope.tui.evidence import detail_lines

CHROME = 4  # status line, worst finding, help line, footer
SEV_RANK = {"critical": 0, "warning": 1, "info": 2}
MARK = {"critical": "✖", "warning": "▲", "info": "·"}
SEV_MARK = {"critical": "✖ critical", "warning": "▲ warning", "info": "· info"}


@dataclass(frozen=True, slots=True)
class Plan:
    stacked: bool  # grid over the full width, the tables under it
    grid_rows: int | None  # stacked: the rows the grid takes
    side: int  # width of the legend + pods column
    findings: int  # lines the findings pane takes (0: no findings)
    findings_width: int
    legend: bool
    folded: tuple[str, ...]  # what did not fit, for the help line


def side_width(w: int) -> int:
    return max(28, min(60, w * 2 // 5))


def plan(w: int, h: int, grid_rows: Callable[[int, int], int | None], finding_lines: Callable[[int], int],
         n_pods: int, legend_lines: Callable[[int], int], expanded: bool = False) -> Plan:
    """grid_rows(width, height): the rows the grid needs there, None if it must scroll; finding_lines(width):
    the findings' wrapped lines at that pane width (0: none); legend_lines(width): the legend's lines."""
    body = max(1, h - CHROME)
    side = side_width(w)
    pods_min = 1 + min(n_pods, 3) if n_pods else 1  # the header and a few pods
    # stacked: the grid over the whole width, when it fits and leaves the tables their minimum
    flines = finding_lines(w - (side if w >= 120 else w // 2))
    below_min = max(pods_min, min(flines, 4)) + 1  # + the border over the tables
    # what the tables would like: their lines, up to a third of a big screen (the grid grows into the rest)
    below_want = max(below_min, min(max(flines, 1 + n_pods + legend_lines(side - 3)), body // 3) + 1)
    rows = grid_rows(w, body - below_want) if body - below_want >= 4 else None
    if rows is None and below_want > below_min and body - below_min >= 4:
        rows = grid_rows(w, body - below_min)
    if rows is not None:
        side = side if w >= 120 else w // 2  # a narrow screen: the pod names need half of it
        below = body - rows - 1
        legend = below - legend_lines(side - 3) >= pods_min
        folded = _folded(legend, flines, below, expanded)
        return Plan(True, rows, side, below if flines else 0, w - side, legend, folded)
    # side by side: the findings under both, as many lines as they need up to a quarter of the screen
    flines = finding_lines(w)
    cap = body // 2 if expanded else max(3, body // 4)
    fh = min(flines + 1, cap) if flines else 0  # + its border
    col = body - fh
    legend = col - legend_lines(side - 3) >= pods_min
    return Plan(False, None, side, fh, w, legend, _folded(legend, flines, max(0, fh - 1), expanded))


def _folded(legend: bool, flines: int, shown: int, expanded: bool) -> tuple[str, ...]:
    out = []
    if flines > shown:
        out.append("f: all findings" if not expanded else "findings scroll")
    if not legend:
        out.append("legend folded (? help)")
    return tuple(out)


# ---------------------------------------------------------------------------------------------- text
def fit(parts: Sequence[str], width: int, sep: str = "  ") -> str:
    """The parts in order, as many as fit `width` (a part that does not fit is left out whole, the
    ones after it still tried): a line that never wraps and never cuts a number in two."""
    out = ""
    for p in parts:
        if not p:
            continue
        cand = p if not out else out + sep + p
        if len(cand) <= width:
            out = cand
    return out


def worst_first(findings: Sequence) -> list:
    """The findings, the most severe first (stable: the checks' own order within a severity)."""
    return sorted(findings, key=lambda f: SEV_RANK.get(str(f.severity), 9))


def worst_line(findings: Sequence, width: int) -> str:
    """The worst finding in one line, escaped: mark, code and the start of its message (the whole one is
    in the findings pane and its evidence)."""
    if not findings:
        return "✔ no findings"
    f = worst_first(findings)[0]
    more = len(findings) - 1
    tail = f"  (+{more} more)" if more and width >= 100 else ""  # narrower: the counts are on the line above
    text = f"{MARK.get(str(f.severity), '?')} {f.code}  {display(f.message)}"  # escaped: one line
    room = max(8, width - len(tail))
    if len(text) > room:
        text = text[:room - 1] + "…"
    return text + tail


def wrap(text: str, width: int, max_lines: int | None = None) -> list[str]:
    """Text (already escaped: no line breaks of its own) in lines of `width`, broken at spaces."""
    lines = textwrap.wrap(text, max(8, width), break_long_words=True) or [""]
    if max_lines is not None and len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][:max(1, width - 1)] + "…"
    return lines


def finding_rows(findings: Sequence, width: int, detail: bool = False) -> list[tuple]:
    """The findings pane's rows at this width, the worst first, each message escaped and wrapped (never
    cut): wide, (severity, code, message lines); narrow, (mark, "CODE  message" lines). `detail` (the pane
    asked for, f): each message followed by its evidence, the file and value, and its fix (tui/evidence.py)."""
    out: list[tuple] = []
    fs = worst_first(findings)

    def more(f, room: int) -> list[str]:
        if not detail:
            return []
        return ["  " + ln for d in detail_lines(f.evidence, f.hint) for ln in wrap(display(d), room - 2)]

    if width >= 100:
        code_w = max((len(f.code) for f in fs), default=4)
        room = width - 10 - code_w - 8  # the severity and code columns, each column's padding
        for f in fs:
            out.append((SEV_MARK.get(str(f.severity), str(f.severity)), f.code,
                        wrap(display(f.message), room) + more(f, room)))
    else:
        for f in fs:
            out.append((MARK.get(str(f.severity), "?"), wrap(display(f"{f.code}  {f.message}"), width - 7)
                        + more(f, width - 7)))
    return out


def text_lines(text: str, width: int) -> int:
    """How many lines `text` takes in a Static `width` wide (each of its lines wrapped at words). A line that
    fits (no tab to expand) is one line, without wrapping it: a cursor move counts the legend's."""
    w = max(1, width)
    return sum(1 if len(line) <= w and "\t" not in line else (len(textwrap.wrap(line, w)) or 1)
               for line in text.split("\n"))
