"""node/NAME through the Kubernetes API, against the local stand-in API server (tests/kube_standin.py),
which runs the real probe in a chroot over a simulated node; the stand-in itself checked with the real
`kubectl` (get pods, exec) and the `kubernetes` package's own websocket client (v4 and v5).

Needs root (the stand-in's exec uses unshare -m, mount --bind, chroot), busybox, openssl and kubectl:
skipped on a laptop without them, FAILS in CI.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import kube_standin
from pinscope.collectors import probe_text
from pinscope.collectors.aio import within
from pinscope.collectors.collect import NodeCollector, Options, live
from pinscope.collectors.errors import PinscopeError
from pinscope.collectors.frames import parse_frame
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.base import PROBE_END, stdin_probe_command
from pinscope.collectors.transport import kube as kube_transport
from pinscope.collectors.transport.kube import PROBE_LABELS, KubeTransport, debug_pod
from pinscope.collectors.transport.local import LocalTransport
from helpers import need, run_cli
from kube_standin import V4, V5, StandIn
from nodes import dual_socket_intel
from test_tmux import tmux

ROOT = Path(__file__).resolve().parents[2]
NODE = "xeon-2s"  # dual_socket_intel's hostname: the node's name in the API too


@pytest.fixture
def sim(tmp_path):
    ok, why = kube_standin.available()
    need(ok, why)
    need(shutil.which("openssl") is not None, "the stand-in serves TLS with an openssl certificate")
    return SimNode(dual_socket_intel(), tmp_path / "node").write()


def standin(sim, tmp_path, **kw) -> tuple[StandIn, str]:
    srv = StandIn({NODE: sim.root}, **kw).start()
    return srv, srv.kubeconfig(tmp_path / f"kubeconfig-{srv.port}")


@pytest.fixture
def api(sim, tmp_path):
    srv, kc = standin(sim, tmp_path)
    srv.kc = kc
    yield srv
    srv.stop()


def kubectl(kc: str, *args: str, input: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    need(shutil.which("kubectl") is not None, "kubectl (v1.30+: exec over websockets) is not installed")
    v = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=30)
    minor = int(json.loads(v.stdout)["clientVersion"]["minor"].rstrip("+")) if v.returncode == 0 else 0
    need(minor >= 30, f"kubectl 1.{minor} execs over SPDY only; the stand-in speaks websockets (1.30+)")
    return subprocess.run(["kubectl", "--kubeconfig", kc, *args], input=input, capture_output=True, text=True,
                          timeout=timeout)


def exporter_pod(node: str = NODE) -> dict:
    """The shape of deploy/daemonset.yaml's pod, as the DaemonSet controller would make it."""
    ds = yaml.safe_load((ROOT / "deploy/daemonset.yaml").read_text())
    spec = json.loads(json.dumps(ds["spec"]["template"]["spec"]))
    spec["nodeName"] = node
    return {"metadata": {"name": f"pinscope-exporter-{node[:5]}", "namespace": "pinscope",
                         "labels": dict(ds["spec"]["template"]["metadata"]["labels"])}, "spec": spec}


def probe_pods(srv: StandIn) -> list[str]:
    return [n for (ns, n), p in list(srv.pods.items())
            if all((p["metadata"].get("labels") or {}).get(k) == v for k, v in PROBE_LABELS.items())]


def _json_without_target(o: dict) -> dict:
    o = dict(o)
    o.pop("target", None)
    return o


# ---------------------------------------------------------------------------------------------- pinscope
def _unhidden(snap):
    """A snapshot of the whole tree as the pods see it, whose mounts hide kubelet's pods dir (every pod's volumes,
    secrets): the pods are the same, named by their log dirs, only without that one naming source."""
    import dataclasses

    return dataclasses.replace(snap, pods=tuple(p._replace(sources=tuple(x for x in p.sources if x != "kubelet-pods"))
                                                for p in snap.pods))


def _unhidden_json(o: dict) -> dict:
    for p in o.get("pods") or []:
        if "sources" in p:
            p["sources"] = [x for x in p["sources"] if x != "kubelet-pods"]
    return o


async def test_node_over_the_api_gives_the_same_snapshot_and_rates_as_local(api, sim):
    """The same frames as --root locally: equal snapshots, rates and findings (the simulation ticks between)."""
    kube = NodeCollector(f"node/{NODE}", Options(kubeconfig=api.kc))
    local = NodeCollector(f"node/{NODE}", Options(root=str(sim.root)), LocalTransport(str(sim.root)))
    await kube.connect()
    await local.connect()
    try:
        assert kube.transport.via.startswith("debug pod pinscope/pinscope-xeon-2s-")
        a, la = await kube.tick(), await local.tick()
        sim.tick(1.0)
        b, lb = await kube.tick(), await local.tick()
    finally:
        await kube.close()
        await local.close()

    assert a.snapshot == _unhidden(la.snapshot) and b.snapshot == _unhidden(lb.snapshot)
    assert b.rates == lb.rates and b.rates.util  # the simulated busy containers show as load
    assert b.findings == lb.findings
    assert probe_pods(api) == []  # deleted on close


def test_cli_snapshot_node_name_equals_root_local(api, sim):
    r = run_cli("snapshot", "--json", f"node/{NODE}", "--kubeconfig", api.kc)
    assert r.returncode == 0, r.stderr
    l = run_cli("snapshot", "--json", "--root", str(sim.root), "local")
    assert l.returncode == 0, l.stderr
    over_api = _json_without_target(json.loads(r.stdout))
    assert over_api.pop("kubernetes")["allocatable_cpu"] == "8"  # node/NAME also asks the API what kubelet said
    here = _json_without_target(json.loads(l.stdout))
    # kubelet's socket: looked for inside the tree locally (there is none); node/NAME does not reach it, said so
    live_api, live_here = over_api.pop("podresources"), here.pop("podresources")
    assert not live_api["asked"] and "not reache" in live_api["note"]
    assert not live_here["asked"] and "no such socket" in live_here["note"]
    assert over_api == _unhidden_json(here)
    assert probe_pods(api) == []
    made = [p for m, p, u in api.requests if m == "POST"]
    assert made == ["/api/v1/namespaces/pinscope/pods"]


