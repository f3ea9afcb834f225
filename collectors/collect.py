"""One node's collection loop: connect, read static data once, then ticks; reconnect with capped backoff.

Depth is chosen per tick ("collect deeper for this node"; letters as in probe.sh):
  g  grid, every tick: /proc/stat, /proc/softirqs, numastat, the state file, each container's effective
     cpuset + cpu.stat
  c  cgroup detail (requested cpuset, mems, quota, pressure)                every 5th tick
  t  tasks of pod containers (stat + sched)                                every 10th tick
  T  the same plus status (Cpus_allowed_list)                              every 30th tick
  a  every task's stat on the node (the intruder scan: the costly part)    every 10th tick
  i  IRQ affinity and /proc/interrupts                                     every 10th tick
  n  pod/container names (log layout): at start, and when an unnamed pod or container appears
  w  pod tasks with schedstat (run-queue wait)                            snapshot/check only
The focused container (the one a drill-down shows) gets all of its files and tasks, with schedstat,
every tick. The focused CPU (the CPU pane) gets the every-task scan every tick, schedstat for the tasks
that last ran on it, and /proc/interrupts (its timer and IPI rows).
The snapshot CLI asks for everything on every sample. Deeper data is carried between ticks and each
task is stamped with the uptime it was read at, so rates never mix a fresh counter with a stale one.
Static topology is re-read when /sys/devices/system/cpu/online changes, and every `static_every` ticks.
"""
from __future__ import annotations

import asyncio
import random
import re
import socket
import time
from dataclasses import dataclass
from typing import Callable

from .aio import deadline, within
from .errors import AuthFailed, HostKeyRejected, PinscopeError, ProbeFailed, TransportError
from .frames import Frame
from .model import Role
from .parse.cpuset import format_cpuset
from .pacing import ConnectGate
from .assemble.live import LiveWindow
from .pipeline import NodeReport, Pipeline
from .transport.base import FrameStream
from .starttrace import mark
from .transport.local import LocalTransport


@dataclass(frozen=True, slots=True)
class Options:
    root: str | None = None
    sudo: bool = False
    identity: str | None = None
    ssh_config: str | None = None
    known_hosts: str | None = None
    accept_new_host_key: bool = False
    connect_timeout: float = 10.0
    frame_timeout: float = 15.0
    # node/NAME: through the Kubernetes API (collectors/transport/kube.py)
    kube_context: str | None = None
    kubeconfig: str | None = None
    kube_namespace: str = "pinscope"
    kube_image: str = "busybox:1.36"
    kube_pod_lifetime: int = 3600
    kube_pod_idle: int = 30  # s: a debug pod whose pinscope died ends this long after its last session
    kube_pod_heartbeat: int = 10  # s between the heartbeats a session writes on its debug pod (for `gc`)


FULL = "gcTaiw"


def live_depth(tick: int) -> str:
    """The default cadence of the live views (see the module docstring)."""
    d = "g"
    if tick % 5 == 0:
        d += "c"
    if tick % 10 == 0:
        d += "T" if tick % 30 == 0 else "t"
        d += "ai"
    return d


def overview_depth(tick: int) -> str:
    """Nodes in the fleet overview: the grid every tick, cgroup detail and the slow scans less often."""
    d = "g"
    if tick % 10 == 0:
        d += "c"
    if tick % 30 == 0:
        d += "tai"
    return d


def make_transport(target: str, opts: Options):
    if target == "local":
        return LocalTransport(opts.root, opts.sudo)
    if target.startswith(("node/", "nodes/")):  # as kubectl spells a node: through the Kubernetes API
        from .transport.kube import KubeTransport

        return KubeTransport(target, context=opts.kube_context, kubeconfig=opts.kubeconfig,
                             namespace=opts.kube_namespace, image=opts.kube_image,
                             lifetime=opts.kube_pod_lifetime, idle=opts.kube_pod_idle,
                             heartbeat=opts.kube_pod_heartbeat)
    from .transport.ssh import SSHTransport  # asyncssh only when SSH is used

    return SSHTransport(target, root=opts.root, sudo=opts.sudo, identity=opts.identity,
                        ssh_config=opts.ssh_config, known_hosts=opts.known_hosts,
                        accept_new_host_key=opts.accept_new_host_key, connect_timeout=opts.connect_timeout)


_CPULIST = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*")


