"""The fleet from Prometheus: PromQL over the exporter's metrics contract -> frozen fleet rows.

For fleets of thousands the overview asks Prometheus for per-node aggregates only (role counts,
utilisation, read state, finding counts and codes: a few series per node), and for the per-CPU series
of the nodes on screen alone. Every request has a deadline; a Prometheus that is down, slow or refuses a
query is a `PromError` (one plain line), which the overview shows as a state and retries.
"""
from __future__ import annotations

import asyncio
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from .aio import within
from .errors import PinscopeError


class PromError(PinscopeError):
    """Prometheus could not answer: down, slow, or the query was refused."""


@dataclass(frozen=True, slots=True)
class PromNode:
    name: str
    ncpus: int = 0
    read_ok: bool | None = None  # pinscope_read_success; None when the node has no such series
    util: float | None = None  # mean of its CPUs, 0..1
    findings: dict = field(default_factory=dict)  # severity -> count
    codes: tuple = ()  # (severity, code), worst first
    ip: str | None = None  # from kube-state-metrics' kube_node_info, when Prometheus has it
    ready: tuple[int, int] | None = None  # latency readiness (checks ok, checks that apply); None: no series

    def worst(self) -> str | None:
        for s in ("critical", "warning", "info"):
            if self.findings.get(s):
                return s
        return None


@dataclass(frozen=True, slots=True)
class PromCpu:
    id: int
    role: str
    owner: tuple | None = None  # (namespace, pod, container)
    util: float | None = None
    mark: str | None = None  # worst severity of a finding on the container that owns the CPU


