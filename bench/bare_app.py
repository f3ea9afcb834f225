"""bench_start.py's other sides: a bare Textual app painting the markers (`bare MARKERS`), and the same after
importing pinscope.collectors and reading one frame of the probe on a --root tree (`probe ROOT MARKERS`)."""
from __future__ import annotations

import sys


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "probe":
        import asyncio

        from pinscope.collectors.collect import NodeCollector, Options, live_depth

        async def once() -> None:
            col = NodeCollector("local", Options(root=args[0]))
            await col.connect()
            try:
                await col.tick(live_depth(0))
            finally:
                await col.close()

        asyncio.run(once())
        args = args[1:]
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    text = "  ".join(args)

    class Bare(App):
        def compose(self) -> ComposeResult:
            yield Static(text)

    Bare().run()


if __name__ == "__main__":
    main()
