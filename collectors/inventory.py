"""Targets: the command line, an inventory file, or the Kubernetes API.

Inventory (YAML):
    defaults: {user: ops, sudo: true, port: 22}
    groups:
      trading: {labels: {pool: trading}, root: /host}
    nodes:
      - {name: trade-1, host: 10.0.0.5, groups: [trading], labels: {zone: a}}
      - host: worker-9                # name defaults to host
Per node: host, user, port, root, sudo, labels, groups. A node's own keys win over its groups', which win
over defaults. Unknown keys are reported, never fatal; a node without a host is skipped with a problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from .errors import PinscopeError, Problem

KEYS = {"name", "host", "user", "port", "root", "sudo", "labels", "groups"}


class InventoryError(PinscopeError):
    pass


@dataclass(frozen=True)
class Target:
    name: str
    address: str  # "local" or [user@]host[:port], as the transports take it
    root: str | None = None
    sudo: bool = False
    labels: dict = field(default_factory=dict)
    groups: tuple = ()

    def matches(self, text: str) -> bool:
        q = text.lower()
        hay = [self.name.lower(), self.address.lower(), *(g.lower() for g in self.groups),
               *(f"{k}={v}".lower() for k, v in self.labels.items())]
        return any(q in h for h in hay)


def address(host: str, user: str | None, port) -> str:
    h = f"[{host}]" if host.count(":") > 1 and not host.startswith("[") else host  # IPv6 literals only
    a = f"{user}@{h}" if user else h
    return f"{a}:{port}" if port and int(port) != 22 else a


def load_inventory(text: str, source: str = "inventory") -> tuple[list[Target], list[Problem]]:
    probs: list[Problem] = []
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise InventoryError(f"{source}: not valid YAML ({getattr(err, 'problem', err)})") from err
    if isinstance(doc, list):
        doc = {"nodes": doc}
    if not isinstance(doc, dict):
        raise InventoryError(f"{source}: expected a mapping with 'nodes'")
    defaults = doc.get("defaults") or {}
    groups = doc.get("groups") or {}
    if not isinstance(defaults, dict) or not isinstance(groups, dict):
        raise InventoryError(f"{source}: 'defaults' and 'groups' must be mappings")
    out: list[Target] = []
    seen = set()
    for i, n in enumerate(doc.get("nodes") or []):
        if isinstance(n, str):
            n = {"host": n}
        if not isinstance(n, dict):
            probs.append(Problem(source, f"nodes[{i}] is not a mapping: skipped"))
            continue
        for k in set(n) - KEYS:
            probs.append(Problem(source, f"nodes[{i}]: unknown key {k!r} ignored"))
        gnames = n.get("groups") or []
        if isinstance(gnames, str):
            gnames = [gnames]
        merged: dict = {k: v for k, v in defaults.items() if k in KEYS}
        labels: dict = dict(defaults.get("labels") or {})
        for g in gnames:
            gd = groups.get(g)
            if not isinstance(gd, dict):
                probs.append(Problem(source, f"nodes[{i}]: no group {g!r}"))
                continue
            merged.update({k: v for k, v in gd.items() if k in KEYS and k != "labels"})
            labels.update(gd.get("labels") or {})
        merged.update({k: v for k, v in n.items() if k in KEYS and k != "labels"})
        labels.update(n.get("labels") or {})
        host = merged.get("host")
        if not host or not isinstance(host, str):
            probs.append(Problem(source, f"nodes[{i}]: no host: skipped"))
            continue
        port = merged.get("port")
        if port is not None and not str(port).isdecimal():
            probs.append(Problem(source, f"nodes[{i}]: port {port!r} is not a number: skipped"))
            continue
        name = str(merged.get("name") or host)
        if name in seen:
            probs.append(Problem(source, f"nodes[{i}]: duplicate name {name!r}: skipped"))
            continue
        seen.add(name)
        addr = "local" if host == "local" else address(host, merged.get("user"), port)
        out.append(Target(name, addr, merged.get("root"), bool(merged.get("sudo", False)),
                          {str(k): str(v) for k, v in labels.items()}, tuple(str(g) for g in gnames)))
    if not out:
        raise InventoryError(f"{source}: no usable node")
    return out, probs
