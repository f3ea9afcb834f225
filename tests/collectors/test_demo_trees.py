"""Where `pinscope demo` writes its simulated nodes: in memory (/dev/shm) when it can.

Each demo tick writes its nodes' files and quitting removes ~6,000 of them. On this VM's disk with both
cores busy, `q` took 3.1-4.2 s to give the terminal back, most of it in the trees' removal on the UI thread
(py-spy: DemoCluster.close -> shutil.rmtree); from /dev/shm it took ~0.5 s.
"""
from __future__ import annotations

import os
import tempfile

from pinscope.collectors.sim import demo
from pinscope.collectors.sim.demo import DemoCluster


def _shm_usable() -> bool:
    try:
        st = os.statvfs(demo.SHM)
    except OSError:
        return False
    return os.access(demo.SHM, os.W_OK | os.X_OK) and st.f_bavail * st.f_frsize >= demo.SHM_FREE


def test_the_demo_writes_its_trees_in_memory_and_removes_them(monkeypatch):
    """In /dev/shm when it is there with room (this VM: a 24 GB tmpfs); else where tempfile says."""
    monkeypatch.delenv("TMPDIR", raising=False)
    cl = DemoCluster(specs=demo.demo_specs()[2:])  # batch-16: the smallest
    try:
        assert str(cl.dir.parent) == (demo.SHM if _shm_usable() else tempfile.gettempdir())
        assert (cl.sims[0].root / "proc" / "stat").is_file()
    finally:
        cl.close()
    assert not cl.dir.exists()


def test_tmpdir_wins(monkeypatch, tmp_path):
    """A user who set TMPDIR chose where temporary files go: the demo's go there."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert demo.tree_dir() is None
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR once: read it again
    cl = DemoCluster(specs=demo.demo_specs()[2:])
    try:
        assert cl.dir.parent == tmp_path
    finally:
        cl.close()


def test_no_room_or_no_shm_falls_back(monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(demo, "SHM", "/nonexistent-shm")
    assert demo.tree_dir() is None
    monkeypatch.setattr(demo, "SHM", "/")
    monkeypatch.setattr(demo, "SHM_FREE", 1 << 62)  # more than any disk has free
    assert demo.tree_dir() is None
