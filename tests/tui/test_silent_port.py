"""A TCP port that accepts and never speaks (issue 15): after the connect timeout the node says why it is
down, and keeps saying it while pinscope retries; never again "waiting for the first frame"."""
import asyncio
import socket

from pinscope.collectors.collect import Options
from pinscope.collectors.fleet import NodeTarget
from pinscope.tui.app import PinscopeApp


async def test_a_silent_port_is_down_with_its_reason_after_the_connect_timeout():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    target = f"root@127.0.0.1:{srv.getsockname()[1]}"

    try:
        async with asyncio.timeout(60):
            app = PinscopeApp([NodeTarget(target)], Options(connect_timeout=1.0), 1.0)
            seen = []
            async with app.run_test(size=(160, 40)) as pilot:
                after = None  # samples taken once it is down: a retry or two
                while after is None or len(seen) < after + 8:  # the 60 s above only guard against a hang
                    await asyncio.sleep(0.25)
                    await pilot.pause()
                    v = app.views[target]
                    seen.append((v.state, v.message))
                    if after is None and v.state == "down":
                        after = len(seen)
                svg = app.export_screenshot().replace("&#160;", " ")
    finally:
        srv.close()
    first_down = next(i for i, (state, _) in enumerate(seen) if state == "down")
    # down because the 1 s connect timeout cut it (said so), not some other error, and it stays so on retries
    # (whose timeout may grow)
    assert "no answer within 1 s" in seen[first_down][1], seen[first_down]
    assert all(state == "down" and "no answer within" in msg for state, msg in seen[first_down:]), seen
    assert all(state != "up" for state, _ in seen), seen
    assert "waiting for the first frame" not in svg and "no answer within" in svg
