"""kubelet's live view (its PodResources API) in the "what fits" pane (issue 36): one line saying whether it was
reached (if not, why, in plain words), when it was read, whether it agrees with the checkpoint and the kernel on
the containers all three name; each disagreement with its three CPU sets side by side, labelled, and whether it
held two rounds; what it adds to the node's files (devices with their NUMA node).

The presenter (tui/presenter.py live_summary, live_lines) is tested without Textual on nodes of the demo read
through the real probe with kubelet's stand-in (tests/podresources_server.py, a real gRPC server) on the socket in
the node's tree; every unreachable view is made by the real code path that says it. What is expected is read from
the demo's spec (collectors/sim/demo.py), never copied from the output."""
from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from frozen import FrozenApp, screen_lines
from helpers import need
from nodes import HOSTILE, hostile
from podresources_server import StandIn, agreeing, changed

from pinscope.collectors import podresources as pr
from pinscope.collectors.collect import FULL, NodeCollector, Options
from pinscope.collectors.pipeline import Pipeline
from pinscope.collectors.sim.demo import demo_specs
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.text import CONTROL, display
from pinscope.collectors.transport.kube import KubeTransport
from pinscope.collectors.transport.local import LocalTransport
from pinscope.collectors.transport.ssh import SSHTransport
from pinscope.tui.presenter import live_lines, live_summary
from pinscope.tui.screens.fit import FitScreen

SOCK = "var/lib/kubelet/pod-resources/kubelet.sock"
RISK = frozenset({24, 25, 26, 27, 72, 73, 74, 76})  # kubelet's in-memory state for trading/risk-calc-2/risk: 75 -> 76


def spec(host: str):
    (sp,) = [x for x in demo_specs() if x.hostname == host]
    return sp


async def rounds(root: Path, sp, serve, n: int = 2, allocatable=(), devices=()):
    """`n` reports of the node `sp` read through the real probe (--root), kubelet's stand-in on its socket in the
    tree answering `serve(snapshot)` (the LivePods), asked every tick; `serve` None: no socket in the tree."""
    SimNode(sp, root).write()
    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    server = None
    try:
        first = await col.tick(FULL)  # the snapshot kubelet's answer is made from
        if serve is None:
            return [first]
        (root / SOCK).parent.mkdir(parents=True, exist_ok=True)
        server = StandIn(serve(first.snapshot), allocatable, devices).start(str(root / SOCK))
        col.pipeline.live_prev = None  # the window starts with the stand-in's first answer
        return [await col.tick(FULL) for _ in range(n)]
    finally:
        await col.close()
        if server is not None:
            server.stop()


def texts(lines) -> list[str]:
    return [ln.text for ln in lines]


# --- agreeing; what the live view adds -----------------------------------------------------------------------

# infer-epyc-64: triton-0 holds GPU_FAR (NUMA 3), triton-1 GPU_NEAR (NUMA 2); four containers hold exclusive CPUs
# (triton-0, triton-1, encoder-a's ffmpeg, tokenizer's tok); reserved 0-1 of 64 CPUs
INFER = spec("infer-epyc-64")
GPUS = {c.name + "@" + p.name: c.devices[0] for p in INFER.pods for c in p.containers if c.devices}


def with_numa(snap):
    pods = agreeing(snap)
    for key, (res, dev, numa) in GPUS.items():
        ctr, pod = key.split("@")
        pods = changed(pods, ctr, pod, devices=(pr.Device(res, (dev,), (numa,)),))
    return pods


