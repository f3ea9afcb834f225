"""Issue 25: the probe sends news, not the world. A cgroup file or kubelet state file the probe sent whole and
that did not change is said unchanged (a U line) and the client takes its own copy (frames.Held). These
tests hold the two sides to one rule: what the client assembles from a frame with U lines is what it would
assemble from the same files sent whole, and nothing it holds can stand in for a file the node no longer
gives, or for a newer copy it did not see.
"""
import os
import time

from pinscope.collectors.collect import NodeCollector, Options, live_depth
from pinscope.collectors.frames import HOLD_FRAMES, FrameStore, Held, parse_frame
from pinscope.collectors.jsonout import to_json
from pinscope.collectors.record import Recorder, open_recording, restore
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport
from nodes import dual_socket_intel

STATE = "/var/lib/kubelet/cpu_manager_state"


def _what(snap) -> dict:
    """What a snapshot says of the node that a U line could change: cpusets, owners, roles, the state."""
    o = to_json(snap, None, ())
    return {"pods": o["pods"], "cpus": o["cpus"], "kubelet": o["kubelet"], "errors": o["errors"]}


async def _frames(root, reqs, edit=None):
    """The frames of one long-lived probe on `root` for `reqs` (edit(i) before request i)."""
    tr = LocalTransport(str(root))
    await tr.connect(10)
    out = []
    try:
        for i, req in enumerate(reqs):
            if edit:
                edit(i)
            out.append(await tr.request(req, 15))
    finally:
        await tr.close()
    return out


async def test_unchanged_files_are_said_not_sent_and_the_report_is_what_whole_files_give(tmp_path):
    sim = SimNode(dual_socket_intel(), tmp_path).write()
    leaf = sorted((tmp_path / "sys/fs/cgroup").rglob("cpuset.cpus.effective"))[-1]
    key = "/" + str(leaf.relative_to(tmp_path))

    def edit(i):
        sim.tick(1.0)
        if i == 3:
            leaf.write_text("0-1\n")  # a cpuset rewritten in place

    reqs = ["sgn"] + [live_depth(i) for i in range(1, 7)] + ["gcTai"]
    frames = await _frames(tmp_path, reqs, edit)
    assert not frames[0].unchanged  # the first frame: everything whole
    g = frames[1]
    assert STATE in g.unchanged and STATE not in g.files  # the state file: same inode, same bytes
    assert key in g.unchanged and key not in g.files
    assert key in frames[3].files and frames[3].files[key] == "0-1\n"  # changed: sent whole
    assert key in frames[4].unchanged  # and from then on unchanged again
    assert all(len(f.unchanged) >= 9 for f in frames[1:])  # 9 cgroups' cpusets, the state file
    # what the client holds is what the node had: each tick against a new probe's whole frame of the same
    # moment (the tree no longer moves)
    store = FrameStore()
    from pinscope.collectors.assemble import Assembler
    kept = Assembler("n")
    for fr in frames:
        snap = kept.build(store.add(fr))
    whole = (await _frames(tmp_path, ["sgcTain"]))[0]
    assert not whole.unchanged
    assert _what(snap) == _what(Assembler("n").build(FrameStore().add(whole)))
    assert snap.state is not None and snap.pods


async def test_a_file_refused_then_back_with_the_same_bytes_is_sent_whole(tmp_path):
    """The probe forgets what it sent of a file it then said refused (N), unreadable (X) or cut (T): the
    next read sends it whole, so the client (which forgot it too) never needs a copy it dropped."""
    SimNode(dual_socket_intel(), tmp_path).write()
    leaf = sorted((tmp_path / "sys/fs/cgroup").rglob("cpuset.cpus.effective"))[-1]
    key = "/" + str(leaf.relative_to(tmp_path))
    text = leaf.read_text()

    def edit(i):
        if i == 2:
            leaf.unlink()
            os.mkfifo(leaf)
        if i == 3:
            leaf.unlink()
            leaf.write_text(text)

    frames = await _frames(tmp_path, ["sgn", "g", "g", "g", "g"], edit)
    assert key in frames[1].unchanged
    assert frames[2].refused.get(key) == "fifo" and key not in frames[2].unchanged
    assert frames[3].files.get(key) == text and key not in frames[3].unchanged
    assert key in frames[4].unchanged
    store = FrameStore()
    views = [store.add(f) for f in frames]
    assert key not in views[2].files and views[3].files[key] == text == views[4].files[key]


async def test_a_static_frame_and_every_64th_frame_send_everything_whole(tmp_path):
    """So a recording can be replayed from a static frame, or from the 64 frames before any frame."""
    SimNode(dual_socket_intel(), tmp_path).write()
    frames = await _frames(tmp_path, ["sgn"] + ["g"] * (HOLD_FRAMES + 4) + ["sg"])
    assert frames[1].unchanged and not frames[-1].unchanged and STATE in frames[-1].files
    # every U points back at most HOLD_FRAMES frames to where its file was last sent whole
    last_sent: dict[str, int] = {}
    ages = []
    for i, fr in enumerate(frames):
        for p in fr.unchanged:
            assert p in last_sent and i - last_sent[p] <= HOLD_FRAMES, (p, i, last_sent.get(p))
            ages.append(i - last_sent[p])
        for p in fr.files:
            last_sent[p] = i
    assert max(ages) > HOLD_FRAMES // 2  # the tree does not move: files are said unchanged for long


