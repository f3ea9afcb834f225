"""The core grid's layout, as pure functions: topology, tag width and size in, rows of cells out.

Socket -> NUMA node -> L3 cache (only where a NUMA node has several: AMD, one per CCX) -> cores, the SMT
siblings of a core side by side. Four densities, the most detailed that fits the height is chosen:
"wall" (a big screen: id, glyph, tag and a load bar, NUMA nodes side by side when that takes fewer rows),
"full" (id, glyph, shade, tag), "compact" (glyph, shade, tag; the first CPU id at the start of a row),
"cores" (one cell per physical core). Every pod tag is shown whole in every density (two letters from
the 25th pod on): pods stay distinguishable without colour. The finding mark follows a cell's CPU id
(wall, full: `  3!# A`), or ends a cell without one (compact, cores: `#▅A!`); the column it takes is a
blank otherwise, and the last column of a cell with an id is a blank that separates cells. Several L3s
in a NUMA node become tiles side by side, each titled "L3 n  cpus …", the tile shape chosen for the
fewest rows.

No Textual here: CoreGrid (coregrid.py) paints these rows; the node screen asks `choose` how many rows a
width needs, to give the rest of a large terminal to the pod list and the findings.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pinscope.collectors.parse.cpuset import format_cpuset

DENSITIES = ("wall", "full", "compact", "cores")
BAR, MAX_BAR = 5, 16  # the load bar of a "wall" cell, in columns: at least, at most
SIDE_BY_SIDE = 1.25  # NUMA nodes side by side unless stacking them fills clearly more of the screen


@dataclass(slots=True)
class Cell:
    cpu: int  # the CPU (in "cores" density: the core's first thread)
    x: int
    width: int
    members: tuple[int, ...]  # CPUs this cell stands for


@dataclass(slots=True)
class Row:
    kind: str  # "header" | "subheader" | "l3" (tile titles) | "titles" (NUMA blocks side by side) | "cells" | "note"
    text: str = ""
    cells: list[Cell] = field(default_factory=list)  # only "cells" rows have some
    labels: list = field(default_factory=list)  # (x, text): row labels (first CPU id) and L3 tile titles
    width: int = 0
    numa: int | None = None  # a NUMA subheader's node: the grid adds the devices placed on it
    label_numas: list = field(default_factory=list)  # "titles": (x, width, NUMA node) per block: its devices too


def id_width(topology) -> int:
    """Width of a CPU id column, with a blank before it (ids are right-aligned)."""
    return len(str(max(c.id for c in topology.cpus))) + 1 if topology.cpus else 2


def tag_width(tags: dict) -> int:
    return max(map(len, tags.values()), default=1)


def choose(topology, tw: int, width: int, height: int, forced: str | None = None) -> tuple[str, list[Row]]:
    """The most detailed layout that fits width x height: (density, rows); "…, scrolling" if none does
    (then "compact": every CPU keeps its own cell). `forced` takes that density whatever its height."""
    width, height = max(10, width - 1), max(1, height)
    idw = id_width(topology)
    groups, offline = group(topology)
    for density in DENSITIES if forced is None else (forced,):
        rows = build(groups, offline, density, width, idw, tw, height)
        if not rows and density == "wall":
            continue  # too narrow or too low for it
        if len(rows) <= height:
            return density, rows
        if forced is not None:
            return density + ", scrolling", rows
    return "compact, scrolling", build(groups, offline, "compact", width, idw, tw)


def group(topology):
    """[(socket, [(numa, [(l3, [core cpu tuples])])])] plus offline CPUs. A NUMA node whose CPUs share
    one L3 (or whose L3 is unknown) has a single group; AMD nodes have several (one per CCX)."""
    socks: dict = {}
    offline = []
    for c in topology.cpus:
        if not c.online or c.socket is None and c.core is None:
            offline.append(c.id)
            continue
        key = (c.socket, c.die, c.core)
        socks.setdefault(c.socket, {}).setdefault(c.numa_node, {}).setdefault(c.l3, {}).setdefault(
            key, set()).update(c.siblings or (c.id,))
    order = lambda v: (v is None, v)  # noqa: E731
    out = []
    for s in sorted(socks, key=order):
        numas = []
        for n in sorted(socks[s], key=order):
            l3s = []
            for l3 in sorted(socks[s][n], key=order):
                cores = sorted({tuple(sorted(v)) for v in socks[s][n][l3].values()}, key=lambda t: t[0])
                l3s.append((l3, cores))
            numas.append((n, l3s))
        out.append((s, numas))
    return out, sorted(offline)


def metrics(density: str, idw: int, tw: int) -> tuple[int, int]:
    """(cell width, gap after a core)."""
    if density == "wall":
        return idw + 1 + 2 + tw + 1 + BAR + 1, 3  # " 123!# AB ▇▇▇▍ "
    if density == "full":
        return idw + 1 + 2 + tw + 1, 2  # " 123!#▅AB "
    return 2 + tw + 1, 1 if density == "compact" else 0  # "#▅AB!"


def build(groups, offline, density: str, width: int, idw: int, tw: int, height: int = 0) -> list[Row]:
    if density == "wall":
        return _wall(groups, offline, width, height, idw, tw)
    rows: list[Row] = []
    cw, gap = metrics(density, idw, tw)
    label_w = 0 if density in ("full", "wall") else idw + 1
    for sock, numas in groups:
        rows.append(Row("header", text=f"Socket {sock if sock is not None else '?'}"))
        for numa, l3s in numas:
            cores = [core for _, cs in l3s for core in cs]
            cpus = [c for core in cores for c in core]
            tiled = len(l3s) > 1
            rows.append(Row("subheader", text=f" NUMA {numa if numa is not None else '?'}  "
                            f"cpus {format_cpuset(cpus)}  ({len(cores)} cores"
                            + (f", {len(l3s)} L3 caches)" if tiled else ")"), numa=numa))
            if tiled:
                rows += _tiles(l3s, density, width, cw, gap, label_w)
                continue
            per_row = max(1, (width - label_w) // _block(cores, density, cw, gap))
            per_row = -(-len(cores) // -(-len(cores) // per_row))  # as many rows, evenly filled
            for i in range(0, len(cores), per_row):
                rows.append(_cells_row(cores[i:i + per_row], density, cw, gap, 0, label_w))
    rows += _offline(offline, cw, width, idw)
    return rows


def _offline(offline, cw: int, width: int, idw: int) -> list[Row]:
    rows: list[Row] = []
    if offline:
        rows.append(Row("header", text="Offline"))
        step = max(cw, 3) + 1
        per_row = max(1, (width - idw - 1) // step)
        for i in range(0, len(offline), per_row):
            chunk = offline[i:i + per_row]
            rows.append(Row("cells", cells=[Cell(c, idw + 1 + j * step, step - 1, (c,)) for j, c in enumerate(chunk)],
                            labels=[(0, f"{chunk[0]:>{idw - 1}}:")], width=idw + 1 + len(chunk) * step))
    return rows


def _wall(groups, offline, width: int, height: int, idw: int, tw: int) -> list[Row]:
    """The big-screen layout: every NUMA node a block titled "Socket s  NUMA n  cpus …", its cores in rows
    with a blank row between (taller rows, legible from across a room); blocks side by side, k per band.
    Of the arrangements that fit the height, the one that fills the most of the screen (side by side
    favoured): the fewer cores per line, the wider each cell's load bar (BAR to MAX_BAR columns)."""
    blocks = []
    numas_of: list = []  # each block's NUMA node (the grid adds the devices placed on it to its title)
    if any(len(l3s) > 1 for _, numas in groups for _, l3s in numas):
        return []  # several L3 caches in a NUMA node (AMD): their tiles say more than bigger cells
    for sock, numas in groups:
        for numa, l3s in numas:
            cores = [core for _, cs in l3s for core in cs]
            cpus = [c for core in cores for c in core]
            title = (f"Socket {sock if sock is not None else '?'}  NUMA {numa if numa is not None else '?'}  "
                     f"cpus {format_cpuset(cpus)}  ({len(cores)} cores)")
            blocks.append((title, cores))
            numas_of.append(numa)
    if not blocks:
        return []
    threads = max(len(c) for _, cs in blocks for c in cs)
    fixed = idw + 1 + 2 + tw + 1 + 1  # id, glyph, tag, the blanks and the mark: the rest is the bar
    best: tuple | None = None  # (area filled, k, per line, bar)
    for k in range(len(blocks), 0, -1):
        block_w = (width + 3) // k - 3
        bands = -(-len(blocks) // k)
        most = max(len(cs) for _, cs in blocks)
        for per in range(min(2, most), most + 1):  # two cores a line at least: a line, not a column
            bar = min(MAX_BAR, (block_w // per - 3) // threads - fixed)
            if bar < BAR:
                break
            lines = -(-most // per)
            nrows = bands * (1 + 2 * lines) + bands - 1
            area = float(nrows * min(len(blocks), k) * per * ((fixed + bar) * threads + 3))  # what it fills
            area *= SIDE_BY_SIDE if k > 1 else 1.0
            if nrows <= height and (best is None or area > best[0]):
                best = (area, k, per, bar)
    if best is None:  # not even the widest arrangement fits: one line per band as full as it gets
        return []
    _, k, per, barw = best
    cw = fixed + barw
    block_w = (width + 3) // k - 3
    rows: list[Row] = []
    for i in range(0, len(blocks), k):
        band = blocks[i:i + k]
        if rows:
            rows.append(Row("note", text=""))
        rows.append(Row("titles", labels=[(j * (block_w + 3), t[:block_w]) for j, (t, _) in enumerate(band)],
                        label_numas=[(j * (block_w + 3), block_w, numas_of[i + j]) for j in range(len(band))]))
        lines = max(-(-len(cores) // per) for _, cores in band)
        for li in range(lines):
            cells, w = [], 0
            for j, (_, cores) in enumerate(band):
                chunk = cores[li * per:(li + 1) * per]
                if chunk:
                    r = _cells_row(chunk, "wall", cw, 3, j * (block_w + 3), 0)
                    cells += r.cells
                    w = r.width
            rows.append(Row("cells", cells=cells, width=w))
            rows.append(Row("note", text=""))
    return rows + _offline(offline, cw, width, idw)


def _block(cores, density, cw, gap) -> int:
    threads = max((len(c) for c in cores), default=1)
    return (cw if density == "cores" else cw * threads) + gap


def _cells_row(chunk, density, cw, gap, x0, label_w) -> Row:
    cells = []
    x = x0 + label_w
    for core in chunk:
        if density == "cores":
            cells.append(Cell(core[0], x, cw, core))
            x += cw + gap
        else:
            for t in core:
                cells.append(Cell(t, x, cw, (t,)))
                x += cw
            x += gap
    labels = [(x0, f"{chunk[0][0]:>{label_w - 2}}:")] if label_w else []
    return Row("cells", cells=cells, labels=labels, width=x)


def _tiles(l3s, density, width, cw, gap, label_w) -> list[Row]:
    """One tile per L3 cache, side by side: a title line ("L3 2  cpus 16-23") over its cores. The
    tile's column count is the one giving the fewest rows at this width."""
    biggest = max(len(cores) for _, cores in l3s)
    best: list[Row] | None = None
    tried = set()
    for div in range(1, biggest + 1):
        cols = -(-biggest // div)
        if cols in tried:
            continue
        tried.add(cols)
        tile_w = label_w + cols * _block(l3s[0][1], density, cw, gap)
        if tile_w > width and cols > 1:
            continue
        per_row = max(1, (width + 2) // (tile_w + 2))
        rows: list[Row] = []
        for i in range(0, len(l3s), per_row):
            batch = l3s[i:i + per_row]
            lines = max(-(-len(cores) // cols) for _, cores in batch)
            rows.append(Row("l3", labels=[(j * (tile_w + 2), _l3_title(l3, cores, tile_w))
                                          for j, (l3, cores) in enumerate(batch)]))
            for li in range(lines):
                cells, labels, w = [], [], 0
                for j, (_, cores) in enumerate(batch):
                    chunk = cores[li * cols:(li + 1) * cols]
                    if chunk:
                        r = _cells_row(chunk, density, cw, gap, j * (tile_w + 2), label_w)
                        cells += r.cells
                        labels += r.labels
                        w = r.width
                rows.append(Row("cells", cells=cells, labels=labels, width=w))
        if best is None or len(rows) < len(best):
            best = rows
        if per_row >= len(l3s):
            break  # fewer columns only adds lines from here on
    return best or []


def _l3_title(l3, cores, tile_w: int) -> str:
    cpus = [c for core in cores for c in core]
    text = f"L3 {l3 if l3 is not None else '?'}  cpus {format_cpuset(cpus)}"
    return text if len(text) <= tile_w else text[:max(1, tile_w - 1)] + "…"
