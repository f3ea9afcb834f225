"""Latency readiness: how a node says it is tuned for pinned work (issue 37; docs/readiness.md).

Pure functions, text -> frozen dataclasses. What a node does not have (no cpufreq in a VM, no irqbalance, no
tuned) is None or empty: unknown or not applicable, never a wrong value. A value that cannot be parsed is
a Problem quoting it, and unknown.

Sources:
- /proc/cmdline: isolcpus=[flags,]list (flags domain, managed_irq, nohz; none given = domain: kernel
  sched/isolation.c housekeeping_isolcpus_setup), nohz_full=, rcu_nocbs[=list], irqaffinity=. Words after a
  lone "--" are init's, not the kernel's (init/main.c).
- irqbalance's environment file (/etc/default/irqbalance on Debian, /etc/sysconfig/irqbalance on RHEL):
  IRQBALANCE_BANNED_CPULIST (a cpulist) and the old hex IRQBALANCE_BANNED_CPUS; with neither set irqbalance
  bans isolated and nohz_full CPUs itself (irqbalance cputree.c).
- cpufreq (kHz), cpuidle (latency in µs), power/pm_qos_resume_latency_us: "0" is no limit, "n/a" is a limit
  of 0 (drivers/base/power/sysfs.c pm_qos_resume_latency_us_show).
- sysctls, the unbound workqueue mask, THP's mode, hugepages per NUMA node, tuned's active profile and
  cpu-partitioning's isolated_cores, the pinned containers' partition / sched_load_balance and hugetlb files.
"""
from __future__ import annotations

import dataclasses
import re

from ..errors import Problem
from ..readinessmodel import CgroupTuning, CpuPower, IdleState, IrqbalanceConf, KernelParams, Readiness
from .cpuset import CpusetError, parse_cpuset, parse_hexmask

CPU = "/sys/devices/system/cpu"
NODE = "/sys/devices/system/node"
IRQBALANCE_FILES = ("/etc/default/irqbalance", "/etc/sysconfig/irqbalance")
TUNED_PROFILE = "/etc/tuned/active_profile"
TUNED_CPU_PARTITIONING = "/etc/tuned/cpu-partitioning-variables.conf"
ISOLCPUS_FLAGS = ("domain", "managed_irq", "nohz")


def _words(cmdline: str) -> list[str]:
    """The kernel's words: whitespace-separated, "..." may hold spaces (lib/cmdline.c next_arg); stops at "--"."""
    out: list[str] = []
    for m in re.finditer(r'(?:"[^"]*"|[^\s"])+', cmdline):
        w = m.group(0)
        if w == "--":
            break
        out.append(w.replace('"', ""))
    return out


def _cpus(text: str, nmax: int | None, where: str, problems: list) -> frozenset[int] | None:
    try:
        return parse_cpuset(text, nmax)
    except CpusetError as err:
        problems.append(Problem(where, str(err)))
        return None


def parse_cmdline(cmdline: str, nmax: int | None = None, problems: list | None = None) -> KernelParams:
    """/proc/cmdline -> the isolation parameters (the last of a repeated one wins)."""
    probs = problems if problems is not None else []
    vals: dict[str, str | None] = {}
    for w in _words(cmdline):
        name, eq, value = w.partition("=")
        if name in ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity"):
            vals[name] = value if eq else None
    out: dict = {}
    flags: tuple[str, ...] = ()
    if vals.get("isolcpus") is not None:
        parts = (vals["isolcpus"] or "").split(",")
        got = []
        while parts and parts[0] and parts[0].replace("_", "").isalpha() and parts[0] != "N":
            f = parts.pop(0)
            if f in ISOLCPUS_FLAGS:  # the kernel skips a flag it does not know
                got.append(f)
        flags = tuple(got) or ("domain",)
        out["isolcpus"] = _cpus(",".join(parts), nmax, "/proc/cmdline isolcpus=", probs)
    for name in ("nohz_full", "irqaffinity"):
        if vals.get(name) is not None:
            out[name] = _cpus(vals[name] or "", nmax, f"/proc/cmdline {name}=", probs)
    if "rcu_nocbs" in vals:
        v = vals["rcu_nocbs"]
        out["rcu_nocbs"] = frozenset() if v is None else _cpus(v, nmax, "/proc/cmdline rcu_nocbs=", probs)
    raw = {k: (v if v is not None else "") for k, v in vals.items()}
    return KernelParams(isolcpus_flags=flags, raw=raw, **out)