async def test_agreeing_says_so_in_one_line_and_what_kubelet_adds(tmp_path):
    alloc_devices = [pr.Device(res, (dev,), (numa,)) for res, dev, numa in GPUS.values()]
    alloc_devices.append(pr.Device("example.com/widget", ("w-1",), ()))  # a plugin that gives no NUMA node, free
    (r,) = await rounds(tmp_path, INFER, with_numa, 1, allocatable=range(2, 64), devices=alloc_devices)
    line = live_summary(r, 200)
    assert line.text.startswith("kubelet's live view: read ") and ", with this frame; " in line.text, line
    assert line.text.endswith("agrees with its checkpoint and the kernel on all 4 containers all three name"), line
    assert line.style == ""  # no mark: nothing held
    short = live_summary(r, 64)
    assert short.text.startswith("kubelet's live view (read ") and short.text.endswith("): agrees on all 4 containers")
    assert len(short.text) <= 64, short
    got = texts(live_lines(r, 78))
    assert "  kubelet may hand out CPUs 2-63 (GetAllocatableResources)" in got, got
    for key, (res, dev, numa) in GPUS.items():
        ctr, pod = key.split("@")
        at = got.index(f"    NUMA {numa}  {res} {dev}")
        assert got[at + 1].strip() == f"held by ml/{pod}/{ctr}", got
    at = got.index("    no NUMA example.com/widget w-1")
    assert got[at + 1].strip() == "free", got
    assert not any(ln.startswith("▲") for ln in got), got


# --- disagreeing: once, then held --------------------------------------------------------------------------------

TRADE = spec("trade-xeon-96")


def risk_moved(snap):
    return changed(agreeing(snap), "risk", "risk-calc-2", cpus=RISK)


@pytest.fixture(scope="module")
def trade(tmp_path_factory):
    """Two rounds of trade-xeon-96 with kubelet's in-memory state differing on risk-calc-2/risk; the spec's own planted drift
    (gateway-5f/fix-gw: kernel 28-29,76-77, kubelet 28,76) is the other disagreement."""
    return asyncio.run(rounds(tmp_path_factory.mktemp("trade"), TRADE, risk_moved, 2, allocatable=range(2, 96)))


# the user trial: "disagrees on 2 of 4 containers" counted gateway-5f/fix-gw, where kubelet's in-memory state and
# its checkpoint agree and only the kernel differs: kubelet is not said to disagree there
SAID = ("2 of the 4 containers all three name differ: 1 where kubelet's in-memory state differs from its checkpoint, "
        "1 where only the kernel differs")
SAID_SHORT = "2 of 4 containers differ, 1 only in the kernel"


def test_only_the_kernel_differing_is_not_kubelet_disagreeing():
    """Each kind counted where it is: only the kernel, kubelet's in-memory state against its checkpoint, devices."""
    from pinscope.collectors.assemble.live import Disagreement
    from pinscope.tui.presenter import _differ

    def d(pr, cp, k, what="cpus"):
        return Disagreement("u", "ns", "p", "c", what, frozenset(pr), cp and frozenset(cp), k and frozenset(k))

    kernel, mem, dev = d({1}, {1}, {1, 2}), d({1}, {3}, {3}), d({"g0"}, {"g1"}, None, "example.com/gpu")
    assert _differ([kernel], 4) == ("1 of the 4 containers all three name differs: 1 where only the kernel differs",
                                    "1 of 4 containers differs, only in the kernel", "1 of 4 containers differs")
    assert _differ([mem, kernel], 4)[0] == ("2 of the 4 containers all three name differ: 1 where kubelet's in-memory "
                                            "state differs from its checkpoint, 1 where only the kernel differs")
    assert "kernel" not in " ".join(_differ([mem], 4))
    assert _differ([dev], 4)[1] == "1 container differs on devices"


def test_a_disagreement_seen_once_is_said_as_such(trade):
    first = trade[0]
    line = live_summary(first, 200)
    assert not line.text.startswith("▲") and SAID in line.text, line
    got = texts(live_lines(first, 78))
    at = got.index("  trading/risk-calc-2/risk")
    assert got[at + 1] == ("    kubelet's in-memory state differs from its checkpoint and the kernel; seen once: a finding if "
                           "the next round sees it again") or got[at + 2].startswith("    seen once"), got


def test_a_held_disagreement_shows_the_three_sets_side_by_side(trade):
    held = trade[1]
    line = live_summary(held, 200)
    assert line.style == "warn" and line.text.startswith("▲ kubelet's live view: read "), line
    assert line.text.endswith(SAID), line
    assert live_summary(held, 76).text.endswith(SAID_SHORT)  # short: still one line
    assert len(live_summary(held, 76).text) <= 76
    got = texts(live_lines(held, 78))
    at = got.index("▲ trading/risk-calc-2/risk")
    assert got[at + 1].startswith("    kubelet's in-memory state differs from its checkpoint and the kernel"), got
    assert "held two rounds" in got[at + 1] + got[at + 2], got
    row = next(x for x in got[at:] if "PodResources" in x)
    assert row == "    PodResources 24-27,72-74,76  checkpoint 24-27,72-75  cgroup 24-27,72-75", got
    gw = got.index("▲ trading/gateway-5f/fix-gw")
    assert got[gw + 1].startswith("    the kernel differs from kubelet's in-memory state and checkpoint"), got
    assert "  what fits is worked out from the checkpoint; kubelet decides by its in-memory state" in got


