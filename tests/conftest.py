"""Shared fixtures. The repo root is importable (collectors/, tui/) without an install."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import faulthandler

import pytest


@pytest.fixture(autouse=True)
def _no_test_hangs_forever():
    """A test that hangs dumps every thread's traceback and ends the run after 3 minutes, rather than
    eating CI's 90."""
    faulthandler.dump_traceback_later(180, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
