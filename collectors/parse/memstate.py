"""memory_manager_state v1-v3, accepted and refused as kubelet 1.36+ does (k/k
pkg/kubelet/cm/memorymanager/state/{checkpoint.go,state.go,state_checkpoint.go}):
- v3: `data` (the state as a JSON string) with `dataChecksum` = FNV-1a 32 of "(string)"+data; when either is
  set the file is v3 and everything is read from inside `data` (no fallback).
- v2: `podEntries` (pod-level memory); checksum over the legacy name `MemoryManagerCheckpoint` only; 0 is not
  special.
- v1: checksum 0 accepted; else over the legacy name or `MemoryManagerCheckpointV1`.
All three keep the same machineState (per NUMA node a memoryMap of "memory", "hugepages-2Mi", "hugepages-1Gi"
tables in bytes) and entries (blocks of type "memory" or "hugepages-<size>"); v3 has them inside `data`, beside
the outer copy kubelet still writes (kubelet v1.37.2 on this machine wrote v3, v1.35.4 v1: 2026-12).
"""
from __future__ import annotations

from typing import Any

from ..errors import Problem
from ..model import MemoryAssignment, MemoryManagerState, MemoryTable
from . import gojson as g
from .checkpoint import json_object

KEYS = ("policyName", "machineState", "entries", "podEntries", "checksum")
_TABLE = ("total", "systemReserved", "allocatable", "reserved", "free")  # state.MemoryTable's JSON names


def _table(v: Any, what: str) -> dict | None:
    """*state.MemoryTable (null: a nil pointer)."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into state.MemoryTable")
    f = g.fields(v, _TABLE)
    return {k: g.go_uint(f.get(k), f"{what}.{k}") or 0 for k in _TABLE}


def _node(v: Any, what: str) -> dict | None:
    """*state.NUMANodeState."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into state.NUMANodeState")
    f = g.fields(v, ("numberOfAssignments", "memoryMap", "cells"))
    return {"n": g.go_int(f.get("numberOfAssignments"), f"{what}.numberOfAssignments") or 0,
            "map": g.go_map(f.get("memoryMap"), f"{what}.memoryMap", _table),
            "cells": g.go_list(f.get("cells"), f"{what}.cells", g.go_int)}


def _block(v: Any, what: str) -> dict:
    """state.Block (null: the zero Block)."""
    if v is not None and not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into state.Block")
    f = g.fields(v or {}, ("numaAffinity", "type", "size"))
    return {"aff": g.go_list(f.get("numaAffinity"), f"{what}.numaAffinity", g.go_int),
            "type": g.go_string(f.get("type"), f"{what}.type") or "",
            "size": g.go_uint(f.get("size"), f"{what}.size") or 0}


def _blocks(v: Any, what: str) -> list | None:
    return g.go_list(v, what, _block)


def _pod(v: Any, what: str) -> dict:
    if v is not None and not isinstance(v, dict):
        raise g.GoError(f"{what}: cannot unmarshal into state.PodEntry")
    return {"blocks": _blocks(g.fields(v or {}, ("memoryBlocks",)).get("memoryBlocks"), f"{what}.memoryBlocks")}


def _struct(obj: dict, pods: bool) -> dict:
    """MemoryManagerCheckpointV1/V2 (or v3's data) decoded Go's way; GoError where json.Unmarshal fails."""
    f = g.fields(obj, KEYS)
    machine = g.go_map(f["machineState"], "machineState", _node) if "machineState" in f else {}
    for k in machine or {}:
        if _int_key(k) is None:
            raise g.GoError(f"machineState key {k!r} is not an int")
    out = {"policy": g.go_string(f.get("policyName"), "policyName") or "", "machine": machine,
           "entries": g.go_map(f["entries"], "entries", lambda x, w: g.go_map(x, w, _blocks)) if "entries" in f else {},
           "checksum": g.go_uint(f.get("checksum"), "checksum") or 0}
    if pods:
        out["pods"] = g.go_map(f["podEntries"], "podEntries", _pod) if "podEntries" in f else {}
    return out


def _int_key(k: str) -> int | None:
    body = k[1:] if k[:1] in "+-" else k
    return int(k) if body.isascii() and body.isdecimal() else None


def _spew_block(b: dict) -> str:
    return (f"{{NUMAAffinity:([]int){g.spew_list(b['aff'], str)} Type:(v1.ResourceName){g.spew_str(b['type'])} "
            f"Size:(uint64){b['size']}}}")


def _spew_table(t: dict | None) -> str:
    if t is None:
        return "<nil>"
    return ("<*>{" + f"TotalMemSize:(uint64){t['total']} SystemReserved:(uint64){t['systemReserved']} "
            f"Allocatable:(uint64){t['allocatable']} Reserved:(uint64){t['reserved']} Free:(uint64){t['free']}}}")


def _spew_node(n: dict | None) -> str:
    if n is None:
        return "<nil>"
    return ("<*>{" + f"NumberOfAssignments:(int){n['n']} MemoryMap:(map[v1.ResourceName]*state.MemoryTable)"
            f"{g.spew_map(n['map'], _spew_table)} Cells:([]int){g.spew_list(n['cells'], str)}}}")


