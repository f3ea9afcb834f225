"""Shortening text to a width without losing the part that names the thing: the middle goes."""
from __future__ import annotations


def elide_middle(text: str, width: int, keep_tail: int = 0) -> str:
    """`text` in at most `width` characters, its middle replaced by "…". The last `keep_tail`
    characters are always kept (a path's file name), the rest split between head and tail."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    room = width - 1
    tail = min(room, max(keep_tail, room // 2))
    head = room - tail
    return text[:head] + "…" + text[len(text) - tail:]


def elide_path(path: str, width: int) -> str:
    """A path in `width` characters, middle elided, the file name whole (when it fits at all)."""
    return elide_middle(path, width, keep_tail=len(path) - path.rfind("/"))
