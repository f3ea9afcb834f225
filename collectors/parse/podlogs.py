"""Pod and container identity without the API server, from the kubelet's log layout and its pods dir.

k/k pkg/kubelet/kuberuntime/helpers.go BuildPodLogsDirectory: <podLogsDir>/<namespace>_<pod>_<uid>/<container>/
kuberuntime_container.go: /var/log/containers/<pod>_<namespace>_<container>-<containerID>.log (an absolute
symlink: under --root it dangles, and its name is all we need)
<kubelet root-dir>/pods/<uid>/containers/<container>/: every pod kubelet knows, and the containers that ran.
Namespace and pod names cannot contain '_', so splitting on '_' is safe; the UID is the last field. A
static pod's UID is 32 hex digits without dashes (k/k pkg/kubelet/config/common.go).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_UID = re.compile(r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(slots=True)
class PodLogs:
    pods: dict = field(default_factory=dict)  # uid -> (namespace, name)
    containers: dict = field(default_factory=dict)  # uid -> [container names]
    ids: dict = field(default_factory=dict)  # container id -> (namespace, pod, container)
    kubelet: dict = field(default_factory=dict)  # uid -> [container names] from kubelet's pods dir


def parse_pod_logs(dirs: list[str], pod_logs_dir: str = "/var/log/pods",
                   kubelet_root: str = "/var/lib/kubelet") -> PodLogs:
    out = PodLogs()
    base = pod_logs_dir.rstrip("/") + "/"
    kpods = kubelet_root.rstrip("/") + "/pods/"
    for d in dirs:
        if d.startswith(kpods):
            parts = d[len(kpods):].strip("/").split("/")
            if not _UID.match(parts[0]):
                continue
            names = out.kubelet.setdefault(parts[0], [])
            if len(parts) == 3 and parts[1] == "containers":
                names.append(parts[2])
        elif d.startswith(base):
            rel = d[len(base):].strip("/")
            parts = rel.split("/")
            segs = parts[0].split("_")
            if len(segs) != 3 or not _UID.match(segs[2]):
                continue
            ns, name, uid = segs
            out.pods[uid] = (ns, name)
            if len(parts) == 2 and parts[1]:
                out.containers.setdefault(uid, []).append(parts[1])
        elif d.startswith("/var/log/containers/") and d.endswith(".log"):
            fn = d[len("/var/log/containers/"):-4]
            segs = fn.split("_")
            if len(segs) != 3:
                continue
            pod, ns, rest = segs
            cname, _, cid = rest.rpartition("-")
            if cname and _HEX64.match(cid):
                out.ids[cid] = (ns, pod, cname)
    return out