def test_the_checkpoint_unread_is_said_and_the_kernel_still_compared(trade):
    """Not readable (not root under --root, a broken file): kubelet's in-memory state is compared with the kernel alone."""
    import dataclasses

    r = trade[1]
    unread = dataclasses.replace(r, snapshot=dataclasses.replace(r.snapshot, state=None, state_status="unreadable"))
    again = Pipeline("local").add_live(unread, r.live.now.view)
    assert live_summary(again, 200).text.endswith("checkpoint not read; disagrees with the kernel on 2 containers")
    got = texts(live_lines(again, 100))
    at = got.index("  trading/risk-calc-2/risk")  # seen once: a new window
    assert got[at + 1].startswith("    kubelet's in-memory state and the kernel differ"), got
    assert "    PodResources 24-27,72-74,76  checkpoint not read  cgroup 24-27,72-75" in got, got


def test_narrow_the_three_sets_stack_labelled(trade):
    got = texts(live_lines(trade[1], 40))
    at = got.index("▲ trading/risk-calc-2/risk")
    rows = [x for x in got[at:at + 8] if x.startswith("    PodResources") or x.startswith("    checkpoint")
            or x.startswith("    cgroup")]
    assert rows == ["    PodResources  24-27,72-74,76", "    checkpoint    24-27,72-75", "    cgroup        24-27,72-75"]
    assert live_summary(trade[1], 56).text == "▲ kubelet's live view: 2 of 4 containers differ"
    assert got[1].startswith("  read ") and got[2] == "  on /var/lib/kubelet/pod-resources/kubelet.sock", got


# --- unreachable, with each reason ---------------------------------------------------------------------------


def _listening(path: str, listen: bool) -> socket.socket:
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    if listen:
        s.listen(1)  # accepted by the kernel, never answered
    return s


def _not_root(tmp_path) -> pr.LiveView:
    """kubelet's socket is root's (0600): another user is told to run pinscope as root."""
    d = tmp_path / "k"
    d.mkdir()
    path = str(d / "kubelet.sock")
    s = _listening(path, True)
    try:
        if os.geteuid() != 0:
            os.chmod(path, 0)  # not ours to write: as a socket of root's is to another user
            return pr.read_live(path, 0.5)
        import shutil

        need(shutil.which("runuser") is not None, "runuser (to ask as nobody)")
        python = "/usr/bin/python3"  # a Python nobody may run (a pyenv build under /root is not); no venv package needed
        need(os.access(python, os.X_OK), python)
        os.chmod(tmp_path, 0o755)
        os.chmod(d, 0o755)
        os.chmod(path, 0o600)
        code = ("import sys; sys.path[:0] = sys.argv[2:]; from pinscope.collectors import podresources as pr; "
                "v = pr.read_live(sys.argv[1], 0.5); print(v.why); print(v.error)")
        src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(pr.__file__))))
        out = subprocess.run(["runuser", "-u", "nobody", "--", python, "-c", code, path, src],
                             capture_output=True, text=True, timeout=60, cwd="/")
        why, _, error = out.stdout.partition("\n")
        assert out.returncode == 0, out.stderr
        return pr.LiveView(path, error=error.strip(), why=why)
    finally:
        s.close()


