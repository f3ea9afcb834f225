"""Record and replay: every frame of every node appended to one file, compressed, crash-safe.

A record is one gzip member holding a JSON header line ({"v", "t", "node", "n"}) and the frame's raw
bytes. Members are written whole and flushed, so a crash or kill -9 loses at most the member being
written; the reader stops at the first member that is cut short or corrupt, and says so. Replaying feeds
the raw frames back through the same assembly as live (NodeCollector.ingest): no second code path.
"""
from __future__ import annotations

import json
import time
import zlib
from dataclasses import dataclass, field

from .errors import PinscopeError
from .frames import parse_frame

VERSION = 1


class RecordingError(PinscopeError):
    pass


class Recorder:
    def __init__(self, path: str) -> None:
        try:
            self.f = open(path, "ab")  # noqa: SIM115 -- open for the recording's life: close() closes it
        except OSError as err:
            raise RecordingError(f"--record {path}: {err.strerror}") from err
        self.path = path
        self.records = 0

    def write(self, node: str, raw: bytes, t: float | None = None) -> None:
        if not raw:
            return
        head = json.dumps({"v": VERSION, "t": time.time() if t is None else t, "node": node, "n": len(raw)})
        co = zlib.compressobj(3, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # a gzip member
        self.f.write(co.compress(head.encode() + b"\n" + raw) + co.flush())
        self.f.flush()  # to the OS: a killed process loses nothing already written
        self.records += 1

    def close(self) -> None:
        self.f.close()


@dataclass
class Recording:
    path: str
    index: list = field(default_factory=list)  # (t, node, offset, length of the member, letters)
    problem: str | None = None

    @property
    def nodes(self) -> list[str]:
        return list(dict.fromkeys(n for _, n, *_ in self.index))

    @property
    def start(self) -> float | None:
        return self.index[0][0] if self.index else None

    @property
    def end(self) -> float | None:
        return self.index[-1][0] if self.index else None

    def frame(self, i: int):
        t, node, off, ln, _ = self.index[i]
        with open(self.path, "rb") as f:
            f.seek(off)
            _, raw = _decode(f.read(ln))
        return parse_frame(raw)


def _decode(member: bytes) -> tuple[dict, bytes]:
    data = zlib.decompress(member, 16 + zlib.MAX_WBITS)
    head, _, raw = data.partition(b"\n")
    return json.loads(head), raw


def open_recording(path: str) -> Recording:
    """Index a recording: every whole record, in file order; stops at the first broken one."""
    rec = Recording(path)
    try:
        f = open(path, "rb")  # noqa: SIM115 -- closed by the `with f` below (only open's error is mapped)
    except OSError as err:
        raise RecordingError(f"{path}: {err.strerror}") from err
    with f:
        buf = b""
        base = 0  # file offset of buf[0]
        eof = False
        while True:
            if not eof and len(buf) < 1 << 20:
                chunk = f.read(4 << 20)
                eof = not chunk
                buf += chunk
            if not buf:
                break
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            try:
                data = d.decompress(buf)
            except zlib.error as err:
                rec.problem = f"corrupt record at byte {base}: {err}; replaying what came before"
                break
            if not d.eof:
                if eof:
                    rec.problem = f"the last record (at byte {base}) is cut short: replaying what came before"
                    break
                chunk = f.read(4 << 20)
                if not chunk:
                    eof = True
                buf += chunk
                continue
            used = len(buf) - len(d.unused_data)
            head, _, raw = data.partition(b"\n")
            try:
                h = json.loads(head)
                letters = raw.split(b"\n", 1)[0][1:].decode(errors="replace").split(" ")[1] if raw.startswith(b"B") else ""
                rec.index.append((float(h["t"]), str(h["node"]), base, used, letters))
            except (ValueError, KeyError, IndexError, TypeError):
                rec.problem = f"a record at byte {base} has no valid header: replaying what came before"
                break
            buf = d.unused_data
            base += used
    return rec


def at_time(rec: Recording, spec: str | None) -> float:
    """'2026-12-02T03:12:00', '03:12', an epoch number, '-5m' (before the end), or None (the end)."""
    if rec.end is None:
        raise RecordingError(f"{rec.path}: no whole record")
    if not spec:
        return rec.end
    s = spec.strip()
    units = {"s": 1, "m": 60, "h": 3600}
    if s.startswith("-") and s[-1] in units and s[1:-1].replace(".", "").isdecimal():
        return rec.end - float(s[1:-1]) * units[s[-1]]
    try:
        return float(s)
    except ValueError:
        pass
    import datetime as dt

    try:
        if len(s) <= 8 and ":" in s:  # a time of day, on the recording's last day (local time)
            day = dt.datetime.fromtimestamp(rec.end)
            hh = [int(x) for x in s.split(":")]
            t = day.replace(hour=hh[0], minute=hh[1], second=hh[2] if len(hh) > 2 else 0, microsecond=0)
            return t.timestamp()
        return dt.datetime.fromisoformat(s).timestamp()
    except ValueError as err:
        raise RecordingError(f"--at {spec!r}: not a time (ISO, HH:MM[:SS], epoch, or -5m)") from err


def restore(rec: Recording, node: str, t: float, window: int = 30):
    """(pipeline, NodeReport, index) of `node` as it was at time t: its last static and names frames, then
    the last `window` frames up to t, fed through one Pipeline. The pipeline can go on with the frames
    after `index`."""
    from .frames import HOLD_FRAMES
    from .pipeline import Pipeline

    idx = [i for i, r in enumerate(rec.index) if r[1] == node and r[0] <= t]
    static_i = max((i for i in idx if "s" in rec.index[i][4]), default=None)
    if static_i is None:
        return None, None, -1
    names_i = max((i for i in idx if "n" in rec.index[i][4]), default=None)
    after = [i for i in idx if i > static_i]
    tail = after[-window:]
    order = {static_i, *tail}
    if names_i is not None and names_i > static_i:
        order.add(names_i)
    # the frames before the tail whose files the tail's "unchanged" lines may point back to (the probe sends
    # every file whole within HOLD_FRAMES frames): held, not assembled
    prime = set(after[:len(after) - len(tail)][-HOLD_FRAMES:]) - order
    pl = Pipeline(node)
    report = None
    for i in sorted(order | prime):
        if i in prime:
            pl.frames.held.take(rec.frame(i))
        else:
            report = pl.feed(rec.frame(i), t=rec.index[i][0])
    return pl, report, idx[-1]


def state_at(rec: Recording, node: str, t: float, window: int = 30):
    """The NodeReport of `node` at time t (see restore), or None when the recording has none by then."""
    return restore(rec, node, t, window)[1]