_ENV = re.compile(r'^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$')


def _env(text: str) -> dict[str, str]:
    """An environment file (KEY=value, KEY="value", # comments), as systemd's EnvironmentFile reads it."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _ENV.match(line)
        if not m:
            continue
        v = m.group(2).strip()
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
            v = v[1:-1]
        elif "#" in v:
            v = v.split("#", 1)[0].strip()
        out[m.group(1)] = v
    return out


def parse_irqbalance(path: str, text: str, nmax: int | None = None, problems: list | None = None) -> IrqbalanceConf:
    probs = problems if problems is not None else []
    env = _env(text)
    lst = env.get("IRQBALANCE_BANNED_CPULIST", "").strip()
    hexm = env.get("IRQBALANCE_BANNED_CPUS", "").strip()
    banned_list = _cpus(lst, nmax, f"{path} IRQBALANCE_BANNED_CPULIST", probs) if lst else None
    banned_hex = None
    if hexm:
        try:
            banned_hex = parse_hexmask(hexm)
        except (ValueError, CpusetError) as err:
            probs.append(Problem(path, f"IRQBALANCE_BANNED_CPUS={hexm!r}: {err}"))
    raw = {k: env[k] for k in ("IRQBALANCE_BANNED_CPULIST", "IRQBALANCE_BANNED_CPUS") if env.get(k, "").strip()}
    return IrqbalanceConf(path, banned_list, banned_hex, raw)


def irqbalance_banned(confs: tuple[IrqbalanceConf, ...], isolated, nohz_full) -> tuple[frozenset[int] | None, str]:
    """The CPUs irqbalance keeps IRQs off, and where that comes from. Both variables honoured (a CPU in
    either is taken as banned: never a finding on a guess); neither set: its own default, isolated ∪
    nohz_full (None when neither sysfs file was read)."""
    given = [c for c in confs if c.banned_list is not None or c.banned_hex is not None]
    if given:
        out: frozenset[int] = frozenset()
        said = []
        for c in given:
            out |= (c.banned_list or frozenset()) | (c.banned_hex or frozenset())
            said += [f"{c.path}: {k}={v}" for k, v in c.raw.items()]
        return out, "; ".join(said)
    if isolated is None and nohz_full is None:
        return None, "irqbalance's default (isolated ∪ nohz_full): neither read"
    return (isolated or frozenset()) | (nohz_full or frozenset()), "irqbalance's default: isolated ∪ nohz_full"


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def parse_pm_qos(text: str) -> tuple[bool, int | None]:
    """pm_qos_resume_latency_us -> (known, limit µs); "0" -> no limit (None), "n/a" -> 0."""
    t = text.strip()
    if t == "n/a":
        return True, 0
    v = _int(t)
    if v is None or v < 0:
        return False, None
    return True, (None if v == 0 else v)


def parse_thp(text: str) -> str | None:
    """"always [madvise] never" -> "madvise"."""
    m = re.search(r"\[([a-z_]+)\]", text)
    return m.group(1) if m else None


def parse_tuned_vars(text: str) -> str | None:
    """cpu-partitioning-variables.conf -> isolated_cores as written (None when not set)."""
    for line in text.splitlines():
        k, eq, v = line.strip().partition("=")
        if eq and k.strip() == "isolated_cores":
            return v.strip()
    return None


def parse_hugetlb_numa(text: str) -> dict[int, int]:
    """hugetlb.<size>.numa_stat (bytes) -> {node: bytes}, this cgroup and its descendants. v2 prints one line,
    "total=2097152 N0=2097152 N1=0"; v1 (the same file since late 2021: mm/hugetlb_cgroup.c
    hugetlb_cgroup_read_numa_stat, "legacy") prints the cgroup's own line, then "hierarchical_total=... N0=...":
    the hierarchical line is taken, as v2's is."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    pick = next((ln for ln in lines if ln[0].startswith("hierarchical_total=")), lines[0] if lines else [])
    out: dict[int, int] = {}
    for w in pick:
        k, eq, v = w.partition("=")
        if eq and k.startswith("N") and k[1:].isdecimal() and v.isdecimal():
            out[int(k[1:])] = int(v)
    return out


