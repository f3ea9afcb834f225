"""Kubelet: KubeletConfiguration (file, drop-ins, flags), cpu_manager_state v1-v4, memory_manager_state.

Sources: k/k staging/src/k8s.io/kubelet/config/v1beta1/{types.go,defaults.go};
pkg/kubelet/cm/cpumanager/state/checkpoint.go (V1, V2, V3 podEntries, V4 data+dataChecksum);
pkg/kubelet/checkpointmanager/checksum (FNV-1a 32 over a go-spew rendering; a mismatch is a warning only).
Go's encoding/json matches keys case-insensitively and ignores unknown ones: so do we.
"""
from __future__ import annotations

import json

import yaml

from ..errors import Problem
from ..model import CpuManagerState, KubeletConfig, MemoryAssignment, MemoryManagerState
from .cpuset import CpusetError, parse_cpuset

MAX_JSON = 16 * 1024 * 1024


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
    "memoryManagerPolicy": ("memory_manager_policy", "--memory-manager-policy"),
    "cgroupDriver": ("cgroup_driver", "--cgroup-driver"),
    "cgroupRoot": ("cgroup_root", "--cgroup-root"),
    "kubeReserved": ("kube_reserved", "--kube-reserved"),
    "systemReserved": ("system_reserved", "--system-reserved"),
    "cpuManagerReconcilePeriod": ("reconcile_period", "--cpu-manager-reconcile-period"),
    "podLogsDir": ("pod_logs_dir", None),  # config only (1.29+)
}
_MAPS = {"cpu_manager_policy_options", "kube_reserved", "system_reserved"}


def _coerce(field: str, value, src: str, problems: list):
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
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            problems.append(Problem(src, f"kubelet config is not valid YAML{where}: policy unknown"))
            parsed = False
            continue
        if doc is None:
            continue
        if not isinstance(doc, dict):
            problems.append(Problem(src, "kubelet config is not a YAML mapping: policy unknown"))
            parsed = False
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
    cfg = KubeletConfig(
        found=config_text is not None or argv is not None,
        pid=pid,
        config_path=config_path,
        root_dir=root_dir,
        sources=sources,
        parsed=parsed,
        **kw,
    )
    if cfg.cpu_manager_policy not in ("none", "static", None):
        problems.append(Problem(sources.get("cpu_manager_policy", "kubelet"),
                                f"unknown cpuManagerPolicy {cfg.cpu_manager_policy!r}"))
    return cfg


# ---------------------------------------------------------------------------------------------- state


