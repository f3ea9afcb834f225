"""`pinscope fit TARGET --cpus N [--memory SIZE [--hugepages-2Mi SIZE] [--hugepages-1Gi SIZE]]
[--device RESOURCE=COUNT ...] [--json]`: what kubelet would do with the next Guaranteed container of N CPUs (and
that memory and those devices) on each node (collectors/fit).
Exit 0: it fits on every node read; 1: kubelet would reject it on one; 3: a node could not be read well enough
to say.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re

from pinscope.collectors.errors import PinscopeError
from pinscope.collectors.fit.memory import MEMORY_UNKNOWN
from pinscope.collectors.fit.predict import FitAnswer, predict
from pinscope.collectors.fit.quantity import check_sizes, format_size, parse_size, size_hint
from pinscope.collectors.fit.summary import free_count, reason
from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display_lines

async def _answer(target, a) -> tuple[str, FitAnswer | None, str | None]:
    from pinscope.collectors.collect import snapshot
    from pinscope.cli import _name, _opts, transport_of

    opts = _opts(a)
    address = target
    if not isinstance(target, str):
        address = target.address
        import dataclasses

        opts = dataclasses.replace(opts, root=target.root or opts.root, sudo=target.sudo or opts.sudo)
    try:
        report = await snapshot(address, opts, samples=1, interval=a.interval, timeout=a.timeout,
                                transport=transport_of(target))
    except PinscopeError as err:
        return _name(target), None, str(err)
    version, unknown = await _release(target, report, a)
    gone = await _gone(target, report, a, version is not None)
    req = memory_request(a)
    live = report.live.now.view if report.live is not None and report.live.now.wall == report.t else None
    ans = predict(report.snapshot, a.cpus, version, unknown_why=unknown, inactive=gone, memory=req,
                  devices=device_request(a), live=live)
    ans.unknown = [f"{u} (give --memory to predict both)" if u.startswith(MEMORY_UNKNOWN) else u for u in ans.unknown]
    if req is not None and ans.memory is None:  # no decision was made (not read, policy none, refused setup)
        ans.memory = {"request": req, "numa_nodes": None, "per_numa": [],
                      "note": f"no decision of kubelet's was predicted here ({ans.note or 'see the error'})"}
    if ans.devices is None and device_request(a) is not None:
        ans.devices = {"request": device_request(a), "per_resource": {},
                       "note": f"no decision of kubelet's was predicted here ({ans.note or 'see the error'})"}
    if req is not None and ans.memory is not None:
        texts = (a.memory, getattr(a, "hugepages_2mi", None), getattr(a, "hugepages_1gi", None))
        ans.memory["hints"] = [h for t in texts if t is not None and (h := size_hint(t))]
    ans.live = live_summary(report)
    if not isinstance(target, str):
        ans.node = target.name
    return _name(target), ans, None


class Once(argparse.Action):
    """Store the value, noting an option given again (`repeated`): fit_cmd refuses it as a repeated --device, where
    argparse's store would silently keep the last (a container has one limit per resource)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            namespace.repeated = [*(getattr(namespace, "repeated", None) or ()), self.option_strings[0]]
        setattr(namespace, self.dest, values)


# a device plugin's resource: an extended resource name, domain/name (k8s.io/apimachinery's qualified name)
_RESOURCE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def device_arg(text: str) -> tuple[str, int]:
    """--device RESOURCE=COUNT (an argparse type): (resource, count), the count a whole number above 0. The
    text is quoted as typed: the usage line escapes its controls once (`_err`); `!r` would escape them twice."""
    res, eq, count = text.partition("=")
    if not eq or not _RESOURCE.match(res) or len(res) > 253:
        raise argparse.ArgumentTypeError(f"'{text}' is not RESOURCE=COUNT with a device plugin's resource "
                                         "(domain/name, e.g. example.com/gpu=2)")
    if not count.isascii() or not count.isdigit() or int(count) <= 0:
        raise argparse.ArgumentTypeError(f"'{text}': the count must be a whole number above 0")
    return res, int(count)


def device_request(a) -> dict[str, int] | None:
    """The container's device requests (= limits), resource -> count; None: no --device."""
    pairs = getattr(a, "device", None)
    return None if not pairs else dict(pairs)


def memory_request(a) -> dict[str, int] | None:
    """The container's memory and hugepages in bytes (requests = limits), as the memory manager reads them;
    None: no --memory."""
    if a.memory is None:
        return None
    req = {"memory": parse_size(a.memory)}
    for res, text in (("hugepages-2Mi", getattr(a, "hugepages_2mi", None)), ("hugepages-1Gi", getattr(a, "hugepages_1gi", None))):
        if text is not None:
            req[res] = parse_size(text)
    return req