async def test_the_debug_pod_is_what_the_issue_asks(api):
    """Host PID, host / read-only at /host, labels, activeDeadlineSeconds, pinned to the node; and the
    manifest validates against the Kubernetes schemas (strict) of 1.30 (recursiveReadOnly), kubectl's 1.32 and the latest."""
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    t = KubeTransport(f"node/{NODE}", kubeconfig=api.kc, lifetime=600)
    await t.connect()
    try:
        pod = json.loads(json.dumps(api.pods[("pinscope", t.pod)]))
    finally:
        await t.close()

    spec = pod["spec"]
    assert spec["nodeName"] == NODE and spec["hostPID"] is True and spec["activeDeadlineSeconds"] == 600
    assert spec["tolerations"] == [{"operator": "Exists"}] and spec["automountServiceAccountToken"] is False
    (c,) = spec["containers"]
    assert c["image"] == "busybox:1.36" and c["command"][:3] == ["sh", "-c", kube_transport.WATCHDOG]
    assert c["command"][3:] == ["pinscope-watchdog", "30", "600"]  # idle s, then the lifetime
    vols, mounts = kube_transport.host_volumes()  # what the probe reads, no more (tests/deploy: which)
    assert c["volumeMounts"] == [*mounts, {"name": "run", "mountPath": "/run/pinscope"}]
    assert spec["volumes"] == [*vols, {"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}]
    assert "/" not in [v["hostPath"]["path"] for v in vols if "hostPath" in v]
    assert pod["metadata"]["labels"] == PROBE_LABELS
    for v in ("1.30.0", "1.32.0", latest_version()):  # recursiveReadOnly is in the API from 1.30
        kubernetes_validate.validate(debug_pod(NODE), v, strict=True)


async def test_the_debug_pod_tells_the_cluster_nothing_of_who_ran_it(api):
    """Anyone who may list pods reads a pod's labels and annotations: they carry what `gc` needs (a heartbeat
    and how often it moves), never the user, the host or the pid of whoever ran pinscope (main wrote
    `pinscope.io/started-by: root@host pid N`)."""
    import getpass
    import socket

    t = KubeTransport(f"node/{NODE}", kubeconfig=api.kc)
    await t.connect()
    try:
        meta = json.loads(json.dumps(api.pods[("pinscope", t.pod)]["metadata"]))
    finally:
        await t.close()

    assert meta["labels"] == PROBE_LABELS
    notes = meta.get("annotations") or {}
    assert set(notes) == {"pinscope.io/heartbeat", "pinscope.io/heartbeat-every"}, notes
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", notes["pinscope.io/heartbeat"])
    assert notes["pinscope.io/heartbeat-every"] == "10"
    text = json.dumps(meta)
    assert f"{getpass.getuser()}@" not in text and f"@{socket.gethostname()}" not in text
    assert f"pid {os.getpid()}" not in text and "started-by" not in text


async def test_the_debug_pod_has_the_least_the_probe_needs(api):
    """Not privileged, not on the host network (main made it both); uid 0 with every capability dropped,
    no privilege escalation, seccomp RuntimeDefault, a read-only root. The stand-in enforces the read-only
    root and mounts, and the probe still reads the whole node through it (cpu_manager_state included)."""
    t = KubeTransport(f"node/{NODE}", kubeconfig=api.kc)
    await t.connect()
    try:
        pod = json.loads(json.dumps(api.pods[("pinscope", t.pod)]))
        frame = await t.request("sg")
    finally:
        await t.close()

    spec = pod["spec"]
    (c,) = spec["containers"]
    text = json.dumps(pod)
    assert "hostNetwork" not in spec and '"privileged": true' not in text and "hostIPC" not in spec
    assert spec["securityContext"] == {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                                       "seccompProfile": {"type": "RuntimeDefault"}}
    assert c["securityContext"] == {"privileged": False, "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}}
    assert "add" not in c["securityContext"]["capabilities"]
    assert frame.complete and "/proc/stat" in frame.files
    assert any(p.endswith("cpu_manager_state") for p in frame.files), sorted(frame.files)[:20]


async def test_the_exporter_pod_is_used_when_it_runs_on_the_node(api, sim):
    api.call(lambda: api.add_pod(exporter_pod()))

    col = NodeCollector(f"node/{NODE}", Options(kubeconfig=api.kc))
    await col.connect()
    try:
        assert col.transport.via == "exporter pod pinscope/pinscope-exporter-xeon-"
        assert probe_pods(api) == []  # no debug pod made
        snap = (await col.tick()).snapshot
    finally:
        await col.close()

    assert any(c.name == "engine" for p in snap.pods for c in p.containers)
    assert ("pinscope", "pinscope-exporter-xeon-") in api.pods  # the exporter's pod is left alone
    end = time.monotonic() + 30  # a hang guard: the probe ends when its stdin closes
    while any(api.execs.values()) and time.monotonic() < end:
        await asyncio.sleep(0.1)
    assert not any(api.execs.values())  # and the probe in it has exited (stdin closed)


async def test_v4_only_api_server(sim, tmp_path):
    """An API server before 1.30 speaks v4 only: it works, and the probe still ends when we close."""
    srv, kc = standin(sim, tmp_path, protocols=(V4,))
    try:
        t = KubeTransport(f"node/{NODE}", kubeconfig=kc)
        await t.connect()
        proto = t.stream.protocol
        f = await t.request("sg")
        await t.close()

        assert proto == V4 and f.complete and "/proc/stat" in f.files
        assert srv.protocols_seen == [V4]
        end = time.monotonic() + 30  # a hang guard: the probe ends when its stdin closes
        while (any(srv.execs.values()) or probe_pods(srv)) and time.monotonic() < end:
            await asyncio.sleep(0.1)
        assert not any(srv.execs.values()) and probe_pods(srv) == []
    finally:
        srv.stop()


def test_refusals_are_one_plain_line(sim, tmp_path, capsys):
    """Each refusal is one line on stderr and exit 1. The first case runs the real CLI process; the rest
    call its main() in this process (the same code, without paying the kubernetes import each time)."""
    from pinscope.cli import main

    no_create = [(("get", "list"), ("nodes",), None), (("get", "list"), ("pods",), "pinscope")]
    no_exec = no_create + [(("create", "delete"), ("pods",), "pinscope")]
    srv = StandIn({NODE: sim.root}, users={"a": ("alice", no_create), "b": ("bob", no_exec),
                                           "c": ("carol", None)}, namespaces=("default",)).start()
    try:
        def one_line(rc, out, err):
            assert rc == 1 and out == "", (rc, out, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1, err
            return lines[0]

        def run(token, *extra, subprocess=False):
            kc = srv.kubeconfig(tmp_path / f"kc-{token}", token=token)
            args = ("snapshot", f"node/{NODE}", "--kubeconfig", kc, *extra)
            if subprocess:
                r = run_cli(*args)
                return one_line(r.returncode, r.stdout, r.stderr)
            capsys.readouterr()
            rc = main(list(args))
            out, err = capsys.readouterr()
            return one_line(rc, out, err)

        line = run("a", subprocess=True)
        assert "refused create pods in namespace pinscope" in line and "403" in line, line
        assert 'User "alice" cannot create resource "pods"' in line
        srv.namespaces.add("pinscope")
        line = run("b")
        assert "refused" in line and "create pods/exec in namespace pinscope" in line, line
        srv.admission = lambda pod: ('violates PodSecurity "baseline:latest": host namespaces (hostPID=true), '
                                     'hostPath volumes (volume "host-root")')
        line = run("c")
        assert "refused create pods in namespace pinscope" in line and "violates PodSecurity" in line, line
        srv.admission = None
        srv.namespaces.discard("pinscope")
        line = run("c")
        assert "namespace pinscope does not exist" in line and "--namespace" in line, line
        srv.namespaces.add("pinscope")
        line = run("c", "--image", "no-such-image:1")
        assert "cannot start (ErrImagePull" in line and "no-such-image:1" in line, line
        assert "while connecting" not in line and "Pending" not in line, line  # it said its last wait too
        line = run("c", "--kubeconfig", str(tmp_path / "nope"))
        assert "no usable kubeconfig" in line, line
        # --context picks the kubeconfig's user: the current context works, alice's is refused
        kc = srv.kubeconfig(tmp_path / "kc-two", token="c", context="ops", others={"alice": "a"})
        assert main(["snapshot", f"node/{NODE}", "--kubeconfig", kc]) == 0
        line = run("c", "--kubeconfig", kc, "--context", "alice")
        assert 'User "alice" cannot create resource "pods"' in line, line
        line = run("c", "--kubeconfig", kc, "--context", "nosuch")
        assert "no usable kubeconfig" in line and "nosuch" in line, line
        capsys.readouterr()
        rc = main(["snapshot", "node/Bad,Name", "--kubeconfig", kc])
        out, err = capsys.readouterr()  # refused before connecting, as every word that is no target: exit 2
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and "'Bad,Name' is not a node name" in err
        assert probe_pods(srv) == []  # nothing left by any failure
    finally:
        srv.stop()


def test_no_such_node_and_api_gone(api, tmp_path):
    r = run_cli("snapshot", "node/ghost", "--kubeconfig", api.kc)
    assert r.returncode == 1 and "no node named ghost" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    api.stop()
    r = run_cli("snapshot", f"node/{NODE}", "--kubeconfig", api.kc, timeout=90)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Kubernetes API did not answer get nodes" in r.stderr


async def _until(cond, seconds: float) -> None:
    """Polls `cond` until it holds or `seconds` (a hang guard, not a time limit: a loaded CI machine
    connects, deletes and reconnects debug pods slowly) have passed; the assertions after it say what failed."""
    end = time.monotonic() + seconds
    while not cond() and time.monotonic() < end:
        await asyncio.sleep(0.1)


async def test_down_and_reconnect_when_the_pod_goes_away(api):
    """Someone deletes our debug pod (kubectl delete; never `pinscope gc`, which keeps the pod of a live
    session): the node goes down, then comes back with a new pod, as an SSH node does after its connection
    drops."""
    states: list[tuple[str, str | None]] = []
    snaps = []

    col = NodeCollector(f"node/{NODE}", Options(kubeconfig=api.kc, frame_timeout=5))
    stop = asyncio.Event()
    task = asyncio.ensure_future(live(col, 0.2, lambda t: "g", lambda rep: snaps.append(rep),
                                      lambda st, msg: states.append((st, msg)), stop))
    await _until(lambda: snaps, 30)
    first = probe_pods(api)
    assert len(first) == 1
    await asyncio.to_thread(_delete_pod, api.kc, first[0])
    await _until(lambda: [s for s, _ in states].count("up") >= 2 and len(snaps) > 3, 60)
    second = probe_pods(api)
    stop.set()
    await asyncio.wait_for(task, 10)

    # each state once in a row: a connect says what its pod waits for as more "connecting" states
    seen = [s for i, (s, _) in enumerate(states) if i == 0 or states[i - 1][0] != s]
    assert seen[:2] == ["connecting", "up"] and "down" in seen and seen.count("up") >= 2, states
    down = next(m for s, m in states if s == "down")
    assert f"node/{NODE}" in down and "debug pod" in down
    assert len(second) == 1 and second != first
    assert probe_pods(api) == []  # the live loop's end deleted the second pod


async def test_a_hung_node_goes_down_and_comes_back_with_a_new_pod(api):
    """The probe stops answering (SIGSTOP in the stand-in): no frame within the deadline -> down; the
    stuck pod is deleted and a new one serves the reconnect."""
    states: list[tuple[str, str | None]] = []
    reports = []

    col = NodeCollector(f"node/{NODE}", Options(kubeconfig=api.kc, frame_timeout=2))
    stop = asyncio.Event()
    task = asyncio.ensure_future(live(col, 0.2, lambda t: "g", reports.append,
                                      lambda st, msg: states.append((st, msg)), stop))
    await _until(lambda: reports, 30)
    (first,) = probe_pods(api)
    api.call(lambda: api.freeze("pinscope", first))
    n = len(reports)
    await _until(lambda: [s for s, _ in states].count("up") >= 2 and len(reports) > n, 60)
    stop.set()
    await asyncio.wait_for(task, 10)

    down = [m for s, m in states if s == "down"]
    assert down and "no frame within 2 s" in down[0], states
    assert [s for s, _ in states].count("up") >= 2
    assert ("pinscope", first) not in api.pods and probe_pods(api) == []


async def test_debug_pod_lifetime_rotates(api):
    """activeDeadlineSeconds cannot be raised: shortly before it, the transport starts a new pod."""
    col = NodeCollector(f"node/{NODE}", Options(kubeconfig=api.kc, kube_pod_lifetime=4))
    states = []
    stop = asyncio.Event()
    task = asyncio.ensure_future(live(col, 0.3, lambda t: "g", lambda rep: None,
                                      lambda st, msg: states.append((st, msg)), stop))
    await _until(lambda: [s for s, _ in states].count("up") >= 2, 60)
    stop.set()
    await asyncio.wait_for(task, 10)

    assert any(s == "down" and "lifetime" in (m or "") for s, m in states), states
    assert [s for s, _ in states].count("up") >= 2
    assert probe_pods(api) == []


async def test_a_slow_debug_pod_says_what_it_waits_for(sim, tmp_path):
    """A debug pod that takes its time (an image pulled, a busy kubelet): the live view said 'connecting' and
    'waiting for the first frame' for as long as it took. The connect now says which pod, in what state, for
    how long, as the 'connecting' state's message (the status line and the grid show it)."""
    srv, kc = standin(sim, tmp_path, start_delay=2.0)
    try:
        col = NodeCollector(f"node/{NODE}", Options(kubeconfig=kc))
        states: list[tuple[str, str | None]] = []
        stop = asyncio.Event()
        task = asyncio.ensure_future(live(col, 0.3, lambda t: "g", lambda rep: None,
                                          lambda st, msg: states.append((st, msg)), stop))
        for _ in range(300):
            await asyncio.sleep(0.1)
            if any(st == "up" for st, _ in states):
                break
        stop.set()
        await within(task, 10)

        said = [m for st, m in states if st == "connecting" and m]
        assert said and "created, waiting for it to run" in said[0], states
        waits = [m for m in said if "not running yet (Pending)" in m]
        assert waits and all(m.startswith("debug pod pinscope/pinscope-xeon-2s-") for m in said), said
        assert states.index(("up", None)) > states.index(("connecting", waits[-1]))
    finally:
        srv.stop()


def test_a_snapshot_whose_pod_never_runs_in_time_says_so(sim, tmp_path):
    """`snapshot`'s --timeout (30 s by default) ran out while its debug pod was Pending (a slow image pull):
    it said only 'no answer within 30 s (while connecting)'. It now says what it was waiting for, and the
    pod is deleted.

    The default 30 s, not a short --timeout: the timeout also covers loading the client, the kubeconfig and
    the pod's creation, which took 4-10 s on 2 loaded cores (a --timeout of 4 ran out before the pod was
    made, and the line rightly named none). The pod never runs (an hour's delay): the timeout is what ends
    the wait."""
    srv, kc = standin(sim, tmp_path, start_delay=3600.0)
    try:
        p = _pinscope(kc)
        rc = _ended(p)
        err = p.stderr.read() if p.stderr else ""
        assert rc == 1 and "no answer within 30 s (while connecting: debug pod pinscope/pinscope-xeon-2s-" in err, err
        assert "not running yet (Pending)" in err, err
        assert probe_pods(srv) == []
    finally:
        srv.stop()


def test_a_snapshot_on_a_terminal_says_what_its_pod_waits_for_and_a_script_gets_only_errors(sim, tmp_path):
    """`snapshot`/`check` by hand against a node whose debug pod is Pending (a slow image pull) said nothing
    until the answer came (the live view says it all along). On a terminal, stderr now says which pod and
    its state when that changes, and every 10 s while it does not (nothing in the first 2 s: a pod that
    starts at once says nothing); a script's stderr (a pipe) gets none of it, and the answer on stdout is
    the same."""
    import pty

    srv, kc = standin(sim, tmp_path, start_delay=4.0)
    try:
        leader, follower = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "snapshot", f"node/{NODE}", "--kubeconfig",
                              kc, "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=follower, text=True)
        os.close(follower)
        said = b""
        with contextlib.suppress(OSError):  # EIO once the last writer is gone
            while chunk := os.read(leader, 4096):
                said += chunk
        os.close(leader)
        out = p.stdout.read() if p.stdout else ""
        assert _ended(p) == 0, said
        lines = said.decode().splitlines()
        assert lines and all(ln.startswith(f"pinscope: node/{NODE}: debug pod pinscope/pinscope-xeon-2s-")
                             for ln in lines), lines
        waits = [ln for ln in lines if "not running yet (Pending), " in ln]
        assert len(waits) == 1 and lines == waits, lines  # after 2 s quiet, once (4 s: no 10 s repeat)
        assert re.search(r"Pending\), [234] s of at most 30 s$", waits[0]), waits  # --timeout's 30 s, not 120
        assert json.loads(out)["node"] == NODE

        p = _pinscope(kc, "--json")
        assert _ended(p) == 0
        assert (p.stderr.read() if p.stderr else "") == ""  # a pipe: nothing but errors
        assert probe_pods(srv) == []
    finally:
        srv.stop()


@pytest.mark.parametrize("size", [(180, 40), (80, 24)])
async def test_the_live_view_shows_what_a_slow_debug_pod_waits_for(sim, tmp_path, size):
    """The same in the TUI: the status line and the grid say the pod, its state and for how long (it said
    'connecting' and 'waiting for the first frame'); quitting while it waits deletes it. The grid's note
    is wrapped at its width: at 80 columns it was cut before the state and the seconds."""
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.tui.app import PinscopeApp
    from pinscope.tui.widgets.coregrid import CoreGrid

    srv, kc = standin(sim, tmp_path, start_delay=60.0)
    target = f"node/{NODE}"
    try:
        app = PinscopeApp([NodeTarget(target)], Options(kubeconfig=kc), 1.0)
        async with app.run_test(size=size) as pilot:
            for _ in range(300):  # hang guard
                await asyncio.sleep(0.1)
                await pilot.pause()
                if "not running yet" in (app.views[target].message or ""):
                    break
            await asyncio.sleep(1.2)  # a second poll: the seconds move on
            await pilot.pause()
            grid = app.screen.query_one(CoreGrid)
            lines = [grid.render_line(y).text for y in range(grid.size.height)]
            svg, state, width = app.export_screenshot().replace("&#160;", " "), app.views[target].state, grid.size.width

        assert state == "connecting"
        assert "waiting for the first frame" not in svg
        assert "not running yet (Pending)" in svg or size[0] < 100  # at 80 columns it is on two of the grid's lines
        shown = " ".join(ln.strip() for ln in lines if ln.strip())
        assert re.search(r"not running yet \(Pending\), \d+ s of at most 120 s", shown), lines
        assert all(len(ln.rstrip()) <= width for ln in lines)
        assert probe_pods(srv) == []  # the app's close deleted the Pending pod
    finally:
        srv.stop()


def _pinscope(kc: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pinscope.cli", "snapshot", f"node/{NODE}", "--kubeconfig", kc,
                             *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _ended(p: subprocess.Popen, within_s: float = 90.0) -> int:
    """The exit code of a pinscope that ends by itself; killed (and the test failed) if it hangs."""
    try:
        return p.wait(within_s)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _wait(cond, what: str, tries: int = 600, pause: float = 0.1) -> None:
    for _ in range(tries):
        if cond():
            return
        time.sleep(pause)
    raise AssertionError(f"never happened: {what}")


def _gone(pid: int) -> bool:
    """The process has ended (reaped, or a zombie its parent has not reaped yet)."""
    try:
        return "zombie" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def _delete_pod(kc: str, name: str) -> None:
    """What `kubectl delete pod` does, through the kubernetes client."""
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(config_file=kc, client_configuration=cfg, persist_config=False)
    client.CoreV1Api(client.ApiClient(cfg)).delete_namespaced_pod(name, "pinscope", grace_period_seconds=0,
                                                                  _preload_content=False)


def _exec_seen(srv: StandIn) -> bool:
    return any(m == "GET" and "/exec?" in path for m, path, _ in srv.requests)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["TERM", "HUP", "INT"])
def test_a_signal_ends_pinscope_and_deletes_its_debug_pod(api, sig):
    """kill, a closed terminal or a dropped SSH session (SIGHUP), Ctrl-C: pinscope ends as it ends by
    itself, deleting the debug pod (main died of the signal and left the pod running)."""
    p = _pinscope(api.kc, "--samples", "600", "--interval", "0.5")
    try:
        _wait(lambda: _exec_seen(api) and len(probe_pods(api)) == 1, "the probe running in a debug pod")
        (pod,) = probe_pods(api)
        p.send_signal(sig)
        rc = p.wait(90)  # a hang guard, as below
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert rc == 128 + sig, (rc, p.stderr.read() if p.stderr else "")
    assert ("DELETE", f"/api/v1/namespaces/pinscope/pods/{pod}") in [(m, path.split("?")[0]) for m, path, _ in api.requests]
    assert probe_pods(api) == [] and api.running("pinscope", pod) == 0


def test_sigterm_while_the_pod_starts_deletes_it(sim, tmp_path):
    """The signal comes while pinscope still waits for its pod to run (a slow image pull): deleted too."""
    srv, kc = standin(sim, tmp_path, start_delay=60.0)  # Pending for as long as the test runs
    try:
        p = _pinscope(kc)
        try:
            _wait(lambda: len(probe_pods(srv)) == 1, "the debug pod created")
            (pod,) = probe_pods(srv)
            assert srv.pods[("pinscope", pod)]["status"]["phase"] == "Pending"
            p.send_signal(signal.SIGTERM)
            assert p.wait(90) == 128 + signal.SIGTERM  # a hang guard (30 s ran out once with both cores busy)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        said = p.stderr.read() if p.stderr else ""
        assert probe_pods(srv) == [] and not _exec_seen(srv), (said, srv.requests[-6:])
    finally:
        srv.stop()


def test_sigterm_while_the_create_is_answered_deletes_the_pod(sim, tmp_path):
    """The signal comes after the API server made the pod but before pinscope read the answer (a loaded CI
    run): the pod was left behind, pinscope not knowing its name yet. It names the pod before asking, and its
    close waits for the answer in flight, then deletes."""
    srv, kc = standin(sim, tmp_path, start_delay=60.0)
    srv.create_answer_delay = 2.0
    try:
        p = _pinscope(kc)
        try:
            _wait(lambda: len(probe_pods(srv)) == 1, "the debug pod created")
            p.send_signal(signal.SIGTERM)  # within the 2 s the answer takes
            assert p.wait(90) == 128 + signal.SIGTERM
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert probe_pods(srv) == [] and not _exec_seen(srv)
    finally:
        srv.stop()


async def test_the_exit_watchdogs_last_resort_deletes_the_debug_pods_left(sim, tmp_path):
    """An orderly end that does not end within the exit grace (the CI run's: a lost cancel kept pinscope
    polling its Pending pod) left the pod to its own watchdog: the exit watchdog killed only local probes.
    Its last resort now deletes every debug pod not known deleted; run here from a thread, as the watchdog
    does, while the transport still waits for its pod."""
    from pinscope.collectors import exitsignals

    assert kube_transport._delete_undeleted in exitsignals._LAST_RESORT
    srv, kc = standin(sim, tmp_path, start_delay=60.0)
    try:
        tr = KubeTransport(f"node/{NODE}", kubeconfig=kc)
        connecting = asyncio.create_task(tr.connect(10.0))
        for _ in range(300):
            if probe_pods(srv):
                break
            await asyncio.sleep(0.05)
        (pod,) = probe_pods(srv)
        assert ("pinscope", pod) in kube_transport._UNDELETED
        await asyncio.to_thread(kube_transport._delete_undeleted)
        gone = probe_pods(srv) == []
        connecting.cancel()
        with contextlib.suppress(asyncio.CancelledError, PinscopeError):
            await connecting

        assert gone, "the last resort did not delete the pod"
        assert ("DELETE", f"/api/v1/namespaces/pinscope/pods/{pod}") in [
            (m, path.split("?")[0]) for m, path, _ in srv.requests]
        assert ("pinscope", pod) not in kube_transport._UNDELETED  # the orderly close's delete: NotFound, done
    finally:
        srv.stop()


def test_a_delete_the_api_never_answers_is_tried_again_at_the_end(api):
    """The API server sat on the debug pod's DELETE, and on each retry of it (a hung etcd): the close gave up
    and pinscope ended, the pod left to its own watchdog. The program's end now tries every pod not known
    deleted once more (exitsignals.at_end)."""
    api.stalled_deletes = 4  # the close's request and urllib3's three retries of it (DELETE is idempotent)
    t0 = time.monotonic()
    p = _pinscope(api.kc)
    rc = _ended(p)
    deletes = [path.split("?")[0] for m, path, _ in api.requests if m == "DELETE"]
    assert rc == 0 and len(deletes) == 5 and len(set(deletes)) == 1, (rc, deletes, p.stderr.read() if p.stderr else "")
    assert probe_pods(api) == [], time.monotonic() - t0


@pytest.mark.parametrize("where", ["close_stdin", "delete"])
async def test_a_close_cancelled_midway_still_deletes_the_pod_and_returns_at_once(api, where):
    """A second cancel while the transport closes (the app's 2 s a node, a deadline). In the exec stream's
    close (close_stdin) it skipped the DELETE and the session's close; in a DELETE the API sits on, the close
    waited for it (4 s and urllib3's retry) past the caller's budget. Now the close returns at once, the
    delete and the stream's close go on in their own tasks: the pod is deleted, the session closed."""
    tr = KubeTransport(f"node/{NODE}", kubeconfig=api.kc)
    await tr.connect(10.0)
    pod, stream = tr.pod, tr.stream
    assert pod and stream is not None and stream.session is not None
    session = stream.session
    if where == "delete":
        api.stalled_deletes = 1  # the first DELETE is never answered: urllib3 retries it after 4 s
    closing = asyncio.create_task(tr.close())
    await asyncio.sleep(0.0 if where == "close_stdin" else 0.6)  # close_stdin waits 0.2 s at most
    if where == "delete":
        assert any(m == "DELETE" for m, _, _ in api.requests), "the cancel is meant to land in the delete"
    t0 = time.monotonic()
    closing.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await closing
    returned = time.monotonic() - t0
    for _ in range(300):  # the delete and the stream's close run on (the stalled DELETE: ~4 s)
        if ("pinscope", pod) not in kube_transport._UNDELETED and not kube_transport._RUNNING:
            break
        await asyncio.sleep(0.05)
    closed = session.closed

    assert returned < 1.5, returned  # not the delete's 4 s and more
    assert ("pinscope", pod) not in api.pods and ("pinscope", pod) not in kube_transport._UNDELETED
    assert closed


def test_killed_pinscope_leaves_a_pod_that_ends_by_itself_and_gc_removes(api, tmp_path):
    """SIGKILL cannot be caught: the exec stream ends with the process, the probe reads EOF and exits, and
    the pod's watchdog exits --pod-idle s later (main's pod slept until its activeDeadlineSeconds, an hour
    by default). Nothing runs; `pinscope gc` lists the pod and deletes the object."""
    p = _pinscope(api.kc, "--samples", "600", "--interval", "0.5", "--pod-idle", "4", "--pod-lifetime", "600")
    try:
        _wait(lambda: _exec_seen(api) and len(probe_pods(api)) == 1, "the probe running in a debug pod")
        time.sleep(0.3)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    (left,) = probe_pods(api)
    pod = api.pods[("pinscope", left)]
    assert pod["status"]["phase"] == "Running"  # nobody deleted it: pinscope had no chance
    _wait(lambda: pod["status"]["phase"] != "Running", "the debug pod ending by itself", tries=600)
    assert pod["status"]["phase"] == "Succeeded" and "reason" not in pod["status"]  # the watchdog, not the deadline
    (cs,) = pod["status"]["containerStatuses"]
    assert cs["state"]["terminated"]["exitCode"] == 0
    assert api.running("pinscope", left) == 0  # no process of it left on the node
    r = run_cli("gc", "--dry-run", "--kubeconfig", api.kc)
    assert r.returncode == 0 and f"pinscope/{left}  node {NODE}  Succeeded  " in r.stdout, r.stdout
    assert "ended: nothing runs in it; would be deleted" in r.stdout and "started by" not in r.stdout
    r = run_cli("gc", "--kubeconfig", api.kc)
    assert r.returncode == 0 and "deleted" in r.stdout, r.stdout
    assert probe_pods(api) == []
    r = run_cli("gc", "--kubeconfig", api.kc)
    assert r.stdout.strip() == "no pinscope debug pods in namespace pinscope"


def test_a_killed_pinscope_leaves_no_copy_of_the_kubeconfigs_keys(api, tmp_path):
    """The kubernetes client copies certificate-authority-data, client-certificate-data and client-key-data
    into files it removes only at a normal exit: a pinscope killed with SIGKILL left the cluster's CA and the
    client's PRIVATE KEY in TMPDIR. Now they are in memory files: nothing in TMPDIR while it runs, nor after
    the kill; the memory files open for pinscope's user, not for another (nobody)."""
    import base64

    keys = {}
    for what in ("key", "crt"):
        keys[what] = tmp_path / f"client.{what}"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=someone", "-keyout", str(keys["key"]), "-out", str(keys["crt"])],
                   check=True, capture_output=True)
    key, crt = keys["key"].read_bytes(), keys["crt"].read_bytes()
    keys["key"].unlink()
    doc = json.loads(Path(api.kc).read_text())
    doc["users"][0]["user"].update({"client-certificate-data": base64.b64encode(crt).decode(),
                                    "client-key-data": base64.b64encode(key).decode()})
    kc = tmp_path / "kubeconfig-with-a-key"
    kc.write_text(json.dumps(doc))
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    p = subprocess.Popen([sys.executable, "-m", "pinscope.cli", "snapshot", f"node/{NODE}", "--kubeconfig",
                          str(kc), "--samples", "600", "--interval", "0.5", "--pod-idle", "4"], cwd=ROOT,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "TMPDIR": str(tmpdir)})
    try:
        _wait(lambda: _exec_seen(api) and len(probe_pods(api)) == 1, "the probe running in a debug pod")
        assert sorted(tmpdir.rglob("*")) == []
        fds = Path(f"/proc/{p.pid}/fd")
        held = {f.read_bytes(): f for f in fds.iterdir() if os.readlink(f).startswith("/memfd:pinscope-kube")}
        assert set(held) == {api.ca, crt, key}
        if os.geteuid() == 0:  # another user opens neither the fd nor lists them
            r = subprocess.run(["runuser", "-u", "nobody", "--", "cat", str(held[key])], capture_output=True, text=True)
            assert r.returncode != 0 and "Permission denied" in r.stderr and "PRIVATE" not in r.stdout, r
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert sorted(tmpdir.rglob("*")) == []


def test_gc_keeps_the_pod_of_a_live_session_and_deletes_a_dead_ones(api):
    """Two pinscopes on one node, each on its debug pod: one is killed (SIGKILL: its pod runs on until its
    watchdog sees no session), the other lives. `gc` deletes only the dead one's pod and says why it kept the
    other (main deleted both: the live session went down and reconnected on a new pod)."""
    args = ("--samples", "600", "--interval", "0.5", "--timeout", "900", "--pod-heartbeat", "2", "--pod-idle", "600")
    dead = _pinscope(api.kc, *args)
    live = None
    try:
        _wait(lambda: len(probe_pods(api)) == 1 and api.running("pinscope", probe_pods(api)[0]),
              "the first pinscope on its debug pod", tries=900)
        (dead_pod,) = probe_pods(api)
        live = _pinscope(api.kc, *args)
        _wait(lambda: len(probe_pods(api)) == 2 and all(api.running("pinscope", n) for n in probe_pods(api)),
              "both pinscopes on their debug pods", tries=900)
        (live_pod,) = set(probe_pods(api)) - {dead_pod}
        before = {dead_pod, live_pod}
        requests = len(api.requests)
        _wait(lambda: {path.split("?")[0].rsplit("/", 1)[1] for m, path, _ in api.requests[requests:]
                       if m == "PATCH"} == before, "each session's heartbeat on its own pod", tries=100)
        dead.send_signal(signal.SIGKILL)
        dead.wait()
        assert api.pods[("pinscope", dead_pod)]["status"]["phase"] == "Running"  # its watchdog waits 600 s
        r = run_cli("gc", "--dry-run", "--kubeconfig", api.kc)
        assert r.returncode == 0, r.stderr
        lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()}
        assert lines[f"pinscope/{live_pod}"].endswith("kept: a live session renewed its heartbeat within 5 s"), r.stdout
        assert lines[f"pinscope/{dead_pod}"].endswith("no heartbeat for 5 s: its pinscope is gone; would be deleted")
        assert set(probe_pods(api)) == before  # a dry run deletes nothing
        r = run_cli("gc", "--kubeconfig", api.kc)
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()}
        assert lines[f"pinscope/{live_pod}"].endswith("kept: a live session renewed its heartbeat within 5 s"), r.stdout
        assert lines[f"pinscope/{dead_pod}"].endswith("no heartbeat for 5 s: its pinscope is gone; deleted"), r.stdout
        assert set(probe_pods(api)) == {live_pod}
        assert live.poll() is None and api.running("pinscope", live_pod)  # the live session goes on, same pod
        time.sleep(2.5)
        assert set(probe_pods(api)) == {live_pod}  # no reconnect on a new pod
    finally:
        for p in (live, dead):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
            if p is not None:
                _ended(p)
    assert probe_pods(api) == []


