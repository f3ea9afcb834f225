"""The node-file catalog (collectors/nodefiles.py) against the probe that reads the files, the simulator that
writes them and frames.py that knows what each request reads anew (issue 35): a path the probe reads and the
catalog does not hold fails, and so does an entry the probe never reads."""
from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

from pinscope.collectors import frames, nodefiles
from pinscope.collectors.frames import parse_frame, unescape
from pinscope.collectors.sim import demo
from pinscope.collectors.sim.node import SimNode
from nodes import amd_multi_numa_v1

PROBE = Path(nodefiles.__file__).with_name("probe.sh")
ALL = "sgctTawin"
# what the simulated nodes do not hold, and the probe reads only where a node has it
NOT_SIMULATED = {
    "<kubelet-config-dir>/<name>.conf",  # no simulated kubelet has --config-dir
    "/sys/fs/cgroup/cpuset.cpus.isolated",  # 6.7+: the simulated v2 kernel is older
    "/proc/<n>/cgroup",  # every simulated task is a pod's or the kernel's: none is asked for
}
# what the v1 node below adds to the simulator's files, so the probe reads them too
EXTRA = {
    "/sys/devices/system/cpu/smt/active": "1\n",
    "/sys/devices/system/cpu/intel_pstate/no_turbo": "0\n",
    "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages": "16\n",
    "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages": "16\n",
    "/etc/sysconfig/irqbalance": "IRQBALANCE_BANNED_CPULIST=2-5\n",  # RHEL's place (the demo's: Debian's)
    "/proc/irq/77/smp_affinity_list": "0-3\n",  # an IRQ without an effective list (older kernels)
}


def probe_lines(root: Path, requests: list[str]) -> list[bytes]:
    """The probe's output lines for these requests over the tree at `root` (dash or whichever sh)."""
    feed = "".join(f"{r}\n" for r in requests) + "q\n"
    out = subprocess.run(["sh", str(PROBE), "--root", str(root)], input=feed.encode(), capture_output=True,
                         timeout=60, check=True).stdout
    return out.split(b"\n")


def reads(lines: list[bytes]) -> list[tuple[str, str, dict[str, str]]]:
    """(path, the request's letters, kubelet's paths) for every file a frame sent, and every directory a D line
    listed."""
    out = []
    kubelet: dict[str, str] = {}  # said in the first frame and each static one
    for chunk in b"\n".join(lines).split(b"\nB"):
        f = parse_frame(chunk if chunk.startswith(b"B") else b"B" + chunk)
        if "kubelet-root" in f.info:
            kubelet = {"<kubelet-root>": f.info["kubelet-root"], "<kubelet-config>": f.info.get("kubelet-config", "")}
        letters = f.letters + ("f" if " " in f.request else "")
        for p in [*f.files, *f.unreadable, *f.truncated, *f.refused, *f.unchanged]:
            out.append((p, letters, kubelet))
        for raw in chunk.split(b"\n"):
            if raw.startswith(b"D"):
                out.append((unescape(raw[1:].decode()).rstrip("/"), letters, kubelet))
    return out


def crio_and_hugetlb(root: Path) -> None:
    """What CRI-O's high-performance hooks and hugepages leave in a Guaranteed pod's container cgroups (the
    simulator writes neither): load balancing off, hugetlb use per NUMA node."""
    cg = root / "sys/fs/cgroup"
    for leaf in cg.glob("kubepods.slice/kubepods-pod*/*.scope"):  # v2
        (leaf / "cpuset.cpus.partition").write_text("isolated\n")
        (leaf / "hugetlb.2MB.numa_stat").write_text("total=2097152 N0=2097152 N1=0\n")
    for leaf in cg.glob("cpuset/kubepods/pod*/" + "[0-9a-f]" * 64):  # v1: the cpuset and hugetlb hierarchies
        (leaf / "cpuset.sched_load_balance").write_text("0\n")
        h = cg / "hugetlb" / leaf.relative_to(cg / "cpuset")
        h.mkdir(parents=True, exist_ok=True)
        (h / "hugetlb.2MB.usage_in_bytes").write_text("2097152\n")
        (h / "hugetlb.2MB.numa_stat").write_text("total=2097152 N0=2097152 N1=0\n")


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> list[tuple[str, str, dict[str, str]]]:
    """Every demo node (v1 and v2, tuned and not, GPUs, DRA, IRQs) and a v1 node with a memory hierarchy, each
    read with every request letter, a focused container and a focused CPU."""
    out = []
    v1 = amd_multi_numa_v1()
    v1.extra_files.update(EXTRA)
    v1.extra_files[f"{v1.kubelet_root}/memory_manager_state"] = "{}\n"
    # kubelet's allocation checkpoint, empty (the simulated kubelet writes none: InPlacePodVerticalScaling off)
    v1.extra_files[f"{v1.kubelet_root}/allocated_pods_state"] = '{"data":"{\\"entries\\":{}}","checksum":1057365947}'
    for spec in [*demo.demo_specs(), v1]:
        root = tmp_path_factory.mktemp(spec.hostname)
        SimNode(spec, root).write()
        crio_and_hugetlb(root)
        first = probe_lines(root, [f"{ALL} - - *"])
        ctr = re.search(rb"[0-9a-f]{64}", b"\n".join(first))
        assert ctr, spec.hostname
        out += reads(first)
        out += reads(probe_lines(root, [ALL, f"g {ctr.group().decode()}", "ga @3 - *"]))
    return out


