"""Keys that reach the app in one read of the terminal (typed fast with both cores busy, or a burst of them) edit
a text field in the order they were typed: the node screen's and the fleet screen's filters (the what-fits
pane's fields: test_fit_pane.py). Textual ran an Input's own keys (backspace, the arrows) only once they had
bubbled up to the app, after the characters typed after them (tui/widgets/field.py)."""
import time

import pytest
from frozen import FrozenApp, frozen_samples
from nodes import dual_socket_intel, policy_none
from textual import events

from pinscope.tui.screens.fleet import FleetScreen
from pinscope.tui.screens.node import NodeScreen

BURST = ["backspace"] * 3 + ["1", "2", "left", "backspace", "3"]  # "abc" -> "" -> "12" -> "2" -> "32"


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x")),
            "plain": frozen_samples(policy_none(), tmp_path_factory.mktemp("p"))}


async def _burst_into_filter(app, pilot) -> str:
    await pilot.press("slash")
    await pilot.press(*"abc")
    await pilot.pause()
    box = app.screen.query_one("#filter")
    assert box.value == "abc" and box.has_focus
    for key in BURST:  # as the driver posts the keys of one read, before any is handled
        app._driver.send_message(events.Key(key, key if len(key) == 1 else None))
    for _ in range(20):
        await pilot.pause(0.02)
    return box.value


@pytest.mark.parametrize("screen", [NodeScreen, FleetScreen])
async def test_a_burst_of_keys_edits_the_filter_in_its_order(frozen, screen):
    app = FrozenApp(frozen, start="xeon-2s" if screen is NodeScreen else None)
    async with app.run_test(size=(160, 40)) as pilot:
        end = time.monotonic() + 10  # a loaded machine may take more than two pauses to compose it
        while not isinstance(app.screen, screen) and time.monotonic() < end:
            await pilot.pause(0.05)
        await pilot.pause()
        assert isinstance(app.screen, screen)
        assert await _burst_into_filter(app, pilot) == "32"