async def test_the_deadline_still_bounds_a_pod_in_use(api):
    """activeDeadlineSeconds stays the hard bound (the kubelet kills the pod at it, session or not)."""
    t = KubeTransport(f"node/{NODE}", kubeconfig=api.kc, lifetime=3, idle=60)
    await t.connect()
    try:
        pod = api.pods[("pinscope", t.pod)]
        for _ in range(100):
            await asyncio.sleep(0.1)
            if pod["status"]["phase"] != "Running":
                break
    finally:
        await t.close()

    assert pod["status"]["reason"] == "DeadlineExceeded"


async def test_the_watchdog_waits_while_a_session_lives(api):
    """The other half of the watchdog: with a session open, the pod outlives --pod-idle many times over."""
    t = KubeTransport(f"node/{NODE}", kubeconfig=api.kc, idle=1)
    await t.connect()
    try:
        pod = api.pods[("pinscope", t.pod)]
        for _ in range(8):  # four idle periods and more (the watchdog looks every 2 s)
            await asyncio.sleep(1.0)
            assert pod["status"]["phase"] == "Running"
            assert (await t.request("g")).complete
    finally:
        await t.close()



def test_kube_via_api_reaches_every_discovered_node(sim, tmp_path):
    other = SimNode(dual_socket_intel(), tmp_path / "other").write()
    srv = StandIn({NODE: sim.root, "worker-2": other.root}).start()
    try:
        kc = srv.kubeconfig(tmp_path / "kc")
        r = run_cli("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", kc)
        assert r.returncode == 0, r.stderr
        objs = json.loads(r.stdout)
        assert len(objs) == 2 and all(o["cpus"] for o in objs)
        assert probe_pods(srv) == []
        created = [path for m, path, _ in srv.requests if m == "POST"]
        assert len(created) == 2
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------- RBAC
def _rbac_docs() -> list[dict]:
    return [d for d in yaml.safe_load_all((ROOT / "deploy/rbac.yaml").read_text()) if d]


