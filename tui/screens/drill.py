"""The base of every drill-down pane: Esc goes back; it re-renders on each update of its node."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static
from pinscope.tui.screens.base import ReportScreen

from pinscope.tui.widgets.sparkbar import sparkbar  # noqa: F401  (re-exported for the panes)


class DrillScreen(ReportScreen):
    BINDINGS = [Binding("escape", "back", "Back", id="drill.back")]

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        with VerticalScroll():
            yield from self.body()
        yield Footer()

    def body(self) -> ComposeResult:
        yield Static("")

    def on_mount(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        self.show_status(self.title_text())
        self.render_body()

    def title_text(self) -> str:
        return ""

    def render_body(self) -> None:
        pass

    def action_back(self) -> None:
        self.app.pop_screen()
