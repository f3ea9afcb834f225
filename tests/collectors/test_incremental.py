"""The incremental assembly equals the one-shot assembly, tick after tick.

A simulated node is read through the real probe at the live cadence (deeper frames carried between
ticks) while its counters move, a container's cpuset is changed by hand and a container goes away. Each
tick's View is assembled twice: by the long-lived Assembler (stages keep what they built and re-run on
change) and by a fresh one (everything from scratch). The two snapshots must be equal.
"""
import asyncio
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
def test_incremental_equals_one_shot(tmp_path, shape):
    sim = SimNode(SHAPES[shape](), tmp_path).write()

    async def go():
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

    asyncio.run(go())


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
