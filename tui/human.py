"""Values as a person reads them in a pane: never a Python repr (`{'cpu': '500m'}`, `True`, `None`).

Node data is still escaped by the caller (collectors.text.display); these only choose the words.
"""
from __future__ import annotations

from collections.abc import Mapping


def settings(d: Mapping | None) -> str:
    """kubelet options as written on its command line: `full-pcpus-only=true, align-by-socket=false`."""
    return ", ".join(f"{k}={v}" for k, v in d.items()) if d else "-"


def amounts(d: Mapping | None) -> str:
    """Resource amounts as kubectl describes them: `cpu 500m, memory 1Gi`."""
    return ", ".join(f"{k} {v}" for k, v in d.items()) if d else "-"


def yes_no(b: bool | None) -> str:
    return "unknown" if b is None else "yes" if b else "no"


def value(x: object) -> str:
    """A single value; what is not known is a dash, not `None`."""
    return "-" if x is None or x == "" else str(x)
