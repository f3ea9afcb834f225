"""`pinscope --prometheus`: the fleet overview against a real Prometheus holding 5,000 simulated nodes,
backfilled with `promtool tsdb create-blocks-from openmetrics` (tests/promfleet.py writes the series
in the exporter's contract). Counts match the truth written; the per-CPU map is fetched only for the nodes
on screen; Enter opens a node live through the usual transport and Esc comes back; --selector narrows the
fleet; Prometheus down, slow or refusing is a status-line state, never a crash.
"""
from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from pinscope.collectors.collect import Options
from pinscope.collectors.promql import PromError, PromSource, matchers
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from promfleet import make_fleet
from helpers import need
from promserver import Prometheus, backfill, free_port, have_prometheus

N = 5000
pytestmark = pytest.mark.timeout(300)  # the backfill takes ~30 s on a quiet 2-core machine


@pytest.fixture(scope="module")
def fleet_prom(tmp_path_factory):
    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    d = tmp_path_factory.mktemp("fleet")
    fleet = make_fleet(N)
    backfill(fleet, d / "data")
    with Prometheus(storage=str(d / "data"), lookback="1h") as prom:
        yield fleet, prom


def _app(url, **kw):
    from pinscope.tui.promapp import PromApp

    return PromApp(PromSource(url, kw.pop("selector", None), timeout=kw.pop("timeout", 20)), **kw)


async def _until(pilot, cond, deadline=60.0, what="condition"):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if cond():
            return
        await pilot.pause(0.1)
    raise AssertionError(f"{what}: not within {deadline} s")


async def test_overview_of_5000_nodes_matches_the_truth_and_maps_only_what_is_on_screen(fleet_prom):
    fleet, prom = fleet_prom
    truth = {n.name: n for n in fleet}

    app = _app(prom.url)
    async with app.run_test(size=(200, 50)) as pilot:
        scr = app.overview
        await _until(pilot, lambda: len(scr.rows) == N, what="5,000 nodes")
        rows = scr.rows
        assert sum(1 for r in rows.values() if r.node.read_ok is False) == sum(1 for n in fleet if not n.read_ok)
        crit = {n.name for n in fleet if n.read_ok and any(f[1] == "critical" for f in n.findings)}
        assert {k for k, r in rows.items() if r.node.findings.get("critical")} == crit
        for name in ("node-00000", "node-01234", "node-04999"):
            t = truth[name]
            if t.read_ok:
                assert rows[name].node.ncpus == t.ncpus
        # the readiness score of every node, as written: (ok, ok + no); none where the node was not read
        assert {k: r.node.ready for k, r in rows.items()} == {
            n.name: (n.ready["ok"], n.ready["ok"] + n.ready["no"]) if n.read_ok else None for n in fleet}
        # worst first: every critical node, by name, then the warnings
        from pinscope.tui.widgets.promfleetmap import PromFleetMap

        fm = app.screen.query_one(PromFleetMap)
        top = [v.target for v in fm.views[:len(crit)]]
        assert top == sorted(crit)
        # the per-CPU map: fetched for the nodes on screen, and for no other
        await _until(pilot, lambda: all(rows[n].cpus is not None for n in fm.visible_names()), what="visible maps")
        shown = set(fm.visible_names())
        assert 10 <= len(shown) < 60
        fetched = {k for k, r in rows.items() if r.cpus is not None}
        assert fetched == shown
        for name in shown:
            t = truth[name]
            cpus = rows[name].cpus
            assert [c.role for c in cpus] == t.roles
            drift = [c.id for c in cpus if c.mark == "critical"]
            assert drift == [i for i, o in enumerate(t.owners) if o == ("trading", "app-0", "main")]
        # the screen shows it: a critical node's row with its code and its map
        first = sorted(crit)[0]
        text = "\n".join(fm.render_line(y).text for y in range(3))
        assert first in text and "STATE_CGROUP_DRIFT" in text and "!" in text
        # scrolling to the end fetches the maps of the nodes that come on screen
        await pilot.press("end")
        fm.cursor = len(fm.views) - 1
        await _until(pilot, lambda: all(rows[n].cpus is not None for n in fm.visible_names()), what="maps after scrolling")
        assert "node-04999" in fm.visible_names() or truth["node-04999"].findings
        assert len({k for k, r in rows.items() if r.cpus is not None}) < 300  # a few screens, never the 5,000
        # the filter narrows by name
        await pilot.press("slash", *"node-0012", "enter")
        await _until(pilot, lambda: len(fm.views) == 10, what="filter")
        assert "node-0012" in str(app.screen.query_one("#status").render())