def _bindings() -> list[dict]:
    """The bindings pinscope ships: only in the in-cluster component (deploy/ itself binds nothing)."""
    path = ROOT / "deploy/components/in-cluster/binding.yaml"
    return [d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] in ("ClusterRoleBinding", "RoleBinding")]


def _rules_from_rbac(bound: bool = True, only: set[str] | None = None) -> list:
    """deploy/rbac.yaml's rules as the stand-in's (verbs, resources, namespace) triples: those of the roles the
    in-cluster component binds (bound=True; `only` these roles by name), or of the roles nothing binds (the
    opt-in ones)."""
    docs = _rbac_docs()
    bound_names = {d["roleRef"]["name"] for d in _bindings()}
    rules = []
    for doc in docs:
        name = doc["metadata"]["name"]
        if doc["kind"] in ("ClusterRole", "Role") and (name in bound_names) == bound and (only is None or name in only):
            ns = doc["metadata"].get("namespace")
            for r in doc["rules"]:
                assert r.get("apiGroups") == [""]
                rules.append((tuple(r["verbs"]), tuple(r["resources"]), ns))
    return rules


def test_pods_are_read_only_with_the_pod_reader_and_the_rest_works_without_it(sim, tmp_path):
    """pinscope-pod-reader (list every pod of the cluster, env values and all) is the one role that reads pod
    specs: node/NAME works without it (node-reader and prober), saying once that list pods was refused, and
    names the node's pods from its own files."""
    rules = _rules_from_rbac(only={"pinscope-node-reader", "pinscope-prober"})
    assert not [r for r in rules if "pods" in r[1] and r[2] is None]  # no cluster-wide pod access in them
    srv = StandIn({NODE: sim.root}, users={"t": ("pinscope-user", rules)}).start()
    try:
        kc = srv.kubeconfig(tmp_path / "kc", token="t")
        r = run_cli("snapshot", "--json", f"node/{NODE}", "--kubeconfig", kc)
        assert r.returncode == 0, r.stderr
        o = json.loads(r.stdout)
        said = [e["message"] for e in o["errors"] if e["source"] == "kubernetes"]
        assert len([m for m in said if "list pods" in m]) == 1 and "403" in said[0], said
        assert o["cpus"] and probe_pods(srv) == []
        assert ("list", "pods") in srv.used  # in pinscope's namespace only (the exporter pod)
    finally:
        srv.stop()


