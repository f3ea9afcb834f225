"""`pinscope replay FILE`: the same TUI over a recording, with pause, step, seek and speed.

The recording's raw frames go through the same Pipeline as live frames; time is the recording's.
Keys: space pause/play, . and , step one frame forward / back, > and < seek 60 s, + and - speed.
"""
from __future__ import annotations

import asyncio
import datetime as dt

from textual.binding import Binding

from pinscope.collectors.aio import within
from pinscope.collectors.fleet import NodeTarget
from pinscope.collectors.pipeline import Pipeline
from pinscope.collectors.record import Recording, restore
from pinscope.collectors.text import display
from pinscope.tui.app import NodeUpdate, PinscopeApp
from pinscope.tui.screens.base import ReportScreen


def clock(t: float) -> str:
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


class ReplayApp(PinscopeApp):
    BINDINGS = [
        *PinscopeApp.BINDINGS,
        Binding("space", "toggle_pause", "Play/pause", id="replay.pause"),
        Binding("full_stop", "step(1)", "Step", id="replay.step"),
        Binding("comma", "step(-1)", "Step back", id="replay.back"),
        Binding("greater_than_sign", "seek(60)", "+60 s", id="replay.fwd"),
        Binding("less_than_sign", "seek(-60)", "-60 s", id="replay.rew"),
        Binding("plus", "speed(2)", "Faster", id="replay.faster"),
        Binding("minus", "speed(0.5)", "Slower", id="replay.slower"),
    ]

    def __init__(self, rec: Recording, theme: str = "dark", speed: float = 1.0, at: float | None = None) -> None:
        if rec.start is None or rec.end is None:  # `pinscope replay` says so before it gets here
            raise ValueError(f"{rec.path}: no whole record to replay")
        self.first_t, self.last_t = rec.start, rec.end  # the recording's span (s since the epoch)
        nodes = rec.nodes
        super().__init__([NodeTarget(n) for n in nodes], theme=theme, autostart=False,
                         start=nodes[0] if len(nodes) > 1 else None)
        self.rec = rec
        self.speed = speed
        self.paused = False
        self.pos = -1  # index of the last record applied
        self.cols: dict[str, Pipeline] = {}
        self.t = rec.start  # the recorded time shown
        self.at = at
        self._wake = asyncio.Event()

    def _start(self) -> None:
        super()._start()
        if self.rec.problem:
            self.notify(display(self.rec.problem), severity="warning", timeout=8, markup=False)
        self.run_worker(self._play(), name="replay", exit_on_error=False)

    def _check_stale(self) -> None:
        """Wall time passing while paused (or between sparse records) does not make a recorded node stale."""

    @property
    def replay_clock(self) -> float | None:
        return self.t

    @property
    def replay_status(self) -> str | None:
        total = self.last_t - self.first_t
        return (f"replay {clock(self.t)}  [{self.t - self.first_t:.0f}s of {total:.0f}s]  ×{self.speed:g}"
                f"{'  PAUSED' if self.paused else ''}")

    def _apply(self, i: int) -> None:
        t, node, *_ = self.rec.index[i]
        pl = self.cols.get(node)
        frame = self.rec.frame(i)
        if pl is None:
            if "s" not in frame.letters:
                return
            pl = self.cols[node] = Pipeline(node)
        self.post_message(NodeUpdate(node, pl.feed(frame, t=t)))
        self.pos, self.t = i, t

    def seek_to(self, t: float) -> None:
        t = max(self.first_t, min(self.last_t, t))
        self.cols = {}
        last = -1
        for node in self.rec.nodes:
            pl, report, i = restore(self.rec, node, t)
            if pl is not None:
                self.cols[node] = pl
                self.post_message(NodeUpdate(node, report))
                last = max(last, i)
        self.pos, self.t = last, t
        self._status()

    def _status(self) -> None:
        scr = self.shown_screen()
        if isinstance(scr, ReportScreen):
            scr.refresh_view()

    async def _play(self) -> None:
        if self.at is not None:
            self.seek_to(self.at)
        while True:
            if self.paused or self.pos + 1 >= len(self.rec.index):
                self._wake.clear()
                self._status()
                await self._wake.wait()
                continue
            i = self.pos + 1
            wait = (self.rec.index[i][0] - self.t) / self.speed if self.pos >= 0 else 0
            if wait > 0:
                try:
                    await within(self._wake.wait(), min(wait, 5.0))
                    self._wake.clear()
                    continue  # a key changed the plan
                except asyncio.TimeoutError:
                    pass
            self._apply(i)

    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self._wake.set()
        self._status()

    def action_step(self, d: int) -> None:
        self.paused = True
        if d > 0 and self.pos + 1 < len(self.rec.index):
            self._apply(self.pos + 1)
        elif d < 0 and self.pos > 0:
            self.seek_to(self.rec.index[self.pos - 1][0])
        self._wake.set()
        self._status()

    def action_seek(self, s: float) -> None:
        self.seek_to(self.t + s)
        self._wake.set()

    def action_speed(self, f: float) -> None:
        self.speed = max(0.125, min(64.0, self.speed * f))
        self._wake.set()
        self._status()
