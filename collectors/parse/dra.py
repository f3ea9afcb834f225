"""Dynamic Resource Allocation: kubelet's DRA manager checkpoint, `<root-dir>/dra_manager_state`.

Kubelet 1.32+ (k/k pkg/kubelet/cm/dra/state/checkpoint.go, commit 59555c6):
    {"Data": "<JSON text of a DRACheckpoint>", "Checksum": <crc32 IEEE of that text>}
    Data = {"kind": "DRACheckpoint", "apiVersion": "checkpoint.dra.kubelet.k8s.io/v1",
            "Entries": [{"ClaimUID", "ClaimName", "Namespace", "PodUIDs": {"<pod uid>": {}},
                         "DriverState": {"<driver>": {"Devices": [{"PoolName", "DeviceName",
                                                                   "RequestNames": [..], "CDIDeviceIDs": [..]}]}}}]}
Kubelet refuses a file whose Checksum is not the CRC-32 of Data (VerifyChecksum): so do we (said, the claims still
shown). The alpha layout of 1.27-1.31 ({"version": "v1", "entries": [{"DriverName", "ClassName", "ClaimUID",
"ClaimName", "Namespace", "PodUIDs", "CDIDevices"...}], "checksum": N}, a go-spew checksum) is read, its checksum
not verified (said as unknown, never as corrupt).
The checkpoint names claims per pod; which container uses which claim is in the pod's spec (the API), not here.
Decoded as kubelet decodes it: the one checkpoint loader, Go's key matching (gojson.fields).
"""
from __future__ import annotations

import zlib

from ..errors import Problem
from ..model import DraCheckpoint, DraClaim, DraDevice
from . import gojson as g
from .checkpoint import json_object

MAX_DRA = 4 * 1024 * 1024  # the probe sends at most 1 MB of a kubelet file; more is no checkpoint


def parse_dra_checkpoint(text: str, source: str, problems: list[Problem]) -> DraCheckpoint | None:
    """The checkpoint -> DraCheckpoint; None (with the problem said) when it is not one."""
    doc = json_object(text, source, problems, MAX_DRA)
    if doc is None:
        return None
    top = g.fields(doc, ("Data", "Checksum", "version", "entries"))
    data = top.get("Data")
    if isinstance(data, str):
        return _current(data, top.get("Checksum"), source, problems)
    if isinstance(top.get("entries"), list) or isinstance(top.get("version"), str):
        claims = _claims(top.get("entries"), source, problems)
        return DraCheckpoint(claims, None, "v1-alpha")
    problems.append(Problem(source, "DRA checkpoint has neither Data (kubelet 1.32+) nor entries (1.27-1.31)"))
    return None


def dra_checksum(data: str) -> int:
    """The checksum kubelet writes for this Data text (crc32.ChecksumIEEE of its bytes)."""
    return zlib.crc32(g.go_string_bytes(data)) & 0xFFFFFFFF


def _current(data: str, checksum, source: str, problems: list[Problem]) -> DraCheckpoint | None:
    ok: bool | None = None
    if not (isinstance(checksum, int) and not isinstance(checksum, bool) and 0 <= checksum <= 0xFFFFFFFF):
        # kubelet decodes it into a uint32: missing (0), a float, a string or out of range fails its check
        problems.append(Problem(source, f"DRA checkpoint Checksum {str(checksum)[:40]!r} is not a uint32 CRC of "
                                        "its Data: kubelet would refuse this file"))
        ok = False
    else:
        ok = dra_checksum(data) == checksum
        if not ok:
            problems.append(Problem(source, f"DRA checkpoint checksum {checksum} does not match its Data (computed "
                                            f"{dra_checksum(data)}): kubelet would refuse this file"))
    inner = json_object(data, source + " (Data)", problems, MAX_DRA)
    if inner is None:
        return None
    f = g.fields(inner, ("kind", "apiVersion", "Entries"))
    if f.get("kind") not in (None, "DRACheckpoint"):
        problems.append(Problem(source, f"DRA checkpoint Data is of kind {str(f.get('kind'))[:40]!r}, not DRACheckpoint"))
    return DraCheckpoint(_claims(f.get("Entries"), source, problems), ok, str(f.get("apiVersion") or ""))


def _claims(entries, source: str, problems: list[Problem]) -> tuple[DraClaim, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        problems.append(Problem(source, "DRA checkpoint Entries is not a list"))
        return ()
    out = []
    for i, e in enumerate(entries):
        claim = _claim(e, i, source, problems)
        if claim is not None:
            out.append(claim)
    return tuple(out)


def _claim(e, i: int, source: str, problems: list[Problem]) -> DraClaim | None:
    if not isinstance(e, dict):
        problems.append(Problem(source, f"DRA checkpoint Entries[{i}] is not an object"))
        return None
    f = g.fields(e, ("ClaimUID", "ClaimName", "Namespace", "PodUIDs", "DriverState", "DriverName", "CDIDevices"))
    uid, name, ns, pods = f.get("ClaimUID"), f.get("ClaimName"), f.get("Namespace"), f.get("PodUIDs")
    if not (isinstance(name, str) and isinstance(ns, str)) or (uid is not None and not isinstance(uid, str)):
        problems.append(Problem(source, f"DRA checkpoint Entries[{i}]: ClaimName or Namespace is not a string"))
        return None
    pod_uids = tuple(sorted(k for k in pods if isinstance(k, str))) if isinstance(pods, dict) else ()
    devices = _devices(f.get("DriverState"), i, source, problems)
    if not devices and isinstance(f.get("DriverName"), str):  # the alpha layout: a driver, CDI ids per driver
        cdi = f.get("CDIDevices")
        ids = cdi.get(f["DriverName"]) if isinstance(cdi, dict) else None
        devices = (DraDevice(f["DriverName"], "", "", (), _strs(ids)),)
    return DraClaim(uid or "", name, ns, pod_uids, devices)


def _devices(state, i: int, source: str, problems: list[Problem]) -> tuple[DraDevice, ...]:
    if state is None:
        return ()
    if not isinstance(state, dict):
        problems.append(Problem(source, f"DRA checkpoint Entries[{i}].DriverState is not an object"))
        return ()
    out = []
    for driver in sorted(k for k in state if isinstance(k, str)):
        ds = state[driver]
        devs = g.fields(ds, ("Devices",)).get("Devices") if isinstance(ds, dict) else None
        for d in devs if isinstance(devs, list) else ():
            if not isinstance(d, dict):
                continue
            f = g.fields(d, ("PoolName", "DeviceName", "RequestNames", "CDIDeviceIDs"))
            out.append(DraDevice(driver, _s(f.get("PoolName")), _s(f.get("DeviceName")), _strs(f.get("RequestNames")),
                                 _strs(f.get("CDIDeviceIDs"))))
    return tuple(out)


def _s(v) -> str:
    return v if isinstance(v, str) else ""


def _strs(v) -> tuple[str, ...]:
    return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list) else ()
