"""keymap.toml's binding ids: the ones pinscope has, so an id it does not have is said, not silently ignored."""
from __future__ import annotations

import importlib
import pkgutil
import sys

from textual.binding import Binding


def known_binding_ids() -> set[str]:
    """Every `id=` of a Binding in pinscope's own classes (app, screens, widgets, replay, Prometheus view)."""
    import pinscope.tui
    for mod in pkgutil.walk_packages(pinscope.tui.__path__, "pinscope.tui."):
        try:
            importlib.import_module(mod.name)
        except Exception:  # noqa: BLE001 -- an optional part that cannot load has no bindings to offer
            continue
    ids: set[str] = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith("pinscope.tui.") or module is None:
            continue
        for obj in vars(module).values():
            if isinstance(obj, type) and obj.__module__ == name:
                for b in getattr(obj, "BINDINGS", []) or []:
                    if isinstance(b, Binding) and b.id:
                        ids.add(b.id)
    return ids


def unknown_ids_line(keymap: dict[str, str], path) -> str | None:
    """One line naming the ids of keymap.toml that no binding has (None when all are known)."""
    unknown = sorted(set(keymap) - known_binding_ids())
    if not unknown:
        return None
    return (f"keymap {path}: unknown binding id{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(u) for u in unknown)} ignored (the ids are listed in the help, ?)")
