"""`pinscope --prometheus URL [--selector LABELS]`: the fleet overview fed by PromQL, for fleets of thousands.

One long-lived task asks Prometheus for the per-node aggregates every refresh and, between refreshes,
for the per-CPU series of the nodes on screen when they change (scrolling, filtering). Enter opens a node
live through the usual transport (SSH to the host template: {name}, or {ip} when kube-state-metrics'
kube_node_info is in Prometheus, as --kube does; `node/{name}` goes through the Kubernetes API); Esc comes
back and that node's connection is closed.
"""
from __future__ import annotations

import asyncio
import contextlib
import time

from pinscope.collectors.aio import within
from pinscope.collectors.collect import Options
from pinscope.collectors.errors import PinscopeError
from pinscope.collectors.fleet import NodeTarget
from pinscope.collectors.promql import PromError, PromSource
from pinscope.tui.app import PinscopeApp
from pinscope.tui.screens.promfleet import FleetData, FleetDetail, PromFleetScreen, PromState
from pinscope.tui.state import NodeView


class PromApp(PinscopeApp):
    def __init__(self, source: PromSource, opts: Options = Options(), interval: float = 1.0, refresh: float = 5.0,
                 theme: str = "dark", host_template: str = "{name}", user: str | None = None,
                 selector: str | None = None) -> None:
        super().__init__([], opts, interval, theme)
        self.source, self.opts, self.refresh_s = source, opts, refresh
        self.host_template, self.user = host_template, user
        self.overview = PromFleetScreen(source.url, selector)
        self.live_workers: dict = {}
        self._wake = asyncio.Event()

    def _start(self) -> None:
        """Not PinscopeApp's: no node tasks at start, the overview comes from Prometheus."""
        self.push_screen(self.overview)
        self.set_interval(max(0.25, self.interval / 2), self._check_stale)
        self.run_worker(self._poll(), name="prometheus", exit_on_error=False)

    def want_detail(self) -> None:
        self._wake.set()

    async def _poll(self) -> None:
        """Aggregates every refresh; per-CPU series of the nodes on screen after each, and when they change."""
        next_fleet = 0.0
        slow = self.source.timeout
        have: dict[str, float] = {}  # node -> when its per-CPU series were fetched
        while not self.fleet.stop.is_set():
            now = time.monotonic()
            try:
                if now >= next_fleet:
                    next_fleet = now + self.refresh_s
                    nodes = await self.source.fleet()
                    self.overview.post_message(FleetData(nodes, self.source.last_seconds))
                    have.clear()
                    await asyncio.sleep(0)  # let the screen lay the new rows out before asking what is visible
                    await asyncio.sleep(0.05)
                on_screen = self.overview.is_mounted and self.shown_screen() is self.overview  # not under a node's screen
                names = [n for n in self.overview.wanted() if n not in have] if on_screen else []
                if names:
                    cpus = await self.source.cpus(names)
                    t = time.monotonic()
                    for n in names:
                        have[n] = t
                    self.overview.post_message(FleetDetail(cpus))
                if self.source.last_seconds > slow * 0.75:
                    self.overview.post_message(PromState("slow", f"answers take {self.source.last_seconds:.1f} s"))
            except PromError as err:
                state = "slow" if "did not answer" in str(err) else "down"
                self.overview.post_message(PromState(state, str(err)))
                next_fleet = time.monotonic() + self.refresh_s  # retry at the refresh cadence, no faster
            self._wake.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._wake.wait(), max(0.05, next_fleet - time.monotonic()))

    # ---------------------------------------------------------------- a node, live
    def address_of(self, name: str) -> str:
        row = self.overview.rows.get(name)
        ip = row.node.ip if row is not None and row.node.ip else name
        addr = self.host_template.format(name=name, ip=ip)
        if not self.user or "@" in addr or addr == "local" or addr.startswith(("node/", "nodes/")):
            return addr  # local, and node/NAME (through the Kubernetes API), have no SSH user
        return f"{self.user}@{addr}"

    def open_prom_node(self, name: str) -> None:
        if name not in self.views:
            self.views[name] = NodeView(name, label=name)
        if name not in self.live_workers:
            try:
                self.fleet.add(NodeTarget(name, self.address_of(name)))
            except (PinscopeError, KeyError, ValueError) as err:
                self.notify(f"{name}: {err}", severity="error")
                return
            self.live_workers[name] = self.run_worker(self._node_task(name), group="nodes", name=f"node {name}",
                                                      exit_on_error=False)
        self.open_node(name)

    def back_to_fleet(self) -> bool:
        if len(self.screen_stack) > 2 and self.screen_stack[-2] is self.overview:
            name = self.focus_node
            self.focus_node = None
            self.pop_screen()
            w = self.live_workers.pop(name, None)
            if w is not None and name is not None:
                w.cancel()
                self.run_worker(self.fleet.close(name), exit_on_error=False)
                self.views[name].set_state("down", "closed: back in the overview")
            return True
        return False


def run_prometheus(url: str, selector: str | None, opts: Options, interval: float = 1.0, refresh: float = 5.0,
                   theme: str = "dark", host_template: str = "{name}", user: str | None = None) -> int:
    source = PromSource(url, selector, timeout=max(2.0, min(10.0, refresh * 0.8)), want_ip="{ip}" in host_template)
    app = PromApp(source, opts, interval, refresh, theme, host_template, user, selector)
    app.run()
    return app.return_code or 0
