"""The fleet overview from Prometheus: thousands of nodes, worst first; `/` filters by name; Enter opens
a node live through the usual transport, Esc comes back.

The screen only receives data (messages from the app's Prometheus task) and tells the app which nodes
are on screen. The status line is where Prometheus' own state shows: ok, slow or down (with the age of
what is shown), never a crash.
"""
from __future__ import annotations

import os
import time
from typing import cast

import psutil
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Footer, Static
from pinscope.tui.screens.base import PromNavigator, ReportScreen

from pinscope.collectors.text import display
from pinscope.tui.screens.filtering import FleetFilter, filter_note
from pinscope.tui.widgets.field import OrderedInput
from pinscope.tui.widgets.fleetmap import FleetMap
from pinscope.tui.widgets.promfleetmap import PromFleetMap, PromRow


class FleetData(Message):
    """The aggregates of every node (one refresh)."""

    def __init__(self, nodes: dict, seconds: float) -> None:
        self.nodes, self.seconds = nodes, seconds
        super().__init__()

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FleetData)


class FleetDetail(Message):
    """Per-CPU series of the nodes that were on screen."""

    def __init__(self, cpus: dict) -> None:
        self.cpus = cpus
        super().__init__()


class PromState(Message):
    """ok | slow | down, with a plain message."""

    def __init__(self, state: str, message: str | None) -> None:
        self.state, self.message = state, message
        super().__init__()


class PromFleetScreen(FleetFilter, ReportScreen):
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="promfleet.filter"),
        Binding("escape", "clear", "Clear filter", id="promfleet.clear", show=False),
    ]
    target = None  # the overview shows every node

    @property
    def nav(self) -> PromNavigator:
        return cast("PromNavigator", self.app)

    def __init__(self, url: str, selector: str | None = None) -> None:
        super().__init__()
        self.url, self.selector = url, selector
        self.rows: dict[str, PromRow] = {}
        self.filter_text = ""
        self.state = "connecting"
        self.message: str | None = None
        self.last_ok: float | None = None  # monotonic time of the last good refresh
        self.query_s = 0.0
        self.shown: list[str] = []
        self.proc = psutil.Process(os.getpid())
        self.proc.cpu_percent(None)

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        yield PromFleetMap(id="fleet")
        yield OrderedInput(placeholder="filter: node name; Esc clears", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(PromFleetMap).focus()
        self.set_interval(0.5, self._watch_visible)
        self.set_interval(1.0, self._status)
        self.refresh_view()

    # ---------------------------------------------------------------- data in
    def on_fleet_data(self, msg: FleetData) -> None:
        old = self.rows
        rows = {}
        for name, node in msg.nodes.items():
            r = old.get(name)
            if r is None:
                rows[name] = PromRow(node)
            else:
                r.node = node
                r.generation += 1
                rows[name] = r
        self.rows = rows
        self.last_ok, self.query_s = time.monotonic(), msg.seconds
        self.state, self.message = "ok", None
        self.refresh_view()

    def on_fleet_detail(self, msg: FleetDetail) -> None:
        for name, cpus in msg.cpus.items():
            r = self.rows.get(name)
            if r is not None:
                r.cpus = cpus
                r.generation += 1
        self.query_one(PromFleetMap).refresh()  # the rows' generations changed: their lines repaint

    def on_prom_state(self, msg: PromState) -> None:
        self.state, self.message = msg.state, msg.message
        self._status()

    # ---------------------------------------------------------------- view
    def visible_rows(self) -> list[PromRow]:
        q = self.filter_text.lower()
        return [r for r in self.rows.values() if not q or q in r.node.name.lower()]

    def refresh_view(self) -> None:
        rows = self.visible_rows()
        with self.app.batch_update():
            self.query_one(PromFleetMap).set_views(rows)
            self._status()

    def wanted(self) -> list[str]:
        """Names on screen whose per-CPU map is worth fetching (the app asks)."""
        return self.query_one(PromFleetMap).visible_names()

    def _watch_visible(self) -> None:
        names = self.wanted()
        if names != self.shown:
            self.shown = names
            self.nav.want_detail()

    def _status(self) -> None:
        t = Text()
        n = len(self.rows)
        down = sum(1 for r in self.rows.values() if r.node.read_ok is False)
        crit = sum(1 for r in self.rows.values() if r.node.findings.get("critical"))
        warn = sum(1 for r in self.rows.values() if r.node.findings.get("warning") and not r.node.findings.get("critical"))
        age = time.monotonic() - self.last_ok if self.last_ok is not None else None
        if self.state == "ok":
            t.append(f" Prometheus ok ({self.query_s:.1f} s)", style="bold")
        elif self.state == "connecting":
            t.append(display(f" asking {self.url} …"), style="bold")
        else:
            t.append(display(f" Prometheus {self.state.upper()}: {self.message}"), style="bold")
            t.append(f" — data from {age:.0f} s ago" if age is not None else " — no data yet")
        t.append(f" · {n:,} nodes · ✖ {crit:,} critical ▲ {warn:,} warning ○ {down:,} unreadable")
        if self.filter_text:
            t.append(filter_note(" · ", self.filter_text, f"{len(self.query_one(PromFleetMap).views):,}"))
        t.append(f" · pinscope {self.proc.cpu_percent(None):.0f} % CPU")
        st = self.query_one("#status", Static)
        st.set_class(self.state in ("down", "slow"), "down")
        st.update(t)

    # ---------------------------------------------------------------- keys
    def on_fleet_map_open(self, msg: FleetMap.Open) -> None:
        self.nav.open_prom_node(msg.target)

    def filter_map(self) -> PromFleetMap:
        return self.query_one(PromFleetMap)
