"""The legend's key never parts a glyph from its word (issue 34, item 16: at 80x24 it broke between `i` and
`isolated`), at any width the screen gives it, in either shade. Read from the screen as it shows (Textual's
own SVG export), the legend's region only. Frozen data read through the real probe."""

import pytest

from frozen import FrozenApp, frozen_samples, screen_lines
from nodes import dual_socket_intel


@pytest.fixture(scope="module")
def frozen(tmp_path_factory):
    return {"xeon-2s": frozen_samples(dual_socket_intel(), tmp_path_factory.mktemp("x"))}


PAIRS = ["# exclusive", "R reserved", ". shared", "i isolated", "x offline", "? unassigned", "! = finding",
         "letter = pod"]


@pytest.mark.parametrize("size", [(80, 24), (90, 30), (100, 30), (120, 40), (160, 45), (200, 50)])
@pytest.mark.parametrize("shade", ["load", "noise"])
async def test_no_glyph_is_parted_from_its_word(frozen, size, shade):
    app = FrozenApp(frozen, start="xeon-2s")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if shade == "noise":
            await pilot.press("v")
            await pilot.pause()
        key = app.screen.query_one("#legend-key")
        if not key.display:
            pytest.skip("no legend at this size")
        r = key.region
        lines = [ln[r.x:r.x + r.width].rstrip() for ln in screen_lines(app)[r.y:r.y + r.height]]
    for pair in PAIRS:
        assert any(pair in ln for ln in lines), (pair, lines)
    assert any(("shade = load" if shade == "load" else "shade = kernel noise") in ln for ln in lines), lines