def confine_to(snap) -> str:
    """The CPUs the probe should keep to so it adds no jitter where pods are pinned: the reserved CPUs,
    else the shared pool; "" when neither is known (the probe then runs where the kernel puts it, and the
    report says nothing it did not try). Digits, commas and dashes only (the probe checks it again)."""
    reserved = [r.id for r in snap.roles if r.role == Role.RESERVED]
    cpus = reserved or sorted(snap.shared_pool or ())
    text = format_cpuset(cpus) if cpus else ""
    return text if _CPULIST.fullmatch(text) else ""  # "": the probe is told it is not known ("?")


def exclusive_of(snap) -> str:
    """The report's exclusive CPUs as a cpulist ("" when none): the every-task scan reads the allowed CPUs of
    the tasks that last ran on one (a task pinned there is an intruder however little it ran)."""
    text = format_cpuset([r.id for r in snap.roles if r.role == Role.EXCLUSIVE])
    return text if _CPULIST.fullmatch(text) else ""


def prestart_local(opts: Options) -> bool:
    """Start the local probe and ask for the first frame a live view's node on screen asks for, before the
    UI loads (transport/local.py prestart): its first LocalTransport takes it over. False: not started."""
    from .transport.local import prestart

    return prestart(opts.root, opts.sudo, NodeCollector("local", opts)._request(live_depth(0)))


class NodeCollector:
    """Holds one transport and its Pipeline; turns depth requests into NodeReports."""

    static_every = 300

    def __init__(self, target: str, opts: Options = Options(), transport=None, name: str | None = None) -> None:
        self.target = target  # the address
        self.name = name or target  # what the user calls the node (recordings are keyed by it)
        self.opts = opts
        self.transport = transport or make_transport(target, opts)
        self.pipeline = Pipeline(target, self.name)
        self.focus: str | None = None  # container id whose everything is read every tick
        self.focus_cpu: int | None = None  # the CPU pane's CPU: its tasks' run-queue wait every tick
        self.recorder = None  # collectors.record.Recorder: every frame appended, compressed
        # the CPUs the probe is asked to keep to (confine_to), sent once: None before the first report,
        # "-" once asked
        self.confine: str | None = None
        # the last report's exclusive CPUs (exclusive_of); "*" before the first: the first every-task scan
        # reads the allowed CPUs of every task outside the pods (a one-sample check finds a pinned intruder)
        self.exclusive = "*"
        # the last LiveWindow (kubelet's PodResources), shown on the ticks that do not ask
        self.live: LiveWindow | None = None

    @property
    def ticks(self) -> int:
        return self.pipeline.ticks

    async def connect(self) -> None:
        await self.transport.connect(self.opts.connect_timeout)
        self.pipeline.reset()
        self.confine = None  # a new probe: asked again once the first report is in
        self.exclusive = "*"  # and the CPUs exclusive then are not known yet
        self.live = None

    def _request(self, depth: str) -> str:
        pl = self.pipeline
        req = depth
        if pl.static is None or pl.ticks % self.static_every == 0 or pl.want_static:
            req = "s" + depth
        if pl.want_names or pl.ticks % 30 == 0:
            req += "n"
        if self.focus:
            req += " " + self.focus
        elif self.focus_cpu is not None:
            req += ("" if "a" in req else "a") + f" @{self.focus_cpu}"
        # "<letters> <focus or -> <cpulist, ? or -> <exclusive CPUs>": the CPUs to keep to, asked once
        # (probe.sh confine); the exclusive CPUs of the last report with every every-task scan, whose tasks
        # that last ran on one are read with their allowed CPUs (a task pinned there is an intruder)
        confine = ""
        if self.confine is not None and self.confine != "-":
            confine = self.confine or "?"
            self.confine = "-"  # asked
        # only beside a pod task scan (t, T): the probe knows a pod's tasks from the cgroup.procs that scan
        # reads, and would otherwise read the status of the pods' own tasks too (the CPU pane's "a" every tick)
        letters = req.partition(" ")[0]
        excl = self.exclusive if "a" in letters and ("t" in letters or "T" in letters) else ""
        if confine or excl:
            req += ("" if " " in req else " -") + " " + (confine or "-") + (" " + excl if excl else "")
        return req

    async def read(self, depth: str = FULL) -> tuple[Frame, float]:
        """One frame at `depth` (and the seconds its round trip took); recorded if a recorder is set."""
        t0 = time.monotonic()
        frame = await self.transport.request(self._request(depth), self.opts.frame_timeout)
        if self.recorder is not None:
            self.recorder.write(self.name, self.transport.last_raw)
        return frame, time.monotonic() - t0

    async def tick(self, depth: str = FULL, window_from=None) -> NodeReport:
        """Read one frame and return its report (rates over the previous tick, or over `window_from`)."""
        frame, took = await self.read(depth)
        mark("first frame")
        report = self.pipeline.feed(frame, read=took, window_from=window_from)
        mark("first report")
        report = await self._kubelet_live(report, depth)
        if self.confine is None:
            self.confine = confine_to(report.snapshot)
        self.exclusive = exclusive_of(report.snapshot)
        if self.pipeline.topology_changed:
            self.pipeline.ticks = 0  # CPUs went on/offline: the next tick re-reads the topology
        return report

    async def _kubelet_live(self, report: NodeReport, depth: str) -> NodeReport:
        """kubelet's PodResources view with the ticks that read the cgroups in detail ("c": every one of
        `snapshot`, every 5th of the live view): the report of a tick that does not ask shows the last."""
        ask = getattr(self.transport, "podresources", None)
        if ask is None:  # a transport of a test's own, with no node behind it
            return report
        if "c" not in depth.partition(" ")[0] and self.live is not None:
            return report.with_live(self.live)
        from .podresources import LiveView, node_socket

        root_dir = report.snapshot.kubelet.root_dir
        path = node_socket(root_dir)
        if path is None:
            view = LiveView(root_dir, error=f"--root-dir {root_dir!r} climbs (not absolute, or '..'): its socket is not asked",
                            why="refused")
        else:
            # 1 s a call: kubelet answers from memory in milliseconds; one that accepts and never answers must
            # not hold the tick past the live view's stale mark (3 ticks of 1 s): said, as not answering
            view = await ask(path, max(0.5, min(1.0, self.opts.frame_timeout)))
        report = self.pipeline.add_live(report, view)
        self.live = report.live
        return report

    async def close(self) -> None:
        await self.transport.close()