async def _view(reason: str, tmp_path, monkeypatch) -> pr.LiveView:
    """The view the real code path gives for `reason`."""
    path = str(tmp_path / "kubelet.sock")
    if reason == "no socket":
        return pr.read_live(path)
    if reason == "not a socket":
        Path(path).write_text("")
        return pr.read_live(path)
    if reason == "refused":
        (tmp_path / "var").symlink_to("../..")
        return pr.read_live_in_root(str(tmp_path), "/var/x/kubelet.sock")
    if reason in ("kubelet not listening", "not answering"):
        s = _listening(path, reason == "not answering")
        try:
            return pr.read_live(path, 0.5)
        finally:
            s.close()
    if reason == "not root":
        return _not_root(tmp_path)
    if reason == "grpcio not installed":
        monkeypatch.setitem(sys.modules, "grpc", None)
        return pr.ask("unix:" + path, path)
    if reason == "not connected":
        return await SSHTransport("root@node-1").podresources(path, 0.5)
    if reason == "not through this transport":
        return await KubeTransport("node/node-1").podresources(path, 0.5)
    # over SSH with --root (asked only once connected: tests/e2e/test_ssh.py) and an answer not understood: said
    # with the words of those paths
    words = {"not forwarded over SSH": f"{path}: not forwarded with --root over SSH (sshd would follow its links)",
             "answer not understood": "kubelet's PodResources answer not understood: truncated varint",
             "API error": "kubelet's PodResources API: PERMISSION_DENIED: no"}
    return pr.LiveView(path, error=words[reason], why=reason)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """db-numa-32 read through the real probe: its tree has no kubelet socket."""
    return asyncio.run(rounds(tmp_path_factory.mktemp("plain"), spec("db-numa-32"), None, 1))[0]


@pytest.mark.parametrize("reason", pr.WHY)
async def test_unreachable_says_why_in_plain_words(reason, tmp_path, monkeypatch, plain):
    view = await _view(reason, tmp_path, monkeypatch)
    assert view.error and view.why == reason, (view.why, view.error)
    report = Pipeline("local").add_live(plain, view)
    line = live_summary(report, 78)
    assert line.text == f"kubelet's live view: not reached: {reason}" and len(line.text) <= 78, line
    got = texts(live_lines(report, 78))
    assert got[0] == "kubelet's live view (its PodResources API)"
    assert got[1] == "  " + display(view.error)
    assert got[2] == "  what fits is worked out from the node's files alone"


def test_a_tree_without_kubelets_socket_says_no_socket(plain):
    """Read through the real probe with --root: the sim tree has no socket, said as such."""
    assert live_summary(plain, 78).text == "kubelet's live view: not reached: no socket"


def test_not_asked_is_said():
    assert live_summary(None).text.startswith("kubelet's live view: not asked")
    assert live_lines(None) == []


# --- hostile names -------------------------------------------------------------------------------------------


async def test_hostile_names_never_reach_the_terminal_raw(tmp_path):
    """A pod, namespace, container, device resource and id holding escape sequences, newlines, C1 and bidi
    controls: every line the presenter gives is escaped (as `ls -b`), the names still there."""
    def serve(snap):
        pods = changed(agreeing(snap), HOSTILE["ctr"], cpus=frozenset({2}))
        return changed(pods, HOSTILE["ctr"], devices=(pr.Device("ex\x1b[2Jample.com/gpu", ("id\x07\u202e1",), (0,)),))

    reports = await rounds(tmp_path, hostile(), serve, 2, allocatable=range(1, 4))
    lines = [live_summary(reports[1], 200), *live_lines(reports[1], 78)]
    assert not any(CONTROL.search(ln.text) for ln in lines), lines
    text = "\n".join(ln.text for ln in lines)
    assert display(f"{HOSTILE['ns']}/{HOSTILE['pod']}/{HOSTILE['ctr']}") in text, text
    assert display("ex\x1b[2Jample.com/gpu") + " " + display("id\x07\u202e1") in text, text
    bad = Pipeline("local").add_live(reports[1], pr.LiveView("/x", error="\x1b]0;pwned\x07 gone", why="no socket"))
    assert not any(CONTROL.search(ln.text) for ln in live_lines(bad, 78))


# --- the pane, with Pilot ------------------------------------------------------------------------------------


