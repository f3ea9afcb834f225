"""A PinscopeApp over frozen data: fixture trees read through the real probe, no live workers.

Two samples one simulated second apart (seeded simulation, the node's own uptime as the clock), so rates
and findings are real but identical on every run.
"""
from __future__ import annotations

from pinscope.collectors.collect import Options
from helpers import read_sim, read_sim_async
from pinscope.collectors.fleet import NodeTarget
from pinscope.tui.app import NodeUpdate, PinscopeApp


def frozen_samples(spec, root):
    return read_sim(spec, root, samples=2)


async def frozen_samples_async(spec, root):
    """frozen_samples in an async test (its event loop runs: asyncio.run cannot start another)."""
    return await read_sim_async(spec, root, samples=2)


_READ: dict = {}


def _tree_dir():
    """A directory for a frozen node's tree, in memory (/dev/shm) when there is one, removed once read."""
    import os
    import tempfile

    fast = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix="pinscope-frozen-", dir=fast)


def frozen_node(shape):
    """`shape()`'s NodeReport over two samples, read once per test run and shared by the test modules. The tree is written
    in memory (/dev/shm) when there is one and removed once read: a 512-CPU node is ~14,000 files."""
    if shape.__name__ not in _READ:
        with _tree_dir() as d:
            _READ[shape.__name__] = frozen_samples(shape(), d)
    return _READ[shape.__name__]


async def frozen_node_async(shape):
    """frozen_node in an async test (its event loop runs: asyncio.run cannot start another); the same cache."""
    if shape.__name__ not in _READ:
        with _tree_dir() as d:
            _READ[shape.__name__] = await frozen_samples_async(shape(), d)
    return _READ[shape.__name__]


class FrozenApp(PinscopeApp):
    """`start`: with several nodes the app opens on the fleet overview; name one to open its grid."""

    def __init__(self, frozen: dict, theme: str = "dark", start: str | None = None, targets=None) -> None:
        super().__init__(targets or [NodeTarget(t) for t in frozen], Options(), 1.0, theme, autostart=False, start=start)
        self.frozen = frozen

    stale_checks = False  # frozen data does not age: on a loaded machine a snapshot would say `stale`

    def _check_stale(self) -> None:
        if self.stale_checks:
            super()._check_stale()

    def _start(self) -> None:
        super()._start()
        for t, report in self.frozen.items():
            self.post_message(NodeUpdate(t, report))


def screen_lines(app) -> list[str]:
    """The screen as text, line by line, read from Textual's own SVG export (what a snapshot holds):
    each <text> of a line in document order, non-breaking spaces back to spaces."""
    import html
    import re

    svg = app.export_screenshot()
    lines: dict[int, list[str]] = {}
    for m in re.finditer(r'<text [^>]*clip-path="url\(#terminal-\d+-line-(\d+)\)"[^>]*>(.*?)</text>', svg, re.S):
        lines.setdefault(int(m.group(1)), []).append(html.unescape(m.group(2)).replace("\xa0", " "))
    return ["".join(lines.get(i, [])) for i in range(max(lines, default=-1) + 1)]