def spew(name: str, s: dict) -> str:
    """(*state.<name>){…} with Checksum 0, as dump.ForHash prints it."""
    machine = g.spew_map({str(_int_key(k)): v for k, v in s["machine"].items()} if s["machine"] is not None
                         else None, _spew_node, int_keys=True)
    ents = g.spew_map(s["entries"], lambda m: g.spew_map(m, lambda b: g.spew_list(b, _spew_block)))
    pods = (" PodEntries:(state.PodMemoryAssignments)"
            + g.spew_map(s["pods"], lambda p: "{MemoryBlocks:([]state.Block)" + g.spew_list(p["blocks"], _spew_block) + "}")
            ) if "pods" in s else ""
    return (f"(*state.{name}){{PolicyName:(string){g.spew_str(s['policy'])} MachineState:(state.NUMANodeMap){machine} "
            f"Entries:(state.ContainerMemoryAssignments){ents}{pods} Checksum:(checksum.Checksum)0}}")


def parse_memory_manager_state(text: str, source: str, problems: list[Problem]) -> MemoryManagerState | None:
    doc = json_object(text, source, problems)  # the same checks as the CPU manager's checkpoint (size, JSON, object)
    if doc is None:
        return None
    try:
        if g.is_v_data(doc):
            return _v3(doc, source, problems)
        return _legacy(doc, source, problems)
    except ValueError as err:
        problems.append(Problem(source, f"memory manager checkpoint cannot be decoded (kubelet refuses it): {err}"))
        return None


def _v3(doc: dict, source: str, problems: list[Problem]) -> MemoryManagerState:
    _struct(doc, pods=False)  # the outer (v1) fields must decode too
    f = g.fields(doc, ("data", "dataChecksum", "checksum"))
    data = g.go_string(f.get("data"), "data") or ""
    dsum = g.go_uint(f.get("dataChecksum"), "dataChecksum") or 0
    inner = g.loads(data) if data else None
    if not isinstance(inner, dict):
        raise g.GoError("v3 'data' is not a JSON object" if data else "v3 'data' is empty")
    want = g.fnv1a32("(string)" + data)
    ok = want == dsum
    if not ok:
        problems.append(Problem(source, f"v3 dataChecksum {dsum} does not match data (computed {want}): "
                                "kubelet would refuse this file as corrupted"))
    return _state(3, _struct(inner, pods=True), dsum, ok, "data" if ok else "")


def _legacy(doc: dict, source: str, problems: list[Problem]) -> MemoryManagerState:
    """v2, else v1 (kubelet's order); a checksum neither accepts is a mismatch, the content still shown."""
    tries = []
    errors = []
    for version, names in ((2, ("MemoryManagerCheckpoint",)), (1, ("MemoryManagerCheckpoint", "MemoryManagerCheckpointV1"))):
        try:
            s = _struct(doc, pods=version == 2)
        except g.GoError as err:
            errors.append(str(err))
            continue
        if version == 1 and s["checksum"] == 0:
            return _state(1, s, None, None, "")
        hashes = {n: g.fnv1a32(spew(n, s)) for n in names}
        for n, h in hashes.items():
            if h == s["checksum"]:
                return _state(version, s, s["checksum"], True, n)
        tries.append((version, s, hashes))
    if not tries:
        raise g.GoError("; ".join(errors))
    has_pods = "podentries" in {g.fold(k) for k in doc}
    version, s, _ = next((t for t in tries if t[0] == (2 if has_pods else 1)), tries[0])
    computed = ", ".join(f"v{v} {n} {h}" for v, _, hs in tries for n, h in hs.items())
    problems.append(Problem(source, f"checksum {s['checksum']} does not match the content (computed {computed}); "
                            "kubelet would refuse it as corrupted"))
    return _state(version, s, s["checksum"], False, "")


def _assignments(blocks: list | None) -> tuple[MemoryAssignment, ...]:
    return tuple(MemoryAssignment(b["type"], tuple(b["aff"] or ()), b["size"]) for b in blocks or ())


def _machine(machine: dict | None) -> dict[int, dict[str, MemoryTable]]:
    """machineState -> {NUMA node: {resource: MemoryTable}} (a nil node or table left out)."""
    out: dict[int, dict[str, MemoryTable]] = {}
    for k, n in (machine or {}).items():
        numa = _int_key(k)
        if numa is None or n is None:
            continue
        out[numa] = {r: MemoryTable(t["total"], t["systemReserved"], t["allocatable"], t["reserved"], t["free"])
                     for r, t in sorted((n["map"] or {}).items()) if t is not None}
    return dict(sorted(out.items()))


def _groups(machine: dict | None) -> dict[int, tuple[int, tuple[int, ...]]]:
    """machineState -> {NUMA node: (numberOfAssignments, cells)}."""
    out = {}
    for k, n in (machine or {}).items():
        numa = _int_key(k)
        if numa is not None and n is not None:
            out[numa] = (n["n"], tuple(n["cells"] or ()))
    return dict(sorted(out.items()))


def _state(version: int, s: dict, checksum: int | None, ok: bool | None, name: str) -> MemoryManagerState:
    entries = {uid: {c: _assignments(bl) for c, bl in (ctrs or {}).items()} for uid, ctrs in (s["entries"] or {}).items()}
    pods = {uid: _assignments(p["blocks"]) for uid, p in (s.get("pods") or {}).items()}
    return MemoryManagerState(s["policy"], entries, pods, version, checksum or None, ok, name, _machine(s["machine"]),
                              _groups(s["machine"]))
