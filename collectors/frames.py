"""One probe frame (bytes) -> {path: text}, plus what could not be read.

The wire format is described at the top of probe.sh: one tagged line per output line. Every content line
starts with "L" (or "H": hex bytes from od), so no file content can forge a frame boundary; names are
escaped ("\\" and "\n") so no name can either, and are unescaped here: paths hold the node's exact names. Bytes that are not UTF-8 are replaced
(U+FFFD) and the file is named in `nonutf8`. A frame that ends early (no "Z") is still returned, marked
`complete=False`, so a half frame gives a partial snapshot rather than nothing.

A `FrameStore` holds what one node's frames add up to between ticks (the static frame, the last frame
that listed names, the last frame of each deeper letter) and hands each tick a frozen `View`: the frames
to assemble from, the merged dynamic files, and which of them changed since the previous tick. Frames are
frozen and hold no caches: what is parsed out of them is kept by the assembly's stages (collectors.assemble).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from . import nodefiles

PROTOCOL = "4"  # the wire format this client reads (probe.sh PROTO; each frame says "Iprobe-protocol N")
MAX_FRAME_BYTES = 64 * 1024 * 1024  # a client-side bound on top of the probe's per-file bound


@dataclass(slots=True)
class _Parts:
    """What parse_frame collects before it freezes a Frame (same fields)."""

    seq: int = 0
    request: str = ""
    files: dict[str, str] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    truncated: dict[str, int] = field(default_factory=dict)  # path -> the budget it was cut at (bytes)
    refused: dict[str, str] = field(default_factory=dict)  # path -> kind (fifo, socket, device, dir, other)
    nonutf8: set[str] = field(default_factory=set)
    dirs: list[str] = field(default_factory=list)
    info: dict[str, str] = field(default_factory=dict)
    argv: list[str] | None = None
    warnings: list[str] = field(default_factory=list)
    complete: bool = False
    garbage_lines: int = 0
    unchanged: list[str] = field(default_factory=list)
    hexed: set[str] = field(default_factory=set)  # files sent as od's hex (kubelet's own): not a Frame field
    unlisted: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True, eq=False)  # eq=False: frames compare by identity (cheap, exact)
class Frame:
    """One probe frame. Frozen; its dicts, sets and lists are never mutated after parse_frame."""

    seq: int = 0
    request: str = ""
    files: dict[str, str] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    truncated: dict[str, int] = field(default_factory=dict)  # path -> the budget it was cut at (bytes)
    refused: dict[str, str] = field(default_factory=dict)  # path -> kind (fifo, socket, device, dir, other)
    nonutf8: set[str] = field(default_factory=set)
    dirs: list[str] = field(default_factory=list)
    info: dict[str, str] = field(default_factory=dict)
    argv: list[str] | None = None
    warnings: list[str] = field(default_factory=list)
    complete: bool = False
    garbage_lines: int = 0
    # files the probe said unchanged (U): the bytes it last sent of each, which the FrameStore puts in `files`
    # (a Frame a FrameStore handed on has none left)
    unchanged: tuple[str, ...] = ()
    lost: tuple[str, ...] = ()  # files said unchanged that the FrameStore held no copy of (left out)
    # directories this user may not list (X<dir>/): what they hold is unknown, not absent (probe.sh unlisted)
    unlisted: frozenset[str] = frozenset()

    @property
    def letters(self) -> str:
        """The request's depth letters (without the focused container's id, which is hex)."""
        return self.request.partition(" ")[0]


def parse_frame(data: bytes) -> Frame:
    """Parse the bytes of one frame (from its B line to its Z line, either may be missing)."""
    fr = _Parts()
    try:
        lines = data.decode("utf-8").split("\n")
        nonutf8 = False
    except UnicodeDecodeError:
        lines = data.decode("utf-8", "surrogateescape").split("\n")
        nonutf8 = True
    cur: str | None = None  # the file whose L (or H) lines follow
    buf: list[str] = []
    hexbuf: list[str] = []
    cdir = ""
    for raw in lines:
        if not raw:
            continue
        tag = raw[0]
        if tag == "L" or tag == "H":
            if cur is None:
                fr.garbage_lines += 1
            else:
                (buf if tag == "L" else hexbuf).append(raw[1:])
            continue
        rest = raw[1:]
        if nonutf8:
            rest = _fix(rest)
        if "\\" in rest and tag in "CFXTDNUcp":
            rest = unescape(rest)
        if cur is not None:
            _close(fr, cur, buf, hexbuf, nonutf8)
            cur, buf, hexbuf = None, [], []
        if tag == "F":
            cur = rest if rest[:1] == "/" else f"{cdir}/{rest}"
        elif tag == "C":  # the directory of the F/X/T/U lines that follow
            cdir = rest
            fr.dirs.append(rest)
        elif tag == "c" or tag == "p":  # the same, under the last directory ("c") or under its parent ("p")
            cdir = f"{cdir if tag == 'c' else cdir.rpartition('/')[0]}/{rest}"
            fr.dirs.append(cdir)
        else:
            _tag(fr, tag, rest, cdir)
    if cur is not None:
        _close(fr, cur, buf, hexbuf, nonutf8)
    ascii_run = _LONG_RUN in data.translate(_DIGITS)
    if ascii_run or not data.isascii():
        _leave_out_long_numbers(fr, ascii_run)
    return Frame(fr.seq, fr.request, fr.files, fr.unreadable, fr.truncated, fr.refused, fr.nonutf8, fr.dirs,
                 fr.info, fr.argv, fr.warnings, fr.complete, fr.garbage_lines, tuple(fr.unchanged),
                 unlisted=frozenset(fr.unlisted))


def _close(fr: _Parts, cur: str, buf: list[str], hexbuf: list[str], nonutf8: bool) -> None:
    """The lines of one file -> its text: L lines as they came, H lines (od's hex: kubelet's files) as bytes."""
    if hexbuf:
        fr.hexed.add(cur)
        data = _from_hex(hexbuf)
        if len(data) > KUBELET_FILE_MAX:
            data = data[:KUBELET_FILE_MAX]
            fr.truncated[cur] = KUBELET_FILE_MAX
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            content = data.decode("utf-8", "replace")
            fr.nonutf8.add(cur)
    else:
        content = "\n".join(buf) + "\n" if buf else ""
        if nonutf8:
            fixed = _fix(content)
            if fixed is not content:
                fr.nonutf8.add(cur)
            content = fixed
    fr.files[cur] = content


def _tag(fr: _Parts, tag: str, rest: str, cdir: str) -> None:
    """One tag line other than F, C, L and H."""
    if tag == "X":
        if rest[:1] == "/" and rest.endswith("/") and len(rest) > 1:  # a directory this user may not list
            fr.unlisted.add(rest.rstrip("/"))
        else:
            fr.unreadable.add(rest if rest[:1] == "/" else f"{cdir}/{rest}")
    elif tag == "T":
        n, _, name = rest.partition(" ")
        fr.truncated[name if name[:1] == "/" else f"{cdir}/{name}"] = int(n) if n.isdecimal() else 0
    elif tag == "N":
        kind, _, path = rest.partition(" ")
        fr.refused[path] = kind
    elif tag == "D":
        fr.dirs.append(rest)
    elif tag == "U":
        fr.unchanged.append(rest if rest[:1] == "/" else f"{cdir}/{rest}")
    elif tag == "A":
        if fr.argv is None:
            fr.argv = []
        fr.argv.append(rest)
    elif tag == "I":
        k, _, v = rest.partition(" ")
        fr.info[k] = v
    elif tag == "W":
        fr.warnings.append(rest)
    elif tag == "B":
        seq, _, req = rest.partition(" ")
        fr.seq = int(seq) if seq.isdecimal() else 0
        fr.request = req.strip()
    elif tag == "Z":
        fr.complete = True
    elif tag != "P":
        fr.garbage_lines += 1


def unescape(s: str) -> str:
    """A name as the probe sends it ("\\" for a backslash, "\n" for a newline) -> the node's name."""
    out = []
    i = 0
    while True:
        j = s.find("\\", i)
        if j < 0 or j + 1 >= len(s):
            out.append(s[i:])
            return "".join(out)
        out.append(s[i:j])
        out.append("\n" if s[j + 1] == "n" else s[j + 1])
        i = j + 2


