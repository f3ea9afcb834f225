"""Build pinscope's kubelet oracle (tests/kubeletsim) for one kubelet release.

The binary is cached outside the checkout, by release and by a hash of the
oracle's sources, in $PINSCOPE_KUBELETSIM_CACHE or ~/.cache/pinscope/kubeletsim.
The first build compiles a good part of kubelet and takes minutes on 2 cores;
later calls return the cached binary at once.

    python3 tests/kubeletsim/build.py 1.37     # prints the binary's path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RELEASES = ("1.37", "1.35")


def cache_dir() -> Path:
    env = os.environ.get("PINSCOPE_KUBELETSIM_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pinscope" / "kubeletsim"


def source_hash(release: str) -> str:
    h = hashlib.sha256()
    for p in (HERE / "main.go", HERE / f"v{release}" / "release.go", HERE / f"v{release}" / "go.mod", HERE / f"v{release}" / "go.sum"):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def binary_path(release: str) -> Path:
    return cache_dir() / f"v{release}" / source_hash(release) / "kubeletsim"


def go_available() -> bool:
    return shutil.which("go") is not None


def build(release: str, timeout: float = 3000) -> Path:
    """Return the oracle for a release, building it first if needed."""
    if release not in RELEASES:
        raise ValueError(f"no oracle for kubelet {release} (have {', '.join(RELEASES)})")
    out = binary_path(release)
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".kubeletsim.{os.getpid()}")
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    cmd = ["nice", "-n", "10", "go", "build", "-trimpath", "-o", str(tmp), "."]
    subprocess.run(cmd, cwd=HERE / f"v{release}", env=env, check=True, timeout=timeout)
    tmp.replace(out)
    return out


if __name__ == "__main__":
    for rel in sys.argv[1:] or RELEASES:
        print(build(rel))
