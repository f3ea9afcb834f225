"""The fleet screens' filter, one behaviour for both (the fleet read over SSH or the API, and the fleet read
from Prometheus): `/` opens the input, each key narrows the map, Enter keeps the filter and goes back to the
map, Esc clears it. The status line shows what was typed escaped (collectors.text.display): it is the user's
own text, but a pasted control character must not reach the terminal."""
from __future__ import annotations

from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input

from pinscope.collectors.text import display


def filter_note(sep: str, text: str, shown: str) -> str:
    """The status line's words for a filter: `sep` before them, `shown` the count as the screen writes it."""
    return display(f"{sep}filter {text!r}: {shown} shown")


class FleetFilter(Screen):
    """The base of both fleet screens (before their own): an Input#filter, a map (`filter_map`) and
    `refresh_view` are theirs, and their __init__ sets `filter_text`."""

    filter_text: str

    def filter_map(self) -> Widget:
        raise NotImplementedError

    def refresh_view(self) -> None:
        raise NotImplementedError

    def _filter_input(self) -> Input:
        return self.query_one("#filter", Input)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.refresh_view()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._filter_input().remove_class("visible")
        self.filter_map().focus()

    def action_filter(self) -> None:
        inp = self._filter_input()
        inp.add_class("visible")
        inp.focus()

    def action_clear(self) -> None:
        inp = self._filter_input()
        inp.value = ""
        self.filter_text = ""
        inp.remove_class("visible")
        self.filter_map().focus()
        self.refresh_view()
