"""cgroup paths -> pod / container / QoS, and one cgroup directory's CPU files -> CgroupFiles.

Paths (k/k pkg/kubelet/cm/{qos,pod}_container_manager_linux.go, cgroup_manager_linux.go ToSystemd):
  cgroupfs: /kubepods[/burstable|/besteffort]/pod<uid>/<leaf>
  systemd:  /kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid_>.slice/<leaf>
Leaves: containerd "cri-containerd-<64hex>.scope" or "<64hex>"; CRI-O "crio-<64hex>[.scope]"
(and "crio-conmon-<id>.scope", not a container); Docker "docker-<64hex>.scope". crun on v2 may add a
"container/" sub-cgroup below the scope (run.oci.systemd.subgroup): its processes live there.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..errors import Problem
from ..model import CgroupFiles, replaced
from .cpuset import CpusetError, parse_cpuset

# a static pod's uid is a hash of its manifest: 32 hex digits, no dashes (k/k pkg/kubelet/config/common.go)
_POD = re.compile(r"pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}"
                  r"|[0-9a-fA-F]{32})(?:\.slice)?$")
_POD_IN_PATH = re.compile(r"pod([0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{4}[-_][0-9a-fA-F]{12}"
                          r"|[0-9a-fA-F]{32})(?:\.slice)?(?:/|$)")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_RUNTIMES = (("cri-containerd-", "containerd"), ("crio-", "cri-o"), ("docker-", "docker"))

V2_FILES = ("cpuset.cpus", "cpuset.cpus.effective", "cpuset.mems.effective", "cpu.max", "cpu.weight",
            "cpu.stat", "cpu.pressure")
V1_CPUSET_FILES = ("cpuset.cpus", "cpuset.effective_cpus", "cpuset.effective_mems")
V1_CPU_FILES = ("cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.shares", "cpu.stat")


@lru_cache(maxsize=8192)
def pod_uid_of(dirname: str) -> str | None:
    """'pod1234-...' or 'kubepods-burstable-pod1234_...slice' -> '1234-...' (dashes restored)."""
    m = _POD.search(dirname)
    return m.group(1).replace("_", "-").lower() if m else None


def qos_of(path: str) -> str:
    """QoS from the cgroup path: Guaranteed pods sit directly under kubepods (whatever cgroupRoot is
    above it: only the part from kubepods on counts)."""
    low = path.lower()
    i = low.rfind("kubepods")
    low = low[i:] if i >= 0 else low
    if "besteffort" in low:
        return "BestEffort"
    if "burstable" in low:
        return "Burstable"
    return "Guaranteed"


def conmon_id_of(leaf: str) -> str | None:
    """CRI-O's monitor beside a container ("crio-conmon-<id>[.scope]"): part of the pod, not a container."""
    name = leaf[:-6] if leaf.endswith(".scope") else leaf
    if name.startswith("crio-conmon-") and _HEX64.match(name[12:]):
        return name[12:]
    return None


def proc_cgroup_path(text: str | None) -> str | None:
    """/proc/<pid>/cgroup -> the path that places the process (man cgroups(7)): the v1 cpuset hierarchy's
    line when there is one, else the unified (v2) line. Under a private cgroup namespace (kubectl debug)
    the path is relative to the reader's namespace ("/../../kubepods…"): still good for a pod match."""
    if not text:
        return None
    unified = None
    for line in text.splitlines():
        hid, _, rest = line.partition(":")
        ctrls, _, path = rest.partition(":")
        if not path:
            continue
        if "cpuset" in ctrls.split(","):
            return path
        if hid == "0" and ctrls == "":
            unified = path
    return unified


def pod_uid_in_path(path: str) -> str | None:
    """The pod uid a cgroup path lies in (any driver, any cgroupRoot), or None: outside every pod."""
    m = _POD_IN_PATH.search(path)
    return m.group(1).replace("_", "-").lower() if m else None


def parse_numa_stat(text: str | None, version: int) -> dict | None:
    """memory.numa_stat -> {"unit": "bytes" (v2) | "pages" (v1), "nodes": {node: {"anon": n, "file": n}}}.
    v2 lines are "anon N0=<bytes> N1=…" (kdoc admin-guide/cgroup-v2.rst); v1 lines "anon=<total> N0=<pages> …"
    (kdoc admin-guide/cgroup-v1/memory.rst 5.6). Only anon and file: what a NUMA miss is made of."""
    if not text:
        return None
    nodes: dict[int, dict] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        key = parts[0].split("=", 1)[0]
        if key not in ("anon", "file"):
            continue
        for w in parts[1:]:
            n, _, v = w.partition("=")
            if n[:1] == "N" and n[1:].isdecimal() and v.isdecimal():
                nodes.setdefault(int(n[1:]), {"anon": 0, "file": 0})[key] = int(v)
    if not nodes:
        return None
    return {"unit": "bytes" if version == 2 else "pages", "nodes": dict(sorted(nodes.items()))}


@lru_cache(maxsize=8192)
def container_id_of(leaf: str) -> tuple[str | None, str | None]:
    """A leaf directory name -> (64-hex id, runtime) or (None, None) when it is not a container."""
    name = leaf[:-6] if leaf.endswith(".scope") else leaf
    if name.startswith("crio-conmon-"):
        return None, None
    for prefix, runtime in _RUNTIMES:
        if name.startswith(prefix):
            cid = name[len(prefix):]
            return (cid, runtime) if _HEX64.match(cid) else (None, None)
    if _HEX64.match(name):
        return name, None
    return None, None


def driver_of(paths) -> str | None:
    for p in paths:
        if "kubepods.slice" in p:
            return "systemd"
        if "/kubepods/" in p or p.endswith("/kubepods"):
            return "cgroupfs"
    return None


