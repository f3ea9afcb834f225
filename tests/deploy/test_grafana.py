"""deploy/grafana/: the dashboard is what its generator (Grafana's typed SDK) builds, its ConfigMap is
labelled for Grafana's sidecar, and every query in it answers from a real Prometheus (Debian's package)
scraping pinscope's exporter over a simulated node.

Needs grafana-foundation-sdk (the test extra), kubectl, prometheus: skipped without them on a laptop,
FAILS in CI.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import threading
import time
from pathlib import Path

import yaml

from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import need
from promserver import Exporter, Prometheus, have_prometheus

ROOT = Path(__file__).resolve().parents[2]
GRAFANA = ROOT / "deploy/grafana"
BOARD = json.loads((GRAFANA / "pinscope.json").read_text())

SPEC = NodeSpec(
    hostname="sim-g", sockets=1, cores=8, threads=2, reserved="0,8",
    pods=[
        PodSpec("feed-0", "trading", containers=[CtrSpec("feed", cpus="2-5", busy=0.8, quota_cores=4, throttled=2)]),
        # planted: the kernel runs fix-gw on more CPUs than kubelet gave it (a critical finding)
        PodSpec("gw-1", "trading", containers=[CtrSpec("fix-gw", cpus="6,14", effective="6-7,14")]),
        PodSpec("api", "web", qos="Burstable", containers=[CtrSpec("api", tasks=3)]),
    ],
)


def _generator():
    need(importlib.util.find_spec("grafana_foundation_sdk") is not None,
         "grafana-foundation-sdk (pip install -e '.[test]')")
    spec = importlib.util.spec_from_file_location("pinscope_grafana_generate", GRAFANA / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_dashboard_is_what_the_generator_builds():
    gen = _generator()
    assert gen.render() == (GRAFANA / "pinscope.json").read_text()
    assert gen.main(["--check"]) == 0


def test_the_configmap_carries_the_dashboard_for_grafanas_sidecar():
    need(shutil.which("kubectl") is not None, "kubectl renders kustomizations")
    r = subprocess.run(["kubectl", "kustomize", str(GRAFANA)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    (cm,) = [d for d in yaml.safe_load_all(r.stdout) if d]
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["pinscope.json"]) == BOARD


def _queries() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in BOARD["panels"] for t in p.get("targets", [])]


def test_the_dashboard_shows_what_the_issue_asks():
    titles = " | ".join(p["title"] for p in BOARD["panels"])
    for what in ("CPU map", "Exclusive CPUs per pod", "Findings over time", "Run-queue wait", "noise", "own cost"):
        assert what in titles, (what, titles)
    assert {p["type"] for p in BOARD["panels"]} >= {"state-timeline", "heatmap", "timeseries", "bargauge", "stat"}
    assert all('node=~"$node"' in e for _, e in _queries())  # every panel per node
    (node_var,) = [v for v in BOARD["templating"]["list"] if v["name"] == "node"]
    assert node_var["query"] == "label_values(pinscope_node_info, node)"


def test_every_query_answers_from_a_real_prometheus(tmp_path):
    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    sim = SimNode(SPEC, tmp_path / "sim-g").write()
    stop = threading.Event()

    def advance():  # the node's counters move, as a real node's do
        while not stop.wait(0.5):
            sim.tick(0.5)

    ticker = threading.Thread(target=advance, daemon=True)
    ticker.start()
    exp = Exporter("--interval", "1", "--root", str(sim.root), "--node-name", "sim-g", "local").start()
    try:
        job = {"job_name": "pinscope/pinscope-exporter", "static_configs": [{"targets": [exp.addr]}]}
        with Prometheus(scrape_configs=[job]) as prom:
            prom.wait_for('count(pinscope_probe_cpu_seconds_total{node="sim-g"})', 1.0)
            # the node variable's own query, as Grafana runs it (label_values -> the series API's values)
            assert prom.query("group by (node) (pinscope_node_info)")[0]["metric"]["node"] == "sim-g"
            empty: list[tuple[str, str]] = []
            for _ in range(60):  # rates need two scrapes of a moved counter; the run-queue wait its own read
                empty = []
                for title, expr in _queries():
                    e = expr.replace("$node", "sim-g").replace("$__rate_interval", "1m")
                    if not prom.query(e):
                        empty.append((title, e))
                if not empty:
                    break
                time.sleep(1)
            assert not empty, empty
    finally:
        exp.close()
        stop.set()
        ticker.join(5)
