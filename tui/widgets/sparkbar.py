"""A text sparkline (one character per sample), for table cells and one-line summaries."""
from __future__ import annotations

BARS = "▁▂▃▄▅▆▇█"


def sparkbar(values, width: int = 20, top: float | None = None) -> str:
    vals = list(values)[-width:]
    if not vals:
        return ""
    hi = top if top is not None else max(vals)
    if hi <= 0:
        return BARS[0] * len(vals)
    return "".join(BARS[min(len(BARS) - 1, int(v / hi * (len(BARS) - 1) + 0.5))] for v in vals)