# A number this long is no value the kernel or kubelet writes (a u64 has 20 digits), and int() refuses
# one of 4300 digits (CPython's limit, which may be set as low as 640): a file holding one is garbage, left
# out as TOO_LONG rather than let a parser raise and take the node's whole report with it. A frame is
# checked in one pass over its bytes (digits to "0", the rest to " "); its files only when that found a run
# (or it is not ASCII: another script's digits, which int() reads too, are looked for in those files).
LONG_NUMBER = 640
TOO_LONG = f"file holding a number of {LONG_NUMBER} digits or more (no kernel value is that long)"
_DIGITS = bytes(0x30 if 0x30 <= i <= 0x39 else 0x20 for i in range(256))
_LONG_RUN = b"0" * LONG_NUMBER
_LONG_NUMBER = re.compile(r"\d{%d}" % LONG_NUMBER)


def _leave_out_long_numbers(fr: _Parts, ascii_run: bool) -> None:
    """`ascii_run`: the frame's bytes hold a run of ASCII digits that long (else only its files that are not
    ASCII can hold one, of another script's digits). Kubelet's own files (sent as od's hex: their digits are
    not in the frame's bytes) are left to their parsers, which say such a file is not JSON or YAML kubelet
    reads: left out here, a config would read as a missing one (policy none)."""
    for path, text in list(fr.files.items()):
        if path in fr.hexed:
            continue
        if len(text) >= LONG_NUMBER and (ascii_run or not text.isascii()) and _LONG_NUMBER.search(text):
            del fr.files[path]
            fr.refused[path] = TOO_LONG  # said as a refused file is: not read, and nothing said of it


