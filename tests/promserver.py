"""A real Prometheus (Debian's package) and a real `pinscope exporter`, for tests and benches.

Both bind 127.0.0.1 only, keep their data in temporary directories, run in their own process groups,
and are killed by `close()` (context managers). Every wait has a deadline: a server that does not come
up is an error naming its log, never a hang.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


def have_prometheus() -> bool:
    return os.access(PROMETHEUS, os.X_OK) and os.access(PROMTOOL, os.X_OK)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kill_group(p: subprocess.Popen, timeout: float = 10) -> None:
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(5)


def http_get(url: str, timeout: float = 10) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


class Prometheus:
    """`prometheus` on 127.0.0.1:<free port> with a temporary storage dir (or a given one, e.g. backfilled).

    scrape: list of (job, "127.0.0.1:port") static targets; rules: a rules file to load.
    """

    def __init__(self, scrape=(), rules: str | None = None, storage: str | None = None,
                 scrape_interval: str = "1s", scrape_configs: list | None = None, retention: str = "30d",
                 lookback: str | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="pinscope-prom-")
        self.storage = storage or os.path.join(self.dir, "data")
        cfg = {"global": {"scrape_interval": scrape_interval, "evaluation_interval": scrape_interval},
               "scrape_configs": [{"job_name": job, "static_configs": [{"targets": [addr]}]} for job, addr in scrape]
               + list(scrape_configs or ())}
        if rules:
            cfg["rule_files"] = [rules]
        self.config = os.path.join(self.dir, "prometheus.yml")
        Path(self.config).write_text(yaml.safe_dump(cfg))
        self.retention, self.lookback = retention, lookback
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.log = os.path.join(self.dir, "prometheus.log")

    def start(self, deadline: float = 60) -> "Prometheus":
        for _ in range(5):  # a free port can be taken between our probe and prometheus' bind: try again
            port = free_port()
            args = [PROMETHEUS, f"--config.file={self.config}", f"--storage.tsdb.path={self.storage}",
                    f"--web.listen-address=127.0.0.1:{port}", f"--storage.tsdb.retention.time={self.retention}",
                    "--log.level=warn", "--web.enable-admin-api"]
            if self.lookback:
                args.append(f"--query.lookback-delta={self.lookback}")
            with open(self.log, "ab") as log:
                self.proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True, cwd=self.dir)
            self.url = f"http://127.0.0.1:{port}"
            end = time.monotonic() + deadline
            while time.monotonic() < end:
                if self.proc.poll() is not None:
                    break
                try:
                    if http_get(self.url + "/-/ready", 2).startswith(b"Prometheus"):
                        return self
                except OSError:
                    pass
                time.sleep(0.2)
            _kill_group(self.proc)
            if "address already in use" not in Path(self.log).read_text(errors="replace"):
                break
        raise RuntimeError(f"prometheus did not become ready: {Path(self.log).read_text(errors='replace')[-2000:]}")

    def query(self, promql: str, timeout: float = 10) -> list:
        q = urllib.parse.urlencode({"query": promql})
        o = json.loads(http_get(f"{self.url}/api/v1/query?{q}", timeout))
        assert o["status"] == "success", o
        return o["data"]["result"]

    def value(self, promql: str) -> float | None:
        r = self.query(promql)
        return float(r[0]["value"][1]) if r else None

    def wait_for(self, promql: str, want, deadline: float = 30) -> float | None:
        """Poll until the query's single value equals `want` (or `want(v)` holds); returns the last value."""
        end = time.monotonic() + deadline
        v = None
        while time.monotonic() < end:
            v = self.value(promql)
            if (want(v) if callable(want) else v == want):
                return v
            time.sleep(0.3)
        raise AssertionError(f"{promql} = {v}, wanted {want} within {deadline} s")

    def close(self) -> None:
        if self.proc is not None:
            _kill_group(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


class Exporter:
    """`python -m pinscope.cli exporter --listen 127.0.0.1:0 ...`; the bound port comes from its first line."""

    def __init__(self, *args: str, env: dict | None = None) -> None:
        self.args = args
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen | None = None
        self.addr = ""
        self.lines: list[str] = []
        self._part = ""  # a line not yet ended

    def start(self, deadline: float = 60) -> "Exporter":
        self.proc = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "exporter", "--listen", "127.0.0.1:0", *self.args],
                                     cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL, start_new_session=True, env=self.env)
        return self._read_start(deadline)

    def _read_start(self, deadline: float) -> "Exporter":
        """The first line (the address it serves), then every line in a thread."""
        line, rest = _readline(self.proc, deadline)
        self.lines.append(line)
        # what came with the first line in the same read (a node said unreadable right after the start: a
        # loaded CI run lost "gone: --root ..." here, as this read kept only the first line)
        *done, self._part = rest.split("\n")
        self.lines.extend(done)
        m = re.search(r"http://(\S+)/metrics", line)
        if not m:
            self.close()
            raise RuntimeError(f"exporter did not start: {line!r}")
        self.addr = m.group(1)
        import threading

        threading.Thread(target=self._drain, daemon=True).start()  # a full stderr pipe would block it
        return self

    def _drain(self) -> None:
        fd = self.proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                if self._part:
                    self.lines.append(self._part)
                return
            # whole lines only: a line split between two reads is one line
            *done, self._part = (self._part + chunk.decode(errors="replace")).split("\n")
            self.lines.extend(done)

    def metrics(self) -> str:
        return http_get(f"http://{self.addr}/metrics").decode()

    def close(self) -> None:
        if self.proc is not None:
            _kill_group(self.proc)
            if self.proc.stderr:
                self.proc.stderr.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