async def snapshot(target: str, opts: Options, samples: int = 1, interval: float = 1.0,
                   depth: str = FULL, name: str | None = None, timeout: float | None = None,
                   progress: Callable[[str], object] | None = None, transport=None) -> NodeReport:
    """Connect, take `samples` samples `interval` apart, return the last one's report, with rates over
    the whole window when there were two samples or more. `timeout`: seconds for all of it; past it (or
    past a frame's own deadline) ProbeFailed names the target and the file the probe was at, and closing
    ends the probe's whole process group on the node. `progress`: told what a slow connect waits for (a
    debug pod that is not running yet), as the live view's "connecting" state is. `transport`: a ready one
    (the demo's, whose kubelet answers PodResources from the simulation), else one made from `target`."""
    col = NodeCollector(target, opts, transport=transport, name=name)
    if progress is not None and isinstance(col.transport, FrameStream):
        col.transport.progress = progress
    if timeout is not None and getattr(col.transport, "start_timeout", 0) > timeout:
        col.transport.start_timeout = timeout  # what it waits for says this bound, not 120 s it never waits
    try:
        return await within(_samples(col, samples, interval, depth), timeout)
    except asyncio.TimeoutError as err:
        raise ProbeFailed(_stuck(col, f"no answer within {timeout:g} s")) from err
    except ProbeFailed as err:
        raise ProbeFailed(_stuck(col, str(err), said=False)) from err
    finally:
        await col.close()


async def _samples(col: NodeCollector, samples: int, interval: float, depth: str) -> NodeReport:
    await col.connect()
    report = await col.tick(depth)
    first = (report.snapshot, time.monotonic())
    for _ in range(max(0, samples - 1)):
        await asyncio.sleep(interval)
        report = await col.tick(depth, window_from=first)
    return report


def _stuck(col: NodeCollector, why: str, said: bool = True) -> str:
    """One line: the target, why, and where the probe was (the last file of the frame that did not come).
    `said=False`: `why` is the connect's own error (a debug pod that cannot start says why itself: the last
    progress, "not running yet (Pending)", would contradict it)."""
    tr = col.transport
    where = tr.stuck_on() if isinstance(tr, FrameStream) and not tr.idle else None
    if where:
        if where not in why:
            why += f"; the probe was reading at {where} (the last file it sent)"
    elif isinstance(tr, FrameStream) and tr.reader is None:
        # what the connect waited for (node/NAME: its debug pod Pending, an image pulled), when it said
        if said:
            why += f" (while connecting: {tr.said})" if tr.said else " (while connecting)"
    elif isinstance(tr, FrameStream) and not tr.idle:
        why += f" (the probe had sent nothing yet of its frame for {tr.pending!r})"
    return why if why.startswith(f"{col.name}:") or why.startswith(f"{col.target}:") else f"{col.name}: {why}"


