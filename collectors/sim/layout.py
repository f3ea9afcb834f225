"""How a simulated node names things, per runtime, cgroup driver, cgroup version and cgroupRoot.

Every name here is the one a real node writes; the sources:
- pod cgroups: k/k pkg/kubelet/cm/{qos,pod}_container_manager_linux.go (podCgroupNamePrefix "pod"),
  cgroup_manager_linux.go ToSystemd ("-" inside a part becomes "_", ExpandSlice nests the prefixes, so
  cgroupRoot /kubelet gives /kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/…);
- container leaves: containerd getCgroupsPath ("<parent>:cri-containerd:<id>" -> cri-containerd-<id>.scope;
  cgroupfs: <parent>/<id>); CRI-O internal/config/cgmgr (systemd: crio-<id>.scope and
  crio-conmon-<id>.scope; cgroupfs: crio-<id> and crio-conmon-<id>); runc systemd unit names
  (docker-<id>.scope); crun's run.oci.systemd.subgroup "container" below the scope (crun #1768);
- /proc/<pid>/cgroup: man cgroups(7) ("hierarchy-ID:controller-list:path");
- static pods: the uid is a hash of the manifest, 32 hex digits (k/k pkg/kubelet/config/common.go).
"""
from __future__ import annotations

import random


def systemd_prefix(cgroup_root: str) -> tuple[str, str]:
    """cgroupRoot -> (the slice path it expands to, the name prefix of every slice below it)."""
    path, pre = "", ""
    for part in cgroup_root.split("/"):
        if not part:
            continue
        pre = f"{pre}-{part.replace('-', '_')}" if pre else part.replace("-", "_")
        path += f"/{pre}.slice"
    return path, pre


def pod_cgroup(driver: str, cgroup_root: str, qos: str, uid: str) -> str:
    """The pod's cgroup, relative to the hierarchy's root (starts with "/")."""
    q = qos.lower()
    if driver == "systemd":
        path, pre = systemd_prefix(cgroup_root)
        kp = f"{pre}-kubepods" if pre else "kubepods"
        u = uid.replace("-", "_")
        if qos == "Guaranteed":
            return f"{path}/{kp}.slice/{kp}-pod{u}.slice"
        return f"{path}/{kp}.slice/{kp}-{q}.slice/{kp}-{q}-pod{u}.slice"
    root = cgroup_root.rstrip("/")
    return f"{root}/kubepods/pod{uid}" if qos == "Guaranteed" else f"{root}/kubepods/{q}/pod{uid}"


def leaf(driver: str, runtime: str, cid: str) -> str:
    if driver == "systemd":
        return {"containerd": "cri-containerd-", "crio": "crio-", "docker": "docker-"}[runtime] + cid + ".scope"
    return f"crio-{cid}" if runtime == "crio" else cid


def conmon_leaf(driver: str, cid: str) -> str:
    """CRI-O's monitor (conmon) of one container, beside it in the pod (conmon_cgroup = "pod")."""
    return f"crio-conmon-{cid}.scope" if driver == "systemd" else f"crio-conmon-{cid}"


def static_uid(rng: random.Random) -> str:
    return "%032x" % rng.getrandbits(128)


def proc_cgroup(version: int, rel: str, ns_prefix: str = "") -> str:
    """/proc/<pid>/cgroup of a process in cgroup `rel` (the same path in every v1 hierarchy). `ns_prefix`:
    how a reader in a private cgroup namespace sees it (kubectl debug's container: "/../../.."), since the
    kernel renders the path relative to the reader's namespace root (kernel/cgroup/cgroup.c proc_cgroup_show)."""
    rel = ns_prefix + rel if ns_prefix and rel != "/" else rel
    if version == 2:
        return f"0::{rel}\n"
    return (f"12:pids:{rel}\n11:memory:{rel}\n7:cpu,cpuacct:{rel}\n5:cpuset:{rel}\n"
            "1:name=systemd:/system.slice/containerd.service\n0::/\n")


def log_target(runtime: str, ns: str, pod: str, uid: str, name: str, cid: str) -> tuple[str, str | None]:
    """Where /var/log/containers/<pod>_<ns>_<name>-<id>.log points (absolute, as kubelet writes it), and
    for dockershim the docker json log that the pod log itself links to (else None)."""
    pod_log = f"/var/log/pods/{ns}_{pod}_{uid}/{name}/0.log"
    if runtime == "docker":
        return pod_log, f"/var/lib/docker/containers/{cid}/{cid}-json.log"
    return pod_log, None
