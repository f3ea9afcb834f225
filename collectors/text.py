"""Node bytes -> display text: the one place every text frontend (check, snapshot text, the TUI, exports,
logs, error lines) turns names and content from a node into something safe to put on a terminal.

Any byte but NUL can be in a name on a node: a /var/log/pods directory, a cgroup leaf, a process's comm
(15 bytes any unprivileged user can set with prctl(PR_SET_NAME)), an IRQ's device name. Printed raw, an
escape sequence clears or recolours the screen, retitles the terminal or hides a line; a bidi override
makes "evil" read as "live". So, as `ls -b` does, control characters are shown escaped:
  \\a \\b \\t \\n \\v \\f \\r        the C escapes
  \\033 \\177 ...             other C0 controls and DEL, in octal
  \\x85 \\u202e \\U000e0041   C1 controls, format characters (bidi overrides and isolates, zero-width
                            characters, soft hyphen, tag characters), line and paragraph separators
  \\\\                        a backslash, so that every escape above reads one way only
Everything else (letters of any script, U+FFFD for bytes that were not UTF-8) is shown as is.

JSON keeps the exact content (json.dumps escapes controls as \\u001b): only text is escaped, at the
moment it is shown, never in the model. `display` is cheap on ordinary text (one regex search).
"""
from __future__ import annotations

import re

# Unicode categories Cc (controls), Cf (format), Zl, Zp; the Cf list is Unicode 15's, checked against
# unicodedata by tests/collectors/test_text.py
_RANGES = (
    "\x00-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
CONTROL = re.compile(f"[{_RANGES}]")  # what a terminal must never receive from a node
_BAD = re.compile(f"[{_RANGES}\\\\]")  # and the backslash, escaped so that every escape reads one way
_C = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v", "\f": "\\f", "\r": "\\r", "\\": "\\\\"}


def _one(m: re.Match) -> str:
    c = m.group()
    e = _C.get(c)
    if e is not None:
        return e
    o = ord(c)
    if o < 0x20 or o == 0x7F:
        return f"\\{o:03o}"
    if o <= 0xFF:
        return f"\\x{o:02x}"
    if o <= 0xFFFF:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def display(s: object) -> str:
    """Any value (usually a name or a line made from names) -> text safe for a terminal, escaped like
    `ls -b`. None -> ""."""
    if s is None:
        return ""
    if not isinstance(s, str):
        s = str(s)
    if _BAD.search(s) is None:
        return s
    return _BAD.sub(_one, s)


def display_lines(lines) -> str:
    """Lines of a text report (each may hold node names) -> one text, every line escaped on its own."""
    return "\n".join(display(line) for line in lines)


def has_control(s: str) -> bool:
    """Does this text hold a control character (what `display` escapes, the backslash aside)?"""
    return CONTROL.search(s) is not None
