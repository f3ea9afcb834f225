"""cpu_manager_state (v1-v4) and memory_manager_state (v1-v3), accepted and refused as kubelet 1.36+ does.

Kubelet tries the newest struct first and falls back (k/k pkg/kubelet/cm/cpumanager/state/state_checkpoint.go
loadAndMigrateCheckpointV4/V3, loadCheckpointV2; memorymanager/state/state_checkpoint.go):
- CPU v4 (`data`: the state as a JSON string; `dataChecksum` = FNV-1a 32 of "(string)"+data): when `data` or
  `dataChecksum` is set the file IS v4 (no fallback); the state is read from inside `data` only.
- CPU v3 (`podEntries`): checksum over `(*state.CPUManagerCheckpointV3){…}` or the legacy name
  `CPUManagerCheckpoint`; 0 is not special here. Kubelet's v2 files also verify as v3 (empty PodEntries).
- CPU v2: checksum 0 accepted (legacy); else over the V2 name or the legacy name. podEntries are ignored.
- CPU v1 (entries keyed by container id): kubelet >= 1.36 no longer reads it; <= 1.35 did (legacy name).
- Memory v3 (`data`/`dataChecksum`), v2 (`podEntries`; legacy name only), v1 (0 accepted; legacy or V1 name).
A checksum that matches no hash kubelet accepts is a mismatch (kubelet would say "checkpoint is corrupted");
the content is still shown. Sources: k/k state/checkpoint.go of both managers (VerifyChecksum), state.go.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import Problem
from ..model import CpuManagerState
from . import gojson as g
from .cpuset import CpusetError, parse_cpuset

MAX_JSON = 16 * 1024 * 1024
CPU_KEYS = ("policyName", "defaultCpuSet", "entries", "podEntries", "checksum", "data", "dataChecksum")


def json_object(text: str, source: str, problems: list[Problem], limit: int = MAX_JSON) -> dict | None:
    """A checkpoint's JSON object as Go decodes it (gojson.loads), or None with the problem said. Every
    checkpoint kubelet writes (CPU, memory, device manager) is read through here."""
    if len(text) > limit:
        problems.append(Problem(source, f"state file is {len(text)} bytes: too large to be a checkpoint, not read"))
        return None
    try:
        doc = g.loads(text)
    except json.JSONDecodeError as err:
        problems.append(Problem(source, f"not valid JSON: {err.msg} (char {err.pos})"))
        return None
    except ValueError as err:  # NaN, nesting too deep, a number too long for int() (4300 digits): no .msg
        problems.append(Problem(source, f"not JSON kubelet reads: {str(err).partition(':')[0]}"))
        return None
    if not isinstance(doc, dict):
        problems.append(Problem(source, "not a JSON object"))
        return None
    return doc


def go_cpuset(s: str) -> tuple[int, ...]:
    """k8s.io/utils/cpuset.Parse: 'N' or 'N-M' elements, comma-separated; anything else an error."""
    out: set[int] = set()
    if s == "":
        return ()
    for r in s.split(","):
        a, dash, b = r.partition("-")
        lo = _atoi(a)
        hi = _atoi(b) if dash else lo
        if lo > hi:
            raise g.GoError(f"invalid range {r!r} ({lo} > {hi})")
        out.update(range(lo, hi + 1))
    return tuple(sorted(out))


def _atoi(s: str) -> int:
    body = s[1:] if s[:1] in "+-" else s
    if not body.isascii() or not body.isdecimal():
        raise g.GoError(f'strconv.Atoi: parsing "{s}": invalid syntax')
    v = int(s)
    if not -(1 << 63) <= v < (1 << 63):
        raise g.GoError(f'strconv.Atoi: parsing "{s}": value out of range')
    return v


# ------------------------------------------------------------------------------------------ CPU manager


def _pod_entry(v: Any, what: str) -> tuple[int, ...]:
    """state.PodEntry's UnmarshalJSON: {"cpuSet": "<cpuset>"} parsed with cpuset.Parse (null: empty)."""
    if v is None:
        return ()
    if not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into state.PodEntry")
    cs = g.go_string(g.fields(v, ("cpuSet",)).get("cpuSet"), f"{what}.cpuSet") or ""
    return go_cpuset(cs)


def _inner_map(v: Any, what: str) -> dict | None:
    return g.go_map(v, what, lambda x, w: g.go_string(x, w) or "")


