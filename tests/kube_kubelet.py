"""The stand-in's kubelet and container runtime: run an exec'd command in a pod's container, for real.

`unshare -m` + `chroot` into a per-container root whose /usr, /etc (read-only) and /dev are this
machine's, and whose hostPath volumes are bind mounts of the node's SIMULATED tree (collectors/sim),
read-only where the pod spec says so (so a probe that tried to write would fail, as on a real node), its
emptyDir volumes a directory per pod, its root read-only under readOnlyRootFilesystem, and /proc this
machine's (no PID namespace: what hostPID gives a pod).
The "busybox" image's PATH holds busybox's applets only; any other known image gets this machine's
/usr/bin (dash, mawk), as a Debian-based image (the exporter's) would. Each exec runs in its own session,
so stopping it stops every process of it (the probe's awk too), as a container's cgroup would.
The mounts live in the exec's private mount namespace: nothing is mounted on this machine.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from pathlib import Path

SETUP = r"""set -e
D=$1; RO=$2; shift 2
mount --bind "$D" "$D"
mount --rbind /usr "$D/usr"; mount -o remount,bind,ro "$D/usr"
mount --rbind /dev "$D/dev"
mount --rbind /etc "$D/etc"; mount -o remount,bind,ro "$D/etc"
mount -t proc proc "$D/proc"
while [ "$1" != -- ]; do
  mount --rbind "$1" "$D$2"
  if [ "$3" = ro ]; then mount -o remount,bind,ro "$D$2"; fi
  shift 3
done
shift
if [ "$RO" = ro ]; then mount -o remount,bind,ro "$D"; fi
P=$1; shift
exec chroot "$D" /usr/bin/env -i PATH="$P" HOME=/ "$@"
"""


def _applets() -> list[str]:
    """Every applet this busybox has, as the busybox image links them (and nothing of this machine's)."""
    import subprocess

    out = subprocess.run(["busybox", "--list"], capture_output=True, text=True, check=True).stdout
    return [a for a in out.split() if "/" not in a]


def available() -> tuple[bool, str]:
    if os.geteuid() != 0:
        return False, "the stand-in's exec needs root (unshare -m, mount --bind, chroot)"
    for tool in ("unshare", "chroot", "mount", "busybox"):
        if not shutil.which(tool):
            return False, f"the stand-in's exec needs {tool}"
    return True, ""



def rootfs(base: Path, pod: dict, ctr: dict) -> Path:
    """The container's root: mount points for this machine's /usr, /etc and /dev, its top-level links
    (bin -> usr/bin ...), busybox's applets in /bb, and an empty directory for each volume mount."""
    root = base / pod["metadata"]["uid"] / ctr["name"]
    if not root.exists():
        for d in ("usr", "dev", "etc", "tmp", "bb", "proc"):
            (root / d).mkdir(parents=True)
        for link in ("bin", "lib", "lib64", "sbin"):
            if os.path.islink(f"/{link}"):
                os.symlink(os.readlink(f"/{link}"), root / link)
        for applet in _applets():
            os.symlink("/usr/bin/busybox", root / "bb" / applet)
    for m in ctr.get("volumeMounts") or []:
        (root / m["mountPath"].lstrip("/")).mkdir(parents=True, exist_ok=True)
    return root


async def exec_in(base: Path, node_root: Path, pod: dict, ctr: dict, command: list[str], main: bool = False):
    """Start `command` in the container `ctr` of `pod` (on the node whose tree is `node_root`). An emptyDir
    is one directory per pod, shared by its containers' main processes and execs. `main`: the container's
    own process (no stdin, its output to /dev/null: kubectl logs is not served)."""
    root = rootfs(base, pod, ctr)
    path = "/bb" if str(ctr.get("image", "")).split("/")[-1].startswith("busybox") else "/usr/bin:/bin"
    binds = []
    vols = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    for m in ctr.get("volumeMounts") or []:
        hp = (vols.get(m["name"]) or {}).get("hostPath")
        ro = "ro" if m.get("readOnly") else "rw"
        if hp is not None:
            binds += [str(node_root / hp["path"].lstrip("/")), m["mountPath"], ro]
        elif "emptyDir" in (vols.get(m["name"]) or {}):
            d = base / pod["metadata"]["uid"] / "volumes" / m["name"]
            d.mkdir(parents=True, exist_ok=True)
            binds += [str(d), m["mountPath"], ro]
    pipe, null = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    return await asyncio.create_subprocess_exec(
        "unshare", "-m", "sh", "-c", SETUP, "setup", str(root), rootfs_mode(ctr), *binds, "--", path, *command,
        stdin=null if main else pipe, stdout=null if main else pipe, stderr=null if main else pipe,
        start_new_session=True)


def rootfs_mode(ctr: dict) -> str:
    """"ro" when the container asks for a read-only root filesystem (its volumes keep their own modes)."""
    return "ro" if (ctr.get("securityContext") or {}).get("readOnlyRootFilesystem") else "rw"


def signal_exec(proc, sig: int) -> None:
    """Signal every process of an exec (its session), as the kubelet stops a container."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
