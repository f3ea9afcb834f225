"""pinscope collectors: everything that knows Linux and Kubernetes.

Headless by contract: nothing here imports textual, rich, tui or themes (tests/collectors/test_headless.py).
Data flows one way: probe -> transport -> frames -> parse -> assemble -> rates -> findings -> pipeline
(the floors: [tool.importlinter] in pyproject.toml).
"""
from pathlib import Path

PROBE_PATH = Path(__file__).with_name("probe.sh")


def probe_text() -> str:
    """The probe's constant text, exactly as it is sent to a node."""
    return PROBE_PATH.read_text(encoding="utf-8")