@pytest.mark.parametrize("exec_verb", ["create", "get"])
def test_rbac_yaml_grants_exactly_the_verbs_used(sim, tmp_path, exec_verb):
    """Every use (a node through a debug pod, through the exporter, --kube discovery and pod names, the API
    round's node and pods, gc) works with only the rules deploy/rbac.yaml binds; and every rule in it is used.
    Both kinds of API server: those that authorize the exec websocket as "get" pods/exec and those that also
    ask for "create". kubelet's metrics are not among them (nodes/proxy is opt-in): said once per node."""
    rules = _rules_from_rbac()
    srv = StandIn({NODE: sim.root}, users={"t": ("pinscope-user", rules)}, exec_verb=exec_verb).start()
    try:
        kc = srv.kubeconfig(tmp_path / "kc", token="t")
        # 3 s on the debug pod: its heartbeat (patch) beats at least once
        r = run_cli("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", kc, "--pod-heartbeat", "1",
                    "--samples", "4", "--interval", "1")
        assert r.returncode == 0, r.stderr
        said = [e["message"] for e in json.loads(r.stdout)["errors"] if e["source"] == "kubernetes"]
        assert said == ["kubelet metrics: not allowed (get nodes/proxy)"]
        srv.call(lambda: srv.add_pod(exporter_pod()))
        r = run_cli("snapshot", f"node/{NODE}", "--kubeconfig", kc)
        assert r.returncode == 0, r.stderr
        r = run_cli("gc", "--kubeconfig", kc)
        assert r.returncode == 0, r.stderr
        granted = {(v, res) for verbs, ress, _ in rules for v in verbs for res in ress}
        used = set(srv.used)
        # the exec verb this server does not check is still granted, for the other kind of server
        assert granted - used == {("get" if exec_verb == "create" else "create", "pods/exec")}
        assert used <= granted
        assert ("get", "nodes/proxy") not in granted
    finally:
        srv.stop()


