"""One name for a node, whichever frontend shows it: `snapshot --json`'s "node", `check`'s lines, the TUI's
status line and overview, and the exporter's `node` label all come from `node_name`.

The hostname a node reports is its /proc/sys/kernel/hostname as the probe read it (under --root, the
tree's). Under --root inside a container that file answers for the reader's UTS namespace, not the host's
(proc(5): /proc/sys/kernel/hostname is per UTS namespace): a DaemonSet gives the node's name instead
(--node-name "$NODE_NAME", from spec.nodeName).
"""
from __future__ import annotations


def node_name(given: str | None, reported: str | None, reach: str) -> str:
    """The name the user gave the node (an inventory's, --kube's, the exporter's --node-name), else the
    hostname the node reported, else how it is reached (`local`, an address, node/NAME) while it has
    said nothing of itself."""
    return (given or "").strip() or (reported or "").strip() or reach
