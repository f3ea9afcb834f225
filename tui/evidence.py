"""A finding's evidence (the file and value it rests on) and its fix, as the few lines every text frontend
shows under its message: `pinscope check`, the findings pane once asked for (f), the node pane. Raw text:
the caller escapes each line as it shows it (collectors.text.display), so nothing is escaped twice.
All of it stays in `snapshot --json` / `check --json` (`evidence`, `hint`)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pinscope.collectors.text import display

if TYPE_CHECKING:
    from rich.text import Text

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


def finding_text(f) -> Text:
    """One finding whole, as the CPU and container panes show the findings naming them: its message (bold),
    then its evidence and fix (dim), each line escaped. (rich imported here: `pinscope check` imports this
    module for detail_lines and draws nothing.)"""
    from rich.text import Text

    t = Text()
    t.append(display(f"{f.severity}: {f.code}: {f.message}") + "\n", style="bold")
    for line in detail_lines(f.evidence, f.hint):
        t.append(display(f"  {line}") + "\n", style="dim")
    return t
