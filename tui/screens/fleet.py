"""The fleet overview: every node as a mini core map, worst first; filter by name or label; Enter opens
the node's full grid, Esc comes back. The status line counts nodes up / stale / down and shows
pinscope's own CPU and memory."""
from __future__ import annotations

import os
import time

import psutil
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static
from pinscope.tui.screens.base import FleetBase

from pinscope.tui.screens.filtering import FleetFilter, filter_note
from pinscope.tui.widgets.field import OrderedInput
from pinscope.tui.widgets.fleetmap import FleetMap


class FleetScreen(FleetFilter, FleetBase):
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="fleet.filter"),
        Binding("escape", "clear", "Clear filter", id="fleet.clear", show=False),
    ]
    target = None  # the fleet shows every node

    def __init__(self) -> None:
        super().__init__()
        self.filter_text = ""
        self.proc = psutil.Process(os.getpid())
        self.proc.cpu_percent(None)
        self._last_self = (time.monotonic(), 0.0, 0)

    def compose(self) -> ComposeResult:
        yield Static("", id="status")
        yield FleetMap(id="fleet")
        yield OrderedInput(placeholder="filter: node name, group or label (k=v); Esc clears", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FleetMap).focus()
        self.refresh_view()

    def visible_views(self) -> list:  # not `visible`: that is Textual's DOMNode.visible property
        out = []
        for t in self.nav.targets:
            v = self.nav.views[t]
            spec = self.nav.spec(t)
            if self.filter_text and not (self.filter_text.lower() in v.name.lower()
                                         or (spec is not None and spec.matches(self.filter_text))):
                continue
            out.append(v)
        return out

    def refresh_view(self) -> None:
        views = self.visible_views()
        self.query_one(FleetMap).set_views(views)
        allv = list(self.nav.views.values())
        n = {s: sum(1 for v in allv if v.state == s) for s in ("up", "stale", "down", "connecting")}
        now = time.monotonic()
        t0, cpu, rss = self._last_self
        if now - t0 > 1.0 or not rss:
            cpu = self.proc.cpu_percent(None)
            rss = self.proc.memory_info().rss
            self._last_self = (now, cpu, rss)
        t = Text()
        t.append(f" fleet: {len(allv)} nodes  ", style="bold")
        t.append(f"● {n['up']} up  ◐ {n['stale']} stale  ○ {n['down']} down  … {n['connecting']}")
        t.append(f"   pinscope: {cpu:.0f} % CPU, {rss / 2**20:.0f} MiB")
        if self.filter_text:
            t.append(filter_note("   ", self.filter_text, str(len(views))))
        rs = self.nav.replay_status
        if rs:
            t.append("   " + rs, style="bold")
        self.query_one("#status", Static).update(t)

    def on_fleet_map_open(self, msg: FleetMap.Open) -> None:
        self.nav.open_node(msg.target)

    def filter_map(self) -> FleetMap:
        return self.query_one(FleetMap)