_CPUFREQ = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/cpufreq/(\w+)$")
_IDLE = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/cpuidle/state(\d+)/(name|latency|disable)$")
_QOS = re.compile(r"^/sys/devices/system/cpu/cpu(\d+)/power/pm_qos_resume_latency_us$")
_HUGE = re.compile(r"^/sys/devices/system/node/node(\d+)/hugepages/hugepages-(\d+)kB/(nr|free)_hugepages$")
_HUGETLB2 = re.compile(r"^(/sys/fs/cgroup/.+)/hugetlb\.([0-9A-Za-z]+)\.numa_stat$")
_HUGETLB1 = re.compile(r"^/sys/fs/cgroup/hugetlb/(.+)/hugetlb\.([0-9A-Za-z]+)\.(usage_in_bytes|numa_stat)$")
_FREQ_KEYS = {"scaling_driver": "driver", "scaling_governor": "governor", "scaling_min_freq": "min_khz",
              "scaling_max_freq": "max_khz", "cpuinfo_min_freq": "hw_min_khz", "cpuinfo_max_freq": "hw_max_khz"}


def _scan(files: dict, probs: list) -> tuple[dict, dict, dict, dict, dict]:
    """The per-CPU, per-node and per-cgroup files -> (cpufreq, cpuidle, pm_qos, hugepages, cgroups) raw dicts."""
    freq: dict[int, dict] = {}
    idle: dict[int, dict[int, dict]] = {}
    qos: dict[int, int | None] = {}
    huge: dict[tuple[int, int], dict[str, int]] = {}
    cgroups: dict[str, dict] = {}
    for p, t in files.items():
        if p.startswith(CPU + "/cpu"):
            _cpu_file(p, t, freq, idle, qos, probs)
        elif p.startswith(NODE + "/node"):
            m = _HUGE.match(p)
            if m and _int(t) is not None:
                huge.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = _int(t) or 0
        elif p.startswith("/sys/fs/cgroup/"):
            _cgroup_file(p, t, cgroups)
    return freq, idle, qos, huge, cgroups


def _cpu_file(p: str, t: str, freq: dict, idle: dict, qos: dict, probs: list) -> None:
    m = _CPUFREQ.match(p)
    if m and m.group(2) in _FREQ_KEYS:
        k = _FREQ_KEYS[m.group(2)]
        freq.setdefault(int(m.group(1)), {})[k] = t.strip() if k in ("driver", "governor") else _int(t)
        return
    m = _IDLE.match(p)
    if m:
        idle.setdefault(int(m.group(1)), {}).setdefault(int(m.group(2)), {})[m.group(3)] = t.strip()
        return
    m = _QOS.match(p)
    if m:
        known, lim = parse_pm_qos(t)
        if known:
            qos[int(m.group(1))] = lim
        else:
            probs.append(Problem(p, f"not a latency: {t.strip()[:40]!r}"))


def _cgroup_file(p: str, t: str, cgroups: dict) -> None:
    m = _HUGETLB1.match(p)  # v1: the hugetlb hierarchy's twin of the container's cpuset cgroup, kept under the latter
    if m:
        d = cgroups.setdefault("/sys/fs/cgroup/cpuset/" + m.group(1), {})
        d["hugetlb_dir"] = p.rsplit("/", 1)[0]
        if m.group(3) == "numa_stat":
            d.setdefault("hugetlb_numa", {})[m.group(2)] = parse_hugetlb_numa(t)
        elif (v := _int(t)) is not None:
            d.setdefault("hugetlb_bytes", {})[m.group(2)] = v
        return
    m = _HUGETLB2.match(p)
    if m:
        d = cgroups.setdefault(m.group(1), {})
        d["hugetlb_dir"] = m.group(1)
        d.setdefault("hugetlb_numa", {})[m.group(2)] = parse_hugetlb_numa(t)
    elif p.endswith("/cpuset.cpus.partition"):
        cgroups.setdefault(p.rsplit("/", 1)[0], {})["partition"] = t.strip() or None
    elif p.endswith("/cpuset.sched_load_balance"):
        v = _int(t)
        cgroups.setdefault(p.rsplit("/", 1)[0], {})["load_balance"] = None if v is None else v != 0


