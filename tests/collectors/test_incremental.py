"""The incremental assembly equals the one-shot assembly, tick after tick.

A simulated node is read through the real probe at the live cadence (deeper frames carried between
ticks) while its counters move, a container's cpuset is changed by hand and a container goes away. Each
tick's View is assembled twice: by the long-lived Assembler (stages keep what they built and re-run on
change) and by a fresh one (everything from scratch). The two snapshots must be equal.
"""
import shutil
from pathlib import Path

import pytest

from pinscope.collectors.assemble import Assembler
from pinscope.collectors.collect import live_depth
from pinscope.collectors.frames import FrameStore
from pinscope.collectors.sim.node import SimNode
from pinscope.collectors.transport.local import LocalTransport
from nodes import SHAPES


def _edit(root: Path, step: int) -> None:
    """Changes a live node sees: a cpuset rewritten (tick 7), a container's cgroup gone (tick 13)."""
    cg = root / "sys/fs/cgroup"
    if step == 7:
        for f in sorted(cg.rglob("cpuset.cpus.effective"))[-1:]:
            f.write_text("0-1\n")
    if step == 13:
        leaves = sorted(p.parent for p in cg.rglob("cpu.stat") if "pod" in p.parent.parent.name)
        if leaves:
            shutil.rmtree(leaves[-1], ignore_errors=True)


@pytest.mark.parametrize("shape", ["dual_socket_intel", "amd_multi_numa_v1", "broken"])
async def test_incremental_equals_one_shot(tmp_path, shape):
    sim = SimNode(SHAPES[shape](), tmp_path).write()

    tr = LocalTransport(str(tmp_path))
    await tr.connect(10)
    store, kept = FrameStore(), Assembler("n")
    try:
        for i in range(24):
            sim.tick(1.0)
            _edit(tmp_path, i)
            req = ("sn" if i == 0 else "") + live_depth(i) + ("n" if i % 6 == 0 and i else "")
            view = store.add(await tr.request(req, 15))
            assert kept.build(view) == Assembler("n").build(view), f"tick {i} ({req})"
    finally:
        await tr.close()



def test_a_grid_file_the_tick_no_longer_gives_is_not_served_from_a_carried_frame():
    """Issue 22 item 5: carried (deeper) frames are merged under the tick; a file the tick reads itself
    and lost (gone, refused, unreadable) must not come back from them."""
    from pinscope.collectors.frames import FrameStore, parse_frame

    cg = "/sys/fs/cgroup/kubepods.slice/x.scope"
    full = parse_frame(("B1 sgcTai\nF/var/lib/kubelet/cpu_manager_state\nL{}\nF/proc/stat\nLcpu0 1 2 3\n"
                        f"F{cg}/cpu.stat\nLusage_usec 1\nF{cg}/cpu.max\nLmax 100000\nZ1\n").encode())
    gone = parse_frame(("B2 g\nNfifo /var/lib/kubelet/cpu_manager_state\nF/proc/stat\nLcpu0 2 3 4\nZ2\n").encode())
    store = FrameStore()
    store.add(full)
    view = store.add(gone)
    assert view.carry == (full,)
    assert "/var/lib/kubelet/cpu_manager_state" not in view.files  # refused now: not the old text
    assert f"{cg}/cpu.stat" not in view.files  # the grid reads it every tick: lost, not carried
    assert view.files[f"{cg}/cpu.max"] == "max 100000\n"  # cgroup detail: carried until the next "c"
    assert view.files["/proc/stat"] == "cpu0 2 3 4\n"


async def test_an_unchanged_cgroup_file_is_not_parsed_again_and_a_changed_one_is(tmp_path, monkeypatch):
    """Issue 25: derived objects are keyed by the raw bytes they came from. Through the real probe and
    the Pipeline: a tick whose cgroup files are byte-identical parses none of them again and reuses the
    pods and the containers' CgroupFiles; a container whose cpuset was rewritten is re-parsed (that one
    only, and its pod assembled again); moved counters re-read only the counters (the pods are kept).
    Parser calls are counted on the real functions, pods assembled by the stage's own count."""
    from pinscope.collectors.assemble import pods as pods_stage
    from pinscope.collectors.pipeline import Pipeline

    sim = SimNode(SHAPES["dual_socket_intel"](), tmp_path).write()
    full: list[str] = []
    counters: list[object] = []
    real_parse, real_refresh = pods_stage.parse_cgroup_dir, pods_stage.refresh_counters
    monkeypatch.setattr(pods_stage, "parse_cgroup_dir",
                        lambda files, path, *a: full.append(path) or real_parse(files, path, *a))
    monkeypatch.setattr(pods_stage, "refresh_counters",
                        lambda cg, *a: counters.append(cg) or real_refresh(cg, *a))

    def cgroups(report):
        return {c.cgroup_path: c.cgroup for _, c in report.snapshot.containers() if c.cgroup is not None}

    tr = LocalTransport(str(tmp_path))
    await tr.connect(10)
    pl = Pipeline("n")
    try:
        stage = pl.assembler.pods
        first = pl.feed(await tr.request("sng", 15))
        assert len(full) == len(cgroups(first)) > 1 and not counters
        n_pods = stage.pods_built
        assert n_pods == len([p for p in first.snapshot.pods if p.cgroup_path]) > 1
        full.clear()
        again = pl.feed(await tr.request("g", 15))  # nothing moved on the node
        assert full == [] and counters == []
        assert all(again_cg is cgroups(first)[p] for p, again_cg in cgroups(again).items())
        assert stage.pods_built == n_pods  # none assembled again: the same pods
        assert all(a is b for a, b in zip(again.snapshot.pods, first.snapshot.pods))
        target = sorted(cgroups(again))[0]
        (tmp_path / target.lstrip("/") / "cpuset.cpus.effective").write_text("0-1\n")
        built = stage.pods_built
        edited = pl.feed(await tr.request("g", 15))
        assert full == [target] and counters == []
        assert cgroups(edited)[target].cpus_effective != cgroups(again)[target].cpus_effective
        assert stage.pods_built == built + 1  # that container's pod only
        full.clear()
        sim.tick(1.0)  # every container's cpu.stat moves
        moved = pl.feed(await tr.request("g", 15))
        assert full == [] and len(counters) == len(cgroups(edited))
        assert stage.pods_built == built + 1  # pods kept, their counters re-read
        assert all(moved_cg is not cgroups(edited)[p] for p, moved_cg in cgroups(moved).items())
        # the live cadence: a cgroup-detail tick reads the pods' own cgroups, the tick after does not; a
        # task scan's tick, and the tick after (its frame then carried): the same pods, the same tasks.
        # main assembled every pod anew on each of these four ticks
        for req in ("gc", "gt"):  # their files read for the first time: the containers' shape is new
            pl.feed(await tr.request(req, 15))
        built = stage.pods_built
        for req in ("gc", "g", "gt", "g"):
            r = pl.feed(await tr.request(req, 15))
            assert stage.pods_built == built, req
            pod_level = [p.cgroup for p in r.snapshot.pods if p.cgroup_path]
            assert all(cg is not None for cg in pod_level) if req == "gc" else all(cg is None for cg in pod_level)
    finally:
        await tr.close()

