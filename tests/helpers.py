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
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import pytest

from pinscope.collectors.parse.kubelet import checksum_v2

CI = os.environ.get("CI") == "true"


def need(cond: bool, why: str) -> None:
    if cond:
        return
    if CI:
        pytest.fail(f"required in CI: {why}")
    pytest.skip(why)


def shared_tmpdir(prefix: str) -> str:
    """A new directory (0755) that another user (nobody, a test's SSH user) may walk to; the caller removes
    it. In TMPDIR when every directory above it lets others through, else in /tmp: .ci/run gives its run a
    TMPDIR of its own, made by `mktemp -d` (0700, root's), which no other user may enter."""
    base = Path(tempfile.gettempdir()).resolve()
    if any(not p.stat().st_mode & 0o001 for p in (base, *base.parents)):
        base = Path("/tmp")
    d = tempfile.mkdtemp(prefix=prefix, dir=base)
    os.chmod(d, 0o755)
    return d


def stop(proc: subprocess.Popen, timeout: float = 10.0, sig: int = signal.SIGKILL) -> None:
    """Stop `proc` and everything it started: its process group when it leads one (start_new_session),
    else it and its descendants; then wait, at most `timeout` s (raises TimeoutError naming the pid)."""
    try:
        victims = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        victims = []
    if getattr(proc, "_pinscope_group", None) is None:
        try:
            proc._pinscope_group = os.getpgid(proc.pid) == proc.pid
        except ProcessLookupError:
            proc._pinscope_group = False
    if proc._pinscope_group:
        try:
            os.killpg(proc.pid, sig)  # also the group's members whose parent already exited
        except ProcessLookupError:
            pass
    if proc.poll() is None:
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
    return subprocess.run([sys.executable, "-m", "pinscope.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parent.parent)


CGROOT = Path("/sys/fs/cgroup")
CPUSET = CGROOT / "cpuset"  # cgroup v1
CPUCG = CGROOT / "cpu"
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


def cgroup_hierarchy() -> tuple[str | None, str]:
    """Which kubelet-shaped hierarchy this machine can hold: "v1" (a cpuset hierarchy at
    /sys/fs/cgroup/cpuset) or "v2" (the unified hierarchy at /sys/fs/cgroup, cpuset enabled for its
    children here if it is not yet). -> (kind or None, why not)."""
    if (CPUSET / "cpuset.cpus").exists():
        return "v1", ""
    ctrl = CGROOT / "cgroup.controllers"
    if not ctrl.exists():
        return None, "neither a cgroup v1 cpuset hierarchy nor cgroup v2 at /sys/fs/cgroup"
    if "cpuset" not in ctrl.read_text().split():
        return None, "cgroup v2 without the cpuset controller (bound to a v1 hierarchy, or not delegated)"
    try:
        if "cpuset" not in (CGROOT / "cgroup.subtree_control").read_text().split():
            (CGROOT / "cgroup.subtree_control").write_text("+cpuset")
    except OSError as err:
        return None, f"cannot enable cpuset for the children of the cgroup v2 root: {err}"
    return "v2", ""


class RealPod:
    """A Guaranteed pod on the real kernel, in whichever hierarchy the machine has: cgroup v1
    (/sys/fs/cgroup/cpuset/kubepods/pod<uid>/<id>, cpu.stat and quota in /sys/fs/cgroup/cpu/...) or v2
    (/sys/fs/cgroup/kubepods/pod<uid>/<id>, cpuset and cpu enabled down the subtree), cgroupfs driver;
    a busy process pinned in it, and the kubelet files that describe it. Everything it made is removed
    after."""

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
        kind, why = cgroup_hierarchy()
        if kind is None:
            return False, why
        if kubelet_running():
            return False, "a kubelet runs here: not touching its files"
        # another test run's pod on this machine (its marker is there): wait for it, it holds HOST_LOCK
        end = time.monotonic() + 120
        while (KUBELET / "cpu_manager_state").exists() and (KUBELET / MARKER).exists() and time.monotonic() < end:
            time.sleep(0.2)
        if (KUBELET / "cpu_manager_state").exists():
            return False, "a kubelet ran here (its cpu_manager_state is there): not touching its files"
        if (os.cpu_count() or 1) < 2:
            return False, "needs 2 CPUs"
        return True, ""

    @staticmethod
    def can_throttle() -> tuple[bool, str]:
        """A CFS quota needs the cpu controller: v1's cpu hierarchy, or cpu in v2's controllers."""
        kind, why = cgroup_hierarchy()
        if kind == "v1":
            return CPUCG.exists(), "no cgroup v1 cpu controller at /sys/fs/cgroup/cpu"
        if kind == "v2":
            return "cpu" in (CGROOT / "cgroup.controllers").read_text().split(), "cgroup v2 without the cpu controller"
        return False, why

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
        self.lock = host_lock()  # one real pod on this machine at a time, across test runs
        try:
            if (KUBELET / "cpu_manager_state").exists():
                raise RuntimeError("a cpu_manager_state appeared: a kubelet, or a test run without the lock")
            self._write(KUBELET / MARKER, f"pid {os.getpid()}\n")
            return self._enter()
        except BaseException:
            self.__exit__()
            raise

    def _enter(self) -> "RealPod":
        online = (Path("/sys/devices/system/cpu/online").read_text().strip())
        self.kind, why = cgroup_hierarchy()
        assert self.kind, why
        levels = (("kubepods", online), (f"kubepods/pod{self.uid}", online),
                  (f"kubepods/pod{self.uid}/{self.cid}", self.cpus))
        self.cpu_cg = None
        if self.kind == "v1":
            mems = (CPUSET / "cpuset.mems").read_text().strip()
            for rel, cpus in levels:
                d = self._mk(CPUSET, rel)
                (d / "cpuset.cpus").write_text(cpus)
                (d / "cpuset.mems").write_text(mems)
            self.cg = CPUSET / levels[-1][0]
            if CPUCG.exists():
                self.cpu_cg = self._mk(CPUCG, levels[-1][0])
                if self.quota_us:
                    (self.cpu_cg / "cpu.cfs_period_us").write_text("100000")
                    (self.cpu_cg / "cpu.cfs_quota_us").write_text(str(self.quota_us))
        else:
            mems = (CGROOT / "cpuset.mems.effective").read_text().strip()
            ctrls = ["cpuset"] + (["cpu"] if "cpu" in (CGROOT / "cgroup.controllers").read_text().split() else [])
            if "cpu" in ctrls and "cpu" not in (CGROOT / "cgroup.subtree_control").read_text().split():
                (CGROOT / "cgroup.subtree_control").write_text("+cpu")
            for i, (rel, cpus) in enumerate(levels):
                d = self._mk(CGROOT, rel)
                (d / "cpuset.cpus").write_text(cpus)
                (d / "cpuset.mems").write_text(mems)
                if i < len(levels) - 1:  # controllers for the level below; the leaf holds the processes
                    (d / "cgroup.subtree_control").write_text(" ".join("+" + c for c in ctrls))
            self.cg = CGROOT / levels[-1][0]
            if "cpu" in ctrls and self.quota_us:
                (self.cg / "cpu.max").write_text(f"{self.quota_us} 100000")
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
        self.procs, procs = [], self.procs
        for p in procs:
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
        lock, self.lock = getattr(self, "lock", None), None
        if lock is not None:
            os.close(lock)  # releases the flock


HOST_LOCK = "/run/pinscope-realpod.lock"
MARKER = ".pinscope-test-pod"  # beside the kubelet files a RealPod writes: another run's, not a kubelet's


def host_lock(timeout: float = 120) -> int:
    """An exclusive flock on HOST_LOCK (machine-wide), waited for at most `timeout` s; -> the fd."""
    import fcntl

    fd = os.open(HOST_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    end = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > end:
                os.close(fd)
                raise TimeoutError(f"{HOST_LOCK}: another test run held it for {timeout:g} s") from None
            time.sleep(0.2)


def read_sim(spec, root, samples: int = 2):
    """Write `spec` under `root`, read it through the real probe `samples` times (1 or 2), the simulated
    counters advanced one node-second in between. -> the last NodeReport (rates over the two samples)."""
    import asyncio

    return asyncio.run(read_sim_async(spec, root, samples))


async def read_sim_async(spec, root, samples: int = 2):
    """read_sim in an async test (its event loop runs: asyncio.run cannot start another)."""
    from pinscope.collectors.collect import NodeCollector, Options
    from pinscope.collectors.sim.node import SimNode
    from pinscope.collectors.transport.local import LocalTransport

    sim = SimNode(spec, root).write()
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