_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|==|=)\s*("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')


def matchers(selector: str | None) -> str:
    """`pool=trading,zone!=b` (kubectl style) or PromQL matchers (`node=~"trade-.*"`) -> PromQL matchers."""
    if not selector or not selector.strip():
        return ""
    out, pos, s = [], 0, selector.strip()
    while pos < len(s):
        m = _MATCHER.match(s, pos)
        if not m or m.end() == pos:
            raise PromError(f"--selector {selector!r}: expected label=value[,label!=value], or PromQL matchers like node=~\"trade-.*\"")
        name, op, val = m.group(1), m.group(2), m.group(3).strip()
        op = "=" if op == "==" else op
        if not val.startswith('"'):
            val = json.dumps(val)
        out.append(f"{name}{op}{val}")
        pos = m.end()
    return ",".join(out)


def node_regex(names) -> str:
    """An RE2 alternation matching exactly these node names, as a PromQL string literal."""
    alt = "|".join(re.escape(n) for n in sorted(names))
    return json.dumps(alt)


class PromSource:
    """Queries one Prometheus (HTTP API v1) with a deadline per request."""

    def __init__(self, url: str, selector: str | None = None, timeout: float = 4.0, want_ip: bool = False) -> None:
        if not re.match(r"^https?://", url or ""):
            raise PromError(f"--prometheus {url!r}: expected an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.sel = matchers(selector)
        self.timeout = timeout
        self.want_ip = want_ip
        self.last_seconds = 0.0  # wall time of the last fleet refresh (all queries)

    def _get(self, promql: str) -> list:
        q = urllib.parse.urlencode({"query": promql, "timeout": f"{self.timeout:g}s"})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=self.timeout) as r:
                body = r.read()
        except urllib.error.HTTPError as err:
            try:
                why = json.loads(err.read()).get("error") or err.reason
            except (ValueError, OSError):
                why = err.reason
            raise PromError(f"Prometheus refused the query ({err.code}): {why}") from err
        except (socket.timeout, TimeoutError) as err:
            raise PromError(f"Prometheus did not answer within {self.timeout:g} s") from err
        except urllib.error.URLError as err:
            reason = err.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise PromError(f"Prometheus did not answer within {self.timeout:g} s") from err
            raise PromError(f"Prometheus at {self.url}: {getattr(reason, 'strerror', None) or reason}") from err
        except OSError as err:
            raise PromError(f"Prometheus at {self.url}: {err.strerror or err}") from err
        try:
            o = json.loads(body)
        except ValueError as err:
            raise PromError(f"{self.url} did not answer as Prometheus does (not JSON)") from err
        if o.get("status") != "success":
            raise PromError(f"Prometheus: {o.get('error') or 'query failed'}")
        return o["data"]["result"]

    async def query(self, promql: str) -> list:
        # a thread per request (urllib blocks); the deadline is the socket timeout, plus a margin here
        return await within(asyncio.to_thread(self._get, promql), self.timeout + 1)

    def _m(self, extra: str = "") -> str:
        parts = [p for p in (extra, self.sel) if p]
        return "{" + ",".join(parts) + "}"

    async def fleet(self) -> dict[str, PromNode]:
        """Every node Prometheus knows pinscope metrics of, with its aggregates."""
        t0 = time.monotonic()
        bad = self._m('severity=~"critical|warning"')
        qs = [
            # per-node aggregates only: a few series per node (the per-CPU ones are for the nodes on screen).
            # Two exporters may report one node (a DaemonSet and a central one, a rollout): the max per node
            # of what each says, never their sum (the alert rules take the max too)
            f"sum by (node) (max by (node, role) (pinscope_cpus{self._m()}))",
            f"max by (node) (pinscope_read_success{self._m()})",
            f"max by (node) (pinscope_node_cpu_utilization_ratio{self._m()})",
            f"max by (node, severity) (pinscope_findings{self._m()}) > 0",
            f"count by (node, severity, code) (max by (node, severity, code, namespace, pod, container) (pinscope_finding{bad}))",
            f"max by (node, status) (pinscope_readiness_checks{self._m()})",
        ]
        if self.want_ip:
            qs.append("max by (node, internal_ip) (kube_node_info)")
        try:
            res = await asyncio.gather(*(self.query(q) for q in qs))
        except asyncio.TimeoutError as err:
            raise PromError(f"Prometheus did not answer within {self.timeout:g} s") from err
        ncpus = {r["metric"].get("node", ""): int(float(r["value"][1])) for r in res[0]}
        read = {r["metric"].get("node", ""): float(r["value"][1]) >= 1 for r in res[1]}
        util = {r["metric"].get("node", ""): _num(r["value"][1]) for r in res[2]}
        finds: dict[str, dict] = {}
        for r in res[3]:
            m = r["metric"]
            finds.setdefault(m.get("node", ""), {})[m.get("severity", "")] = int(float(r["value"][1]))
        codes: dict[str, list] = {}
        rank = {"critical": 0, "warning": 1}
        for r in res[4]:
            m = r["metric"]
            codes.setdefault(m.get("node", ""), []).append((m.get("severity", ""), m.get("code", "")))
        ready = _ready(res[5])
        ips = {}
        if self.want_ip:
            ips = {r["metric"].get("node", ""): r["metric"].get("internal_ip") for r in res[6]}
        out = {}
        for name in set(ncpus) | set(read):
            if not name:
                continue
            cs = tuple(sorted(codes.get(name, ()), key=lambda sc: (rank.get(sc[0], 2), sc[1])))
            out[name] = PromNode(name, ncpus.get(name, 0), read.get(name), util.get(name), finds.get(name, {}), cs,
                                 ips.get(name), ready.get(name))
        self.last_seconds = time.monotonic() - t0
        return out

    async def cpus(self, names) -> dict[str, tuple[PromCpu, ...]]:
        """The per-CPU series of these nodes only (the ones on screen)."""
        names = [n for n in names if n]
        if not names:
            return {}
        nm = f"node=~{node_regex(names)}"
        fm = nm + ',severity=~"critical|warning",pod!=""'
        try:
            info, util, finding = await asyncio.gather(
                self.query(f"pinscope_cpu_info{self._m(nm)}"),
                self.query(f"pinscope_cpu_utilization_ratio{self._m(nm)}"),
                self.query(f"pinscope_finding{self._m(fm)}"))
        except asyncio.TimeoutError as err:
            raise PromError(f"Prometheus did not answer within {self.timeout:g} s") from err
        u = {(r["metric"].get("node"), r["metric"].get("cpu")): _num(r["value"][1]) for r in util}
        marks: dict[tuple, str] = {}
        for r in finding:
            m = r["metric"]
            k = (m.get("node"), m.get("namespace", ""), m.get("pod", ""), m.get("container", ""))
            if marks.get(k) != "critical":
                marks[k] = m.get("severity")
        out: dict[str, dict] = {n: {} for n in names}
        for r in sorted(info, key=lambda r: sorted(r["metric"].items())):  # two exporters of one node: one CPU each
            m = r["metric"]
            node = m.get("node")
            try:
                cid = int(m.get("cpu", ""))
            except ValueError:
                continue
            own = (m.get("namespace", ""), m.get("pod", ""), m.get("container", ""))
            owner = own if any(own) else None
            mark = marks.get((node, *own)) if owner else None
            out.setdefault(node, {}).setdefault(cid, PromCpu(cid, m.get("role", "unassigned"), owner,
                                                             u.get((node, m.get("cpu"))), mark))
        return {n: tuple(v[c] for c in sorted(v)) for n, v in out.items()}


def _ready(rows: list) -> dict[str, tuple[int, int]]:
    """pinscope_readiness_checks by status -> {node: (ok, ok + no)}: the score the node pane shows (the checks
    that apply; n/a and unknown left out). A node without the series is left out (unknown, not 0)."""
    per: dict[str, dict[str, float]] = {}
    for r in rows:
        m = r["metric"]
        v = _num(r["value"][1])
        if v is not None:
            per.setdefault(m.get("node", ""), {})[m.get("status", "")] = v
    return {n: (int(st.get("ok", 0)), int(st.get("ok", 0) + st.get("no", 0))) for n, st in per.items()}


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x  # NaN (no samples) is unknown
