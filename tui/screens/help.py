"""Help, generated from the bindings in force (the app's, the screen's, the focused widget's)."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def binding_rows(app, screen) -> list[tuple[str, str, str]]:
    """(keys, description, id) for every binding with a description, from the app, the screen below
    the help and the widgets of that screen: the help is never a hand-kept copy."""
    seen: dict[str, tuple[str, str, str]] = {}
    sources = [app, screen]
    sources += list(screen.walk_children()) if screen is not None else []
    for src in sources:
        owner = next((c for c in type(src).__mro__ if "BINDINGS" in vars(c)), type(src))
        if src is not app and not owner.__module__.startswith("pinscope.tui."):
            continue  # Textual's own widgets (tables, inputs; ours built on them) carry their editing keys
        for b in type(src).BINDINGS:
            if not isinstance(b, Binding) or not b.description:
                continue
            key = app.keymap_in_force.get(b.id, b.key) if b.id else b.key  # keymap.toml in force
            keys = ", ".join(app.get_key_display(Binding(k.strip(), b.action)) for k in key.split(","))
            seen.setdefault(b.id or b.action, (keys, b.description, b.id or ""))
    return list(seen.values())


CLOSE = Binding("escape,question_mark,q", "dismiss", "Close help", id="help.close")


def close_keys(rows: list[tuple[str, str, str]]) -> str:
    """The keys that close the help, as keymap.toml has them ("esc, ? or q"), from the help's own binding
    rows (binding_rows of the help screen: the one door to the app's keymap): the help says them first."""
    keys = next(k for k, _, bid in rows if bid == CLOSE.id)  # "esc, ?, q": one key's display has no ", "
    head, _, last = keys.rpartition(", ")
    return f"{head} or {last}" if head else last


class HelpScreen(ModalScreen):
    BINDINGS = [CLOSE]

    def __init__(self, under) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("pinscope — keys\n", style="bold")
        t.append(f"{close_keys(binding_rows(self.app, self))}: close this help\n\n", style="italic")
        for keys, desc, bid in binding_rows(self.app, self.under):
            t.append(f"  {keys:<22}", style="bold")
            t.append(f"{desc:<28}")
            t.append(f"{bid}\n", style="dim")
        t.append(f"  {'ctrl+p':<22}", style="bold")
        t.append("Command palette (themes, keys, quit)\n")
        t.append("\nMouse: click a CPU to move the cursor, click it again (or double-click) to drill down.\n")
        t.append("Keys can be remapped in ~/.config/pinscope/keymap.toml (binding id = \"key\").\n")
        with VerticalScroll():
            yield Static(t)