KUBELET_FILE_MAX = 1 << 20  # probe.sh KUBELET_FILE_MAX: od reads one byte more, so a larger file shows as cut


def _from_hex(lines: list[str]) -> bytes:
    """od's hex lines (kubelet's own files) -> bytes."""
    try:
        return bytes.fromhex(" ".join(lines))
    except ValueError:
        return b""


def _fix(s: str) -> str:
    """Lone surrogates (undecodable bytes) -> U+FFFD; the same object when there were none."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# ----------------------------------------------------------------------------- the frame store

@dataclass(frozen=True, slots=True)
class View:
    """What one tick is assembled from. `carry`: older frames with deeper data (cgroup detail, tasks,
    IRQs), oldest first. `files`: the dynamic files of the carried frames then the tick's (the tick wins);
    the static frame's files are looked up on their own. `prev_files`: the same of the previous tick
    (None on the first one), so a stage can tell what changed."""

    static: Frame
    tick: Frame
    names: Frame | None
    carry: tuple[Frame, ...]
    files: dict[str, str]
    prev_files: dict[str, str] | None = None

    def changed(self, path: str) -> bool:
        """Did this file's text change since the previous tick (or appear, or go)?"""
        return self.prev_files is None or self.prev_files.get(path) != self.files.get(path)


# What the probe may say unchanged (U, probe.sh rdcg and rks): a cgroup file, or one of kubelet's state files
# it reads every grid tick. It says so only of what it sent whole within its last 64 frames, and forgets
# everything on a static frame.
HOLD_FRAMES = 64
_HELD_NAMES = ("/cpu_manager_state", "/kubelet_internal_checkpoint", "/dra_manager_state")


class Held:
    """The bytes the probe last sent whole of the files it may say unchanged (its U lines): path -> (text,
    not UTF-8, cut at, the seq of the frame that sent it). `take(frame)` puts them in a frame's `files`. One
    per probe (a new probe, seq 1, starts empty). A U it cannot resolve (no copy, or a frame in between that
    it did not see: the probe may have sent a newer one there) is `lost`: the file is left out of the frame,
    said so, and the client asks for a static frame, in which the probe sends everything whole."""

    def __init__(self) -> None:
        # text None: a file parse_frame left out for a number too long (TOO_LONG): a U keeps it out
        self.files: dict[str, tuple[str | None, bool, int | None, int]] = {}
        self.seq: int | None = None

    def take(self, frame: Frame) -> Frame:
        """The frame with its U files resolved (unchanged=()); what it sent whole is held for later frames."""
        seq = frame.seq
        held = self.files
        seen = self.seq is not None and seq == self.seq + 1
        if not seen or "s" in frame.letters:
            # a new probe, a static frame (the probe forgot what it sent), or a frame not seen in between (it
            # may have sent a newer copy of anything held): nothing held stands for a file any more
            held.clear()
        self.seq = seq
        out = frame
        if frame.unchanged:
            files, nonutf8, cut = dict(frame.files), set(frame.nonutf8), dict(frame.truncated)
            refused = frame.refused
            lost = []
            for p in frame.unchanged:
                if p in frame.files:  # read twice in this frame (a focused container's detail): sent whole first
                    continue
                h = held.get(p)
                if h is None:
                    lost.append(p)
                    continue
                if h[0] is None:  # the same bytes parse_frame left out: out again, not lost (no static frame)
                    refused = {**refused, p: TOO_LONG}
                    continue
                files[p] = h[0]
                if h[1]:
                    nonutf8.add(p)
                if h[2] is not None:
                    cut[p] = h[2]
            warnings = frame.warnings
            if lost:
                warnings = [*warnings, f"{len(lost)} file(s) said unchanged by the probe, but this client holds no "
                            f"copy (a frame it did not see, e.g. {lost[0]}): left out of this tick; read whole "
                            "at the next static frame"]
            out = dataclasses.replace(frame, files=files, nonutf8=nonutf8, truncated=cut, refused=refused,
                                      warnings=warnings, unchanged=(), lost=tuple(lost))
        for p in frame.unreadable | frame.refused.keys() | frame.truncated.keys():
            held.pop(p, None)
        for p, kind in frame.refused.items():
            if kind == TOO_LONG and (p.startswith("/sys/fs/cgroup/") or p.endswith(_HELD_NAMES)):
                held[p] = (None, False, None, seq)
        for p, text in frame.files.items():
            if p.startswith("/sys/fs/cgroup/") or p.endswith(_HELD_NAMES):
                held[p] = (text, p in frame.nonutf8, frame.truncated.get(p), seq)
        if seq % HOLD_FRAMES == 0:  # what the probe can no longer say unchanged
            for p in [p for p, h in held.items() if h[3] < seq - 2 * HOLD_FRAMES]:
                del held[p]
        return out