async def test_the_pane_shows_a_held_disagreement_at_80x24(trade):
    """`w` on trade-xeon-96 with kubelet's in-memory state differing on risk-calc-2/risk: the one line is on the screen at
    80x24 (under the grid), and the pane's text holds the three labelled sets."""
    app = FrozenApp({"trade-xeon-96": trade[1]})
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.views["trade-xeon-96"].snap is not None:
                break
        await pilot.press("w")
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, FitScreen)
        shown = screen_lines(app)
        assert any("▲ kubelet's live view: " in ln and SAID_SHORT in ln for ln in shown), \
            "\n".join(shown)
        text = str(app.screen.query_one("#fit-text").render()).splitlines()
        risk = "\n".join(text[text.index("▲ trading/risk-calc-2/risk"):][:6])
        for label, cpus in (("PodResources", "24-27,72-74,76"), ("checkpoint", "24-27,72-75"), ("cgroup", "24-27,72-75")):
            assert re.search(rf"^    (.*  )?{label} +{cpus}\b", risk, re.M), (label, risk)
        # the typed N keeps the focus; the page keys bring the details onto the screen, as the footer says
        assert re.search(r"\bMore\b", shown[-1]), shown[-1]
        for _ in range(8):
            if any("held two rounds" in ln for ln in screen_lines(app)):
                break
            await pilot.press("pagedown")
            await pilot.pause()
        shown = screen_lines(app)
        assert any(re.search(r"PodResources +24-27,72-74,76", ln) for ln in shown), "\n".join(shown)
        assert app.screen.focused is app.screen.query_one("#fit-n")
        await pilot.press("escape")
        assert not isinstance(app.screen, FitScreen)




# --- the demo ------------------------------------------------------------------------------------------------


async def test_the_demo_has_a_kubelet_whose_memory_differs_on_one_container(tmp_path):
    """`pinscope demo`: trade-xeon-96's kubelet holds other CPUs for risk-calc-2/risk than its checkpoint and the
    kernel (demo.py KUBELET_MEMORY): PODRESOURCES_DISAGREES once held, and the pane's lines; infer-epyc-64's
    kubelet lists its GPUs with the NUMA nodes of the spec; batch-16 (policy none) hands out no CPUs."""
    from pinscope.collectors.sim.demo import KUBELET_MEMORY, DemoCluster

    cl = DemoCluster(specs=[TRADE, INFER, spec("batch-16")], root=str(tmp_path))
    try:
        got = {}
        for t in cl.targets():
            col = NodeCollector(t.name, Options(), transport=t.transport, name=t.name)
            await col.connect()
            try:
                got[t.name.split("/")[1]] = [await col.tick(FULL) for _ in range(2)][-1]
            finally:
                await col.close()
    finally:
        cl.close()
    memory = KUBELET_MEMORY["trade-xeon-96"][("risk-calc-2", "risk")]
    trade = got["trade-xeon-96"]
    f = [x for x in trade.findings if x.code == "PODRESOURCES_DISAGREES"]
    assert len(f) == 1 and "trading/risk-calc-2/risk" in f[0].message and memory in f[0].message, f
    rows = texts(live_lines(trade, 100))
    assert f"    PodResources {memory}  checkpoint 24-27,72-75  cgroup 24-27,72-75" in rows, rows
    infer = texts(live_lines(got["infer-epyc-64"], 100))
    for key, (res, dev, numa) in GPUS.items():
        assert f"    NUMA {numa}  {res} {dev}" in infer, infer
    assert live_summary(got["infer-epyc-64"], 200).text.endswith("on all 4 containers all three name")
    assert "  kubelet lists no CPUs it may hand out exclusively (GetAllocatableResources)" in texts(
        live_lines(got["batch-16"], 100))


async def test_agreeing_counts_are_said_in_english(tmp_path):
    """Two containers agreeing read "both containers", one "the 1 container", never "all 2 containers"."""
    import dataclasses

    (r,) = await rounds(tmp_path, INFER, agreeing, 1, allocatable=range(2, 64))
    said = {}
    for n in (1, 2, 4):
        live = dataclasses.replace(r.live, now=dataclasses.replace(r.live.now, named=n, disagreements=[]))
        rn = dataclasses.replace(r, live=live)
        said[n] = (live_summary(rn, 200).text, live_summary(rn, 64).text)
    assert said[2][0].endswith("the kernel on both containers all three name") and said[2][1].endswith("): agrees on both containers")
    assert said[1][1].endswith("): agrees on the 1 container") and said[4][1].endswith("): agrees on all 4 containers")
    assert not any("all 2 " in s or "all 1 " in s for pair in said.values() for s in pair), said
