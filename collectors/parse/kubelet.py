"""Kubelet: KubeletConfiguration (file, drop-ins, flags); the checkpoints (cpu_manager_state v1-v4,
memory_manager_state v1-v3) are read in checkpoint.py and memstate.py, re-exported here.

Sources: k/k staging/src/k8s.io/kubelet/config/v1beta1/{types.go,defaults.go}.
Go's encoding/json matches keys case-insensitively and ignores unknown ones: so do we.
"""
from __future__ import annotations


import yaml

from ..errors import Problem
from ..model import KubeletConfig
from .checkpoint import MAX_JSON, spew_cpu, parse_cpu_manager_state
from .cpuset import CpusetError, parse_cpuset
from .gojson import fnv1a32
from .memstate import parse_memory_manager_state

__all__ = ["MAX_JSON", "checksum_v1", "checksum_v2", "climbs_out", "fnv1a32", "parse_cpu_manager_state", "parse_flags",
           "parse_kubelet_config", "parse_memory_manager_state"]


def _ci(d: dict, key: str, default=None):
    """Case-insensitive key lookup, as Go's encoding/json does it."""
    if key in d:
        return d[key]
    kl = key.lower()
    for k, v in d.items():
        if isinstance(k, str) and k.lower() == kl:
            return v
    return default


def _kv_list(text: str) -> dict:
    """'cpu=500m,memory=1Gi' (flag form of a map)."""
    out = {}
    for part in text.split(","):
        if "=" in part:
            k, _, v = part.partition("=")
            out[k.strip()] = v.strip()
    return out


_FIELDS = {
    # config key -> (model field, flag)
    "cpuManagerPolicy": ("cpu_manager_policy", "--cpu-manager-policy"),
    "cpuManagerPolicyOptions": ("cpu_manager_policy_options", "--cpu-manager-policy-options"),
    "reservedSystemCPUs": ("reserved_cpus", "--reserved-cpus"),
    "topologyManagerPolicy": ("topology_manager_policy", "--topology-manager-policy"),
    "topologyManagerScope": ("topology_manager_scope", "--topology-manager-scope"),
    "topologyManagerPolicyOptions": ("topology_manager_policy_options", "--topology-manager-policy-options"),
    "memoryManagerPolicy": ("memory_manager_policy", "--memory-manager-policy"),
    "cgroupDriver": ("cgroup_driver", "--cgroup-driver"),
    "cgroupRoot": ("cgroup_root", "--cgroup-root"),
    "kubeReserved": ("kube_reserved", "--kube-reserved"),
    "systemReserved": ("system_reserved", "--system-reserved"),
    "cpuManagerReconcilePeriod": ("reconcile_period", "--cpu-manager-reconcile-period"),
    "podLogsDir": ("pod_logs_dir", None),  # config only (1.29+)
}
_MAPS = {"cpu_manager_policy_options", "topology_manager_policy_options", "kube_reserved", "system_reserved"}


def climbs_out(path: str) -> bool:
    """A path from the node that is not absolute or has a '..' component: under --root it would lead
    outside the prefix (probe.sh refuses the same paths and reads nothing under them)."""
    return not path.startswith("/") or ".." in path.split("/")


def _coerce(field: str, value, src: str, problems: list):
    if field == "pod_logs_dir" and isinstance(value, str) and climbs_out(value):
        problems.append(Problem(src, f"podLogsDir {value!r} refused: not absolute, or it climbs with '..' "
                                "(it would lead outside --root); /var/log/pods is read instead"))
        return None
    if field == "reserved_cpus":
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        try:
            return parse_cpuset(text)
        except CpusetError as err:
            problems.append(Problem(src, f"reservedSystemCPUs: {err}"))
            return None
    if field in _MAPS:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        if isinstance(value, str):
            return _kv_list(value)
        problems.append(Problem(src, f"{field}: expected a map, got {type(value).__name__}"))
        return {}
    if value is None:
        return None
    return str(value)