class FrameStore:
    """One node's frames between ticks: the static frame, the last frame that listed the pod log layout
    ("n"), and for each deeper letter (c, t, T, a, i) the last frame that had it. `add(frame)` -> the
    tick's View. Reset it (a new FrameStore) on a new connection: everything is read again."""

    def __init__(self) -> None:
        self.static: Frame | None = None
        self.names: Frame | None = None
        self.carry: dict[str, Frame] = {}
        self.held = Held()
        self._base: tuple[tuple[Frame, ...], dict] = ((), {})
        self._kept: dict[tuple[bool, bool], dict] = {}  # the base without what a tick reads itself
        self._prev: dict | None = None

    def add(self, frame: Frame) -> View:
        """The caller checks first that a static frame came (self.static or "s" in the frame's letters)."""
        frame = self.held.take(frame)
        letters = frame.letters
        if "s" in letters:
            self.static = frame
            self._prev = None  # a new static read: every stage re-runs
        if "n" in letters:
            self.names = frame
        older = dict.fromkeys(f for k, f in self.carry.items() if k not in letters)
        carry = tuple(sorted(older, key=_seq))
        files = _merge(self._kept_files(carry, letters), frame) if carry else frame.files
        if self.static is None:
            raise ValueError("a frame before any static frame")
        view = View(self.static, frame, self.names, carry, files, self._prev)
        for k in "ctTai":
            if k in letters:
                self.carry[k] = frame
        if "T" in letters:
            self.carry["t"] = frame
        self._prev = files
        return view

    def _base_files(self, carry: tuple[Frame, ...]) -> dict:
        """The carried frames' files merged, oldest first: rebuilt only when the carried frames change."""
        if self._base[0] != carry:
            base: dict = {}
            for fr in carry:
                base.update(fr.files)
            self._base, self._kept = (carry, base), {}
        return self._base[1]

    def _kept_files(self, carry: tuple[Frame, ...], letters: str) -> dict:
        """The carried files a tick with these letters may be served from (not the ones it reads itself):
        filtered once per carried frames and kind of tick, not once per tick (most ticks carry the same
        frames, and the filter is a look-up per carried file)."""
        base = self._base_files(carry)
        key = ("g" in letters, "c" in letters)
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = {p: t for p, t in base.items() if not _owned(p, letters)}
        return kept


def _seq(f: Frame) -> int:
    return f.seq


# What a frame with these letters reads anew every time (the catalog, collectors/nodefiles.py: probe.sh
# node_wide and the G and H records): a carried copy of such a file is never served in its place, so a file
# the tick refused, could not read or no longer found is gone from the report (the tick's own problems say
# why), not kept from an older frame. The device and DRA checkpoints (issue 26) never were in this set: a
# carried copy stands in for them still (issue 35 moved the list here unchanged; see nodefiles.read_anew).
_GRID_NAMES, _GRID_PATHS = nodefiles.read_anew("g")
_GRID_NAMES -= {"kubelet_internal_checkpoint", "dra_manager_state"}
_GRID_PATHS -= {"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"}  # a fixed path (any --root-dir)
_DETAIL_NAMES = nodefiles.read_anew("c")[0]


def _owned(path: str, letters: str) -> bool:
    """Does a frame with these letters read this file itself (so an older copy must not stand in)?"""
    name = path.rpartition("/")[2]
    if "g" in letters and (name in _GRID_NAMES or path in _GRID_PATHS):
        return True
    return "c" in letters and name in _DETAIL_NAMES


def _merge(kept: dict, frame: Frame) -> dict:
    """The carried frames' files (`kept`: without those the tick reads itself) under the tick's: without
    what the tick said it could not read (refused, unreadable, too big to read)."""
    said = frame.unreadable | frame.refused.keys() | frame.truncated.keys() | set(frame.lost)
    out = dict(kept)
    for p in said:
        out.pop(p, None)
    out.update(frame.files)
    return out
