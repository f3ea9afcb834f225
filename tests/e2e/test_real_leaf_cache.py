"""The real kernel's count the probe keeps its globs by (issue 25, tests/collectors/test_leaf_cache.py): a
cgroup v2 directory's cgroup.stat says nr_descendants first, counts every cgroup below it, and counts one
less the moment one is removed (the removed one is dying, counted apart). Here on real cgroupfs: a
kubepods tree made of real cgroups (mkdir) in a cgroup2 hierarchy this machine mounts, read by the real
probe through a --root whose sys/fs/cgroup leads there; a container restarted (its leaf removed, a new one
made: the count holds) and one added are both seen on the next grid tick."""
import asyncio
import os
import uuid
from pathlib import Path

from helpers import need
from pinscope.collectors.transport.local import LocalTransport


def _cgroup2_mount() -> Path | None:
    """A cgroup2 mount this test may make directories in: /sys/fs/cgroup on a unified boot, the hybrid
    layout's /sys/fs/cgroup/unified otherwise."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        f = line.split()
        if len(f) >= 3 and f[2] == "cgroup2" and f[1] in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
            return Path(f[1])
    return None


def _count(d: Path) -> int:
    first = (d / "cgroup.stat").read_text().splitlines()[0].split()
    assert first[0] == "nr_descendants", first
    return int(first[1])


async def test_real_kernel_counts_descendants_and_the_probe_sees_a_restarted_container(tmp_path):
    mnt = _cgroup2_mount()
    need(os.geteuid() == 0 and mnt is not None and os.access(mnt, os.W_OK),
         "root and a writable cgroup2 mount (/sys/fs/cgroup or /sys/fs/cgroup/unified)")
    base = mnt / f"pinscope-test-{uuid.uuid4().hex[:12]}"
    made: list[Path] = []

    def mkdir(p: Path) -> Path:
        p.mkdir()
        made.append(p)
        return p

    try:
        mkdir(base)
        kp = mkdir(base / "kubepods.slice")
        pods = [mkdir(kp / f"kubepods-pod{uuid.uuid4().hex[:8]}_1111_2222_3333_444455556666.slice") for _ in range(2)]
        leaves = [mkdir(p / f"cri-containerd-{uuid.uuid4().hex}{uuid.uuid4().hex}.scope") for p in pods]
        assert _count(kp) == 4  # the kernel counts every cgroup below: 2 pods, 2 leaves
        root = tmp_path / "node"
        (root / "sys/fs").mkdir(parents=True)
        (root / "sys/fs/cgroup").symlink_to(base)  # the probe's --root: its cgroupfs is this real one

        def seen(fr) -> set[str]:
            return {k.rsplit("/", 1)[0].rsplit("/", 1)[1] for k in (*fr.files, *fr.unchanged, *fr.unreadable)
                    if k.endswith("/cpu.stat") and k.endswith(".scope/cpu.stat")}

        tr = LocalTransport(str(root))
        await tr.connect(10)
        try:
            async def ask(req):
                return await asyncio.wait_for(tr.request(req, 15), 30)
            first = seen(await ask("sgn"))
            assert first == {leaves[0].name, leaves[1].name}
            assert seen(await ask("g")) == first  # kept: nothing changed
            # a container restarted: kubelet removes its cgroup, the runtime makes the new one
            leaves[0].rmdir()
            made.remove(leaves[0])
            new = mkdir(pods[0] / f"cri-containerd-{uuid.uuid4().hex}{uuid.uuid4().hex}.scope")
            assert _count(kp) == 4  # the count held
            assert seen(await ask("g")) == {new.name, leaves[1].name}
            added = mkdir(pods[1] / f"cri-containerd-{uuid.uuid4().hex}{uuid.uuid4().hex}.scope")
            assert _count(kp) == 5
            assert seen(await ask("g")) == {new.name, leaves[1].name, added.name}
            # the rule's blind spot, on the real kernel (so the globs were indeed kept): a cgroup the
            # globs do not list (a container's own sub-cgroup) gone while a leaf came
            sub = mkdir(added / "own-sub-cgroup")
            assert seen(await ask("g")) == {new.name, leaves[1].name, added.name}
            sub.rmdir()
            made.remove(sub)
            late = mkdir(pods[1] / f"cri-containerd-{uuid.uuid4().hex}{uuid.uuid4().hex}.scope")
            assert _count(kp) == 6
            assert late.name not in seen(await ask("g"))  # kept
            assert late.name in seen(await ask("gc"))  # every cgroup-detail tick globs anew
        finally:
            await tr.close()

    finally:
        for p in reversed(made):
            try:
                p.rmdir()
            except OSError:
                pass