def parse_flags(argv: list[str]) -> dict:
    """kubelet argv -> {flag: value}; both '--x=v' and '--x v' forms."""
    out: dict[str, str] = {}
    i = 1 if argv and not argv[0].startswith("--") else 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if "=" in a:
                k, _, v = a.partition("=")
                out[k] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[a] = argv[i + 1]
                i += 1
            else:
                out[a] = "true"
        i += 1
    return out


def _yaml_doc(src: str, text: str, problems: list[Problem]) -> tuple[dict | None, bool]:
    """(the mapping of one config file or drop-in, or None; whether its text was understood)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problems.append(Problem(src, f"kubelet config is not valid YAML{where}: policy unknown"))
        return None, False
    except RecursionError:  # PyYAML composes nested nodes recursively
        problems.append(Problem(src, "kubelet config is nested too deeply to be read: policy unknown"))
        return None, False
    except ValueError as err:  # an int of 4300 digits or more (PyYAML drops "_" before int(): 1_1_1...)
        problems.append(Problem(src, f"kubelet config holds a value YAML cannot read ({str(err).partition(':')[0]}): "
                                     "policy unknown"))
        return None, False
    if doc is None or isinstance(doc, dict):
        return doc, True
    problems.append(Problem(src, "kubelet config is not a YAML mapping: policy unknown"))
    return None, False


def parse_kubelet_config(
    config_text: str | None,
    config_path: str | None,
    dropins: list[tuple[str, str]],
    argv: list[str] | None,
    problems: list[Problem],
    pid: int | None = None,
    root_dir: str = "/var/lib/kubelet",
) -> KubeletConfig:
    values: dict = {}
    sources: dict = {}
    parsed = True
    docs: list[tuple[str, str]] = []
    if config_text is not None:
        docs.append((config_path or "config", config_text))
    docs.extend(sorted(dropins))
    for src, text in docs:
        doc, understood = _yaml_doc(src, text, problems)
        parsed = parsed and understood
        if doc is None:
            continue
        for key, (field, _flag) in _FIELDS.items():
            v = _ci(doc, key)
            if v is not None:
                values[field] = _coerce(field, v, src, problems)
                sources[field] = src
    flags = parse_flags(argv or [])
    for key, (field, flag) in _FIELDS.items():
        if flag and flag in flags:
            values[field] = _coerce(field, flags[flag], f"flag {flag}", problems)
            sources[field] = f"flag {flag}"
    kw = {k: v for k, v in values.items() if v is not None}
    if not parsed and "cpu_manager_policy" not in kw:
        kw["cpu_manager_policy"] = None  # the file said something we could not read: unknown, not "none"
    override = flags.get("--hostname-override", "").strip().lower()
    cfg = KubeletConfig(
        found=config_text is not None or argv is not None,
        pid=pid,
        config_path=config_path,
        root_dir=root_dir,
        sources=sources,
        parsed=parsed,
        node_name=override or None,
        **kw,
    )
    if cfg.cpu_manager_policy not in ("none", "static", None):
        problems.append(Problem(sources.get("cpu_manager_policy", "kubelet"),
                                f"unknown cpuManagerPolicy {cfg.cpu_manager_policy!r}"))
    return cfg


# ---------------------------------------------------------------------------------------------- state
# The checkpoints are read in parse/checkpoint.py (CPU manager) and parse/memstate.py (memory manager); the
# helpers below render the common v1/v2 checksums for the simulator and the tests.


def checksum_v2(policy: str, default: str, entries: dict) -> int:
    """k/k state/checkpoint.go: a v2 file's checksum as every kubelet writes it (the legacy struct name)."""
    return fnv1a32(spew_cpu("CPUManagerCheckpoint", {"policy": policy, "default": default, "entries": entries}))


def checksum_v1(policy: str, default: str, entries: dict) -> int:
    return fnv1a32(spew_cpu("CPUManagerCheckpoint", {"policy": policy, "default": default, "entries": entries,
                                                      "v1": True}))
