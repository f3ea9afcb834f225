"""On this machine's real kernel (issue 22 item 9, the probe's half): the probe keeps to the node's reserved
CPUs once the client knows them (one taskset over its processes), and never appears among the tasks it
reports. The --root holds kubelet's config only; its proc and sys are the kernel's own (symlinks), so the
probe reads them as a node's, with no per-frame check. A kubelet that runs on this machine (tests/cluster's,
beside this test in CI) is then the node's kubelet, and the probe reads the config its --config names: the
test's config is put there, as the probe finds it (before, it was put at the default path only, and with a
kubelet running the node read no config: CPU 0 "shared", nothing to keep to)."""
import asyncio
import os
import shutil

from pinscope.collectors.collect import NodeCollector, Options
from pinscope.collectors.frames import parse_frame
from pinscope.collectors.transport.local import LocalTransport
from helpers import need
from probe_procs import probe_procs


def _allowed(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("Cpus_allowed_list:")), None)
    except OSError:
        return None


async def kubelet_config(root) -> str:
    """The kubelet config file of the node at `root`, as the probe finds it: the --config of the kubelet that
    runs on this machine, or kubelet's default path when none runs."""
    col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
    await col.connect()
    try:
        await col.tick("g")
        info = parse_frame(col.transport.last_raw).info
    finally:
        await col.close()
    need("kubelet-config" in info, f"the kubelet here (pid {info.get('kubelet-pid')}) runs without --config: "
                                   "its reserved CPUs are its flags, not a config this test can give")
    return info["kubelet-config"]


async def test_the_probe_keeps_to_the_reserved_cpus_and_never_reports_itself(tmp_path):
    need(shutil.which("taskset") is not None, "taskset not installed (util-linux)")
    need(os.cpu_count() and os.cpu_count() >= 2, "needs 2 CPUs or more")
    root = tmp_path / "node"
    root.mkdir()
    os.symlink("/proc", root / "proc")
    os.symlink("/sys", root / "sys")
    async with asyncio.timeout(60):
        config = await kubelet_config(root)
    (root / config.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    (root / config.lstrip("/")).write_text('kind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: "0"\n')

    async with asyncio.timeout(60):
        col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
        await col.connect()
        try:
            reports, frames = [], []
            for _ in range(3):  # the first report gives the roles; the second request asks to keep to them
                reports.append(await col.tick("gTa"))
                frames.append(parse_frame(col.transport.last_raw))
            # the probe's processes as the kernel shows them (PSROOT in their environment), not as it says
            allowed = {p: _allowed(p) for p in probe_procs(root)}
        finally:
            await col.close()

    assert [r.role for r in reports[0].snapshot.roles if r.id == 0] == ["reserved"]
    assert frames[1].info.get("probe-confine") == "0"
    pids = set(allowed)
    assert len(pids) >= 3  # the shell, the loop and awk at least
    assert pids <= {int(p) for p in frames[-1].info["probe-pids"].split()}
    assert set(allowed.values()) == {"0"}, allowed
    for rep in reports:
        tasks = rep.snapshot.all_tasks
        assert tasks, "the every-task scan read no task"
        assert not [t for t in tasks if t.pid in pids], "the probe reported itself"
        assert not [p for p in rep.snapshot.problems if "taskset" in p.message or "unconfined" in p.message]
