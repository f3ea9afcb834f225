"""The nodes a frontend watches, and their collection: typed targets and one small service that owns them.

`NodeTarget` is one node as the user named it (the command line, an inventory, the demo, Prometheus):
what it is called, how it is reached, its own options. `Fleet` holds a `NodeCollector` per target, the
connect gate (collectors/pacing.py), which node the user looks at (it gets the full depth; the others the
overview's), what a drill-down asks for, and the Kubernetes API polling; it runs each node's long-lived
task and hands NodeReports and connection states to callbacks. It knows nothing of a UI: the TUI owns one
and draws what the callbacks give it; a web view or an exporter could own another.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from .aio import within
from .collect import NodeCollector, Options, live, live_depth, overview_depth
from .inventory import Target
from .kube import ApiWindow
from .pacing import ConnectGate
from .pipeline import NodeReport

OnReport = Callable[[str, NodeReport], object]  # (target name, its report); what it returns is ignored
OnState = Callable[[str, str, "str | None"], object]  # (target name, connecting|up|down, message)


@dataclass(frozen=True)
class NodeTarget:
    """One node to watch. `name`: what the user calls it (the key everywhere: views, recordings, keys);
    `address`: how it is reached (`local`, [user@]host[:port], node/NAME; None: the name is the address);
    `transport`: a ready one (the demo's, a test's), or None to make one from the address; `options`: this
    node's own (an inventory's root and sudo), or None for the fleet's; `spec`: its inventory entry."""

    name: str
    address: str | None = None
    transport: object | None = None
    options: Options | None = None
    spec: Target | None = None

    @property
    def reach(self) -> str:
        """The address the transport connects to."""
        return self.address or self.name

    @classmethod
    def of(cls, target: str | Target, opts: Options) -> NodeTarget:
        """A command-line word, or an inventory Target (its root and sudo over the command line's)."""
        if isinstance(target, str):
            return cls(target)
        o = dataclasses.replace(opts, root=target.root or opts.root, sudo=target.sudo or opts.sudo)
        return cls(target.name, target.address, options=o, spec=target)

    def matches(self, text: str) -> bool:
        """The overview's filter: the name, or the inventory's address, groups and labels."""
        return text.lower() in self.name.lower() or (self.spec is not None and self.spec.matches(text))


class Fleet:
    """The collectors of the watched nodes and everything that paces them."""

    # Options is frozen, a safe default: ruff names it here by the folder (collectors.collect.Options), a name
    # pyproject's extend-immutable-calls does not list, since pinscope has one: pinscope.collectors.collect
    def __init__(self, targets: Iterable[NodeTarget] = (), opts: Options = Options(),  # noqa: B008
                 interval: float = 1.0, recorder=None, connect_concurrency: int = 16) -> None:
        self.opts, self.interval, self.recorder = opts, interval, recorder
        self.targets: dict[str, NodeTarget] = {}
        self.collectors: dict[str, NodeCollector] = {}
        self.focus_node: str | None = None  # the node the user looks at: it gets the full depth
        # connection set-up paced, the node on screen first
        self.gate: ConnectGate | asyncio.Semaphore = ConnectGate(connect_concurrency, first=lambda: self.focus_node)
        self.stop = asyncio.Event()
        self.kube_period = 30.0
        self.node_names: dict[str, str] = {}  # target name -> the hostname its last report gave
        self.api: dict[str, ApiWindow] = {}  # target name -> the API's last two rounds (run_kube)
        for t in targets:
            self.add(t)

    @property
    def names(self) -> list[str]:
        return list(self.targets)

    def add(self, target: NodeTarget) -> NodeCollector:
        """Watch one more node (or replace its collector: a node opened again from the overview)."""
        col = NodeCollector(target.reach, target.options or self.opts, target.transport, name=target.name)
        col.recorder = self.recorder
        self.targets[target.name] = target
        self.collectors[target.name] = col
        return col

    def depth(self, name: str) -> Callable[[int], str]:
        """The node on screen gets everything; the others, in the overview, the grid and a slow scan."""
        return lambda tick: live_depth(tick) if self.focus_node == name else overview_depth(tick)

    async def run_node(self, name: str, on_report: OnReport, on_state: OnState) -> None:
        """The one long-lived task of a node: collect, hand over, sleep; failures become states."""
        col = self.collectors[name]

        def report(r: NodeReport) -> None:
            self.node_names[name] = r.node
            on_report(name, r.with_api(self.api.get(name)))  # the API checks over its last answer, every tick

        await live(col, self.interval, self.depth(name), report, lambda st, msg: on_state(name, st, msg),
                   self.stop, connect_sem=self.gate)

    def focus_container(self, name: str, cid: str | None) -> None:
        """A drill-down asks for this container's everything, every tick (an id of hex digits, or nothing)."""
        col = self.collectors.get(name)
        if col is not None:
            col.focus = cid if cid and all(ch in "0123456789abcdef" for ch in cid) else None

    def focus_cpu(self, name: str, cpu: int | None) -> None:
        """The CPU pane asks for its CPU's tasks with run-queue wait, and its IPIs, every tick."""
        col = self.collectors.get(name)
        if col is not None:
            col.focus_cpu = cpu

    def api_name(self, name: str) -> str | None:
        """The node's name in the Kubernetes API: the inventory's, node/NAME's, or the hostname it reported."""
        from .transport.kube import node_name

        t = self.targets.get(name)
        if t is not None and t.spec is not None:
            return t.spec.name
        return node_name(name) or self.node_names.get(name)

    async def run_kube(self, context: str | None, kubeconfig: str | None,
                       on_pods: Callable[[str, dict], None], on_api: Callable[[str | None], None]) -> None:
        """One API round per node every `kube_period` s (collectors/kube.py api_node): pod names and intent,
        pods kubelet rejected, Allocatable CPU, kubelet's metrics. Each node's reports carry its last two
        rounds from then on (NodeReport.with_api). `on_pods(name, pods)` per node whose pods the API listed;
        `on_api(error)` after each round (None: it answered). An API that does not answer ends the round at
        the first node (one timeout, not one per node) and the nodes' API data is dropped, not kept stale."""
        from .kube import api_node

        while not self.stop.is_set():
            err = None
            for name in self.names:
                if not (api := self.api_name(name)):
                    continue
                node = await asyncio.to_thread(api_node, api, context, kubeconfig)
                if not node.answered:
                    self.api.clear()
                    err = node.pods_error
                    break
                old = self.api.get(name)
                self.api[name] = old.next(node) if old is not None and old.now.node == api else ApiWindow(node)
                if node.pods is not None:
                    on_pods(name, node.pods)
                err = err or node.pods_error
            on_api(err)
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self.stop.wait(), self.kube_period)

    def close(self, name: str | None = None) -> Awaitable[None]:
        """Close one node's connection, or (no name) stop every task and close them all at once: node/NAME
        deletes a debug pod per node, and 2 s each in turn would add up over a fleet. The collectors are
        taken now, not when the result is awaited: a node opened again meanwhile keeps its new connection."""
        if name is None:
            self.stop.set()
            cols = list(self.collectors.values())
        else:
            cols = [self.collectors[name]] if name in self.collectors else []
        return _close_all(cols)


async def _close_all(cols: list[NodeCollector]) -> None:
    async def close(col: NodeCollector) -> None:
        with contextlib.suppress(Exception):  # closing a dead connection must not block the exit
            await within(col.close(), 2)

    await asyncio.gather(*(close(c) for c in cols))
