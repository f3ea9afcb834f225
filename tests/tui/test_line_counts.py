"""The legend's line counts on a cursor move (issue 25) skip wrapping a line that fits: the counts must stay
exactly those of the wrapping they stand for (textwrap for the layout plan, Rich for a Static's shape), or a
pane is cut or the screen relaid out for nothing."""
import io
import random
import textwrap

from rich.console import Console
from rich.text import Text

from pinscope.tui.screens.node import _wrapped_lines
from pinscope.tui.screens.nodelayout import text_lines

ALPHABET = "ab  \t\n-x\u00e9\u4e2d\r\v\u0301"  # spaces, tabs, newlines, wide and combining characters


def _texts(seed: int, n: int):
    rnd = random.Random(seed)
    for _ in range(n):
        yield "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 40))), rnd.randint(0, 14)


def test_text_lines_counts_as_textwrap_does():
    for text, width in _texts(1, 20000):
        want = sum(len(textwrap.wrap(line, max(1, width))) or 1 for line in text.split("\n"))
        assert text_lines(text, width) == want, (text, width)


def test_a_static_shape_counts_as_rich_wraps():
    measure = Console(file=io.StringIO(), width=400, color_system=None)
    for text, width in _texts(2, 5000):
        width = max(1, width)
        assert _wrapped_lines(Text(text), width) == len(Text(text).wrap(measure, width)), (text, width)
    # the legend's own lines: the key (wrapped on a narrow side column) and a cursor line that fits
    key = Text("█ exclusive  ▓ reserved  ▒ shared  ░ isolated  · offline  ? unassigned  \nshade = load")
    assert _wrapped_lines(key, 40) == len(key.wrap(measure, 40)) > 2
    assert _wrapped_lines(Text("cpu7: exclusive  load 3%\n  prod/rt/app"), 40) == 2


def test_the_connect_note_wraps_by_terminal_cells_at_any_width():
    """The grid's note while connecting (a debug pod's state, from the API: any text) wrapped in lines no
    wider than the grid in terminal cells: a wide character takes two (wrapped by characters, a line of
    them ran over the legend beside the grid); at 12 columns (a 40-column terminal) the minimum of 20 cut it."""
    from rich.cells import cell_len

    from pinscope.tui.widgets.coregrid import wrap_cells

    note = "node/trade-xeon-96: debug pod pinscope/pinscope-trade-xeon-96-2bkdj not running yet (中文中文中文中文中文 Pending), 7 s of at most 30 s"
    for width in (11, 15, 39, 47, 69):
        lines = wrap_cells(note, width)
        assert all(cell_len(ln) <= width for ln in lines), (width, lines)
        assert "".join(lines).replace(" ", "") == note.replace(" ", ""), (width, lines)  # nothing lost
        assert lines[-1].endswith("30 s")
    assert wrap_cells("", 40) == [""]