def _readline(proc: subprocess.Popen, deadline: float) -> tuple[str, str]:
    """One line of the process's stderr and what was read after it, or what came by the deadline or its exit
    (select: no blocking read)."""
    import select

    end = time.monotonic() + deadline
    buf = ""
    fd = proc.stderr.fileno()
    while time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            chunk = os.read(fd, 4096).decode(errors="replace")
            if not chunk:
                return buf, ""
            buf += chunk
            if "\n" in buf:
                line, rest = buf.split("\n", 1)
                return line, rest
        elif proc.poll() is not None:
            return buf, ""
    return buf, ""


def rules_file(dest) -> Path:
    """deploy/operator/prometheusrule.yaml's groups as a plain Prometheus rules file (what the operator
    hands Prometheus)."""
    doc = yaml.safe_load((REPO / "deploy/operator/prometheusrule.yaml").read_text())
    Path(dest).write_text(yaml.safe_dump({"groups": doc["spec"]["groups"]}, sort_keys=False))
    return Path(dest)


def podmonitor_scrape_config(targets: list[str], job_name: str = "podMonitor/pinscope/pinscope-exporter/0") -> dict:
    """deploy/operator/podmonitor.yaml as the Prometheus operator turns it into a scrape config, for static
    targets (here, not Kubernetes discovery): the exporter pod's own target labels (namespace, pod,
    container), `job` set to <namespace>/<name> and `endpoint` to the port's name, then the PodMonitor's
    relabelings, in that order (prometheus-operator pkg/prometheus/promcfg.go, generatePodMonitorConfig)."""
    pm = yaml.safe_load((REPO / "deploy/operator/podmonitor.yaml").read_text())
    (ep,) = pm["spec"]["podMetricsEndpoints"]
    meta = pm["metadata"]
    keys = {"sourceLabels": "source_labels", "targetLabel": "target_label", "regex": "regex",
            "replacement": "replacement", "separator": "separator", "modulus": "modulus", "action": "action"}
    own = [{keys[k]: (v.lower() if k == "action" else v) for k, v in r.items()} for r in ep.get("relabelings", ())]
    return {"job_name": job_name, "metrics_path": ep.get("path", "/metrics"),
            "static_configs": [{"targets": list(targets), "labels": {
                "namespace": meta["namespace"], "pod": "pinscope-exporter-x7", "container": "exporter"}}],
            "relabel_configs": [{"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"},
                                {"target_label": "endpoint", "replacement": ep["port"]}, *own]}


def readme_scrape_config(targets: list[str]) -> dict:
    """The scrape job of docs/prometheus.md's plain Prometheus ("Try it on one machine"), as written there, for
    these targets."""
    text = (REPO / "docs" / "prometheus.md").read_text()
    part = text[text.index("**Try it on one machine**"):]
    (line,) = re.findall(r"\"\s*- (\{job_name: .*\})\"", part[:part.index("\n```\n", part.index("```sh"))])
    job = yaml.safe_load(line)
    job["static_configs"] = [{"targets": list(targets)}]
    return job


def backfill(fleet, data_dir, at: float | None = None, timeout: float = 300) -> float:
    """Write `fleet` (tests/promfleet.py) as OpenMetrics and turn it into TSDB blocks in data_dir
    with `promtool tsdb create-blocks-from openmetrics`. One sample per series, `at` (default 5 minutes
    ago): query it with Prometheus(lookback="1h"). Returns the timestamp written."""
    from promfleet import write_openmetrics

    at = time.time() - 300 if at is None else at
    src = Path(data_dir).parent / "fleet.om"
    with open(src, "w") as f:
        write_openmetrics(fleet, f, [at])
    r = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(src), str(data_dir)],
                       capture_output=True, text=True, timeout=timeout)
    src.unlink()
    if r.returncode != 0:
        raise RuntimeError(f"promtool backfill failed: {r.stderr[-2000:]}")
    return at
