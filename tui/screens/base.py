"""What every screen that draws the report has, declared once: the app reaches screens through this type,
not by asking an object what it happens to have (no getattr/hasattr between the app and its screens)."""
from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from tui.app import PinscopeApp


class ReportScreen(Screen):
    """A screen drawn from node reports. `target`: the node it shows (None: every node, the overview);
    the app calls `refresh_view()` when that node's data or the theme changed."""

    target: str | None = None
    grid_widget = None  # the core grid, on the screens that have one
    filter_text = ""  # what the user filters by, on the screens that filter

    @property
    def pinscope(self) -> PinscopeApp:
        """The app, typed: its views, targets and navigation."""
        return cast("PinscopeApp", self.app)

    def refresh_view(self) -> None:
        raise NotImplementedError
