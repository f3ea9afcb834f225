"""Talk to the kubelet oracle (tests/kubeletsim): one long-lived process per release, cases
written as JSON lines, answers read back one line per case.

A case on which kubelet's own code does not return (kind "Hang") makes the oracle exit after
saying so; the driver starts a new one for the cases after it.
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

try:
    from .build import build, go_available  # type: ignore[import-not-found]
except ImportError:  # run as a script, or imported as a top-level module
    from build import build, go_available  # type: ignore[import-not-found,no-redef]

__all__ = ["Oracle", "build", "go_available"]


class Oracle:
    def __init__(self, release: str, binary: Path | None = None, hang_timeout: float = 5.0):
        self.release = release
        self.binary = binary or build(release)
        self.hang_timeout = hang_timeout
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        self.proc = subprocess.Popen(
            [str(self.binary), f"-timeout={self.hang_timeout}s"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        )
        return self.proc

    def ask(self, case: dict) -> dict:
        """One case, one answer."""
        return self.ask_many([case])[0]

    def ask_many(self, cases: list[dict]) -> list[dict]:
        """Many cases through one process: written by a thread while the answers are read."""
        out: list[dict] = []
        i = 0
        while i < len(cases):
            proc = self.proc if self.proc and self.proc.poll() is None else self._start()
            assert proc.stdin is not None and proc.stdout is not None
            batch = cases[i:]
            stdin = proc.stdin

            def feed(batch=batch, stdin=stdin) -> None:
                try:
                    for c in batch:
                        stdin.write(json.dumps(c) + "\n")
                    stdin.flush()
                except (BrokenPipeError, OSError, ValueError):
                    pass

            writer = threading.Thread(target=feed, daemon=True)
            writer.start()
            for _ in batch:
                line = proc.stdout.readline()
                if not line:
                    break
                answer = json.loads(line)
                out.append(answer)
                i += 1
                if (answer.get("error") or {}).get("kind") == "Hang":
                    break
            writer.join(timeout=0.1)
            if i < len(cases):
                # the oracle exited (after a hang); the next round starts a new one
                self.close()
        return out

    def close(self) -> None:
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            if p.stdin:
                p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stdout:
            p.stdout.close()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
