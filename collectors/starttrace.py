"""Start-up phases, for bench/bench_start.py: with PINSCOPE_TRACE_START=PATH, each `mark(phase)` appends
`phase <epoch seconds>` to PATH (the bench subtracts the time it started the process). Unset: nothing.
cli/__init__.py (the command line) imports this module first: its import notes "interpreter up"."""
from __future__ import annotations

import os
import time

_PATH = os.environ.get("PINSCOPE_TRACE_START")
_seen: set[str] = set()


def mark(phase: str) -> None:
    """Note `phase` once (its first time) when tracing; free otherwise."""
    if not _PATH or phase in _seen:
        return
    _seen.add(phase)
    try:
        with open(_PATH, "a", encoding="utf-8") as f:
            f.write(f"{phase} {time.time():.6f}\n")
    except OSError:
        pass


mark("interpreter up")
