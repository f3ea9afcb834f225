"""Test helpers: environment requirements, and a real kubelet-shaped pod on this machine's kernel.

`need(cond, why)`: skips on a laptop, FAILS when CI=true (an environment-dependent test must not
silently skip in CI).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from collectors.parse.kubelet import checksum_v2

CI = os.environ.get("CI") == "true"


def need(cond: bool, why: str) -> None:
    if cond:
        return
    if CI:
        pytest.fail(f"required in CI: {why}")
    pytest.skip(why)


def stop(proc: subprocess.Popen, timeout: float = 10.0, sig: int = signal.SIGKILL) -> None:
    """Stop `proc` and everything it started: its process group when it leads one (start_new_session),
    else it and its descendants; then wait, at most `timeout` s (raises TimeoutError naming the pid)."""
    if proc.poll() is None:
        try:
            victims = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            victims = []
        try:
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for pid in victims:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise TimeoutError(f"pid {proc.pid} still running {timeout:g} s after signal {sig}") from err


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parent.parent)


CPUSET = Path("/sys/fs/cgroup/cpuset")
CPUCG = Path("/sys/fs/cgroup/cpu")
KUBELET = Path("/var/lib/kubelet")


def kubelet_running() -> bool:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == "kubelet":
                    return True
            except OSError:
                pass
    return False


class RealPod:
    """A Guaranteed pod on the real kernel: /sys/fs/cgroup/cpuset/kubepods/pod<uid>/<id>, a busy
    process pinned in it, and the kubelet files that describe it. Everything it made is removed after."""

    def __init__(self, cpus: str = "1", reserved: str = "0", quota_us: int | None = None) -> None:
        self.uid = str(uuid.uuid4())
        self.cid = uuid.uuid4().hex + uuid.uuid4().hex
        self.cpus, self.reserved, self.quota_us = cpus, reserved, quota_us
        self.procs: list[subprocess.Popen] = []
        self.made: list[Path] = []
        self.files: list[Path] = []

    @staticmethod
    def available() -> tuple[bool, str]:
        if os.geteuid() != 0:
            return False, "needs root"
        if not (CPUSET / "cpuset.cpus").exists():
            return False, "no cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset"
        if kubelet_running() or (KUBELET / "cpu_manager_state").exists():
            return False, "a kubelet runs (or ran) here: not touching its files"
        if (os.cpu_count() or 1) < 2:
            return False, "needs 2 CPUs"
        return True, ""

    def _mk(self, base: Path, rel: str) -> Path:
        p = base / rel
        cur = base
        for part in Path(rel).parts:
            cur = cur / part
            if not cur.exists():
                cur.mkdir()
                self.made.append(cur)
        return p

    def _write(self, p: Path, text: str) -> None:
        missing = [d for d in reversed(p.parents) if not d.exists()]
        p.parent.mkdir(parents=True, exist_ok=True)
        self.made.extend(missing)
        if not p.exists():
            self.files.append(p)
        p.write_text(text)

    def __enter__(self) -> "RealPod":
        online = (Path("/sys/devices/system/cpu/online").read_text().strip())
        mems = (CPUSET / "cpuset.mems").read_text().strip()
        for rel, cpus in (("kubepods", online), (f"kubepods/pod{self.uid}", online),
                          (f"kubepods/pod{self.uid}/{self.cid}", self.cpus)):
            d = self._mk(CPUSET, rel)
            (d / "cpuset.cpus").write_text(cpus)
            (d / "cpuset.mems").write_text(mems)
        self.cg = CPUSET / f"kubepods/pod{self.uid}/{self.cid}"
        self.cpu_cg = None
        if CPUCG.exists():
            self.cpu_cg = self._mk(CPUCG, f"kubepods/pod{self.uid}/{self.cid}")
            if self.quota_us:
                (self.cpu_cg / "cpu.cfs_period_us").write_text("100000")
                (self.cpu_cg / "cpu.cfs_quota_us").write_text(str(self.quota_us))
        self.busy = self.spawn_busy(in_pod=True)
        st = {"policyName": "static", "defaultCpuSet": self.reserved, "entries": {self.uid: {"busy": self.cpus}}}
        st["checksum"] = checksum_v2("static", st["defaultCpuSet"], st["entries"])
        self._write(KUBELET / "cpu_manager_state", json.dumps(st))
        self._write(KUBELET / "config.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                    f"cpuManagerPolicy: static\nreservedSystemCPUs: \"{self.reserved}\"\ncgroupDriver: cgroupfs\n")
        self._write(Path(f"/var/log/pods/e2e_busy-pod_{self.uid}/busy/0.log"), "")
        self._write(Path(f"/var/log/containers/busy-pod_e2e_busy-{self.cid}.log"), "")
        return self

    def spawn_busy(self, in_pod: bool = False, cpu: int | None = None) -> subprocess.Popen:
        p = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        self.procs.append(p)
        if in_pod:
            (self.cg / "cgroup.procs").write_text(str(p.pid))
            if self.cpu_cg is not None:
                (self.cpu_cg / "cgroup.procs").write_text(str(p.pid))
        if cpu is not None:
            subprocess.run(["taskset", "-pc", str(cpu), str(p.pid)], check=True, capture_output=True)
        return p

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            stop(p)
        time.sleep(0.1)
        for f in reversed(self.files):
            f.unlink(missing_ok=True)
        for d in reversed(self.made):
            for _ in range(20):
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.05)


def read_sim(spec, root, samples: int = 2):
    """Write `spec` under `root`, read it through the real probe `samples` times (1 or 2), the simulated
    counters advanced one node-second in between. -> the last NodeReport (rates over the two samples)."""
    import asyncio

    from collectors.collect import NodeCollector, Options
    from collectors.sim.node import SimNode
    from collectors.transport.local import LocalTransport

    sim = SimNode(spec, root).write()

    async def go():
        col = NodeCollector("local", Options(root=str(root)), LocalTransport(str(root)))
        await col.connect()
        try:
            a = await col.tick()
            if samples == 1:
                return a
            sim.tick(1.0)
            return await col.tick()
        finally:
            await col.close()

    return asyncio.run(go())