def fnv1a32(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _spew_map(m: dict) -> str:
    parts = []
    for k in sorted(m):
        v = m[k]
        parts.append(f"{k}:{_spew_map(v) if isinstance(v, dict) else v}")
    return "map[" + " ".join(parts) + "]"


def checksum_v2(policy: str, default: str, entries: dict) -> int:
    """k/k state/checkpoint.go VerifyChecksum for V2 (also what V3 files without podEntries hash as)."""
    s = (
        f"(*state.CPUManagerCheckpoint){{PolicyName:(string){policy} DefaultCPUSet:(string){default} "
        f"Entries:(map[string]map[string]string){_spew_map(entries)} Checksum:(checksum.Checksum)0}}"
    )
    return fnv1a32(s)


def checksum_v1(policy: str, default: str, entries: dict) -> int:
    s = (
        f"(*state.CPUManagerCheckpoint){{PolicyName:(string){policy} DefaultCPUSet:(string){default} "
        f"Entries:(map[string]string){_spew_map(entries)} Checksum:(checksum.Checksum)0}}"
    )
    return fnv1a32(s)


def parse_cpu_manager_state(text: str, source: str, problems: list[Problem]) -> CpuManagerState | None:
    """Any checkpoint version -> CpuManagerState. None (with a problem) when it cannot be understood."""
    doc = _state_doc(text, source, problems)
    if doc is None:
        return None
    version, inner = _unwrap_v4(doc, source, problems)
    policy = _ci(inner, "policyName")
    default_s = _ci(inner, "defaultCpuSet", "")
    entries_raw = _ci(inner, "entries", {}) or {}
    pod_raw = _ci(inner, "podEntries", {}) or {}
    if not isinstance(policy, str):
        problems.append(Problem(source, "no policyName"))
        return None
    if not isinstance(default_s, str):
        problems.append(Problem(source, "defaultCpuSet is not a string"))
        default_s = ""
    try:
        default = parse_cpuset(default_s)
    except CpusetError as err:
        problems.append(Problem(source, f"defaultCpuSet: {err}"))
        default = frozenset()
    if not isinstance(entries_raw, dict):
        problems.append(Problem(source, "entries is not an object"))
        entries_raw = {}
    entries, flat_v1 = _state_entries(entries_raw, source, problems)
    pod_entries: dict = {}
    if isinstance(pod_raw, dict) and pod_raw:
        version = max(version, 3)
        pod_entries = _state_pod_entries(pod_raw, source, problems)
    if flat_v1:
        version = 1
    checksum = _ci(doc, "checksum")
    ok = None
    if isinstance(checksum, int) and checksum and version in (1, 2) and not pod_raw:
        ok = _checksum_ok(checksum, policy, default_s, entries_raw, flat_v1, source, problems)
    return CpuManagerState(version, policy, default, entries, pod_entries, checksum if isinstance(checksum, int) else None, ok)


def _state_doc(text: str, source: str, problems: list[Problem]) -> dict | None:
    """The checkpoint's JSON object, or None with the problem said."""
    if len(text) > MAX_JSON:
        problems.append(Problem(source, f"state file is {len(text)} bytes: too large to be a checkpoint"))
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        problems.append(Problem(source, f"not valid JSON: {err.msg} (char {err.pos})"))
        return None
    except ValueError as err:  # valid JSON, but a number too long for int() (4300 digits): no .msg, .pos
        problems.append(Problem(source, f"not a checkpoint: {str(err).partition(':')[0]}"))
        return None
    if not isinstance(doc, dict):
        problems.append(Problem(source, "not a JSON object"))
        return None
    return doc


def _unwrap_v4(doc: dict, source: str, problems: list[Problem]) -> tuple[int, dict]:
    """(version so far, the object holding the checkpoint): v4 wraps it in a JSON string "data" whose
    "dataChecksum" covers "(string)"+data; anything else is v2 until entries say otherwise."""
    data = _ci(doc, "data")
    if not (isinstance(data, str) and data):
        return 2, doc
    want = _ci(doc, "dataChecksum")
    inner = doc
    try:
        inner = json.loads(data)
        if not isinstance(inner, dict):
            raise ValueError("data is not an object")
    except ValueError as err:
        problems.append(Problem(source, f"v4 'data' is not a JSON object: {err}; using legacy fields"))
        inner = doc
    if isinstance(want, int) and want and fnv1a32("(string)" + data) != want:
        problems.append(Problem(source, "v4 dataChecksum does not match (kubelet would reject this file)"))
    return 4, inner


def _state_entries(entries_raw: dict, source: str, problems: list[Problem]) -> tuple[dict, bool]:
    """entries -> ({pod uid: {container: cpus}}, whether it is v1's flat containerID -> cpuset map)."""
    entries: dict = {}
    flat_v1 = False
    for uid, val in entries_raw.items():
        if isinstance(val, str):  # v1: containerID -> cpuset
            flat_v1 = True
            cs = _entry_set(val, source, f"{uid}", problems)
            if cs is not None:
                entries.setdefault("", {})[uid] = cs
        elif isinstance(val, dict):
            for cname, cval in val.items():
                if not isinstance(cval, str):
                    problems.append(Problem(source, f"entry {uid}/{cname} is not a cpuset string"))
                    continue
                cs = _entry_set(cval, source, f"{uid}/{cname}", problems)
                if cs is not None:
                    entries.setdefault(uid, {})[cname] = cs
        else:
            problems.append(Problem(source, f"entry {uid} has an unknown shape"))
    return entries, flat_v1


def _state_pod_entries(pod_raw: dict, source: str, problems: list[Problem]) -> dict:
    """v3's podEntries: pod uid -> its cpuSet."""
    out: dict = {}
    for uid, val in pod_raw.items():
        if isinstance(val, dict):
            cs = _ci(val, "cpuSet")
            if isinstance(cs, str):
                got = _entry_set(cs, source, f"pod {uid}", problems)
                if got is not None:
                    out[uid] = got
    return out


def _checksum_ok(checksum: int, policy: str, default_s: str, entries_raw: dict, flat_v1: bool, source: str,
                 problems: list[Problem]) -> bool:
    """Does the v1/v2 checksum match the content? (a file with no entries may have been written by a v1
    kubelet: its rendering differs, both are accepted)"""
    calcs = [checksum_v1(policy, default_s, entries_raw)] if flat_v1 else [checksum_v2(policy, default_s, entries_raw)]
    if not entries_raw:
        calcs.append(checksum_v1(policy, default_s, {}))
    ok = checksum in calcs
    if not ok:
        problems.append(Problem(source, f"checksum {checksum} does not match the content (computed {calcs[0]}); "
                                "the file may have been edited by hand"))
    return ok


def _entry_set(val: str, source: str, what: str, problems: list) -> frozenset[int] | None:
    try:
        return parse_cpuset(val)
    except CpusetError as err:
        problems.append(Problem(source, f"entry {what}: {err}"))
        return None


def parse_memory_manager_state(text: str, source: str, problems: list[Problem]) -> MemoryManagerState | None:
    doc = _state_doc(text, source, problems)  # the same checks as the CPU manager's checkpoint (size, JSON, object)
    if doc is None:
        return None
    entries: dict = {}
    raw = _ci(doc, "entries", {}) or {}
    if isinstance(raw, dict):
        for uid, ctrs in raw.items():
            if not isinstance(ctrs, dict):
                continue
            for cname, blocks in ctrs.items():
                out = []
                for b in blocks if isinstance(blocks, list) else []:
                    if not isinstance(b, dict):
                        continue
                    aff = _ci(b, "numaAffinity", []) or []
                    out.append(MemoryAssignment(str(_ci(b, "type", "")),
                                                tuple(int(x) for x in aff if isinstance(x, int)),
                                                int(_ci(b, "size", 0) or 0)))
                entries.setdefault(uid, {})[cname] = tuple(out)
    return MemoryManagerState(str(_ci(doc, "policyName", "")), entries)