async def test_selector_narrows_the_fleet_in_promql(fleet_prom):
    fleet, prom = fleet_prom

    app = _app(prom.url, selector='node=~"node-000.*"')
    async with app.run_test(size=(160, 40)) as pilot:
        await _until(pilot, lambda: len(app.overview.rows) == 100, what="100 nodes")
        assert set(app.overview.rows) == {f"node-{i:05d}" for i in range(100)}



async def test_enter_opens_a_node_live_through_the_usual_transport_and_esc_returns(fleet_prom, tmp_path):
    """The host template names the transport: here 'local' with --root, a simulated node read live by
    the real probe (over SSH it would be {name} or {ip})."""
    _, prom = fleet_prom
    SimNode(NodeSpec(hostname="sim-live", cores=4, reserved="0",
                     pods=[PodSpec("feed", "trading", containers=[CtrSpec("feed", cpus="2-3")])]), tmp_path / "n").write()

    from pinscope.tui.screens.node import NodeScreen

    app = _app(prom.url, opts=Options(root=str(tmp_path / "n")), host_template="local")
    async with app.run_test(size=(200, 50)) as pilot:
        await _until(pilot, lambda: len(app.overview.rows) == N, what="5,000 nodes")
        await pilot.pause(0.3)
        await pilot.press("enter")
        assert isinstance(app.screen, NodeScreen)
        name = app.screen.target
        assert name == app.overview.query_one("#fleet").views[0].target
        await _until(pilot, lambda: app.views[name].snap is not None, what="a live frame")
        assert app.views[name].snap.node == "sim-live"
        assert app.fleet.collectors[name].target == "local" and name in app.live_workers
        await pilot.press("escape")
        assert app.screen is app.overview
        assert name not in app.live_workers  # that node's task is stopped, its probe closed
        await _until(pilot, lambda: app.fleet.collectors[name].transport.proc is None, what="probe closed")



