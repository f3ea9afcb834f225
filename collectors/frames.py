"""One probe frame (bytes) -> {path: text}, plus what could not be read.

The wire format is described at the top of probe.sh: one tagged line per output line. Every content line
starts with "L", so no file content can forge a frame boundary. Bytes that are not UTF-8 are replaced
(U+FFFD) and the file is named in `nonutf8`. A frame that ends early (no "Z") is still returned, marked
`complete=False`, so a half frame gives a partial snapshot rather than nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MAX_FRAME_BYTES = 64 * 1024 * 1024  # a client-side bound on top of the probe's per-file bound


@dataclass(slots=True)
class Frame:
    seq: int = 0
    request: str = ""
    files: dict[str, str] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    truncated: set[str] = field(default_factory=set)
    nonutf8: set[str] = field(default_factory=set)
    dirs: list[str] = field(default_factory=list)
    info: dict[str, str] = field(default_factory=dict)
    argv: list[str] | None = None
    warnings: list[str] = field(default_factory=list)
    complete: bool = False
    garbage_lines: int = 0


def _dec(b: bytes) -> tuple[str, bool]:
    try:
        return b.decode("utf-8"), False
    except UnicodeDecodeError:
        return b.decode("utf-8", "replace"), True


def parse_frame(data: bytes) -> Frame:
    """Parse the bytes of one frame (from its B line to its Z line, either may be missing)."""
    fr = Frame()
    files = fr.files
    cur: str | None = None
    buf: list[str] = []
    bad = False
    cdir = ""

    def flush() -> None:
        if cur is not None:
            files[cur] = "\n".join(buf) + ("\n" if buf else "")
            if bad:
                fr.nonutf8.add(cur)

    for raw in data.split(b"\n"):
        if not raw:
            continue
        tag = raw[0]
        if tag == 76:  # L
            if cur is None:
                fr.garbage_lines += 1
                continue
            try:
                buf.append(raw[1:].decode("utf-8"))
            except UnicodeDecodeError:
                buf.append(raw[1:].decode("utf-8", "replace"))
                bad = True
            continue
        rest, nb = _dec(raw[1:])
        if tag == 70:  # F
            flush()
            cur, buf, bad = (rest if rest[:1] == "/" else f"{cdir}/{rest}"), [], nb
        elif tag == 67:  # C: the directory of the F/X/T lines that follow
            flush()
            cur = None
            cdir = rest
            fr.dirs.append(rest)
        elif tag == 88:  # X
            flush()
            cur = None
            fr.unreadable.add(rest if rest[:1] == "/" else f"{cdir}/{rest}")
        elif tag == 84:  # T
            fr.truncated.add(rest if rest[:1] == "/" else f"{cdir}/{rest}")
        elif tag == 68:  # D
            fr.dirs.append(rest)
        elif tag == 65:  # A
            if fr.argv is None:
                fr.argv = []
            fr.argv.append(rest)
        elif tag == 73:  # I
            k, _, v = rest.partition(" ")
            fr.info[k] = v
        elif tag == 87:  # W
            fr.warnings.append(rest)
        elif tag == 66:  # B
            flush()
            cur = None
            seq, _, req = rest.partition(" ")
            fr.seq = int(seq) if seq.isdigit() else 0
            fr.request = req
        elif tag == 90:  # Z
            flush()
            cur = None
            fr.complete = True
        else:
            fr.garbage_lines += 1
    if not fr.complete:
        flush()
    return fr


def merge(base: Frame, newer: Frame) -> Frame:
    """A frame with `newer`'s files laid over `base`'s (used to keep static data across ticks)."""
    out = Frame(seq=newer.seq, request=newer.request, complete=newer.complete)
    out.files = {**base.files, **newer.files}
    out.unreadable = (base.unreadable - newer.files.keys()) | newer.unreadable
    out.truncated = (base.truncated - newer.files.keys()) | newer.truncated
    out.nonutf8 = (base.nonutf8 - newer.files.keys()) | newer.nonutf8
    out.dirs = newer.dirs if newer.dirs else base.dirs
    out.info = {**base.info, **newer.info}
    out.argv = newer.argv if newer.argv is not None else base.argv
    out.warnings = base.warnings + newer.warnings
    out.garbage_lines = newer.garbage_lines
    return out
