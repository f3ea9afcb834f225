"""Build pinscope's kubelet oracle (tests/kubeletsim) for one kubelet release.

The binary is cached outside the checkout, by release and by a hash of the
oracle's sources (the overlay files included), in $PINSCOPE_KUBELETSIM_CACHE or
~/.cache/pinscope/kubeletsim. kubelet's device manager package is built, for the oracle only,
from its own files in the module cache plus the files of devicesim/ (go build -overlay,
see write_overlay): they construct its ManagerImpl with a case's devices, whose fields
and methods are unexported.
The first build compiles a good part of kubelet and takes minutes on 2 cores;
later calls return the cached binary at once.

    python3 tests/kubeletsim/build.py 1.37     # prints the binary's path
"""

from __future__ import annotations

import hashlib
import json
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


def overlay_files(release: str) -> dict[str, Path]:
    """The files go build -overlay adds to kubelet's package devicemanager: name there -> file here."""
    return {"zz_pinscope_sim.go": HERE / "devicesim" / f"sim_v{release}.go",
            "zz_pinscope_sim_common.go": HERE / "devicesim" / "sim_common.go"}


def source_hash(release: str) -> str:
    h = hashlib.sha256()
    srcs = [HERE / "main.go", HERE / f"v{release}" / "release.go", HERE / f"v{release}" / "go.mod", HERE / f"v{release}" / "go.sum"]
    for p in [*srcs, *overlay_files(release).values()]:
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
    overlay = write_overlay(release, out.parent, env)
    cmd = ["nice", "-n", "10", "go", "build", "-trimpath", f"-overlay={overlay}", "-o", str(tmp), "."]
    subprocess.run(cmd, cwd=HERE / f"v{release}", env=env, check=True, timeout=timeout)
    tmp.replace(out)
    return out


def write_overlay(release: str, where: Path, env: dict) -> Path:
    """go build's overlay file. Go refuses to overlay files in its module cache, so kubelet's package
    pkg/kubelet/cm/devicemanager is linked, file for file and unchanged, from the release's k8s.io/kubernetes
    (the module's directory as go list finds it) into the oracle's module as package
    pinscope/tests/kubeletsim/devicemanager, beside devicesim/'s files."""
    mod = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"], cwd=HERE / f"v{release}",
                         env=env, check=True, capture_output=True, text=True, timeout=600).stdout.strip()
    pkg = Path(mod) / "pkg" / "kubelet" / "cm" / "devicemanager"
    dest = HERE / f"v{release}" / "devicemanager"
    replace = {str(dest / f.name): str(f) for f in sorted(pkg.glob("*.go")) if not f.name.endswith("_test.go")}
    replace.update({str(dest / name): str(src) for name, src in overlay_files(release).items()})
    path = where / "overlay.json"
    path.write_text(json.dumps({"Replace": replace}))
    return path


if __name__ == "__main__":
    for rel in sys.argv[1:] or RELEASES:
        print(build(rel))