def test_a_frame_the_client_did_not_see_leaves_its_unchanged_files_out_and_asks_for_a_static_frame():
    """A U line after a gap in the frames' numbers may stand for a newer copy the client never saw: the file
    is left out (said so), never served old, and the next request asks for a static frame."""
    cg = "/sys/fs/cgroup/kubepods.slice/x.scope"
    f1 = parse_frame(f"B1 sg\nF{cg}/cpuset.cpus.effective\nL0-3\nIprobe-protocol 3\nZ1\n".encode())
    f2 = parse_frame(f"B2 g\nC{cg}\nUcpuset.cpus.effective\nZ2\n".encode())
    f4 = parse_frame(f"B4 g\nC{cg}\nUcpuset.cpus.effective\nZ4\n".encode())
    held = Held()
    held.take(f1)
    assert held.take(f2).files[f"{cg}/cpuset.cpus.effective"] == "0-3\n"
    lost = held.take(f4)  # frame 3 was not seen
    assert f"{cg}/cpuset.cpus.effective" not in lost.files and lost.lost == (f"{cg}/cpuset.cpus.effective",)
    assert any("holds no copy" in w for w in lost.warnings)

    col = NodeCollector("local", Options(root="/nonexistent"), transport=object())
    col.pipeline.feed(f1)
    col.pipeline.feed(f2)
    assert not col._request("g").startswith("s")
    report = col.pipeline.feed(f4)
    assert any("holds no copy" in p.message for p in report.problems)
    assert col._request("g").startswith("s")  # everything whole next
    # a U with no copy at all (a new probe's numbers, or a file never sent) is the same
    assert Held().take(parse_frame(f"B1 g\nC{cg}\nUcpu.stat\nZ1\n".encode())).lost == (f"{cg}/cpu.stat",)


async def test_a_recording_restores_from_the_middle_with_every_unchanged_file_resolved(tmp_path):
    """record.restore feeds the static frame and the last 30 frames: the 64 before those are held (not
    assembled), so the cpusets and the state file the probe said unchanged are all there."""
    root = tmp_path / "node"
    sim = SimNode(dual_socket_intel(), root).write()
    path = str(tmp_path / "rec.gz")
    rec = Recorder(path)

    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)), name="n1")
    col.recorder = rec
    await col.connect()
    try:
        for i in range(130):
            sim.tick(1.0)
            report = await col.tick(live_depth(i))
    finally:
        await col.close()
    live = report

    rec.close()
    recording = open_recording(path)
    _, report, _ = restore(recording, "n1", time.time() + 1)
    assert report is not None and not any("holds no copy" in p.message for p in report.problems)
    assert _what(report.snapshot) == _what(live.snapshot)
    assert report.snapshot.state is not None and live.snapshot.state is not None


async def test_without_psi_the_detail_tick_asks_for_no_cpu_pressure_file(tmp_path):
    """A node without PSI (CONFIG_PSI unset or psi=0: no cpu.pressure in any cgroup): the cgroup-detail tick
    does not try to open a cpu.pressure per cgroup (120 misses a detail tick on a 120-container node)."""
    SimNode(dual_socket_intel(), tmp_path).write().tick(1.0)
    with_psi = (await _frames(tmp_path, ["sgn", "gc"]))[1]
    assert any(p.endswith("/cpu.pressure") for p in with_psi.files)
    for f in (tmp_path / "sys/fs/cgroup").rglob("cpu.pressure"):
        f.unlink()
    fr = (await _frames(tmp_path, ["sgn", "gc", "gc"]))[2]
    asked = [p for p in [*fr.files, *fr.unreadable, *fr.unchanged] if p.endswith("/cpu.pressure")]
    assert asked == [] and any(p.endswith("/cpu.max") for p in [*fr.files, *fr.unchanged])


async def test_a_file_read_twice_in_a_frame_is_its_new_text_not_the_held_one(tmp_path):
    """A focused container's detail tick reads cpuset.cpus, cpu.max (...) twice: for every leaf (H) and for
    the focused one (J). Changed, the first read sends it whole and the second says it unchanged: the frame's
    own text stands, never the copy held from before (review of this change: the old value was shown)."""
    import re

    SimNode(dual_socket_intel(), tmp_path).write().tick(1.0)
    cpu_max = next(p for p in sorted((tmp_path / "sys/fs/cgroup").rglob("cpu.max"))
                   if re.search(r"[0-9a-f]{64}", p.parent.name))
    cid = re.search(r"[0-9a-f]{64}", cpu_max.parent.name).group(0)
    key = "/" + str(cpu_max.relative_to(tmp_path))

    def edit(i):
        if i == 1:
            cpu_max.write_text("50000 100000\n")

    frames = await _frames(tmp_path, ["sgcn", f"gc {cid}", f"gc {cid}"], edit)
    assert frames[1].files.get(key) == "50000 100000\n" and key in frames[1].unchanged  # sent, then "unchanged"
    store = FrameStore()
    views = [store.add(f) for f in frames]
    assert views[1].files[key] == "50000 100000\n" and not views[1].tick.lost
    assert views[2].files[key] == "50000 100000\n"


def test_after_a_frame_not_seen_nothing_held_stands_for_a_file():
    """Frames 1, 3, 4: frame 2 (not seen) may have sent a newer copy; frame 3 says nothing of the file and
    frame 4 says it unchanged: it is left out (lost), not resolved to frame 1's copy."""
    cg = "/sys/fs/cgroup/kubepods.slice/x.scope"
    held = Held()
    held.take(parse_frame(f"B1 sg\nF{cg}/cpu.max\nLmax 100000\nZ1\n".encode()))
    held.take(parse_frame(b"B3 g\nF/proc/uptime\nL1 2\nZ3\n"))
    out = held.take(parse_frame(f"B4 g\nC{cg}\nUcpu.max\nZ4\n".encode()))
    assert f"{cg}/cpu.max" not in out.files and out.lost == (f"{cg}/cpu.max",)
