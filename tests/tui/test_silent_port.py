"""A TCP port that accepts and never speaks (issue 15): after the connect timeout the node says why it is
down, and keeps saying it while pinscope retries; never again "waiting for the first frame"."""
import asyncio
import socket

from collectors.collect import Options
from collectors.fleet import NodeTarget
from tui.app import PinscopeApp


def test_a_silent_port_is_down_with_its_reason_after_the_connect_timeout():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    target = f"root@127.0.0.1:{srv.getsockname()[1]}"

    async def go():
        app = PinscopeApp([NodeTarget(target)], Options(connect_timeout=1.0), 1.0)
        seen = []
        async with app.run_test(size=(160, 40)) as pilot:
            for _ in range(16):  # 4 s: the first timeout, and a retry or two
                await asyncio.sleep(0.25)
                await pilot.pause()
                v = app.views[target]
                seen.append((v.state, v.message))
            svg = app.export_screenshot().replace("&#160;", " ")
        return seen, svg

    try:
        seen, svg = asyncio.run(asyncio.wait_for(go(), 60))
    finally:
        srv.close()
    first_down = next(i for i, (state, _) in enumerate(seen) if state == "down")
    assert first_down <= 12, seen  # within the timeout and its margin
    assert all(state == "down" and "no answer within" in msg for state, msg in seen[first_down:]), seen
    assert "waiting for the first frame" not in svg and "no answer within" in svg
