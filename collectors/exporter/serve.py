"""The exporter process: one reading loop per node, on its own cadence, and the /metrics HTTP server.

The server is prometheus_client's (a thread of its own); its collector reads the latest samples only,
so a scrape costs the formatting of what is already known and never waits for, or starts, a read.
A node that cannot be read is `pinscope_read_success{node} 0` (its other series disappear) while the
others carry on; its loop reconnects with capped, jittered backoff.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import re
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, ProcessCollector, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from .. import naming
from ..aio import within
from ..collect import Backoff, NodeCollector, Options, live_depth
from ..errors import PinscopeError, ProbeFailed
from ..fleet import NodeTarget
from ..pipeline import unread_reason
from .metrics import LatestReports, NodeState, node_samples

if TYPE_CHECKING:
    from ..sim.demo import DemoCluster

_LISTEN = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.%a-z]+)\]|(?P<host>[^\s:\[\]]*)):(?P<port>\d{1,5})$")


class ListenError(PinscopeError):
    pass


def parse_listen(text: str) -> tuple[str, int]:
    """'ADDR:PORT', '[v6]:PORT' or ':PORT' (every address) -> (addr, port). Port 0 picks a free one."""
    m = _LISTEN.match(text or "")
    if not m or int(m["port"]) > 65535:
        raise ListenError(f"--listen {text!r}: expected ADDR:PORT, e.g. 0.0.0.0:9847, [::1]:9847 or :9847")
    host = m["v6"] if m["v6"] is not None else (m["host"] or "0.0.0.0")
    return host, int(m["port"])


class ProbeCpu:
    """The probes' CPU on one node, a counter across reconnects: each probe says its own total since it
    started at the end of every frame; the part since the previous frame is added (a new probe from 0)."""

    def __init__(self) -> None:
        self.total: float | None = None
        self._last = 0.0

    def new_probe(self) -> None:
        self._last = 0.0

    def add(self, probe_total: float | None) -> float | None:
        if probe_total is not None:
            step = probe_total - self._last if probe_total >= self._last else probe_total
            self.total = (self.total or 0.0) + step
            self._last = probe_total
        return self.total


def exporter_depth(tick: int) -> str:
    """The live views' cadence (the grid every read, cgroup detail every 5th, the task and IRQ scans every
    10th; their findings hold in between: the pipeline carries the deeper frames), and the task scan reads
    each pod task's schedstat too, for the containers' run-queue wait."""
    d = live_depth(tick)
    return d + "w" if "t" in d.lower() else d


async def node_loop(col: NodeCollector, node: str | None, interval: float, store: LatestReports,
                    stop: asyncio.Event, connect_timeout: float, taken: set[str] | None = None) -> None:
    """Read the node every `interval` s until `stop`; publish each outcome to `store`. `node`: its label,
    or None to name it as every frontend does (collectors/naming.py): the hostname of its first good read,
    kept from then on (its address until then; kept, and said, when another node has that name: `taken`)."""
    backoff = Backoff(base=min(1.0, interval), cap=max(interval, 30.0))
    label = node if node is not None else col.target
    decided = node is not None
    taken = {label} if taken is None else taken
    connected = False
    last_ok = None
    said = None  # the last problem printed: a node that stays down is said once, not every read
    cpu = ProbeCpu()
    while not stop.is_set():
        t0 = time.monotonic()
        wait = interval
        try:
            if not connected:
                await within(col.connect(), connect_timeout + 1)
                connected = True
            report = await col.tick(exporter_depth(col.ticks))
            why = unread_reason(report)
            if why is not None:  # the tree is gone: not read, and said so (then reconnect: --root may be back)
                raise ProbeFailed(why)
            if not decided:
                label = _own_name(label, naming.node_name(None, report.node, col.target), store, taken)
                decided = True
            node = label
            last_ok = report.t
            store.put(NodeState(node, node_samples(node, report), True, time.monotonic() - t0,
                                cpu.add(report.timings.probe_cpu_total), last_ok))
            backoff.reset()
            if said is not None:
                print(f"pinscope exporter: {node}: read again", file=sys.stderr, flush=True)
                said = None
        except Exception as err:  # noqa: BLE001 - any failure is this node's state; the others go on
            if stop.is_set():
                break  # shutting down: the probe may have had the signal too
            if isinstance(err, asyncio.TimeoutError):
                msg = f"no answer within {connect_timeout + 1:g} s"
            elif isinstance(err, PinscopeError):
                msg = str(err)
            else:
                msg = f"{type(err).__name__}: {err}"
            node = label
            store.put(NodeState(node, {}, False, time.monotonic() - t0, cpu.total, last_ok, msg))
            if msg != said:
                print(f"pinscope exporter: {node}: {msg}", file=sys.stderr, flush=True)
                said = msg
            connected = False
            cpu.new_probe()
            with contextlib.suppress(Exception):
                await within(col.close(), 2)
            wait = backoff.next()
        with contextlib.suppress(asyncio.TimeoutError):
            await within(stop.wait(), max(0.0, wait - (time.monotonic() - t0)))
    with contextlib.suppress(Exception):
        await within(col.close(), 2)


def _own_name(label: str, name: str, store: LatestReports, taken: set[str]) -> str:
    """The label a node named by its first read takes: `name`, unless another node has it already."""
    if name == label:
        return label
    if name in taken:
        print(f"pinscope exporter: {label}: reports the name {name!r}, which another target has: labelled "
              f"node={label!r}", file=sys.stderr, flush=True)
        return label
    taken.discard(label)
    taken.add(name)
    store.drop(label)  # a failed first read was published under the address: no series stays there
    return name


def plan(targets: list, opts: Options, node_name: str | None = None,
         demo: DemoCluster | None = None) -> list[tuple[str | None, NodeCollector]]:
    """Targets (strings or inventory Targets; 'demo' for the simulated cluster `demo`, which the caller
    made and closes) -> (node label, collector). The label is None for a target the user gave no name
    (an address; `local` without --node-name): its first read names it (node_loop)."""
    out: list[tuple[str | None, NodeCollector]] = []
    for t in targets:
        if isinstance(t, str) and t == "demo":
            if demo is None:
                raise PinscopeError("the demo target needs the demo cluster (see run)")
            for d in demo.targets():
                out.append((d.name.split("/", 1)[1], NodeCollector(d.name, opts, transport=d.transport, name=d.name)))
            continue
        if isinstance(t, str):
            label = node_name if t == "local" and node_name else None
            out.append((label, NodeCollector(t, opts, name=label or t)))
        else:  # an inventory node: its own root and sudo over the command line's, as in the TUI
            nt = NodeTarget.of(t, opts)
            out.append((nt.name, NodeCollector(nt.reach, nt.options or opts, name=nt.name)))
    labels = [n if n is not None else c.target for n, c in out]
    dup = sorted({n for n in labels if labels.count(n) > 1})
    if dup:
        raise PinscopeError(f"two targets would be labelled node={dup[0]!r}: give them names (--inventory)")
    return out


def run(targets: list, opts: Options, listen: str, interval: float = 15.0, node_name: str | None = None) -> int:
    """`pinscope exporter`: serve until SIGTERM/SIGINT. Errors the user can fix are one plain line, exit 1."""
    addr, port = parse_listen(listen)
    if interval <= 0:
        raise PinscopeError(f"--interval {interval:g}: must be more than 0 seconds")
    if not targets:
        raise PinscopeError("give a TARGET ('local' with --root /host in a DaemonSet, [user@]host[:port]) or --inventory")
    # SIGTERM (a pod being stopped) ends the exporter as Ctrl-C does, also before the loop runs: the demo
    # cluster's temporary trees are removed either way
    signal.signal(signal.SIGTERM, _interrupt)
    nodes: list = []
    httpd = None
    demo = None  # the simulated cluster's temporary trees, removed at the end
    try:
        if "demo" in targets:
            from ..sim.demo import DemoCluster

            demo = DemoCluster()
        nodes = plan(targets, opts, node_name, demo)
        store = LatestReports()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(store)
        ProcessCollector(registry=registry)  # the exporter's own process_cpu_seconds_total, memory, fds
        try:
            httpd = start_http(addr, port, registry)
        except OSError as err:
            why = "address already in use" if err.errno == errno.EADDRINUSE else (err.strerror or str(err))
            raise ListenError(f"cannot listen on {listen}: {why}") from err
        except UnicodeError as err:
            raise ListenError(f"cannot listen on {listen}: not a host name") from err
        host, bound = httpd.socket.getsockname()[:2]  # a str (server_address's type also allows bytes)
        shown = f"[{host}]" if ":" in host else host
        print(f"pinscope exporter: serving http://{shown}:{bound}/metrics for {len(nodes)} node(s), "
              f"reading every {interval:g} s", file=sys.stderr, flush=True)
        asyncio.run(_serve(nodes, store, interval, opts.connect_timeout))
    finally:
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        if demo is not None:
            demo.close()
    return 0


_PAGE = (b'<!doctype html>\n<html><head><meta charset="utf-8"><title>pinscope exporter</title></head>\n'
         b'<body><h1>pinscope exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>\n')


def routes(metrics_app):
    """The exporter's paths, node_exporter's: /metrics (prometheus_client's app: its content negotiation,
    gzip, name[] filter, OPTIONS and 405), / a small page that links it, 404 for every other path. The
    library's own server answers every path with the metrics, so a mistyped metrics_path, or a check of a
    path that is not there, got 200."""
    def app(environ, start_response):
        path, method = environ.get("PATH_INFO") or "/", environ.get("REQUEST_METHOD")
        if path == "/metrics":
            return metrics_app(environ, start_response)
        if path == "/" and method == "GET":
            status, kind, body = "200 OK", "text/html", _PAGE
        elif path == "/":
            status, kind, body = "405 Method Not Allowed", "text/plain", b"405: use GET\n"
        else:
            status, kind, body = "404 Not Found", "text/plain", b"404: not found; the metrics are at /metrics\n"
        start_response(status, [("Content-Type", f"{kind}; charset=utf-8"), ("Content-Length", str(len(body)))]
                       + ([("Allow", "GET")] if status.startswith("405") else []))
        return [body]
    return app


class _Quiet(WSGIRequestHandler):
    def log_message(self, format, *args) -> None:
        """No line a request on stderr (prometheus_client's server logs none either)."""


def start_http(addr: str, port: int, registry: CollectorRegistry) -> WSGIServer:
    """prometheus_client's start_http_server with routes(): the same server (a thread a request), the
    same choice of address family (the first getaddrinfo answers: [::1] is IPv6), serving in a thread."""
    info = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]

    class _Server(ThreadingWSGIServer):
        address_family = info[0]

    httpd = make_server(str(info[4][0]), port, routes(make_wsgi_app(registry)), _Server, handler_class=_Quiet)
    threading.Thread(target=httpd.serve_forever, name="pinscope-exporter-http", daemon=True).start()
    return httpd


def _interrupt(signum, frame):
    raise KeyboardInterrupt


async def _serve(nodes, store, interval, connect_timeout) -> None:
    """Run every node's loop until SIGTERM/SIGINT; then stop at once: reads in flight are cancelled (a
    pod being stopped has seconds), and every probe is closed, each within 2 s."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    taken = {name if name is not None else col.target for name, col in nodes}  # one label per node
    tasks = [asyncio.create_task(node_loop(col, name, interval, store, stop, connect_timeout, taken))
             for name, col in nodes]
    try:
        await stop.wait()
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(_close(col) for _, col in nodes), return_exceptions=True)


async def _close(col) -> None:
    with contextlib.suppress(Exception):
        await within(col.close(), 2)