def _sets(files: dict, nmax: int | None, probs: list) -> dict:
    """The CPU sets and masks of sysfs and procfs (empty and "(null)" read as none)."""
    def sysset(path: str) -> frozenset[int] | None:
        t = files.get(path)
        if t is None:
            return None
        if t.strip() in ("", "(null)"):
            return frozenset()
        return _cpus(t, nmax, path, probs)

    def mask(path: str) -> frozenset[int] | None:
        t = files.get(path)
        if t is None:
            return None
        try:
            return parse_hexmask(t.strip())
        except (ValueError, CpusetError) as err:
            probs.append(Problem(path, f"not a CPU mask: {err}"))
            return None

    return {"isolated": sysset(f"{CPU}/isolated"), "nohz_full": sysset(f"{CPU}/nohz_full"),
            "default_irq_affinity": mask("/proc/irq/default_smp_affinity"),
            "workqueue_cpumask": mask("/sys/devices/virtual/workqueue/cpumask")}


def parse_readiness(files: dict, nmax: int | None = None, problems: list | None = None) -> Readiness:
    """The static frame's files -> Readiness. Every part optional."""
    probs = problems if problems is not None else []
    kernel = parse_cmdline(files.get("/proc/cmdline", ""), nmax, probs)
    if "/proc/cmdline" in files:
        kernel = dataclasses.replace(kernel, read=True)
    freq, idle, qos, huge, cgroups = _scan(files, probs)
    states = {c: tuple(IdleState(i, s.get("name", f"state{i}"), _int(s.get("latency")),
                                 None if s.get("disable") is None else s.get("disable") != "0")
                       for i, s in sorted(st.items())) for c, st in idle.items()}
    tm = _int(files.get("/proc/sys/kernel/timer_migration"))
    nt = _int(files.get(f"{CPU}/intel_pstate/no_turbo"))
    thp = files.get("/sys/kernel/mm/transparent_hugepage/enabled")
    prof = files.get(TUNED_PROFILE)
    tvars = files.get(TUNED_CPU_PARTITIONING)
    t_raw = parse_tuned_vars(tvars) if tvars is not None else None
    t_iso = None
    if t_raw is not None and "$" not in t_raw:  # ${f:...} expressions are tuned's to work out: unknown here
        t_iso = _cpus(t_raw, nmax, TUNED_CPU_PARTITIONING + " isolated_cores", probs)
    return Readiness(
        kernel=kernel, **_sets(files, nmax, probs),
        irqbalance=tuple(parse_irqbalance(p, files[p], nmax, probs) for p in IRQBALANCE_FILES if p in files),
        power={c: CpuPower(**v) for c, v in sorted(freq.items())}, idle=states, pm_qos_us=qos,
        intel_pstate=(files.get(f"{CPU}/intel_pstate/status") or "").strip() or None,
        no_turbo=None if nt is None else nt != 0,
        rt_runtime_us=_int(files.get("/proc/sys/kernel/sched_rt_runtime_us")),
        rt_period_us=_int(files.get("/proc/sys/kernel/sched_rt_period_us")),
        timer_migration=None if tm is None else tm != 0,
        thp=parse_thp(thp) if thp is not None else None,
        tuned_profile=next(iter(prof.split()), None) if prof is not None else None,
        tuned_isolated=t_iso, tuned_isolated_raw=t_raw,
        hugepages=tuple((n, s, v.get("nr", 0), v.get("free", 0)) for (n, s), v in sorted(huge.items())),
        cgroups={d: CgroupTuning(**v) for d, v in cgroups.items()},
    )


def deepest_allowed(states: tuple[IdleState, ...], qos_us: int | None) -> IdleState | None:
    """The deepest idle state a CPU may enter: enabled, and (with a PM QoS limit) no slower to leave than the
    limit (the cpuidle governors skip a state whose exit latency is over it). None: no state known."""
    best = None
    for s in states:
        if s.disabled or s.latency_us is None:
            continue
        if qos_us is not None and s.latency_us > qos_us:
            continue
        if best is None or s.latency_us > (best.latency_us or 0):
            best = s
    return best
