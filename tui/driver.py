"""Textual's Linux driver, mended for a terminal that goes away (a closed window, a dropped SSH session).

A hang-up sends SIGHUP and then SIGCONT, and every write to the gone terminal fails with EIO. Two things
Textual's driver does there left pinscope running for good, its probe with it (tests/e2e/test_tmux.py, 1 close
in ~300 during start-up; tests/e2e/test_hangup.py stops it at the moments):
- its SIGCONT handler starts application mode again whatever came before, so the hang-up's SIGCONT started a
  second input thread (spinning on the dead terminal, as the first) and a second writer thread;
- a writer thread ends at the first write the terminal refuses, and its queue holds 30 writes: the main
  thread's 31st write then waits for ever. Before the loop took the SIGHUP, nothing ended the program (not
  even the exit watchdog, which the SIGHUP arms); after it, the orderly end took the watchdog's 10 s.
Here a SIGCONT resumes only what our own SIGTSTP suspended, and output to a gone terminal is dropped, so the
writer lives on, its queue drains, and the SIGHUP's orderly end ends at once.
"""
from __future__ import annotations

import errno
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver


class _DropWhenGone:
    """The terminal's file, as the writer thread sees it: a write or flush the hung-up terminal refuses (EIO)
    is dropped, and so is every one after it (a hang-up is for good); other errors drop that write only."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._file.write(text)
            except OSError as err:
                self.gone = err.errno == errno.EIO
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except OSError as err:
                self.gone = err.errno == errno.EIO

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return not self.gone and self._file.isatty()


class TerminalDriver(LinuxDriver):
    """LinuxDriver that survives its terminal's hang-up (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._file is not None:
            self._file = _DropWhenGone(self._file)  # type: ignore[assignment]  # the writer thread's file

    def _sigcont_application(self, *_: Any) -> None:
        # Textual's flag for "our SIGTSTP suspended application mode and it is to come back"; any other SIGCONT
        # (the kernel's after SIGHUP on a hang-up, `kill -CONT`, a SIGSTOP's end) finds it running: nothing to do
        if self._must_signal_resume:
            super()._sigcont_application()
