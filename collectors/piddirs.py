"""Directories named for the process that made them (`PREFIX<pid>-XXXXXXXX`, tempfile.mkdtemp: 0700), and
the sweep of those whose process is gone: what a pinscope killed with SIGKILL leaves behind is removed by
the next pinscope of the same user that would make one. Used for the demo's trees (sim/demo.py) and for the
kubernetes client's copies of a kubeconfig's credentials (kubefiles.py).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def make(prefix: str, where: str | None = None) -> Path:
    """A new directory of this process, 0700, in `where` (None: tempfile's default, TMPDIR or /tmp)."""
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=where))


def stale(where: str, prefix: str) -> list[Path]:
    """The directories in `where` of processes that died without removing them: named `prefix<pid>-...`,
    owned by this user, that process gone. A pid in use again by another process keeps its directory (the
    next sweep after that one ends takes it)."""
    found = []
    try:
        entries = list(os.scandir(where))
    except OSError:
        return []
    for e in entries:
        pid = e.name[len(prefix):].split("-", 1)[0] if e.name.startswith(prefix) else ""
        try:
            if not pid.isdigit() or e.is_symlink() or not e.is_dir() or e.stat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            found.append(Path(e.path))
        except OSError:  # alive (EPERM: another user's process), or the entry went meanwhile
            continue
    return found


def sweep(paths: list[Path]) -> None:
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)