def _cpu_struct(obj: dict, pods: bool, v1: bool = False) -> dict:
    """The fields of a CPUManagerCheckpointV1/V2/V3 (or V4's data) decoded from obj, Go's way: absent
    maps are empty (kubelet makes them), null ones nil. Raises GoError where json.Unmarshal fails."""
    f = g.fields(obj, CPU_KEYS)
    entry: Callable[[Any, str], Any] = (lambda x, w: g.go_string(x, w) or "") if v1 else _inner_map
    out = {"policy": g.go_string(f.get("policyName"), "policyName") or "",
           "default": g.go_string(f.get("defaultCpuSet"), "defaultCpuSet") or "",
           "entries": g.go_map(f["entries"], "entries", entry) if "entries" in f else {},
           "checksum": g.go_uint(f.get("checksum"), "checksum") or 0}
    if pods:
        out["pods"] = g.go_map(f["podEntries"], "podEntries", _pod_entry) if "podEntries" in f else {}
    return out


def spew_cpu(name: str, s: dict) -> str:
    """(*state.<name>){…} with Checksum 0, as dump.ForHash prints it."""
    if "pods" in s:
        ents = g.spew_map(s["entries"], lambda m: g.spew_map(m, g.spew_str))
        pods = " PodEntries:(state.PodCPUAssignments)" + g.spew_map(s["pods"], _spew_pod_entry)
        etype = "map[string]map[string]string"
    else:
        flat = s["entries"] is not None and any(isinstance(v, str) for v in s["entries"].values())
        ents = g.spew_map(s["entries"], g.spew_str if flat else (lambda m: g.spew_map(m, g.spew_str)))
        pods, etype = "", "map[string]string" if flat or s.get("v1") else "map[string]map[string]string"
    return (f"(*state.{name}){{PolicyName:(string){g.spew_str(s['policy'])} "
            f"DefaultCPUSet:(string){g.spew_str(s['default'])} Entries:({etype}){ents}{pods} "
            "Checksum:(checksum.Checksum)0}")


def _spew_pod_entry(cpus: tuple[int, ...]) -> str:
    elems = "map[" + " ".join(f"{c}:{{}}" for c in cpus) + "]"
    return f"{{CPUSet:(cpuset.CPUSet){{elems:(map[int]struct {{}}){elems}}}}}"


def cpu_hashes(s: dict, names: tuple[str, ...]) -> dict[str, int]:
    """{struct name: checksum} for each name kubelet renders this struct under."""
    return {n: g.fnv1a32(spew_cpu(n, s)) for n in names}


_V3_NAMES = ("CPUManagerCheckpointV3", "CPUManagerCheckpoint")
_V2_NAMES = ("CPUManagerCheckpointV2", "CPUManagerCheckpoint")


def parse_cpu_manager_state(text: str, source: str, problems: list[Problem]) -> CpuManagerState | None:
    """Any checkpoint version -> CpuManagerState, or None (with the problem said) when kubelet could not
    decode it either. A checksum kubelet would reject is a problem and checksum_ok False, not a refusal."""
    doc = json_object(text, source, problems)
    if doc is None:
        return None
    if g.is_v_data(doc):
        return _cpu_v4(doc, source, problems)
    return _cpu_legacy(doc, source, problems)


def _cpu_v4(doc: dict, source: str, problems: list[Problem]) -> CpuManagerState | None:
    """v4: everything from inside `data` (the outer fields are kept for older kubelets only)."""
    try:
        outer = _cpu_struct(doc, pods=True)
        f = g.fields(doc, ("data", "dataChecksum"))
        data = g.go_string(f.get("data"), "data") or ""
        dsum = g.go_uint(f.get("dataChecksum"), "dataChecksum") or 0
        inner_doc = g.loads(data) if data else None
        if not isinstance(inner_doc, dict):
            raise g.GoError("v4 'data' is not a JSON object" if data else "v4 'data' is empty")
        inner = _cpu_struct(inner_doc, pods=True)
    except ValueError as err:
        problems.append(Problem(source, f"v4 checkpoint cannot be decoded (kubelet refuses it): {err}"))
        return None
    want = g.fnv1a32("(string)" + data)
    # the checksum of data sits in dataChecksum; some revisions' files carry it in checksum beside data
    ok = want in (dsum, outer["checksum"])
    if not ok:
        problems.append(Problem(source, f"v4 dataChecksum {dsum} does not match data (computed {want}): "
                                "kubelet would refuse this file as corrupted"))
    return _cpu_state(4, inner, source, problems, dsum or outer["checksum"], ok,
                      "data" if ok else "")