class Backoff:
    """Capped exponential backoff with jitter, for reconnects. `next(err)` by the kind of failure:
    a node that refused, timed out or dropped is retried within `cap` (a refused connect costs the node
    nothing, so a returning node is back within about one interval); wrong credentials or a changed host
    key will not fix themselves in a second: up to `slow_cap`."""

    def __init__(self, base: float = 0.5, cap: float = 30.0, slow_cap: float | None = None) -> None:
        self.base, self.cap, self.n = base, cap, 0
        self.slow_cap = max(cap, slow_cap if slow_cap is not None else 60.0)

    def next(self, err: BaseException | None = None) -> float:
        cap = self.slow_cap if isinstance(err, (AuthFailed, HostKeyRejected)) else self.cap
        if err is not None and isinstance(err.__cause__, socket.gaierror):
            cap = min(self.slow_cap, max(cap, 10.0))  # a name that does not resolve now will not in a second
        d = min(cap, self.base * (2 ** self.n))
        self.n += 1
        return d * (0.5 + random.random() / 2)

    def reset(self) -> None:
        self.n = 0


DEFECT_FORGIVEN = 30  # good reports in a row after which a node's past defects no longer slow its reconnects


async def _down(collector: NodeCollector, err: Exception, backoff: Backoff, defects: Backoff, on_state) -> float:
    """A tick failed: the connection closed (2 s at most), the node said down, and the wait before the next
    try. A defect of pinscope's met on this node (its data, or the report's handling; not one of pinscope's
    errors): the task used to end there, and the node's last report stayed on screen as if live. Said, and
    tried again from a new connection (the data that raised may be gone by then), ever more slowly."""
    try:
        await within(collector.close(), 2)
    except (asyncio.TimeoutError, TransportError, OSError):
        pass
    if isinstance(err, PinscopeError):
        on_state("down", str(err))
        return backoff.next(err)
    on_state("down", f"pinscope failed on this node ({type(err).__name__}: {' '.join(str(err).split())[:200]}): "
                     "a defect of pinscope's, please report it; reading it again from a new connection")
    return defects.next()


async def live(collector: NodeCollector, interval: float, depth_for_tick, on_report, on_state,
               stop: asyncio.Event | None = None, connect_sem=None) -> None:
    """The long-lived task of one node: collect, post, sleep; a failure is a state, then a reconnect.

    `connect_sem`: a collectors.pacing.ConnectGate (paced, the node on screen first; the set-up holds its
    slot until the first frame is in) or a plain asyncio.Semaphore."""
    stop = stop or asyncio.Event()
    backoff = Backoff(base=min(0.25, interval), cap=max(1.0, interval))
    # a defect of pinscope's (not one of its errors) has its own backoff, not reset by a connect that works:
    # one that strikes on a later tick would otherwise reconnect the node every cycle for good (a new SSH
    # session, probe, or debug pod each time). Forgiven after DEFECT_FORGIVEN good reports in a row
    defects = Backoff(base=max(1.0, interval), cap=max(60.0, interval))
    good = 0
    connected = False
    while not stop.is_set():
        try:
            t0 = time.monotonic()
            if not connected:
                on_state("connecting", None)
                if isinstance(collector.transport, FrameStream):  # a slow connect says what it waits for
                    collector.transport.progress = lambda what: on_state("connecting", what)
                if connect_sem is None:
                    await collector.connect()
                    report = await collector.tick(depth_for_tick(collector.ticks))
                else:
                    gate = connect_sem.slot(collector.name) if isinstance(connect_sem, ConnectGate) else connect_sem
                    async with gate:
                        await collector.connect()
                        report = await collector.tick(depth_for_tick(collector.ticks))
                connected = True
                backoff.reset()
                on_state("up", None)
                t0 = time.monotonic()
            else:
                report = await collector.tick(depth_for_tick(collector.ticks))
            on_report(report)
            good += 1
            if good >= DEFECT_FORGIVEN:
                defects.reset()
            wait = max(0.0, interval - (time.monotonic() - t0))
        except Exception as err:  # noqa: BLE001 -- (not CancelledError) every failure is a state, never a dead task
            if stop.is_set():
                break  # closed on purpose (Fleet.close() while this tick was in flight): not "down"
            connected = False
            if not isinstance(err, PinscopeError):
                good = 0
            wait = await _down(collector, err, backoff, defects, on_state)
        try:
            async with deadline(wait):
                await stop.wait()
        except TimeoutError:
            pass
    await collector.close()
