"""The exporter under a real Prometheus (Debian's package): scraped on 127.0.0.1, answering PromQL with
the simulated node's true counts; `promtool check metrics` clean; an unreadable node is
pinscope_read_success 0 while the others carry on; the deploy/ alert rules go pending on both faults.
Bad input: a malformed --listen is one plain line and exit 2; a port in use, one plain line and exit 1.
"""
from __future__ import annotations

import socket
import subprocess
import time
import threading

import pytest
import yaml

from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from helpers import need, run_cli
from promserver import (PROMTOOL, REPO, Exporter, Prometheus, free_port, have_prometheus, podmonitor_scrape_config,
                        readme_scrape_config, rules_file)

SPEC = NodeSpec(
    hostname="sim-a", sockets=1, cores=8, threads=2, reserved="0,8",
    pods=[
        PodSpec("feed-0", "trading", containers=[CtrSpec("feed", cpus="2-5", busy=0.8, quota_cores=4, throttled=2)]),
        # planted: the kernel runs fix-gw on more CPUs than kubelet gave it (critical STATE_CGROUP_DRIFT)
        PodSpec("gw-1", "trading", containers=[CtrSpec("fix-gw", cpus="6,14", effective="6-7,14")]),
        PodSpec("api", "web", qos="Burstable", containers=[CtrSpec("api", tasks=3)]),
    ],
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """sim-a (a tree read through the real probe), plus two nodes that cannot be read, behind one exporter
    scraped by Prometheus the way deploy/operator/podmonitor.yaml has the operator do it."""
    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    d = tmp_path_factory.mktemp("prom")
    sim = SimNode(SPEC, d / "sim-a").write()
    stop = threading.Event()

    def advance():  # the node's counters move, as a real node's do (utilisation, throttling)
        while not stop.wait(0.5):
            sim.tick(0.5)

    ticker = threading.Thread(target=advance, daemon=True)
    ticker.start()
    inv = d / "inv.yaml"
    inv.write_text(yaml.safe_dump({"nodes": [
        {"name": "sim-a", "host": "local", "root": str(d / "sim-a")},
        {"name": "gone", "host": "local", "root": str(d / "no-such-dir")},  # --root that is not there
        {"name": "refused", "host": "127.0.0.1", "port": 1},  # nothing listens: SSH connect refused
    ]}))
    rules = d / "rules.yaml"
    rules_file(rules)
    exp = Exporter("--interval", "1", "--inventory", str(inv), "--connect-timeout", "3").start()
    try:
        with Prometheus(scrape_configs=[podmonitor_scrape_config([exp.addr])], rules=str(rules)) as prom:
            yield exp, prom
    finally:
        exp.close()
        stop.set()
        ticker.join(5)


def test_promql_answers_the_simulated_nodes_counts(stack):
    exp, prom = stack
    prom.wait_for('pinscope_read_success{node="sim-a"}', 1.0)
    assert prom.value('count(pinscope_cpu_info{node="sim-a"})') == 16
    assert prom.value('count(pinscope_cpu_info{node="sim-a",role="exclusive"})') == 6
    assert prom.value('pinscope_cpus{node="sim-a",role="exclusive"}') == 6
    assert prom.value('pinscope_cpus{node="sim-a",role="reserved"}') == 2
    assert prom.value('pinscope_cpus{node="sim-a",role="shared"}') == 8
    assert prom.value('sum(pinscope_container_exclusive_cpus{node="sim-a",namespace="trading",pod="feed-0",container="feed"})') == 4
    # owner labels are the workload's (the exporter pod's own target labels were dropped, never exported_*)
    owners = {r["metric"]["cpu"]: (r["metric"]["namespace"], r["metric"]["pod"], r["metric"]["container"])
              for r in prom.query('pinscope_cpu_info{node="sim-a",role="exclusive"}')}
    assert owners == {**{c: ("trading", "feed-0", "feed") for c in ("2", "3", "4", "5")},
                      "6": ("trading", "gw-1", "fix-gw"), "14": ("trading", "gw-1", "fix-gw")}
    shared = prom.query('pinscope_cpu_info{node="sim-a",role="shared"}')
    assert shared and all("namespace" not in r["metric"] and "pod" not in r["metric"] for r in shared)
    assert not prom.query('{__name__=~"pinscope_.*",exported_namespace!=""}')
    assert prom.value('pinscope_finding{node="sim-a",code="STATE_CGROUP_DRIFT",pod="gw-1",container="fix-gw",severity="critical"}') == 1
    assert prom.value('pinscope_findings{node="sim-a",severity="critical"}') >= 1
    # counters are counters: Prometheus sees the simulated throttling grow
    prom.wait_for('increase(pinscope_container_cpu_cfs_throttled_periods_total{node="sim-a",pod="feed-0"}[5s])',
                  lambda v: v is not None and v > 0)
    assert prom.value('pinscope_read_duration_seconds{node="sim-a"}') > 0
    # the probe's own CPU, as it says of itself: a counter that grows, by less than the time that passed
    prom.wait_for('increase(pinscope_probe_cpu_seconds_total{node="sim-a"}[10s])', lambda v: v is not None and 0 < v < 10)
    # utilisation needs two reads: it arrives
    prom.wait_for('count(pinscope_cpu_utilization_ratio{node="sim-a"})', 16.0)
    # the jitter measures: kernel noise per CPU (every read) and run-queue wait per container (task scan)
    prom.wait_for('count(pinscope_cpu_noise_ratio{node="sim-a"})', 16.0)
    assert 0 <= prom.value('max(pinscope_cpu_noise_ratio{node="sim-a"})') <= 1
    prom.wait_for('count(pinscope_container_runqueue_wait_seconds_per_second{node="sim-a",pod="feed-0",container="feed"})',
                  1.0, deadline=40)


def test_unreadable_nodes_are_read_success_0_and_the_others_intact(stack):
    exp, prom = stack
    prom.wait_for('pinscope_read_success{node="gone"}', 0.0)
    prom.wait_for('pinscope_read_success{node="refused"}', 0.0)
    assert prom.value('pinscope_read_success{node="sim-a"}') == 1
    assert prom.value('count(pinscope_cpu_info{node=~"gone|refused"})') is None  # no stale data for them
    assert prom.value('count(pinscope_cpu_info{node="sim-a"})') == 16
    end = time.monotonic() + 60  # said on stderr just after the state is published: the reader thread may lag
    # (a hang guard: under two busy loops beside the suite, 10 s went by with nothing read)
    while not ("gone: --root" in "\n".join(exp.lines) and "refused:" in "\n".join(exp.lines)) and time.monotonic() < end:
        time.sleep(0.1)
    text = "\n".join(exp.lines)
    assert "gone: --root" in text and "refused:" in text  # each said once on stderr, plainly


def test_alert_rules_go_pending_on_a_critical_finding_and_an_unreadable_node(stack):
    _, prom = stack
    prom.wait_for('count(ALERTS{alertname="PinscopeCriticalFinding",alertstate="pending",node="sim-a",code="STATE_CGROUP_DRIFT"})', 1.0)
    prom.wait_for('count(ALERTS{alertname="PinscopeNodeUnreadable",alertstate="pending"})', 2.0)
    assert prom.value('count(ALERTS{alertname="PinscopeExporterDown"})') is None


def test_exporter_down_fires_for_either_way_the_readme_deploys(tmp_path):
    """Issue 34 item 9: an exporter nothing answers at, scraped as docs/prometheus.md's plain Prometheus does (its
    own scrape job, as written) and as the operator does from deploy/operator/podmonitor.yaml: the alert
    goes pending for both. The labels each `up` has are the ones tests/deploy/alerts_test.yaml gives
    promtool, so the unit test's two shapes are the real ones."""
    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    plain, operator = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"  # nothing listens there
    rules = rules_file(tmp_path / "rules.yaml")
    with Prometheus(scrape_configs=[readme_scrape_config([plain]), podmonitor_scrape_config([operator])],
                    rules=str(rules)) as prom:
        prom.wait_for("count(up == 0)", 2.0)
        shapes = {r["metric"]["instance"]: r["metric"] for r in prom.query("up")}
        prom.wait_for('count(ALERTS{alertname="PinscopeExporterDown",alertstate="pending"})', 2.0)
        pending = {r["metric"]["instance"] for r in prom.query('ALERTS{alertname="PinscopeExporterDown"}')}
    assert pending == {plain, operator}
    cases = yaml.safe_load((REPO / "tests/deploy/alerts_test.yaml").read_text())["tests"]
    tested = [{k: v for k, v in a["exp_labels"].items() if k not in ("instance", "severity")}
              for case in cases for t in case["alert_rule_test"] if t["alertname"] == "PinscopeExporterDown"
              for a in t["exp_alerts"]]
    for inst in (plain, operator):
        got = {k: v for k, v in shapes[inst].items() if k not in ("__name__", "instance")}
        assert got in tested, (got, tested)


def test_promtool_check_metrics_is_clean(stack):
    exp, _ = stack
    text = exp.metrics()
    assert "pinscope_cpu_info{" in text
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(), r.stdout + r.stderr


@pytest.mark.parametrize("listen, code", [("nonsense", 2), ("127.0.0.1", 2), ("127.0.0.1:99999", 2), ("[::1:9847", 2),
                                          ("127.0.0.1:port", 2), ("no.such.host.invalid:9847", 1)])
def test_malformed_listen_is_one_plain_line_exit_2(listen, code):
    """A malformed --listen is a usage error (2, as every bad option); a well-formed one that cannot be
    bound (a name that does not resolve) is found when it binds (1)."""
    r = run_cli("exporter", "--listen", listen, "local", timeout=60)
    assert r.returncode == code, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("pinscope: ") and "Traceback" not in r.stderr
    assert "--listen" in r.stderr or "cannot listen" in r.stderr


def test_port_in_use_is_one_plain_line_exit_1():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run_cli("exporter", "--listen", f"127.0.0.1:{port}", "local", timeout=60)
    assert r.returncode == 1
    assert r.stderr == f"pinscope: cannot listen on 127.0.0.1:{port}: address already in use\n"


@pytest.mark.timeout(300)  # a hang guard: the wait below ends as soon as every node was read
def test_exporter_serves_the_demo_cluster_as_a_target():
    """`demo` is a target of the exporter (docs/prometheus.md's session uses it), not a mistyped command: every node
    of the demo cluster is read and served.

    Each node is read in its own loop: on a loaded machine batch-16's first read was served while the
    bigger nodes' were still running, and the test, which waited for batch-16 only, failed. It waits for
    all of them (the demo's own list), scraping until every one has been read, as long as the machine needs."""
    from pinscope.collectors.sim.demo import demo_specs

    ok = [f'pinscope_read_success{{node="{s.hostname}"}} 1.0' for s in demo_specs()]
    with Exporter("--interval", "1", "demo") as exp:
        end = time.monotonic() + 240
        text = ""
        while time.monotonic() < end and not all(line in text for line in ok):
            time.sleep(0.3)
            text = exp.metrics()
        assert len(ok) >= 3 and [line for line in ok if line not in text] == [], (text, exp.lines)


def test_the_exporter_answers_metrics_at_metrics_only(tmp_path):
    """node_exporter's paths: /metrics, a page at / that links it, 404 for any other path. prometheus_client's
    own server answered every path with the metrics (a mistyped metrics_path, a health check of /healthz:
    200 and the metrics)."""
    import urllib.error
    import urllib.request

    SimNode(SPEC, tmp_path / "sim-a").write()
    with Exporter("--interval", "1", "--node-name", "sim-a", "--root", str(tmp_path / "sim-a"), "local") as exp:
        end = time.monotonic() + 60
        while 'pinscope_read_success{node="sim-a"} 1.0' not in exp.metrics() and time.monotonic() < end:
            time.sleep(0.3)

        def get(path: str, method: str = "GET") -> tuple[int, str, bytes]:
            req = urllib.request.Request(f"http://{exp.addr}{path}", method=method)
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, r.headers.get("Content-Type", ""), r.read()
            except urllib.error.HTTPError as err:
                return err.code, err.headers.get("Content-Type", ""), err.read()

        status, kind, body = get("/metrics")
        assert status == 200 and kind.startswith("text/plain") and b'pinscope_read_success{node="sim-a"} 1.0' in body
        assert get("/metrics?x=1")[0] == 200  # a query string is still the metrics
        status, kind, body = get("/")
        assert status == 200 and kind.startswith("text/html") and b'<a href="/metrics">' in body
        assert b"pinscope_" not in body
        for path in ("/healthz", "/metric", "/metrics/", "/favicon.ico", "/x/metrics"):
            status, kind, body = get(path)
            assert (status, body) == (404, b"404: not found; the metrics are at /metrics\n"), path
        assert get("/", "POST")[0] == 405 and get("/metrics", "POST")[0] == 405
