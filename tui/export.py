"""`e`: the current view as data, beside its SVG. CSV has one row per CPU (node, id, socket, NUMA, L3, role,
owner, load, finding, highlighted, where the role came from); JSON holds the same rows per node plus the node's findings and what the view showed.

The CSV is opened in spreadsheets, and its text comes from the node (hostnames, pod and container names):
a cell starting with `=`, `+`, `-`, `@`, tab or carriage return would be read there as a live formula
(`=HYPERLINK(...)`). As OWASP's "CSV Injection" page recommends, such a text cell gets a leading `'` (the
rest of it unchanged) and every text cell is double-quoted. Numbers pinscope wrote itself (CPU ids, socket,
NUMA, L3, load: Python ints and floats, never text from the node) stay bare numbers, a negative one
included: a spreadsheet reads `-1` as the number it is. JSON is data, not a sheet: left as it is.

Pure functions of NodeViews (no Textual), and the writing of `s` and `e` (save_svg, export_current): the
same file names for both (pinscope-<node>-<time>), and the same words for where they wrote or why not.
"""
from __future__ import annotations

import csv
import io
import json

from pinscope.collectors.text import display

# roles_from: where the role came from (state: kubelet's cpu_manager_state; cgroups: inferred from the kernel's
# cpusets, kubelet's assignment unknown; policy-none)
COLUMNS = ("node", "cpu", "socket", "numa", "l3", "role", "owner", "load", "finding", "highlighted", "roles_from")


def owner_text(o) -> str:
    return f"{o.namespace or '?'}/{o.pod or o.pod_uid[:8]}/{o.container or '?'}"


def cpu_rows(view, highlight=frozenset()) -> list[dict]:
    """One dict per CPU of the node, in CPU order. load is the busy share 0..1 over the last interval
    (None before the second sample); owner names every container the CPU is exclusive to ("; ")."""
    snap = view.snap
    if snap is None:
        return []
    roles = {r.id: r for r in snap.roles}
    util = view.rates.util if view.rates else {}
    marks = view.cpu_findings()
    out = []
    for c in sorted(snap.topology.cpus, key=lambda c: c.id):
        r = roles.get(c.id)
        u = util.get(c.id)
        out.append({
            "node": snap.node, "cpu": c.id, "socket": c.socket, "numa": c.numa_node, "l3": c.l3,
            "role": r.role if r else ("offline" if not c.online else "unassigned"),
            "owner": "; ".join(owner_text(o) for o in r.owners) if r else "",
            "load": None if u is None else round(u, 4),
            "finding": marks.get(c.id, ""),
            "highlighted": c.id in highlight,
            "roles_from": snap.roles_from,
        })
    return out


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP's list: what makes a spreadsheet cell a formula


def csv_cell(value: object) -> object:
    """One CSV cell: numbers pinscope computed stay numbers; text (any str, so anything from the node) that
    a spreadsheet would take for a formula is prefixed with `'`."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    # QUOTE_NONNUMERIC: every text cell in double quotes (quotes inside doubled), numbers bare
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    w.writeheader()
    for r in rows:
        w.writerow({k: csv_cell(r[k]) for k in COLUMNS})
    return buf.getvalue()


def to_json(views, highlights: dict, context: dict) -> str:
    """views: the NodeViews exported; highlights: target -> CPUs lit in the view; context: what the view
    was (screen, filter, density, time)."""
    nodes = []
    for v in views:
        nodes.append({
            "node": v.name, "target": v.target, "state": v.state,
            "cpus": cpu_rows(v, highlights.get(v.target, frozenset())),
            "findings": [f.to_json() for f in v.findings],
        })
    return json.dumps({"schema": 1, **context, "nodes": nodes}, indent=1)


def _shown(app) -> tuple[list, object]:
    """The views of what the app shows (the node on screen, or the node of the pane on screen, or every node
    from the fleet overview) and the screen."""
    from pinscope.tui.screens.base import ReportScreen

    scr = app.screen
    target = scr.target if isinstance(scr, ReportScreen) else None
    views = [app.views[target]] if target in app.views else [app.views[t] for t in app.targets]
    return views, scr


def _when(app):
    import datetime as dt

    t = app.replay_clock  # a replay: its own clock
    return dt.datetime.fromtimestamp(t) if t else dt.datetime.now()


def _stem(directory: str, views, when, exts: tuple[str, ...]) -> str:
    """pinscope-<node or fleet>-<YYYYmmdd-HHMMSS>, `-2`, `-3`... when a file of that name is there already
    (two keys in the same second, a paused replay): `s` and `e` name their files alike, never over another."""
    import os
    import re

    name = views[0].name if len(views) == 1 else "fleet"
    base = f"pinscope-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}-{when:%Y%m%d-%H%M%S}"
    stem, n = base, 1
    while any(os.path.lexists(os.path.join(directory, f"{stem}.{ext}")) for ext in exts):
        n += 1
        stem = f"{base}-{n}"
    return stem


def save_svg(app, directory: str, filename: str | None = None) -> str:
    """`s`: the screen as <stem>.svg in `directory` (made when missing); the path written. OSError when the
    directory takes no file."""
    import os

    os.makedirs(directory, exist_ok=True)
    if not filename:
        filename = _stem(directory, _shown(app)[0], _when(app), ("svg",)) + ".svg"
    return app.save_screenshot(filename=filename, path=directory)


def saved_line(paths: list[str]) -> str:
    """What `s` and `e` say when they wrote: the file names, and the directory they are in (absolute)."""
    import os

    where = os.path.dirname(os.path.abspath(paths[0]))
    return display("saved " + ", ".join(os.path.basename(p) for p in paths) + f" in {where}")


def failed_line(what: str, directory: str, err: OSError) -> str:
    """What `s` and `e` say when the directory takes no file: the directory, the system's reason, the way out."""
    import os

    return display(f"{what} failed: cannot write in {os.path.abspath(directory)} ({err.strerror or err}); "
                   "set PINSCOPE_SCREENSHOTS to a directory you can write")


def export_current(app, directory: str) -> list[str]:
    """Write <stem>.svg, <stem>.csv and <stem>.json for what the app shows: the node on screen (or the node
    of the pane on screen), or every node from the fleet overview. Returns the paths written."""
    import os

    from pinscope.tui.screens.base import ReportScreen

    views, scr = _shown(app)
    target = scr.target if isinstance(scr, ReportScreen) else None
    highlights: dict[str, frozenset[int]] = {}
    context = {"screen": type(scr).__name__}
    grid = scr.grid_widget if isinstance(scr, ReportScreen) else None
    if target is not None and target in app.views and grid is not None:
        highlights[target] = grid.highlight
        context["density"] = grid.density
    if isinstance(scr, ReportScreen) and scr.filter_text:
        context["filter"] = scr.filter_text
    when = _when(app)
    context["time"] = when.isoformat(timespec="seconds")
    os.makedirs(directory, exist_ok=True)
    stem = _stem(directory, views, when, ("svg", "csv", "json"))
    svg = save_svg(app, directory, stem + ".svg")
    rows = [r for v in views for r in cpu_rows(v, highlights.get(v.target, frozenset()))]
    paths = [svg]
    for ext, text in (("csv", to_csv(rows)), ("json", to_json(views, highlights, context))):
        p = os.path.join(directory, f"{stem}.{ext}")
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(p)
    return paths