def test_the_kubelet_metrics_role_is_opt_in_and_is_all_the_metrics_need(sim, tmp_path):
    """`get nodes/proxy` (exec in every pod, in effect) is in a ClusterRole of its own that no manifest in
    deploy/ binds; with it bound too, kubelet's metrics are read and every rule of it is used. Without it,
    `check` says so in one line beside the other findings (an admission rejection, a fractional Allocatable)."""
    optional = _rules_from_rbac(bound=False)
    assert optional == [(("get",), ("nodes/proxy",), None)]
    names = {d["metadata"]["name"] for d in _rbac_docs() if d["kind"] == "ClusterRole"}
    assert "pinscope-kubelet-metrics" in names
    for f in (ROOT / "deploy").rglob("*.yaml"):  # bound by nothing shipped
        for d in yaml.safe_load_all(f.read_text()):
            if isinstance(d, dict) and d.get("kind") in ("ClusterRoleBinding", "RoleBinding"):
                assert d["roleRef"]["name"] != "pinscope-kubelet-metrics", f
    rules = _rules_from_rbac()
    srv = StandIn({NODE: sim.root}, users={"t": ("pinscope-user", rules), "m": ("metrics-user", rules + optional)}).start()
    try:
        srv.allocatable[NODE] = "47500m"
        srv.call(lambda: srv.reject_pod("matcher-x", NODE, "TopologyAffinityError",
                                        "Resources cannot be allocated with Topology locality", "trading"))
        kc = srv.kubeconfig(tmp_path / "kc", token="t")
        r = run_cli("check", "--kube", "--via", "api", "--kubeconfig", kc, timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
        out = r.stdout.splitlines()
        assert [ln for ln in out if "nodes/proxy" in ln] == [f"{NODE}: kubernetes: kubelet metrics: not allowed (get nodes/proxy)"]
        assert any(" ADMISSION_REJECTED " in ln for ln in out) and any(" ALLOCATABLE_FRACTIONAL " in ln for ln in out)
        assert srv.metrics_served.get(NODE) is None
        srv.used.clear()
        kc = srv.kubeconfig(tmp_path / "kc-m", token="m")
        r = run_cli("snapshot", "--json", "--kube", "--via", "api", "--kubeconfig", kc, timeout=120)
        assert r.returncode == 0, r.stderr
        o = json.loads(r.stdout)
        assert o["kubernetes"]["kubelet_metrics"]["cpu_manager_pinning_requests_total"] == 12
        assert [e for e in o["errors"] if e["source"] == "kubernetes"] == []
        assert ("get", "nodes/proxy") in srv.used and srv.metrics_served[NODE] == 1
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------- faithful
def test_kubectl_reads_the_stand_in(api, sim):
    """The real kubectl: `get pods` (table and JSON) shows pinscope's debug pod, `exec` runs the probe in
    it (websocket, v5: the requests end with q and the probe exits) and reads the same frame as
    pinscope; `get pods` no longer lists the pod once pinscope closes."""
    async def connect():
        t = KubeTransport(f"node/{NODE}", kubeconfig=api.kc)
        await t.connect()
        return t

    loop = asyncio.new_event_loop()
    try:
        t = loop.run_until_complete(connect())
        r = kubectl(api.kc, "get", "pods", "-n", "pinscope")
        assert r.returncode == 0, r.stderr
        head, row = r.stdout.splitlines()
        assert head.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert row.split()[:3] == [t.pod, "1/1", "Running"]
        r = kubectl(api.kc, "get", "pods", "-n", "pinscope", "-l", "app.kubernetes.io/managed-by=pinscope", "-o", "json")
        (item,) = json.loads(r.stdout)["items"]
        assert item["spec"]["activeDeadlineSeconds"] == 3600 and item["spec"]["hostPID"] is True

        ours = loop.run_until_complete(t.request("sg"))
        stdin = probe_text().rstrip("\n") + "\n" + PROBE_END + "\nsg\nq\n"  # q: a script ends its requests so
        r = kubectl(api.kc, "exec", "-i", "-n", "pinscope", t.pod, "--", "sh", "-c", stdin_probe_command("/host"),
                    input=stdin)
        assert r.returncode == 0, r.stderr  # exited by itself on q (stdin ending without it ends the group)
        theirs = parse_frame(r.stdout.encode())
        own = ("probe-pids", "probe-pgid", "probe_cpu")  # each probe says its own processes and its own CPU time

        def info(f):
            return {k: v for k, v in f.info.items() if k not in own}
        assert theirs.complete and theirs.files == ours.files and info(theirs) == info(ours)
        assert "probe_cpu" in ours.info  # the pod's /proc is the host's (hostPID): the probe reads its cost
        assert api.protocols_seen[-1] == V5

        r = kubectl(api.kc, "exec", "-n", "pinscope", t.pod, "--", "sh", "-c", "exit 3")
        assert r.returncode == 3  # the v1 Status of the error channel carries the exit code
        loop.run_until_complete(t.close())
        r = kubectl(api.kc, "get", "pods", "-n", "pinscope")
        assert r.returncode == 0 and "No resources found" in r.stderr + r.stdout
        r = kubectl(api.kc, "get", "nodes", "-o", "name")
        assert r.stdout.split() == [f"node/{NODE}"]
    finally:
        loop.close()


@pytest.mark.parametrize("protocols", [(V5, V4), (V4,)], ids=["v5", "v4"])
def test_the_kubernetes_clients_own_websocket_reads_the_stand_in(sim, tmp_path, protocols):
    """A second independent client, the `kubernetes` package's stream (websocket-client), on both
    protocols: the probe's frame arrives whole on stdout."""
    from kubernetes import client, config
    from kubernetes.stream import stream

    srv, kc = standin(sim, tmp_path, protocols=protocols)
    try:
        srv.call(lambda: srv.add_pod(exporter_pod()))
        cfg = client.Configuration()
        config.load_kube_config(kc, client_configuration=cfg, persist_config=False)
        api = client.CoreV1Api(client.ApiClient(cfg))
        ws = stream(api.connect_get_namespaced_pod_exec, "pinscope-exporter-xeon-", "pinscope",
                    command=["sh", "-c", stdin_probe_command("/host")], container="exporter",
                    stdin=True, stdout=True, stderr=True, tty=False, _preload_content=False, binary=True)
        ws.write_stdin((probe_text().rstrip("\n") + "\n" + PROBE_END + "\ng\nq\n").encode())
        out = b""
        end = time.monotonic() + 20
        while ws.is_open() and time.monotonic() < end:
            ws.update(timeout=1)
            out += ws.read_stdout(timeout=0) or b""
        ws.close()
        assert srv.protocols_seen == [protocols[0]]
        f = parse_frame(out)
        assert f.complete and "/proc/stat" in f.files
        assert ws.returncode == 0
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------- the TUI
async def test_the_tui_over_node_name_draws_the_grid_and_q_deletes_the_pod(api):
    """`pinscope node/NAME` as the app runs it: the node's grid arrives through a debug pod, pod names
    come from the API too, and q (the app's exit) deletes the pod."""
    from pinscope.collectors.fleet import NodeTarget
    from pinscope.tui.app import PinscopeApp

    app = PinscopeApp([NodeTarget(f"node/{NODE}")], Options(kubeconfig=api.kc), interval=0.3,
                      kube=(None, api.kc))
    async with app.run_test(size=(160, 48)) as pilot:
        v = app.views[f"node/{NODE}"]
        for _ in range(200):
            await asyncio.sleep(0.1)
            if v.snap is not None and v.state == "up":
                break
        assert v.snap is not None and len(v.snap.topology.cpus) == 48
        assert len(probe_pods(api)) == 1
        await pilot.press("q")
    assert probe_pods(api) == []



@pytest.mark.parametrize("how", ["SIGTERM", "terminal closed"])
def test_the_tui_under_tmux_deletes_its_pod_on_sigterm_and_when_its_terminal_closes(api, how):
    """The live view in a real terminal (tmux): `kill <pid>`, or the terminal going away (tmux kills the
    pane: SIGHUP, as a closed terminal window or a dropped SSH session) ends pinscope as `q` does, and the
    debug pod is deleted (main died of either signal and left the pod running)."""
    import uuid

    need(shutil.which("tmux") is not None, "tmux not installed (apt-get install tmux)")
    session = f"pinscope-kube-{uuid.uuid4().hex[:8]}"
    cmd = f"cd {ROOT} && TERM=xterm-256color exec {sys.executable} -m pinscope.cli node/{NODE} --kubeconfig {api.kc}"
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "48", cmd)
    try:
        pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").stdout)
        _wait(lambda: _exec_seen(api) and len(probe_pods(api)) == 1, "the probe running in a debug pod")
        (pod,) = probe_pods(api)
        if how == "SIGTERM":
            os.kill(pid, signal.SIGTERM)
        else:
            tmux("kill-session", "-t", session)
        _wait(lambda: _gone(pid), "pinscope's end")
    finally:
        tmux("kill-session", "-t", session, check=False)
    assert ("DELETE", f"/api/v1/namespaces/pinscope/pods/{pod}") in [(m, p.split("?")[0]) for m, p, _ in api.requests]
    assert probe_pods(api) == [] and api.running("pinscope", pod) == 0