def _first_int(text: str | None) -> int | None:
    if text is None:
        return None
    t = text.strip().split()
    if not t:
        return None
    try:
        return int(t[0])
    except ValueError:
        return None


_STAT = re.compile(r"^(nr_periods|nr_throttled|throttled_usec|throttled_time) (\d+)$", re.M)


def _kv(text: str | None) -> dict:
    """The throttling counters of a cpu.stat (the only keys we use), in one regex pass."""
    if not text:
        return {}
    return {k: int(v) for k, v in _STAT.findall(text)}


def _cs(text, path, problems) -> frozenset[int] | None:
    if text is None:
        return None
    try:
        return parse_cpuset(text)
    except CpusetError as err:
        problems.append(Problem(path, str(err)))
        return None


def parse_cgroup_dir(files: dict, path: str, version: int, problems: list[Problem],
                     cpu_path: str | None = None) -> CgroupFiles:
    """Read the CPU files of one cgroup directory out of the frame. `cpu_path`: v1 cpu hierarchy dir.
    Called for every container every tick: it does only dict lookups until a file is there."""
    get = files.get
    pre = path + "/"
    if version == 2:
        raw = {f: t for f in V2_FILES if (t := get(pre + f)) is not None}
        quota = period = None
        cm = raw.get("cpu.max")
        if cm is not None:
            parts = cm.split()
            if parts and parts[0] != "max":
                quota = _first_int(parts[0])
            if len(parts) >= 2:
                period = _first_int(parts[1])
        st = _kv(raw.get("cpu.stat"))
        press = _pressure(raw.get("cpu.pressure"))
        eff = raw.get("cpuset.cpus.effective")
        req = raw.get("cpuset.cpus")
        mems = raw.get("cpuset.mems.effective")
        return CgroupFiles(
            path=path, raw=raw, version=2,
            cpus=_cs(req, pre + "cpuset.cpus", problems) if req is not None else None,
            cpus_effective=_cs(eff, pre + "cpuset.cpus.effective", problems) if eff is not None else None,
            mems_effective=_cs(mems, pre + "cpuset.mems.effective", problems) if mems is not None else None,
            quota_us=quota, period_us=period, weight=_first_int(raw.get("cpu.weight")),
            nr_periods=st.get("nr_periods"), nr_throttled=st.get("nr_throttled"),
            throttled_usec=st.get("throttled_usec"), pressure_some_total_us=press,
        )
    raw = {f: t for f in V1_CPUSET_FILES if (t := get(pre + f)) is not None}
    cpre = (cpu_path or path) + "/"
    for f in V1_CPU_FILES:
        t = get(cpre + f)
        if t is not None:
            raw[f] = t
    q = _first_int(raw.get("cpu.cfs_quota_us"))
    st = _kv(raw.get("cpu.stat"))
    tt = st.get("throttled_time")
    return CgroupFiles(
        path=path, raw=raw, version=1,
        cpus=_cs(raw.get("cpuset.cpus"), pre + "cpuset.cpus", problems),
        cpus_effective=_cs(raw.get("cpuset.effective_cpus"), pre + "cpuset.effective_cpus", problems),
        mems_effective=_cs(raw.get("cpuset.effective_mems"), pre + "cpuset.effective_mems", problems),
        quota_us=q if q is not None and q >= 0 else None,
        period_us=_first_int(raw.get("cpu.cfs_period_us")),
        weight=_first_int(raw.get("cpu.shares")),
        nr_periods=st.get("nr_periods"), nr_throttled=st.get("nr_throttled"),
        throttled_usec=tt // 1000 if tt is not None else None,  # v1 throttled_time is in ns
        cpu_path=cpu_path or path,
    )


def refresh_counters(cg: CgroupFiles, stat: str | None, pressure: str | None,
                     pressure_at: float | None = None) -> CgroupFiles:
    """The same cgroup with new cpu.stat / cpu.pressure texts (the files that change every tick): the
    rest (cpusets, quota, weight) is kept as parsed. Equal to parse_cgroup_dir over the new texts when
    the same files are present (the caller checks: `raw` keeps its order). `pressure_at`: the node uptime
    of the frame that read cpu.pressure, kept when its total parsed (v2)."""
    raw = dict(cg.raw)
    same_pressure = pressure == raw.get("cpu.pressure")  # read every 5th tick, cpu.stat every tick
    if stat is not None:
        raw["cpu.stat"] = stat
    if pressure is not None:
        raw["cpu.pressure"] = pressure
    st = _kv(stat)
    if cg.version == 1:
        tt = st.get("throttled_time")
        return replaced(cg, raw=raw, nr_periods=st.get("nr_periods"), nr_throttled=st.get("nr_throttled"),
                        throttled_usec=tt // 1000 if tt is not None else None)
    total = cg.pressure_some_total_us if same_pressure else _pressure(pressure)
    return replaced(cg, raw=raw, nr_periods=st.get("nr_periods"), nr_throttled=st.get("nr_throttled"),
                    throttled_usec=st.get("throttled_usec"), pressure_some_total_us=total,
                    pressure_at=pressure_at if total is not None else None)


def _pressure(pr: str | None) -> int | None:
    """cpu.pressure's "some" line -> its total= (µs), or None."""
    press = None
    if pr:
        for line in pr.splitlines():
            if line.startswith("some "):
                for w in line.split():
                    if w.startswith("total="):
                        press = _first_int(w[6:])
    return press


@lru_cache(maxsize=8192)  # the same few texts tick after tick; the result is immutable
def parse_procs(text: str | None) -> frozenset[int]:
    if not text:
        return frozenset()
    return frozenset(int(x) for x in text.split() if x.isdecimal())
