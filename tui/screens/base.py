"""What a screen may have and ask, declared once.

A screen that draws one node gets that node's `NodeView` (tui/state.py: the typed projection of its
NodeReports) when it is made, and reads only that. What it may ask of the app that shows it (the other
nodes' views for the overview, where to go next, what to collect deeper while it is open) is the
`Navigator` protocol below; the app implements it. Screens use Textual's own App API on `self.app`
(pop_screen, notify, batch_update) and nothing else of it: no getattr/hasattr, no untyped reach into the
app (tests/tui/test_typed_screens.py checks both).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from pinscope.collectors.findings import Finding
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.tui.state import NodeView
    from pinscope.tui.widgets.coregrid import CoreGrid


class Navigator(Protocol):
    """The app, as its screens see it."""

    grid_shade: str  # "load" or "noise": what the core grid's shade shows (the node screen toggles it)

    @property
    def targets(self) -> list[str]: ...  # the watched nodes' names, in order

    @property
    def views(self) -> Mapping[str, NodeView]: ...  # every node's view (the overview draws them all)

    @property
    def big_glyphs(self) -> bool: ...  # the war-room theme: glyphs that read across a room

    @property
    def replay_status(self) -> str | None: ...  # where in a recording we are (None: live)

    def spec(self, name: str) -> NodeTarget | None: ...  # a node's target (its inventory labels, groups)

    def want_detail(self) -> None: ...  # the overview shows other nodes now: fetch their detail

    def open_node(self, target: str) -> None: ...

    def switch_node(self, step: int) -> None: ...

    def back_to_fleet(self) -> bool: ...

    def open_cpu(self, target: str, cpu: int) -> None: ...

    def open_cpu_or_container(self, target: str, cpu: int) -> None: ...

    def open_container(self, target: str, uid: str, cid: str | None, name: str | None) -> None: ...

    def open_node_info(self, target: str) -> None: ...

    def open_fit(self, target: str) -> None: ...  # the "what fits" pane (kubelet's next decision)

    def open_finding(self, target: str, f: Finding) -> None: ...

    def set_focus_container(self, target: str, cid: str | None) -> None: ...  # read it all, every tick

    def set_focus_cpu(self, target: str, cpu: int | None) -> None: ...  # its tasks' wait, its IPIs, every tick


class PromNavigator(Navigator, Protocol):
    """The app behind the Prometheus overview: it also opens a node by its Prometheus name."""

    def open_prom_node(self, name: str) -> None: ...


class ReportScreen(Screen):
    """A screen drawn from node reports. `target`: the node it shows (None: every node, the overview);
    the app calls `refresh_view()` when that node's data or the theme changed."""

    target: str | None = None
    filter_text = ""  # what the user filters by, on the screens that filter

    def __init__(self, view: NodeView | None = None) -> None:
        super().__init__()
        self._view = view
        if view is not None:
            self.target = view.target

    @property
    def view(self) -> NodeView:
        """The node this screen draws (the overview has none)."""
        if self._view is None:
            raise LookupError(f"{type(self).__name__} draws every node, not one")
        return self._view

    @property
    def grid_widget(self) -> CoreGrid | None:
        """The core grid, on the screens that have one."""
        return None

    @property
    def nav(self) -> Navigator:
        """The app, as a Navigator: the only part of it a screen may ask for."""
        return cast("Navigator", self.app)

    def refresh_view(self) -> None:
        raise NotImplementedError

    def show_status(self, title: str) -> None:
        """A one-node screen's status line (#status): the node, its state (or the replay's time) and `title`."""
        from rich.text import Text
        from textual.widgets import Static

        from pinscope.collectors.text import display

        v = self.view
        st = self.query_one("#status", Static)
        st.set_class(v.state == "stale", "stale")
        st.set_class(v.state == "down", "down")
        state = self.nav.replay_status if v.state == "up" else None
        st.update(Text(display(f" {v.name}  {state or v.state}{': ' + v.message if v.message else ''}")
                       + f"  —  {title}"))


class FleetBase(ReportScreen):
    """The many-node overview (screens.fleet.FleetScreen). The app tells it by this class, so the overview's
    module (psutil, the fleet map) is imported only when an overview is shown, not before a first grid."""

    target = None  # the overview shows every node
