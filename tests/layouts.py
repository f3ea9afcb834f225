"""A corpus of node layouts people really run, each written by the simulated node (collectors.sim) the way
the real node lays it out (absolute /var/log/containers symlinks included), with the values a reader
must find written out by hand from the layout, never copied from pinscope's output.

Every layout runs the same three pods on 8 CPUs (1 socket, 4 cores, SMT siblings N and N+4), static
policy, reservedSystemCPUs 0,4:
  trading/md-feed   Guaranteed, container "feed" pinned to 1,5 (kubelet's assignment)
  web/api           Burstable,  container "api"  on the shared pool 0,2-4,6-7
  kube-system/agent BestEffort, container "agent" on the shared pool
so kubelet's defaultCpuSet is 0,2-4,6-7 and CPUs 1 and 5 are exclusive to md-feed/feed.
`fault` plants one fault: "drift" (the kernel runs feed on 1-2,5-6) or "intruder" (a system service
process, outside every pod, last ran on CPU 5).
"""
from __future__ import annotations

from dataclasses import dataclass

from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec

FEED_UID = "6f1f6f4e-0b1a-4f59-9a3c-2f0f3b7c1a01"
API_UID = "6f1f6f4e-0b1a-4f59-9a3c-2f0f3b7c1a02"
AGENT_UID = "6f1f6f4e-0b1a-4f59-9a3c-2f0f3b7c1a03"
STATIC_UID = "e4e6004e2b0a4b4a9c1f0e4c3d2b1a09"  # a static pod: hash of its manifest, 32 hex, no dashes
FEED_ID = "f1" * 32
API_ID = "a2" * 32
AGENT_ID = "b3" * 32
SHARED = [0, 2, 3, 4, 6, 7]


@dataclass
class Layout:
    spec: NodeSpec
    source: str  # where the layout comes from (public)
    feed_cgroup: str  # the feed container's cgroup directory, written out by hand
    api_pod_cgroup: str  # the Burstable pod's cgroup directory, by hand
    cgroup: dict  # {"version": .., "driver": ..}
    cgroup_root: str = ""
    feed_pod: str = "md-feed"
    feed_uid: str = FEED_UID
    runtime: str | None = "containerd"


def _spec(fault: str | None, feed_uid=FEED_UID, feed_pod="md-feed", static=False, **kw) -> NodeSpec:
    feed = CtrSpec("feed", cpus="1,5", id=FEED_ID, busy=0.9,
                   effective="1-2,5-6" if fault == "drift" else None)
    other = [("stress-ng", 5, False)] if fault == "intruder" else []  # in /system.slice/stress-ng.service
    d = dict(hostname=kw.pop("hostname", "node-1"), sockets=1, cores=4, threads=2, reserved="0,4",
             init_affinity="0,4", other_tasks=other,
             pods=[PodSpec(feed_pod, "trading", uid=feed_uid, static=static, containers=[feed]),
                   PodSpec("api", "web", qos="Burstable", uid=API_UID, containers=[CtrSpec("api", id=API_ID, tasks=3)]),
                   PodSpec("agent", "kube-system", qos="BestEffort", uid=AGENT_UID,
                           containers=[CtrSpec("agent", id=AGENT_ID)])])
    d.update(kw)
    return NodeSpec(**d)


