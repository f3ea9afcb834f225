"""collectors/text.py's list of what a terminal must never receive (Unicode categories Cc, Cf, Zl, Zp),
checked against unicodedata, as its comment says (issue 35: the comment named this file before it existed).
The list is Unicode 15's; this Python's unicodedata may be older, so a code point it does not know yet
(category Cn) may stand in the list."""
import sys
import unicodedata

from pinscope.collectors.text import CONTROL

WANTED = {"Cc", "Cf", "Zl", "Zp"}


def test_every_control_format_and_separator_code_point_is_escaped():
    missing = [f"U+{c:04X}" for c in range(sys.maxunicode + 1)
               if unicodedata.category(chr(c)) in WANTED and not CONTROL.match(chr(c))]
    assert missing == []


def test_nothing_else_is_escaped():
    other = [f"U+{c:04X} {unicodedata.category(chr(c))}" for c in range(sys.maxunicode + 1)
             if CONTROL.match(chr(c)) and unicodedata.category(chr(c)) not in WANTED | {"Cn"}]
    assert other == []