def _cpu_legacy(doc: dict, source: str, problems: list[Problem]) -> CpuManagerState | None:
    """v3, else v2, else (kubelet <= 1.35 only) v1: the first that decodes and verifies wins."""
    tries: list[tuple[int, dict, dict[str, int]]] = []
    errors: list[str] = []
    for version, pods, names, v1 in ((3, True, _V3_NAMES, False), (2, False, _V2_NAMES, False),
                                     (1, False, ("CPUManagerCheckpoint",), True)):
        if v1 and not any(e.startswith("v2:") for e in errors):
            break  # kubelet >= 1.36 tries no v1; v1 is read only when v2 cannot decode it (<= 1.35's path)
        try:
            s = _cpu_struct(doc, pods=pods, v1=v1)
        except g.GoError as err:
            errors.append(f"v{version}: {err}")
            continue
        if v1:
            s["v1"] = True
        if s["checksum"] == 0 and version != 3:  # "accept empty checksum for compatibility"
            return _legacy_state(version, s, doc, source, problems, None, "")
        hashes = cpu_hashes(s, names)
        for name, h in hashes.items():
            if h == s["checksum"]:
                return _legacy_state(version, s, doc, source, problems, True, name)
        tries.append((version, s, hashes))
    if not tries:
        problems.append(Problem(source, "cannot be decoded as any checkpoint version: " + "; ".join(errors)))
        return None
    version, s, _ = next((t for t in tries if t[0] != 1), tries[0])
    computed = ", ".join(f"{n} {h}" for _, _, hs in tries for n, h in hs.items())
    as_v1 = {"policy": s["policy"], "default": s["default"], "entries": s["entries"], "v1": True}
    old = " (it is the v1 rendering: kubelets <= 1.35 accepted it, 1.36+ does not)" \
        if not s["entries"] and g.fnv1a32(spew_cpu("CPUManagerCheckpoint", as_v1)) == s["checksum"] else ""
    problems.append(Problem(source, f"checksum {s['checksum']} does not match the content{old} (computed "
                            f"{computed}); kubelet would refuse it as corrupted; the file may have been edited by hand"))
    return _legacy_state(version, s, doc, source, problems, False, "")


def _legacy_state(version: int, s: dict, doc: dict, source: str, problems: list[Problem], ok: bool | None,
                  name: str) -> CpuManagerState | None:
    has_pods = "podentries" in {g.fold(k) for k in doc}
    if version == 3 and not has_pods:
        version = 2  # a v2-shaped file, verified as v3 (kubelet's empty PodEntries)
    if version == 2 and has_pods:
        problems.append(Problem(source, "podEntries ignored: kubelet reads this file as v2 "
                                "(its checksum is not the v3 one), without pod-level CPUs"))
    # a v1 file (entries keyed by container id) exists only where a kubelet <= 1.17 wrote it and runs still:
    # that kubelet reads it, so it is no fault of the node (kubelet >= 1.36 would not read it)
    return _cpu_state(version, s, source, problems, s["checksum"] or None, ok, name)


def _cpu_state(version: int, s: dict, source: str, problems: list[Problem], checksum: int | None,
               ok: bool | None, name: str) -> CpuManagerState | None:
    """The decoded checkpoint -> CpuManagerState; None when kubelet's restoreState would refuse it (a
    defaultCpuSet or an entry cpuset.Parse rejects: "could not parse …")."""
    if not s["policy"]:
        problems.append(Problem(source, "no policyName: kubelet would refuse it "
                                "(its policy differs from any configured one)"))
    refused = len(problems)
    default = _set(s["default"], source, "defaultCpuSet", problems)
    entries: dict = {}
    for uid, val in (s["entries"] or {}).items():
        if isinstance(val, str):  # v1: containerID -> cpuset (pod uid "")
            entries.setdefault("", {})[uid] = _set(val, source, f"entry {uid}", problems)
            continue
        for cname, cval in (val or {}).items():
            entries.setdefault(uid, {})[cname] = _set(cval, source, f"entry {uid}/{cname}", problems)
    if len(problems) > refused:
        problems.append(Problem(source, "kubelet cannot parse this checkpoint's CPU sets: it refuses it"))
        return None
    pods = {uid: frozenset(cs) for uid, cs in (s.get("pods") or {}).items()} if version >= 3 else {}
    return CpuManagerState(version, s["policy"], default, entries, pods, checksum, ok, name)


def _set(text: str, source: str, what: str, problems: list[Problem]) -> frozenset[int]:
    """A cpuset of the checkpoint, parsed as k8s.io/utils/cpuset.Parse does (a problem when it fails)."""
    try:
        return frozenset(go_cpuset(text))
    except g.GoError as err:
        why = str(err)
    try:
        parse_cpuset(text)
    except CpusetError as err:  # its message says more (reversed range, bad number)
        why = str(err)
    problems.append(Problem(source, f"{what}: {why}"))
    return frozenset()
