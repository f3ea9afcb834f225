"""Devices: kubelet's device-manager checkpoint, and where a device sits (NUMA node) by sysfs and NVIDIA's procfs.

`<root-dir>/device-plugins/kubelet_internal_checkpoint` (k/k pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go):
    {"Data": {"PodDeviceEntries": [{"PodUID", "ContainerName", "ResourceName",
                                    "DeviceIDs": {"<numa node>": [ids]},   ("-1": no NUMA affinity; 1.20+)
                                    "AllocResp": <base64 of the plugin's protobuf answer>}],
              "RegisteredDevices": {"<resource>": [ids]}},
     "Checksum": N}
Before 1.20 `DeviceIDs` was a plain list (checkpoint V1): read, the NUMA node unknown.
The checksum is kubelet's `checksum.New(cp.Data)`: FNV-1a 32 over go-spew's `%#v` of the Data struct with
k8s.io/utils dump.ForHash settings (sorted keys, no pointer addresses, no capacities). Kubelet refuses a file
whose checksum does not match; so we say so (a warning), and still show what the file says.
Read as kubelet decodes it (gojson.fields: keys matched as Go folds them, the last match winning), through
the one checkpoint loader (checkpoint.json_object) the CPU and memory checkpoints use.

Where a device sits: `/sys/bus/pci/devices/<addr>/numa_node` (kdoc ABI/testing/sysfs-bus-pci; "-1" when the
platform does not say), and `/proc/driver/nvidia/gpus/<pci addr>/information` ("GPU UUID:", "Bus Location:")
for NVIDIA GPU UUIDs (the ids NVIDIA's device plugin hands kubelet).
"""
from __future__ import annotations

import base64
import binascii
import re

from ..errors import Problem
from ..model import DeviceAllocation, DeviceCheckpoint
from . import gojson as g
from .checkpoint import json_object
from .kubelet import fnv1a32

