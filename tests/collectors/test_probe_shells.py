"""The probe under the shells and awks of real nodes: dash + mawk (Debian), busybox sh + busybox awk
(minimal and embedded nodes), bash. Same frames, interactively (request, frame, request, frame), and
the same snapshot."""
import asyncio
import os
import shutil


from collectors.collect import NodeCollector, Options
from collectors.jsonout import to_json
from collectors.sim.node import SimNode
from collectors.transport.local import LocalTransport
from helpers import need
from nodes import dual_socket_intel


def toolbox(tmp_path, kind: str) -> str:
    """A PATH directory whose sh, awk and tr are the given implementation."""
    d = tmp_path / f"bin-{kind}"
    d.mkdir()
    if kind == "busybox":
        bb = shutil.which("busybox")
        need(bb is not None, "busybox not installed (apt-get install busybox)")
        for tool in ("sh", "awk", "tr"):
            os.symlink(bb, d / tool)
    else:
        sh = {"dash": "dash", "bash": "bash"}[kind]
        need(shutil.which(sh) is not None, f"{sh} not installed")
        os.symlink(shutil.which(sh), d / "sh")
    return str(d)


def snap_with(path_dir: str, root: str) -> dict:
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{path_dir}:{old}"
    try:
        async def go():
            col = NodeCollector("local", Options(root=root), LocalTransport(root))
            await col.connect()
            try:
                await col.tick("gcTai")
                r = await col.tick("g")  # a second, interactive request: no pipe buffering stalls it
                o = to_json(r.snapshot)
                # the jitter counters' deeper requests: every pod task's schedstat ("w"), the container in
                # focus (its tasks with schedstat), the CPU in focus (schedstat only for its tasks)
                col.focus = next(c.id for _, c in r.snapshot.containers() if c.assigned and c.tasks)
                f = (await col.tick("g")).snapshot
                col.focus, col.focus_cpu = None, 1
                c = (await col.tick("g")).snapshot
                col.focus_cpu = None
                w = (await col.tick("gtw")).snapshot
                o["jitter"] = {
                    "w": sorted(t.tid for _, x in w.containers() for t in x.tasks if t.runq is not None),
                    "focus": sorted(t.tid for _, x in f.containers() for t in x.tasks if t.runq is not None),
                    "cpu": sorted((t.tid, t.last_cpu) for t in c.all_tasks if t.runq is not None),
                    "softirqs": sorted(f.noise.softirqs), "ipis": sorted(c.noise.ipis)}
                return o
            finally:
                await col.close()
        return asyncio.run(asyncio.wait_for(go(), 30))
    finally:
        os.environ["PATH"] = old


def test_same_snapshot_under_dash_busybox_and_bash(tmp_path):
    root = tmp_path / "node"
    SimNode(dual_socket_intel(), root).write()
    got = {k: snap_with(toolbox(tmp_path, k), str(root)) for k in ("dash", "busybox", "bash")}
    assert got["dash"] == got["busybox"] == got["bash"]
    assert len(got["busybox"]["cpus"]) == 48 and got["busybox"]["errors"] == []
    assert any(c["role"] == "exclusive" for c in got["busybox"]["cpus"])
    j = got["busybox"]["jitter"]
    assert j["w"] and j["focus"] and set(j["focus"]) < set(j["w"])
    assert j["cpu"] and {cpu for _, cpu in j["cpu"]} == {1}
    assert "NET_RX" in j["softirqs"] and j["ipis"] == ["LOC", "RES"]