def _memory_lines(ans: FitAnswer) -> list[str]:
    m = ans.memory
    if m is None:
        return []
    asked = " + ".join(f"{format_size(v)} {r}" for r, v in m["request"].items())
    hints = [f"  note: {h}" for h in m.get("hints") or []]
    if m.get("note"):
        return [f"  memory ({asked}): not predicted: {m['note']}", *hints]
    out = []
    if m.get("numa_nodes") is not None:
        nodes = ",".join(str(n) for n in m["numa_nodes"])
        out.append(f"  memory ({asked}): kubelet's memory manager would take it from NUMA node{'s' if len(m['numa_nodes']) > 1 else ''} {nodes}")
    for p in m.get("per_numa") or []:
        shown = sorted(r for r in {*p["free"], *m["request"]} if p["allocatable"].get(r) or r in m["request"])
        free = ", ".join(_free_text(r, p) for r in shown)
        group = f"; used together with NUMA {','.join(str(g) for g in p['group'] if g != p['numa_node'])}" if len(p["group"]) > 1 else ""
        out.append(f"  NUMA {p['numa_node']} memory: {free}{group}")
    return out + _short_lines(ans) + hints


def _free_text(res: str, p: dict) -> str:
    """One resource of one NUMA node: free of allocatable, and what is assigned when any is (a rounded size
    would hide it)."""
    if res not in p["free"]:
        return f"{res}: no table in the memory manager's state"
    free, alloc = p["free"][res], p["allocatable"].get(res, 0)
    taken = f" ({format_size(alloc - free)} assigned)" if 0 < alloc - free else ""
    return f"{res} {format_size(free)} free of {format_size(alloc)}{taken}"


def _device_lines(ans: FitAnswer) -> list[str]:
    """Where kubelet's device manager would take the asked devices from, or why that is not said."""
    d = ans.devices
    if d is None:
        return []
    asked = ", ".join(f"{r}={n}" for r, n in d["request"].items())
    if not d["per_resource"]:
        return [f"  devices ({asked}): {d['note']}"]
    out = []
    for res, p in d["per_resource"].items():
        if p.get("note"):
            out.append(f"  {res}={p['count']}: {p['note']}")
            continue
        nodes = p["numa_nodes"]
        where = (f"NUMA node{'s' if len(nodes) > 1 else ''} {','.join(map(str, nodes))}" if nodes
                 else "devices without a NUMA node (for some)")
        pools = "; ".join(f"{t['take']} of {','.join(t['devices'])}" for t in p["tiers"])
        out.append(f"  {res}={p['count']}: kubelet's device manager would take them from {where} ({pools})")
    return out


def _short_lines(ans: FitAnswer) -> list[str]:
    """When kubelet would refuse: each asked resource that no single NUMA node has free, named."""
    m = ans.memory or {}
    if ans.error is None or not m.get("per_numa"):
        return []
    out = []
    for res, want in m["request"].items():
        most = max(p["free"].get(res, 0) for p in m["per_numa"])
        if want > most:
            out.append(f"  short: {res}: {format_size(want)} asked, the most free on one NUMA node is {format_size(most)}")
    return out


async def _release(target, report, a) -> tuple[str | None, str | None]:
    """(the node's kubelet release, None) as its Node object says it, when the API is asked (--kube, node/NAME);
    else (None, why it is not known). Nothing is run on the node for it."""
    from pinscope.cli import _api_name, _kube, local_api_name
    from pinscope.collectors.kube import node_kubelet_version

    if not _kube(a):
        return None, "no Kubernetes API asked: --kube or node/NAME reads it from the Node object"
    name = _api_name(target) or local_api_name(report.snapshot)
    return await asyncio.to_thread(node_kubelet_version, name, a.context, a.kubeconfig)


async def _gone(target, report, a, node_found: bool) -> dict[str, str]:
    """The checkpoint's pods kubelet frees before it admits the next pod (collectors/fit/active.py), judged by the
    API's pods on the node (--kube, node/NAME: listed after the snapshot read the checkpoint; only when the API
    knows a Node of that name, `node_found`: the pods of a name no node has are none, and would free every pod),
    kubelet's PodResources List (asked with the snapshot, after its files) and the node's files."""
    from pinscope.cli import _api_name, _kube, local_api_name
    from pinscope.collectors.fit.active import inactive_pods
    from pinscope.collectors.kube import KubeError, node_pods

    api_pods = None
    if _kube(a) and node_found:
        name = _api_name(target) or local_api_name(report.snapshot)
        try:
            api_pods = await asyncio.to_thread(node_pods, name, a.context, a.kubeconfig)
        except KubeError:
            api_pods = None  # not read: the other evidence stands alone
    # kubelet's answer of this very report (asked after its frame), never a round kept from an earlier tick
    live = report.live.now.view if report.live is not None and report.live.now.wall == report.t else None
    return inactive_pods(report.snapshot, api_pods, api_after=True, live=live)


def live_summary(report) -> dict:
    """kubelet's live view as `fit --json` gives it (the report's `podresources`, asked with the snapshot)."""
    if report.live is None:
        return {"socket": None, "asked": False, "note": "kubelet's PodResources API was not asked"}
    return report.live.to_json()


