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
                return to_json(r.snapshot)
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