def test_every_file_the_probe_reads_is_in_the_catalog_for_its_request(probed):
    assert len(probed) > 5000
    stray = sorted({p for p, letters, kubelet in probed
                    if not any(set(nf.requests) & set(letters) for nf in nodefiles.find(p, kubelet))})
    assert stray == []


def test_every_entry_of_the_catalog_is_read_by_the_probe(probed):
    """Sent and listed entries on the simulated nodes (but those no simulated node has); the shell's own reads
    by their names in probe.sh."""
    seen = {nf.path for p, _, kubelet in probed for nf in nodefiles.find(p, kubelet)}
    unread = [nf.path for nf in nodefiles.CATALOG if nf.how != "shell" and nf.path not in seen | NOT_SIMULATED]
    assert unread == []
    text = PROBE.read_text()
    assert [nf.path for nf in nodefiles.CATALOG if nf.how == "shell" and nodefiles.name(nf) not in text] == []
    assert NOT_SIMULATED <= {nf.path for nf in nodefiles.CATALOG}
    for path in NOT_SIMULATED:  # each is named in the probe all the same
        assert nodefiles.name(next(nf for nf in nodefiles.CATALOG if nf.path == path)).split("<")[0] in text


def test_the_simulator_writes_only_files_of_the_catalog(tmp_path):
    """What a simulated node holds is what a node holds for the probe (else the demo would read files no node
    has); its own extras (logs, the processes' other files) are named here."""
    spec = demo.demo_specs()[1]
    SimNode(spec, tmp_path).write()
    others = re.compile(r"/proc/\d+(/task/\d+)?/(stat|comm|cmdline|schedstat|status|sched|cgroup|children)$|"
                        r"/var/log/pods/.*\.log$|/var/lib/kubelet/pods/.*|/sys/fs/cgroup/.*/(cpuacct\..*|cgroup\..*)$")
    stray = []
    for f in tmp_path.rglob("*"):
        if f.is_file() and not f.is_symlink():
            p = "/" + str(f.relative_to(tmp_path))
            if not nodefiles.find(p, {"<kubelet-root>": spec.kubelet_root}) and not others.search(p):
                stray.append(p)
    assert stray == []


READERS = ("parse", "assemble", "frames.py", "rates.py", "pipeline.py", "collect.py")


def node_paths(py: Path) -> list[tuple[int, str]]:
    """The node paths (/proc, /sys, kubelet's) a module's code names, docstrings left out; "N" (cpuN, /N/) is a
    number, as the code's messages write it."""
    tree = ast.parse(py.read_text())
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            for m in re.finditer(r"(?<![\w.])/(?:proc|sys|var/lib/kubelet)/[\w./-]*", node.value):
                out.append((node.lineno, re.sub(r"(?<=[a-z/])N(?=/|$)", "0", m.group().rstrip("."))))
    return out


def test_the_paths_the_parsers_name_are_in_the_catalog():
    """A parser or stage that looks a path up names one the probe reads (the whole path, or the start of one)."""
    examples = [nodefiles.example(nf) for nf in nodefiles.CATALOG]
    root = PROBE.parent
    mods = sorted(p for r in READERS for p in ([root / r] if r.endswith(".py") else (root / r).rglob("*.py")))
    named = [(py.relative_to(root), n, p) for py in mods for n, p in node_paths(py)]
    assert len(named) > 30
    assert [x for x in named if not nodefiles.find(x[2]) and not any(e.startswith(x[2]) for e in examples)] == []


def test_frames_takes_what_each_request_reads_anew_from_the_catalog():
    names, paths = nodefiles.read_anew("g")
    # the device checkpoint's path is fixed (any --root-dir): a path, not a name, and carried like the DRA one
    assert paths - frames._GRID_PATHS == {"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"}
    assert frames._GRID_PATHS <= paths and frames._GRID_NAMES <= names
    assert names - frames._GRID_NAMES == {"dra_manager_state"}
    assert frames._DETAIL_NAMES == nodefiles.read_anew("c")[0]


@pytest.mark.parametrize("path, entry", [
    ("/sys/devices/system/cpu/cpu17/cache/index3/shared_cpu_list",
     "/sys/devices/system/cpu/cpu<n>/cache/index<n>/shared_cpu_list"),
    ("/sys/fs/cgroup/kubepods.slice/cpu.stat", "/sys/fs/cgroup<cg>/cpu.stat"),
    ("/sys/fs/cgroup/cpu.stat", "/sys/fs/cgroup<cg>/cpu.stat"),
    ("/data/kubelet/cpu_manager_state", "<kubelet-root>/cpu_manager_state"),
])
def test_a_path_finds_its_entry(path, entry):
    assert [nf.path for nf in nodefiles.find(path, {"<kubelet-root>": "/data/kubelet"})] == [entry]


def test_a_path_the_catalog_does_not_hold_finds_nothing():
    assert nodefiles.find("/proc/kcore") == []
    assert nodefiles.find("/var/lib/kubelet/cpu_manager_state", {"<kubelet-root>": "/data/kubelet"}) == []
