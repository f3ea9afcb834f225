"""A finding's evidence (the file and value it rests on) and its fix, as the few lines every text frontend
shows under its message: `pinscope check`, the findings pane once asked for (f), the node pane. Raw text:
the caller escapes each line as it shows it (collectors.text.display), so nothing is escaped twice.
All of it stays in `snapshot --json` / `check --json` (`evidence`, `hint`)."""
from __future__ import annotations

from collections.abc import Sequence

SHOWN = 3  # evidence lines shown; the rest are counted ("+2 more")


def detail_lines(evidence: Sequence, hint: str | None, shown: int = SHOWN) -> list[str]:
    """-> ["evidence: <file = value>", ..., "fix: <hint>"]: at most `shown` evidence lines and a count of
    the others."""
    ev = [str(e) for e in evidence]
    out = [f"evidence: {e}" for e in ev[:shown]]
    if len(ev) > shown:
        out.append(f"evidence: +{len(ev) - shown} more (--json)")
    if hint:
        out.append(f"fix: {hint}")
    return out
