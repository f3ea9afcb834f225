"""Where `pinscope demo` writes its simulated nodes: in memory (/dev/shm) when it can.

Each demo tick writes its nodes' files and quitting removes ~6,000 of them. On this VM's disk with both
cores busy, `q` took 3.1-4.2 s to give the terminal back, most of it in the trees' removal on the UI thread
(py-spy: DemoCluster.close -> shutil.rmtree); from /dev/shm ~0.4 s (bench/bench_quit.py). A user trial with
TMPDIR set waited 3-5 s at each quit, and found 18 MB of /dev/shm kept by each demo ended with kill -9.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

from pinscope.collectors.sim import demo
from pinscope.collectors.sim.demo import DemoCluster


def _shm_usable() -> bool:
    try:
        st = os.statvfs(demo.SHM)
    except OSError:
        return False
    return os.access(demo.SHM, os.W_OK | os.X_OK) and st.f_bavail * st.f_frsize >= demo.SHM_FREE


def test_the_demo_writes_its_trees_in_memory_even_with_tmpdir_set_and_removes_them(monkeypatch, tmp_path):
    """In /dev/shm when it is there with room (this VM: a 24 GB tmpfs), TMPDIR or not; else where tempfile
    says (TMPDIR)."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR once: read it again
    cl = DemoCluster(specs=demo.demo_specs()[2:3])  # batch-16: the smallest
    try:
        assert str(cl.dir.parent) == (demo.SHM if _shm_usable() else str(tmp_path))
        assert cl.dir.name.startswith(f"pinscope-demo-{os.getpid()}-")
        assert (cl.sims[0].root / "proc" / "stat").is_file()
    finally:
        cl.close()
    assert not cl.dir.exists()


def test_no_room_or_no_shm_falls_back_to_tmpdir(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setattr(demo, "SHM", "/nonexistent-shm")
    assert demo.tree_dir() is None
    cl = DemoCluster(specs=demo.demo_specs()[2:3])
    try:
        assert cl.dir.parent == tmp_path
    finally:
        cl.close()
    monkeypatch.setattr(demo, "SHM", "/")
    monkeypatch.setattr(demo, "SHM_FREE", 1 << 62)  # more than any disk has free
    assert demo.tree_dir() is None


def test_the_trees_of_a_demo_killed_with_sigkill_are_swept_by_the_next(monkeypatch, tmp_path):
    """A dead demo's tree (its pid gone) is removed when the next demo starts; a live one's, another user's,
    a link or a stranger's directory are not."""
    monkeypatch.setattr(demo, "SHM", str(tmp_path))
    monkeypatch.setattr(demo, "SHM_FREE", 0)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmp_path / f"pinscope-demo-{dead.pid}-abc123"
    (gone / "trade-xeon-96" / "proc").mkdir(parents=True)
    (gone / "trade-xeon-96" / "proc" / "stat").write_text("cpu 1 2 3\n")
    alive = tmp_path / f"pinscope-demo-{os.getpid()}-def456"
    alive.mkdir()
    stranger = tmp_path / "pinscope-demo-notapid-x"
    stranger.mkdir()
    link = tmp_path / f"pinscope-demo-{dead.pid}-link"
    link.symlink_to(alive)
    others = tmp_path / f"pinscope-demo-{dead.pid}-other"  # another user's (as root: nobody's)
    others.mkdir()
    if os.geteuid() == 0:
        os.chown(others, 65534, 65534)
    assert sorted(demo.stale_trees(str(tmp_path))) == sorted([gone] + ([] if os.geteuid() == 0 else [others]))
    cl = DemoCluster(specs=demo.demo_specs()[2:3])
    try:
        for _ in range(100):  # swept beside the demo, in a thread
            if not gone.exists():
                break
            time.sleep(0.05)
        assert not gone.exists() and alive.is_dir() and stranger.is_dir() and link.is_symlink()
        assert others.is_dir() or os.geteuid() != 0
        assert cl.dir.parent == tmp_path
    finally:
        cl.close()
