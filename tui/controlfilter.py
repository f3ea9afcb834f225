"""The TUI's last line of defence against node bytes: a Textual line filter that drops any control
character still in a painted segment.

Screens show node names through collectors.text.display (escaped like `ls -b`, so they stay readable); this
filter is the net under that: if a string ever reaches a widget unescaped, its ESC, BEL, C1 or bidi
characters are removed before the terminal sees them, so they cannot clear, recolour or retitle it. Those
characters are zero cells wide, so removing them never shifts the layout. Textual's own escape sequences
are written by its driver after the filters run, never inside segment text.
"""
from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from pinscope.collectors.text import CONTROL


class DropControlCharacters(LineFilter):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        search = CONTROL.search
        if search("".join([s.text for s in segments])) is None:  # one scan of the line: the usual case
            return segments
        return [Segment(CONTROL.sub("", s.text), s.style, s.control) if search(s.text) else s for s in segments]
