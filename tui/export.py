"""`e`: the current view as data, beside its SVG. CSV has one row per CPU (node, id, socket, NUMA, L3, role,
owner, load, finding); JSON holds the same rows per node plus the node's findings and what the view showed.

The CSV is opened in spreadsheets, and its text comes from the node (hostnames, pod and container names):
a cell starting with `=`, `+`, `-`, `@`, tab or carriage return would be read there as a live formula
(`=HYPERLINK(...)`). As OWASP's "CSV Injection" page recommends, such a text cell gets a leading `'` (the
rest of it unchanged) and every text cell is double-quoted. Numbers pinscope wrote itself (CPU ids, socket,
NUMA, L3, load: Python ints and floats, never text from the node) stay bare numbers, a negative one
included: a spreadsheet reads `-1` as the number it is. JSON is data, not a sheet: left as it is.

Pure functions of NodeViews (no Textual): the app only picks the views and the file names.
"""
from __future__ import annotations

import csv
import io
import json

COLUMNS = ("node", "cpu", "socket", "numa", "l3", "role", "owner", "load", "finding", "highlighted")


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


def export_current(app, directory: str) -> list[str]:
    """Write <stem>.svg, <stem>.csv and <stem>.json for what the app shows: the node on screen (or the node
    of the pane on screen), or every node from the fleet overview. Returns the paths written."""
    import datetime as dt
    import os
    import re

    from pinscope.tui.screens.base import ReportScreen

    scr = app.screen
    target = scr.target if isinstance(scr, ReportScreen) else None
    views = [app.views[target]] if target in app.views else [app.views[t] for t in app.targets]
    highlights: dict[str, frozenset[int]] = {}
    context = {"screen": type(scr).__name__}
    grid = scr.grid_widget if isinstance(scr, ReportScreen) else None
    if target is not None and target in app.views and grid is not None:
        highlights[target] = grid.highlight
        context["density"] = grid.density
    if isinstance(scr, ReportScreen) and scr.filter_text:
        context["filter"] = scr.filter_text
    t = app.replay_clock  # a replay: its own clock
    when = dt.datetime.fromtimestamp(t) if t else dt.datetime.now()
    context["time"] = when.isoformat(timespec="seconds")
    name = views[0].name if len(views) == 1 else "fleet"
    stem = f"pinscope-{re.sub(r'[^A-Za-z0-9._-]+', '_', name)}-{when:%Y%m%d-%H%M%S}"
    os.makedirs(directory, exist_ok=True)
    svg = app.save_screenshot(filename=stem + ".svg", path=directory)
    rows = [r for v in views for r in cpu_rows(v, highlights.get(v.target, frozenset()))]
    paths = [svg]
    for ext, text in (("csv", to_csv(rows)), ("json", to_json(views, highlights, context))):
        p = os.path.join(directory, f"{stem}.{ext}")
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(p)
    return paths