def _live_lines(live: dict | None) -> list[str]:
    if not live:
        return []
    if not live.get("asked"):
        return [f"  kubelet's live view (PodResources): not asked: {live.get('note')}"]
    ctrs = [c for c in live.get("containers") or [] if c.get("cpus") not in (None, "none")]
    out = [f"  kubelet's live view ({live['socket']}): allocatable CPUs {live['allocatable_cpus']}; "
           f"{_count(len(ctrs), 'container')} with exclusive CPUs"]
    disagree = live.get("disagreements") or []
    for d in disagree:
        out.append(f"  {d['namespace']}/{d['pod']}/{d['container']} {d['what']}: {d['odd_one']}"
                   f"{'' if d['held'] else ' (seen once)'}: PodResources {d['podresources']}, "
                   f"checkpoint {d['checkpoint']}, kernel {d['kernel']}")
    if not disagree:
        out.append("  kubelet's in-memory state agrees with its checkpoint and the kernel on every container they name")
    return out + [f"  note: {x}" for x in live.get("notes") or []]


def _count(n, what: str) -> str:
    """"1 CPU", "2 CPUs", "- CPUs" (not known)."""
    return f"{n} {what}{'' if n == 1 else 's'}"


def render(ans: FitAnswer, n: int) -> str:
    cpus = f"{n} CPU{'s' if n != 1 else ''}"
    out = [f"{ans.node}: a Guaranteed container of {cpus} (kubelet {ans.kubelet_version or ans.release + ', assumed'})"]
    if not ans.readable:
        out.append(f"  not known: {ans.note}")
    elif ans.error is not None:
        out.append(f"  rejected: {ans.error['kind']}: {ans.error['message']}")
        asked = ans.memory is not None and ans.memory.get("note") is None
        placed = bool(ans.devices and ans.devices.get("per_resource"))
        out.append(f"    why: {reason(ans.error, n, free_count(ans), memory=asked, devices=placed)}")
    elif ans.cpus is None:
        out.append(f"  fits: {ans.note}")
    else:
        out.append(f"  fits: kubelet would give CPUs {format_cpuset(ans.cpus)}")
    out += _memory_lines(ans)
    out += _device_lines(ans)
    out += [f"  warning: {w}" for w in ans.warnings]
    if ans.how_many is not None:
        out.append(f"  containers of {cpus}{' with that memory' if ans.memory and ans.memory.get('numa_nodes') else ''} "
                   f"that fit one after another: {ans.how_many}")
    for p in ans.per_numa:
        lf = p.get("largest_fit") or {}
        out.append(f"  NUMA {p['numa_node']}: free {p['free_count']} ({p['free_cpus'] or '-'}), "
                   f"{_count(p['free_whole_cores'], 'whole core')}; largest container kubelet could give from it "
                   f"alone: {_count(lf.get('cpus', '-'), 'CPU')}, {lf.get('whole_cores', '-')} as whole cores")
    out += _live_lines(ans.live)
    for s in ans.assumed:
        out.append(f"  assumed: {s}")
    for s in ans.unknown:
        out.append(f"  unknown: {s}")
    return display_lines(out)


async def fit_cmd(a) -> int:
    from pinscope.cli import _err, _targets, each_target

    repeated = getattr(a, "repeated", None)
    if repeated:
        _err(f"pinscope fit: {repeated[0]}: given twice (a container has one limit per resource)")
        return 2
    if a.memory is None and (getattr(a, "hugepages_2mi", None) or getattr(a, "hugepages_1gi", None)):
        _err("pinscope fit: --hugepages-2Mi/--hugepages-1Gi need --memory (a Guaranteed pod has a memory limit)")
        return 2
    pages = {"hugepages-2Mi": getattr(a, "hugepages_2mi", None), "hugepages-1Gi": getattr(a, "hugepages_1gi", None)}
    for flag, text in (("--memory", a.memory), *((f"--{r}", t) for r, t in pages.items())):
        try:
            if text is not None:
                parse_size(text)
        except ValueError as bad:
            _err(f"pinscope fit: {flag}: {bad}")
            return 2
    devs = [r for r, _ in getattr(a, "device", None) or ()]
    if len(set(devs)) < len(devs):
        _err("pinscope fit: --device: a resource given twice (a container has one limit per resource)")
        return 2
    refused = check_sizes(a.memory, pages)
    if refused is not None:
        _err(f"pinscope fit: {refused}")
        return 2
    _, results = await each_target(_targets(a) or ["local"], _answer, a)
    rc = 0
    objs = []
    for name, ans, err in results:
        if ans is None:
            _err(f"pinscope: {err}")
            objs.append({"node": name, "error": {"kind": "NotRead", "message": err}, "cpus": None})
            rc = max(rc, 3)
            continue
        objs.append(ans.as_json())
        if not ans.readable:
            rc = max(rc, 3)
        elif ans.error is not None:
            rc = max(rc, 1)
        if not a.json:
            print(render(ans, a.cpus))
    if a.json:
        print(json.dumps(objs[0] if len(objs) == 1 else objs, indent=1))
    return rc