MAX_CHECKPOINT = 4 * 1024 * 1024  # a node with thousands of VFs writes ~1 MB; more is no checkpoint
# a PCI address as sysfs names it: domain:bus:device.function (kdoc ABI/testing/sysfs-bus-pci)
_NO = "\x00unrenderable"  # a part go-spew would print but we cannot (kubelet would not have parsed it): no verdict
PCI_ADDR = re.compile(r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def parse_device_checkpoint(text: str, source: str, problems: list[Problem]) -> DeviceCheckpoint | None:
    """The checkpoint -> DeviceCheckpoint; None (with the problem said) when it is not one."""
    doc = json_object(text, source, problems, MAX_CHECKPOINT)
    if doc is None:
        return None
    top = g.fields(doc, ("Data", "Checksum"))
    data = top.get("Data")
    if not isinstance(data, dict):
        problems.append(Problem(source, "device checkpoint has no Data object"))
        return None
    allocs, registered, rendered, legacy = _render(data, source, problems)
    checksum = top.get("Checksum")
    checksum = checksum if isinstance(checksum, int) and not isinstance(checksum, bool) else None
    ok = None
    if checksum is not None and rendered is not None:
        ok = _verify(checksum, rendered, legacy, source, problems)
    return DeviceCheckpoint(tuple(allocs), registered, checksum, ok)


def device_checkpoint_checksum(data: dict) -> int | None:
    """The checksum kubelet writes for this Data object (the simulated nodes write real checkpoints with it)."""
    _, _, rendered, _ = _render(data, "", [])
    return fnv1a32(rendered) if rendered is not None else None


def _render(data: dict, source: str, problems: list[Problem]):
    """Data -> (allocations, registered, go-spew's %#v of it or None when it cannot be rendered, legacy)."""
    d = g.fields(data, ("PodDeviceEntries", "RegisteredDevices"))
    raw_entries = d.get("PodDeviceEntries")
    if raw_entries is not None and not isinstance(raw_entries, list):
        problems.append(Problem(source, "PodDeviceEntries is not a list"))
    allocs: list[DeviceAllocation] = []
    renders: list[str] | None = []
    legacy = False
    for i, e in enumerate(raw_entries if isinstance(raw_entries, list) else []):
        got = _entry(e, i, source, problems)
        if got is None:
            renders = None
            continue
        a, render, v1 = got
        allocs.extend(a)
        legacy = legacy or v1
        if render is None:
            renders = None
        elif renders is not None:
            renders.append(render)
    registered, reg_render = _registered(d.get("RegisteredDevices"), source, problems)
    if renders is None or reg_render is None or not (raw_entries is None or isinstance(raw_entries, list)):
        return allocs, registered, None, legacy
    entries = "<nil>" if raw_entries is None else "[" + " ".join(renders) + "]"
    name, ename = ("checkpointDataV1", "PodDevicesEntryV1") if legacy else ("checkpointData", "PodDevicesEntry")
    text = (f"(checkpoint.{name}){{PodDeviceEntries:([]checkpoint.{ename}){entries} "
            f"RegisteredDevices:(map[string][]string){reg_render}}}")
    return allocs, registered, text, legacy



def _strs(v) -> list[str] | None:
    return v if isinstance(v, list) and all(isinstance(x, str) for x in v) else None


def _spew_list(v: list[str] | None) -> str:
    """go-spew's %v of a []string: nil prints <nil>, an empty slice []"""
    return "<nil>" if v is None else "[" + " ".join(v) + "]"


def _numa_key(k: str) -> int | None:
    """A DevicesPerNUMA key (Go: int64, strconv.ParseInt): None when it is no integer (kubelet refuses the file)."""
    if not re.fullmatch(r"[+-]?[0-9]{1,18}", k):
        return None
    return int(k)


def _entry(e, i: int, source: str, problems: list[Problem]):
    """One PodDeviceEntries item -> (allocations, its spew rendering, whether it is the pre-1.20 list form);
    None (problem said) when it is not an entry."""
    if not isinstance(e, dict):
        problems.append(Problem(source, f"PodDeviceEntries[{i}] is not an object"))
        return None
    f = g.fields(e, ("PodUID", "ContainerName", "ResourceName", "DeviceIDs", "AllocResp"))
    uid, cname, res = f.get("PodUID"), f.get("ContainerName"), f.get("ResourceName")
    if not (isinstance(uid, str) and isinstance(cname, str) and isinstance(res, str)):
        problems.append(Problem(source, f"PodDeviceEntries[{i}]: PodUID, ContainerName or ResourceName is not a string"))
        return None
    ids = f.get("DeviceIDs")
    resp = _alloc_resp(f.get("AllocResp"), i, source, problems)
    allocs: list[DeviceAllocation] = []
    if isinstance(ids, list):  # checkpoint V1 (before 1.20): no NUMA node
        devs = [x for x in ids if isinstance(x, str)]
        allocs = [DeviceAllocation(uid, cname, res, d, None) for d in devs]
        ids_render = "([]string)" + _spew_list(devs)
        v1 = True
    else:
        per_numa, ids_render = _per_numa(ids, i, source, problems)
        allocs = [DeviceAllocation(uid, cname, res, d, n) for n, devs in per_numa for d in devs]
        v1 = False
    if _NO in (ids_render, resp):
        return allocs, None, v1
    render = (f"{{PodUID:(string){uid} ContainerName:(string){cname} ResourceName:(string){res} "
              f"DeviceIDs:{ids_render} AllocResp:([]uint8){resp}}}")
    return allocs, render, v1


def _per_numa(ids, i: int, source: str, problems: list[Problem]) -> tuple[list[tuple[int | None, list[str]]], str]:
    """DeviceIDs keyed by NUMA node -> ([(node or None for -1, ids)], spew rendering)."""
    if ids is None:
        return [], "(checkpoint.DevicesPerNUMA)<nil>"
    if not isinstance(ids, dict):
        problems.append(Problem(source, f"PodDeviceEntries[{i}].DeviceIDs is neither an object nor a list"))
        return [], _NO
    keyed: list[tuple[int, list[str] | None]] = []
    bad = False
    for k, v in ids.items():
        n = _numa_key(k)
        devs = _strs(v) if v is not None else None
        if n is None or (v is not None and devs is None):
            problems.append(Problem(source, f"PodDeviceEntries[{i}].DeviceIDs[{k[:20]!r}] is not <NUMA node>: [ids]"))
            bad = True
            continue
        keyed.append((n, devs))
    keyed.sort(key=lambda t: t[0])  # spew sorts int64 keys numerically
    render = _NO if bad else "(checkpoint.DevicesPerNUMA)map[" + " ".join(f"{n}:{_spew_list(d)}" for n, d in keyed) + "]"
    return [(None if n < 0 else n, d or []) for n, d in keyed], render


def _alloc_resp(v, i: int, source: str, problems: list[Problem]) -> str:
    """AllocResp ([]byte, base64 in JSON) as spew prints it: its bytes in decimal; _NO when not base64."""
    if v is None:
        return "<nil>"
    if not isinstance(v, str):
        problems.append(Problem(source, f"PodDeviceEntries[{i}].AllocResp is not a base64 string"))
        return _NO
    try:
        raw = base64.b64decode(v.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        problems.append(Problem(source, f"PodDeviceEntries[{i}].AllocResp is not base64"))
        return _NO
    return "[" + " ".join(str(b) for b in raw) + "]"


def _registered(raw, source: str, problems: list[Problem]):
    """RegisteredDevices -> (((resource, ids), ...), spew rendering or None)."""
    if raw is None:
        return (), "<nil>"
    if not isinstance(raw, dict):
        problems.append(Problem(source, "RegisteredDevices is not an object"))
        return (), None
    out = []
    ok = True
    for res in sorted(raw):
        ids = _strs(raw[res]) if raw[res] is not None else None
        if raw[res] is not None and ids is None:
            problems.append(Problem(source, f"RegisteredDevices[{res[:40]!r}] is not a list of ids"))
            ok = False
            continue
        out.append((res, ids))
    render = "map[" + " ".join(f"{r}:{_spew_list(ids)}" for r, ids in out) + "]"
    return tuple((r, tuple(ids or ())) for r, ids in out), (render if ok else None)


def _verify(checksum: int, rendered: str, legacy: bool, source: str, problems: list[Problem]) -> bool | None:
    """kubelet's VerifyChecksum. The pre-1.20 layout's rendering (checkpointDataV1) is our best reading of
    it: when it does not match, that file is said not verified, never corrupt."""
    try:
        calc = fnv1a32(rendered)
    except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape: Go would have replaced it
        return None
    if calc == checksum:
        return True
    if legacy:
        return None
    problems.append(Problem(source, f"device checkpoint checksum {checksum} does not match its content (computed "
                                    f"{calc}): kubelet would refuse this file (edited by hand, or corrupt)"))
    return False


def parse_numa_node(text: str) -> int | None:
    """sysfs numa_node: "-1" (or anything not a number) is unknown."""
    try:
        n = int(text.strip())
    except ValueError:
        return None
    return n if n >= 0 else None


def parse_nvidia_information(text: str) -> tuple[str | None, str | None]:
    """/proc/driver/nvidia/gpus/<addr>/information -> (GPU UUID, PCI bus location, lower case)."""
    uuid = bus = None
    for line in text.splitlines():
        key, sep, val = line.partition(":")
        if not sep:
            continue
        key, val = key.strip().lower(), val.strip()
        if key == "gpu uuid" and val:
            uuid = val
        elif key == "bus location" and val:
            bus = val.lower()
    return uuid, bus
