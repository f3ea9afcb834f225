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