def containerd_systemd_v2(fault=None) -> Layout:
    """kubeadm's default today: containerd with SystemdCgroup = true, cgroup v2.
    kubernetes.io/docs/setup/production-environment/container-runtimes/ ("systemd cgroup driver");
    containerd cri: getCgroupsPath "<parent>:cri-containerd:<id>"."""
    return Layout(_spec(fault, cgroup=2, driver="systemd", runtime="containerd"),
                  "kubernetes.io container-runtimes (systemd driver); containerd internal/cri getCgroupsPath",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"cri-containerd-{FEED_ID}.scope",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"})


def containerd_cgroupfs_v1(fault=None) -> Layout:
    """Older kubeadm nodes (Ubuntu 20.04, CentOS 7): cgroupfs driver, cgroup v1; the container leaf is
    the bare 64-hex id. kubernetes.io container-runtimes ("cgroupfs driver"); k/k
    pkg/kubelet/cm/qos_container_manager_linux.go."""
    return Layout(_spec(fault, cgroup=1, driver="cgroupfs", runtime="containerd"),
                  "kubernetes.io container-runtimes (cgroupfs driver); k/k qos_container_manager_linux.go",
                  f"/sys/fs/cgroup/cpuset/kubepods/pod{FEED_UID}/{FEED_ID}",
                  f"/sys/fs/cgroup/cpuset/kubepods/burstable/pod{API_UID}",
                  {"version": 1, "driver": "cgroupfs"}, runtime=None)  # a bare id names no runtime


def crio_systemd_v2(fault=None) -> Layout:
    """OpenShift 4 / Fedora CoreOS: CRI-O with the systemd manager, conmon_cgroup = "pod" (each
    container's conmon in crio-conmon-<id>.scope beside it), crun's "container" sub-cgroup below the
    scope. cri-o docs/crio.conf.5.md (conmon_cgroup); crun issues #1768/#1870 (run.oci.systemd.subgroup)."""
    return Layout(_spec(fault, cgroup=2, driver="systemd", runtime="crio", crun_subgroup=True),
                  "cri-o crio.conf(5) conmon_cgroup=pod; crun #1768 systemd subgroup",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"crio-{FEED_ID}.scope/container",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"}, runtime="cri-o")


def crio_cgroupfs_v1(fault=None) -> Layout:
    """CRI-O with cgroup_manager = "cgroupfs" on cgroup v1: leaves crio-<id> and crio-conmon-<id>
    (cri-o internal/config/cgmgr/cgroupfs.go)."""
    return Layout(_spec(fault, cgroup=1, driver="cgroupfs", runtime="crio"),
                  "cri-o internal/config/cgmgr/cgroupfs.go",
                  f"/sys/fs/cgroup/cpuset/kubepods/pod{FEED_UID}/crio-{FEED_ID}",
                  f"/sys/fs/cgroup/cpuset/kubepods/burstable/pod{API_UID}",
                  {"version": 1, "driver": "cgroupfs"}, runtime="cri-o")


def docker_systemd_v1(fault=None) -> Layout:
    """cri-dockerd (Docker Engine behind CRI, after dockershim's removal in 1.24) with the systemd driver on
    cgroup v1: docker-<id>.scope (runc's systemd unit name); /var/log/pods/…/0.log itself links into
    /var/lib/docker/containers. github.com/Mirantis/cri-dockerd; kubernetes.io "Migrating from dockershim"."""
    return Layout(_spec(fault, cgroup=1, driver="systemd", runtime="docker"),
                  "Mirantis/cri-dockerd; runc libcontainer/cgroups/systemd unit names",
                  "/sys/fs/cgroup/cpuset/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"docker-{FEED_ID}.scope",
                  "/sys/fs/cgroup/cpuset/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 1, "driver": "systemd"}, runtime="docker")


def docker_cgroupfs_v1_pre118(fault=None) -> Layout:
    """A kubelet before 1.18 with dockershim: cgroupfs, cgroup v1, and the CPU manager's checkpoint in its
    first format, entries keyed by container id (CPUManagerCheckpointV1). k/k PR #84462, CHANGELOG-1.18
    ("underlying format of the CPUManager state file has changed")."""
    return Layout(_spec(fault, cgroup=1, driver="cgroupfs", runtime="docker", state_version=1),
                  "k/k PR #84462 (checkpoint v1 -> v2), CHANGELOG-1.18",
                  f"/sys/fs/cgroup/cpuset/kubepods/pod{FEED_UID}/{FEED_ID}",
                  f"/sys/fs/cgroup/cpuset/kubepods/burstable/pod{API_UID}",
                  {"version": 1, "driver": "cgroupfs"}, runtime=None)


def kind_cgroup_root(fault=None) -> Layout:
    """kind: the node is a container running systemd; kubelet is configured with cgroupRoot: /kubelet, so
    with the systemd driver every slice carries the prefix. kubernetes-sigs/kind
    pkg/cluster/internal/kubeadm/config.go ("cgroupRoot: /kubelet"); k/k cgroup_manager_linux.go ToSystemd."""
    return Layout(_spec(fault, hostname="kind-worker", cgroup=2, driver="systemd", runtime="containerd",
                        cgroup_root="/kubelet"),
                  "kubernetes-sigs/kind pkg/cluster/internal/kubeadm/config.go (cgroupRoot: /kubelet)",
                  "/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/"
                  f"kubelet-kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/cri-containerd-{FEED_ID}.scope",
                  "/sys/fs/cgroup/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
                  "kubelet-kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"}, cgroup_root="/kubelet")


def cgroupfs_v2_cgroup_root_flag(fault=None) -> Layout:
    """kubelet --cgroup-root=/kube-workloads with the cgroupfs driver on cgroup v2 (a plain directory
    prefix). kubernetes.io kubelet reference (--cgroup-root); k/k cm/node_container_manager_linux.go."""
    return Layout(_spec(fault, cgroup=2, driver="cgroupfs", runtime="containerd", cgroup_root="/kube-workloads",
                        cgroup_root_flag=True),
                  "kubernetes.io kubelet flags (--cgroup-root)",
                  f"/sys/fs/cgroup/kube-workloads/kubepods/pod{FEED_UID}/{FEED_ID}",
                  f"/sys/fs/cgroup/kube-workloads/kubepods/burstable/pod{API_UID}",
                  {"version": 2, "driver": "cgroupfs"}, cgroup_root="/kube-workloads", runtime=None)


def systemd_dot_cgroup_root(fault=None) -> Layout:
    """cgroupRoot "/.pods" with the systemd driver: every slice's name then starts with "." (kubelet takes any
    cgroupRoot, k/k cgroup_manager_linux.go ToSystemd prefixes each slice with its parent's name, and
    systemd's unit_name_is_valid refuses only a name whose last "." is its first character), and a shell
    glob's "*" skips such names: the probe must glob for them."""
    return Layout(_spec(fault, cgroup=2, driver="systemd", runtime="containerd", cgroup_root="/.pods"),
                  "k/k cgroup_manager_linux.go ToSystemd; systemd src/basic/unit-name.c unit_name_is_valid",
                  "/sys/fs/cgroup/.pods.slice/.pods-kubepods.slice/"
                  f".pods-kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/cri-containerd-{FEED_ID}.scope",
                  "/sys/fs/cgroup/.pods.slice/.pods-kubepods.slice/.pods-kubepods-burstable.slice/"
                  ".pods-kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"}, cgroup_root="/.pods")


def static_pod_exclusive(fault=None) -> Layout:
    """A static pod (manifest in staticPodPath) holding exclusive CPUs: its uid is the manifest's hash, 32
    hex digits without dashes (k/k pkg/kubelet/config/common.go applyDefaults), so its slice is
    kubepods-pod<32hex>.slice and its log dir trading_md-feed-node-1_<32hex>."""
    return Layout(_spec(fault, feed_uid=STATIC_UID, feed_pod="md-feed-node-1", static=True, cgroup=2,
                        driver="systemd", runtime="containerd"),
                  "k/k pkg/kubelet/config/common.go (static pod uid = manifest hash)",
                  f"/sys/fs/cgroup/kubepods.slice/kubepods-pod{STATIC_UID}.slice/cri-containerd-{FEED_ID}.scope",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"}, feed_pod="md-feed-node-1", feed_uid=STATIC_UID)


def kernel_nothing_values(fault=None) -> Layout:
    """What kernels print for "nothing": nohz_full "(null)" (CONFIG_NO_HZ_FULL, booted without
    nohz_full=: the mask was never allocated), physical_package_id and die_id -1 (kdoc
    ABI/stable/sysfs-devices-system-cpu: "-1 ... on some platforms"), a memory-only NUMA node with an empty
    cpulist (CXL or PMEM, kdoc ABI/stable/sysfs-devices-node)."""
    return Layout(_spec(fault, cgroup=2, driver="systemd", runtime="containerd", nohz_full="(null)\n",
                        package_id=-1, cpuless_numa=1),
                  "kdoc ABI sysfs-devices-system-cpu (nohz_full, physical_package_id), sysfs-devices-node",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"cri-containerd-{FEED_ID}.scope",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"})


def containerd_systemd_v1(fault=None) -> Layout:
    """RHEL/CentOS 8-era nodes: containerd with SystemdCgroup = true on cgroup v1: the slices live in each
    controller's hierarchy (/sys/fs/cgroup/cpuset/kubepods.slice/…). kubernetes.io "About cgroup v2"
    (v1 still in use); kdoc admin-guide/cgroup-v1/cpusets.rst."""
    return Layout(_spec(fault, cgroup=1, driver="systemd", runtime="containerd"),
                  "kubernetes.io About cgroup v2; kdoc cgroup-v1/cpusets.rst",
                  "/sys/fs/cgroup/cpuset/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"cri-containerd-{FEED_ID}.scope",
                  "/sys/fs/cgroup/cpuset/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 1, "driver": "systemd"})


def crio_systemd_v1(fault=None) -> Layout:
    """OpenShift 4 before 4.14 (cgroup v1 by default): CRI-O, systemd manager, conmon beside each container.
    docs.openshift.com "Configuring the Linux cgroup version on your nodes"; cri-o crio.conf(5)."""
    return Layout(_spec(fault, cgroup=1, driver="systemd", runtime="crio"),
                  "docs.openshift.com (cgroup v1 default before 4.14); cri-o crio.conf(5)",
                  "/sys/fs/cgroup/cpuset/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"crio-{FEED_ID}.scope",
                  "/sys/fs/cgroup/cpuset/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 1, "driver": "systemd"}, runtime="cri-o")


def crio_cgroupfs_v2(fault=None) -> Layout:
    """CRI-O with cgroup_manager = "cgroupfs" on cgroup v2 (crio-<id>, crio-conmon-<id> as plain
    directories). cri-o internal/config/cgmgr/cgroupfs.go; crio.conf(5) cgroup_manager."""
    return Layout(_spec(fault, cgroup=2, driver="cgroupfs", runtime="crio"),
                  "cri-o internal/config/cgmgr/cgroupfs.go",
                  f"/sys/fs/cgroup/kubepods/pod{FEED_UID}/crio-{FEED_ID}",
                  f"/sys/fs/cgroup/kubepods/burstable/pod{API_UID}",
                  {"version": 2, "driver": "cgroupfs"}, runtime="cri-o")


def docker_systemd_v2(fault=None) -> Layout:
    """cri-dockerd on a cgroup v2 distribution (Ubuntu 22.04) with the systemd driver: docker-<id>.scope.
    github.com/Mirantis/cri-dockerd; docs.docker.com "Daemon: configure cgroup driver"."""
    return Layout(_spec(fault, cgroup=2, driver="systemd", runtime="docker"),
                  "Mirantis/cri-dockerd; docs.docker.com cgroup driver",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a01.slice/"
                  f"docker-{FEED_ID}.scope",
                  "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/"
                  "kubepods-burstable-pod6f1f6f4e_0b1a_4f59_9a3c_2f0f3b7c1a02.slice",
                  {"version": 2, "driver": "systemd"}, runtime="docker")


def docker_cgroupfs_v2(fault=None) -> Layout:
    """Docker Engine's default cgroupfs driver on cgroup v2, behind cri-dockerd: bare-id leaves.
    docs.docker.com "Daemon: configure cgroup driver" (cgroupfs is Docker's default)."""
    return Layout(_spec(fault, cgroup=2, driver="cgroupfs", runtime="docker"),
                  "docs.docker.com cgroup driver (cgroupfs default)",
                  f"/sys/fs/cgroup/kubepods/pod{FEED_UID}/{FEED_ID}",
                  f"/sys/fs/cgroup/kubepods/burstable/pod{API_UID}",
                  {"version": 2, "driver": "cgroupfs"}, runtime=None)


LAYOUTS = {f.__name__: f for f in (
    containerd_systemd_v2, containerd_systemd_v1, containerd_cgroupfs_v1, crio_systemd_v2, crio_systemd_v1,
    crio_cgroupfs_v1, crio_cgroupfs_v2, docker_systemd_v1, docker_systemd_v2, docker_cgroupfs_v2,
    docker_cgroupfs_v1_pre118, kind_cgroup_root, cgroupfs_v2_cgroup_root_flag, systemd_dot_cgroup_root,
    static_pod_exclusive, kernel_nothing_values)}
