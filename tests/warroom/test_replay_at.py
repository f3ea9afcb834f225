"""Every `--at` form docs/war-room.md advertises, and recordings with a corrupt member, through the library and
the CLI. The recording is made of real probe frames stamped with chosen times (local time of day)."""
import asyncio
import datetime as dt
import json
import zlib

import pytest

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.record import Recorder, RecordingError, at_time, open_recording
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport
from helpers import run_cli
from nodes import policy_none

# ten records, one a minute, 03:00:00 to 03:09:00 local time on 2026-12-02
T0 = dt.datetime(2026, 12, 2, 3, 0, 0).timestamp()
TIMES = [T0 + 60 * i for i in range(10)]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    d = tmp_path_factory.mktemp("rec")
    sim = SimNode(policy_none(), d / "n").write()
    path = d / "r.pinscope"

    async def go():
        col = NodeCollector("plain", Options(root=str(d / "n")), LocalTransport(str(d / "n")))
        await col.connect()
        rec = Recorder(str(path))
        try:
            for i, t in enumerate(TIMES):
                sim.tick(1.0)
                await col.read("g")
                rec.write("plain", col.transport.last_raw, t=t)
        finally:
            rec.close()
            await col.close()

    asyncio.run(go())
    return path


@pytest.mark.parametrize("spec, want", [
    (None, TIMES[-1]),
    ("-5m", TIMES[-1] - 300),
    ("-90s", TIMES[-1] - 90),
    ("-0.5h", TIMES[-1] - 1800),
    ("03:04", T0 + 240),
    ("03:04:30", T0 + 270),
    ("2026-12-02T03:05:00", T0 + 300),
    ("2026-12-02 03:05:15", T0 + 315),
    (f"{T0 + 123.5}", T0 + 123.5),
])
def test_every_at_form(recording, spec, want):
    rec = open_recording(str(recording))
    assert at_time(rec, spec) == pytest.approx(want)


def test_iso_with_a_zone_is_that_instant(recording):
    rec = open_recording(str(recording))
    utc = dt.datetime.fromtimestamp(T0 + 60, dt.timezone.utc).isoformat()
    assert at_time(rec, utc) == pytest.approx(T0 + 60)


@pytest.mark.parametrize("bad", ["yesterday", "25:00", "03:61", "-5x", "2026-13-01T00:00"])
def test_a_bad_at_is_one_plain_error(recording, bad):
    rec = open_recording(str(recording))
    with pytest.raises(RecordingError, match="not a time"):
        at_time(rec, bad)
    r = run_cli("check", "--json", "--replay", str(recording), f"--at={bad}")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "not a time" in r.stderr


@pytest.mark.parametrize("args, want", [
    (["--at=-5m"], TIMES[-1] - 300),  # as docs/war-room.md writes it
    (["--at", "03:04"], T0 + 240),
    (["--at", "2026-12-02T03:05:00"], T0 + 300),
    ([], TIMES[-1]),
])
def test_cli_check_at(recording, args, want):
    r = run_cli("check", "--json", "--replay", str(recording), *args)
    assert r.returncode in (0, 1, 2), r.stderr
    o = json.loads(r.stdout)  # one node: one object
    assert o["node"] == "plain" and o["recorded_at"] == pytest.approx(want)


def test_before_the_recording_starts_says_so(recording):
    r = run_cli("check", "--json", "--replay", str(recording), "--at", "02:00")
    assert r.returncode == 3 and "before that time" in (r.stdout + r.stderr) and "Traceback" not in r.stderr


def _members(path):
    return [(off, ln) for _, _, off, ln, _ in open_recording(str(path)).index]


def test_a_corrupt_member_in_the_middle_keeps_what_came_before(recording, tmp_path):
    data = bytearray(recording.read_bytes())
    off, ln = _members(recording)[6]
    for i in range(off + 20, off + ln - 10):  # garble the deflate stream of the 7th record
        data[i] ^= 0x5A
    bad = tmp_path / "bad.pinscope"
    bad.write_bytes(bytes(data))
    rec = open_recording(str(bad))
    assert len(rec.index) == 6 and rec.problem and f"at byte {off}" in rec.problem
    assert "corrupt" in rec.problem or "cut short" in rec.problem or "no valid header" in rec.problem
    r = run_cli("check", "--json", "--replay", str(bad))
    assert r.returncode in (0, 1, 2), r.stderr
    o = json.loads(r.stdout)  # one node: one object
    assert o["recorded_at"] == pytest.approx(TIMES[5]) and f"at byte {off}" in r.stderr


def test_a_member_with_a_bad_header_keeps_what_came_before(recording, tmp_path):
    off, ln = _members(recording)[3]
    co = zlib.compressobj(3, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    junk = co.compress(b'{"v": 1, "node": "plain"}\nBx\n') + co.flush()  # gzip fine, header has no time
    raw = recording.read_bytes()
    bad = tmp_path / "hdr.pinscope"
    bad.write_bytes(raw[:off] + junk + raw[off:])
    rec = open_recording(str(bad))
    assert len(rec.index) == 3 and "no valid header" in rec.problem