class _Silent:
    """A TCP server that accepts and never answers: a Prometheus that hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.t = threading.Thread(target=self._accept, daemon=True)
        self.t.start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


async def test_prometheus_down_or_slow_is_a_status_line_state():
    app = _app(f"http://127.0.0.1:{free_port()}", timeout=2)  # nothing listens there
    async with app.run_test(size=(160, 30)) as pilot:
        await _until(pilot, lambda: app.overview.state == "down", deadline=20, what="down")
        status = str(app.screen.query_one("#status").render())
        assert "Prometheus DOWN" in status and "no data yet" in status
    silent = _Silent()
    try:
        app = _app(f"http://127.0.0.1:{silent.port}", timeout=1)
        async with app.run_test(size=(160, 30)) as pilot:
            await _until(pilot, lambda: app.overview.state == "slow", deadline=20, what="slow")
            assert "did not answer within 1 s" in str(app.screen.query_one("#status").render())
            await pilot.press("q")
    finally:
        silent.close()



def test_prometheus_refusing_a_query_and_bad_arguments_are_plain():
    with pytest.raises(PromError, match="expected an http"):
        PromSource("localhost:9090")
    with pytest.raises(PromError, match="--selector"):
        matchers("=broken")
    assert matchers("pool=trading, zone!=b") == 'pool="trading",zone!="b"'
    assert matchers('node=~"trade-.*"') == 'node=~"trade-.*"'


def test_cli_prometheus_with_a_bad_url_is_one_line():
    from helpers import run_cli

    r = run_cli("--prometheus", "localhost:9090", timeout=60)  # a usage error, like a bad target: exit 2
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "expected an http" in r.stderr
    r = run_cli("--prometheus", "http://127.0.0.1:9", "--selector", "=x", timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--selector" in r.stderr


def test_how_enter_reaches_a_node():
    from pinscope.collectors.promql import PromNode
    from pinscope.tui.promapp import PromApp
    from pinscope.tui.widgets.promfleetmap import PromRow

    def app(template, user=None, ip=None):
        a = PromApp(PromSource("http://127.0.0.1:1"), host_template=template, user=user)
        a.overview.rows = {"w-3": PromRow(PromNode("w-3", 8, True, ip=ip))}
        return a

    assert app("{name}", "ops").address_of("w-3") == "ops@w-3"
    assert app("{ip}", "ops", ip="10.0.0.7").address_of("w-3") == "ops@10.0.0.7"
    assert app("{ip}").address_of("w-3") == "w-3"  # no kube_node_info in Prometheus: the name
    assert app("{name}.dc1:2222", "ops").address_of("w-3") == "ops@w-3.dc1:2222"
    assert app("node/{name}", "ops").address_of("w-3") == "node/w-3"  # the Kubernetes API: no SSH user
    assert app("local", "ops").address_of("w-3") == "local"


def test_two_exporters_of_one_node_count_it_once(tmp_path):
    """Issue 22 item 6: two exporters report the same node (a DaemonSet and a central exporter, or a
    rollout's old and new pod), scraped by a real Prometheus. The overview takes the max per node, as the
    alert rules do: its CPUs, finding counts, codes and per-CPU map are those of one exporter, not twice."""
    from pinscope.collectors.sim.node import SimNode
    from promserver import Exporter

    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    root = tmp_path / "twin"
    SimNode(NodeSpec(hostname="twin", sockets=1, cores=4, threads=2, reserved="0,4", init_affinity="0,4",
                     pods=[PodSpec("rt", "prod", containers=[CtrSpec("app", cpus="1,5", effective="1-2,5-6")])],
                     irqs={41: "1"}), root).write()  # a drift (critical), an IRQ on CPU 1 (warning)
    args = ("--interval", "1", "--root", str(root), "--node-name", "twin", "local")
    with Exporter(*args) as a, Exporter(*args) as b:
        jobs = [{"job_name": f"pinscope-{i}", "static_configs": [{"targets": [e.addr]}]} for i, e in enumerate((a, b))]
        with Prometheus(scrape_configs=jobs) as prom:
            prom.wait_for('count(pinscope_findings{node="twin",severity="critical"})', 2.0)
            one = {r["metric"]["severity"]: int(float(r["value"][1]))
                   for r in prom.query('pinscope_findings{node="twin",job="pinscope-0"}')}
            assert one["critical"] == 1 and one["warning"] == 1, one
            src = PromSource(prom.url, timeout=20)
            fleet = asyncio.run(src.fleet())
            twin = fleet["twin"]
            assert twin.ncpus == 8 and twin.read_ok is True
            assert twin.findings == {s: n for s, n in one.items() if n}, twin.findings
            assert twin.codes == (("critical", "STATE_CGROUP_DRIFT"), ("warning", "IRQ_ON_EXCLUSIVE"))
            cpus = asyncio.run(src.cpus(["twin"]))["twin"]
            assert [c.id for c in cpus] == list(range(8))
            assert {c.id: c.role for c in cpus if c.role == "exclusive"} == {1: "exclusive", 5: "exclusive"}
            assert cpus[1].owner == ("prod", "rt", "app") and cpus[1].mark == "critical"
