"""deploy/ applied for real (issue 33), for each kubelet release: the Prometheus operator's CRDs installed from its
published module (tests/cluster/build crds), `kubectl apply -k` of deploy/ and deploy/operator/ through an
overlay that only sets the image to the one tests/cluster/build made from deploy/Dockerfile; the exporter's pod
Ready on the node, running that image as shipped (what the API says of it checked against the kernel: its uid,
no capability, no new privileges, a read-only root, every host path read-only down to its submounts, kubelet's
secrets hidden); a real Prometheus (Debian's) scrapes it with the scrape config the operator makes of the
PodMonitor read back from the API (its discovery done on the API's pods), and has pinscope's series of this node
with kubelet's own roles; the PrometheusRule read back from the API passes `promtool check rules` and each of
its alerts loads and evaluates; `kubectl delete -k` leaves nothing of it, in the API or on the node.

What deploy/ cannot do on this node, said here rather than hidden:
- The shipped DaemonSet mounts an empty directory over kubelet's pki/. This cluster's kubelet is given its
  certificates (tlsCertFile, a client-certificate kubeconfig) and never makes pki/, and runc cannot make a
  mount point in the read-only root-dir: deploy/daemonset.yaml says so and gives the patch for such nodes,
  which the overlay adds when (and only when) kubelet's root-dir has no pki/.
- The exporter runs as uid 0 (deploy/daemonset.yaml says why: kubelet's cpu_manager_state is 0600 root), with
  every capability dropped; "non-root" is checked as what it is: no capability at all, in the kernel.
"""
from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

import promserver
from cluster import realnode as rn
from cluster.pytest_cluster import HERE, Cluster
from helpers import need

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
NS = "pinscope"
APP = {"app.kubernetes.io/name": "pinscope-exporter"}
HOST_PATHS = ("/host/proc", "/host/sys", "/host/var/lib/kubelet", "/host/var/log/pods", "/host/var/log/containers")
HIDDEN = ("/host/var/lib/kubelet/pods", "/host/var/lib/kubelet/plugins", "/host/var/lib/kubelet/pki")
PKI = "/host/var/lib/kubelet/pki"


class CrdLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML 1.1 reads a bare `=` (a CRD's enum of relabel actions has one) as the tag `value`, which PyYAML's
    safe loader cannot construct; kubectl (YAML 1.2) reads it as the string it is. libyaml's loader where PyYAML
    has it: the operator's CRDs are 4 MB, which the pure-Python one takes 5 s (more on a loaded machine) to read
    and libyaml half a second, to the same documents."""


CrdLoader.add_constructor("tag:yaml.org,2002:value", CrdLoader.construct_yaml_str)


@functools.cache
def build_paths() -> dict[str, Path]:
    """What `tests/cluster/build paths` says: where the cluster's binaries, images and CRDs are (asked once a
    session: it hashes pinscope's files and asks apt, seconds on this machine)."""
    p = subprocess.run([str(HERE / "build"), "paths"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return {k: Path(v) for k, _, v in (x.partition("=") for x in p.stdout.splitlines()) if v}


def crds_dir() -> Path:
    """Where tests/cluster/build put the Prometheus operator's CRDs (`up` builds them with the rest)."""
    return build_paths()["PROM_OPERATOR_CRDS"]


def render(c: Cluster, path: Path) -> list[dict]:
    p = c.kubectl("kustomize", str(path))
    return [d for d in yaml.safe_load_all(p.stdout) if d]


def crd_files(kinds: set[str]) -> dict[str, Path]:
    """{kind: the CRD file of the operator's release that defines it}."""
    d = crds_dir()
    need(d.is_dir(), f"the Prometheus operator's CRDs ({d}): tests/cluster/build crds")
    out = {}
    for f in sorted(d.glob("*.yaml")):
        doc = yaml.load(f.read_text(), CrdLoader)
        if doc["spec"]["names"]["kind"] in kinds:
            out[doc["spec"]["names"]["kind"]] = f
    assert set(out) == kinds, (sorted(out), sorted(kinds))
    return out


def the_pki_patch() -> str:
    """The patch deploy/daemonset.yaml gives for a kubelet that never makes pki/ (one `- patch: '…'` line)."""
    (line,) = [x for x in (DEPLOY / "daemonset.yaml").read_text().splitlines() if "$patch: delete" in x]
    return line.strip().removeprefix("#").strip()


def overlay(c: Cluster, where: Path) -> Path:
    """deploy/ and deploy/operator/ with the locally built image; kubelet's pki/ unmounted only where the node
    has none (the patch deploy/daemonset.yaml gives for such nodes)."""
    name, _, tag = c.pinscope_image.rpartition(":")
    where.mkdir()
    text = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
            f"  - {os.path.relpath(DEPLOY, where)}\n  - {os.path.relpath(DEPLOY / 'operator', where)}\n"
            f"images:\n  - name: pinscope\n    newName: {name}\n    newTag: \"{tag}\"\n")
    if not (c.kubelet_root / "pki").is_dir():
        text += f"patches:\n  {the_pki_patch()}\n"
    (where / "kustomization.yaml").write_text(text)
    return where


def exporter_pods(c: Cluster) -> list[dict]:
    sel = ",".join(f"{k}={v}" for k, v in APP.items())
    return c.get("pods", "-n", NS, "-l", sel, "--ignore-not-found")["items"] if namespace_exists(c) else []


def namespace_exists(c: Cluster) -> bool:
    p = c.kubectl("get", "namespace", NS, "-o", "name", "--ignore-not-found")
    return bool(p.stdout.strip())


def ready_pod(c: Cluster) -> dict:
    def one():
        pods = [p for p in exporter_pods(c) if p["spec"].get("nodeName") == c.node_name]
        if len(pods) == 1 and any(x["type"] == "Ready" and x["status"] == "True"
                                  for x in pods[0].get("status", {}).get("conditions", [])):
            return pods[0]
        return None
    try:
        return rn.poll("the exporter's pod Ready on the node", one, timeout=rn.DEADLINE)
    except AssertionError as e:
        events = c.kubectl("get", "events", "-n", NS, check=False).stdout
        raise AssertionError(f"{e}\n{json.dumps([p.get('status') for p in exporter_pods(c)], indent=1)}\n"
                             f"{events}") from None


@pytest.fixture(scope="module")
def deployed(cluster: Cluster, tmp_path_factory):
    """deploy/ applied -> (cluster, the exporter pod, the overlay, what it rendered); deleted at the end (the
    last test deletes it and checks; this deletes again, quietly, whatever a failed test left)."""
    c = cluster
    need(bool(c.pinscope_image), "pinscope's image (tests/cluster/build images, without "
                                 "PINSCOPE_CLUSTER_NO_PINSCOPE_IMAGE=1)")
    if c.kubelet_root != Path("/var/lib/kubelet"):
        pytest.fail(f"kubelet's root-dir is {c.kubelet_root}: /var/lib/kubelet existed before tests/cluster/up "
                    "(something else's), and deploy/ mounts only the usual paths", pytrace=False)
    ov = overlay(c, tmp_path_factory.mktemp("deploy") / "overlay")
    docs = render(c, ov)
    kinds = {d["kind"] for d in docs if d["apiVersion"].startswith("monitoring.coreos.com/")}
    crds = crd_files(kinds)
    ours = []
    names = [yaml.load(f.read_text(), CrdLoader)["metadata"]["name"] for f in crds.values()]
    for name, f in zip(names, crds.values()):
        if not c.kubectl("get", "crd", name, "--ignore-not-found", "-o", "name").stdout.strip():
            ours.append(name)
        c.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(f))
    c.kubectl("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in names], timeout=90)
    try:
        c.kubectl("apply", "-k", str(ov))
        pod = ready_pod(c)
        yield c, pod, ov, docs
    finally:
        c.kubectl("delete", "-k", str(ov), "--ignore-not-found", "--wait=true", "--timeout=120s", timeout=180,
                  check=False)
        if ours:
            c.kubectl("delete", "crd", *ours, "--ignore-not-found", "--wait=true", "--timeout=60s", timeout=90,
                      check=False)


# ---------------------------------------------------------------------------------------------- the pod as shipped
def mounts(pid: int) -> list[tuple[str, set[str], str]]:
    """/proc/PID/mountinfo as (mount point in the process's root, its per-mount options, fs type)."""
    out = []
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f = left.split()
        out.append((f[4].replace("\\040", " "), set(f[5].split(",")), right.split()[0]))
    return out


def container_pid(pod: dict) -> int:
    """The container's main process, from its cgroup (cgroupfs v1: cpuset kubepods/.../pod<uid>/<id>)."""
    (st,) = pod["status"]["containerStatuses"]
    cid = st["containerID"].split("://", 1)[1]
    procs = (rn.container_cgroup(pod["metadata"]["uid"], cid) / "cgroup.procs").read_text().split()
    assert procs, f"no process in the exporter's cgroup ({cid})"
    pids = sorted(int(x) for x in procs)
    return pids[0]


def status_field(pid: int, name: str) -> str:
    m = re.search(rf"^{name}:\s*(.*)$", Path(f"/proc/{pid}/status").read_text(), re.M)
    assert m, (pid, name)
    return m.group(1).strip()


def test_the_exporter_runs_the_local_image_as_shipped(deployed) -> None:
    """The API says what the kubelet ran (the image, the user, the mounts, recursive read-only or not); the
    kernel says the same of the container's process."""
    c, pod, _, docs = deployed
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    shipped = ds["spec"]["template"]["spec"]
    (want,) = shipped["containers"]
    (spec,) = pod["spec"]["containers"]
    (st,) = pod["status"]["containerStatuses"]
    # the image tests/cluster/build made from deploy/Dockerfile, as the overlay set it, and the API's spec is
    # the shipped one but for it
    assert spec["image"] == c.pinscope_image and st["image"].endswith(c.pinscope_image.split("/", 1)[1]), st
    assert st["imageID"].startswith("sha256:") or "@sha256:" in st["imageID"], st
    assert spec["securityContext"] == want["securityContext"], spec["securityContext"]
    assert spec["args"] == want["args"] and pod["spec"]["hostPID"] is True
    assert pod["spec"]["securityContext"]["runAsUser"] == 0  # as shipped (the module's docstring says why)
    pid = container_pid(pod)
    # the user the runtime reports (containerd 2: status.containerStatuses[].user) is the kernel's
    uid = int(status_field(pid, "Uid").split()[0])
    if "user" in st:
        assert st["user"]["linux"]["uid"] == uid, st["user"]
    assert uid == 0
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status_field(pid, cap), 16) == 0, (cap, status_field(pid, cap))  # no capability at all
    assert status_field(pid, "NoNewPrivs") == "1"  # allowPrivilegeEscalation: false
    assert status_field(pid, "Seccomp") == "2"  # RuntimeDefault: a filter
    ms = mounts(pid)
    (root,) = [o for m, o, _ in ms if m == "/"][-1:]
    assert "ro" in root, root  # readOnlyRootFilesystem
    assert not [m for m, _, _ in ms if m.startswith("/var/run/secrets")]  # no service-account token
    # every host path read-only, and every mount under it too where the API says recursive read-only is on
    rro = {v["mountPath"]: v.get("recursiveReadOnly") for v in st.get("volumeMounts", [])}
    for path in HOST_PATHS:
        (top,) = [o for m, o, _ in ms if m == path][-1:]
        assert "ro" in top, (path, top)
        below = [(m, o) for m, o, _ in ms if m.startswith(path + "/") and m not in HIDDEN]
        if rro.get(path) == "Enabled":
            assert all("ro" in o for _, o in below), (path, [b for b in below if "ro" not in b[1]])
        else:
            assert rro.get(path) == "Disabled", rro  # IfPossible: the runtime said it could not
    assert any("ro" in o for m, o, _ in ms if m == "/host/sys/fs/cgroup/cpuset"), "cgroupfs under /host/sys"
    # kubelet's pods' volumes, CSI volumes (and its keys, where it has pki/) under empty read-only mounts
    for path in HIDDEN:
        hidden = [(o, t) for m, o, t in ms if m == path]
        if path == PKI and not (c.kubelet_root / "pki").is_dir():
            assert not hidden, "the overlay drops the pki/ mount on a node without one"
            continue
        assert hidden and hidden[-1][1] == "tmpfs" and "ro" in hidden[-1][0], (path, hidden)
        assert not os.listdir(f"/proc/{pid}/root{path}"), path


# ---------------------------------------------------------------------------------------------- Prometheus
def podmonitor_scrape_config(pm: dict, pods: list[dict], interval: str) -> dict:
    """A PodMonitor (as the API server holds it) as the Prometheus operator turns it into a scrape config
    (prometheus-operator pkg/prometheus/promcfg.go, generatePodMonitorConfig), its Kubernetes discovery done here
    on the API's pods: the running pods of its namespace its selector matches, each container port its endpoint
    names, a target labelled with the pod's namespace, container and name; then the job and endpoint as target
    labels, then the PodMonitor's relabelings. Debian's Prometheus (2.42) is built without Kubernetes discovery
    ("field kubernetes_sd_configs not found in type config.ScrapeConfig"), so the targets are static.
    `interval` replaces the endpoint's (a test does not wait 30 s a scrape)."""
    meta, spec = pm["metadata"], pm["spec"]
    assert set(spec["selector"]) == {"matchLabels"} and "namespaceSelector" not in spec, spec
    (ep,) = spec["podMetricsEndpoints"]
    keys = {"sourceLabels": "source_labels", "targetLabel": "target_label", "regex": "regex",
            "replacement": "replacement", "separator": "separator", "modulus": "modulus", "action": "action"}
    own = [{keys[k]: (v.lower() if k == "action" else v) for k, v in r.items()} for r in ep.get("relabelings", ())]
    targets = []
    for p in pods:
        labels = p["metadata"].get("labels") or {}
        if (p["metadata"]["namespace"] != meta["namespace"] or p["status"].get("phase") in ("Failed", "Succeeded")
                or any(labels.get(k) != v for k, v in spec["selector"]["matchLabels"].items())):
            continue
        for ctr in p["spec"]["containers"]:
            for port in ctr.get("ports", ()):
                if port.get("name") == ep["port"]:
                    targets.append({"targets": [f"{p['status']['podIP']}:{port['containerPort']}"], "labels": {
                        "namespace": meta["namespace"], "container": ctr["name"], "pod": p["metadata"]["name"]}})
    return {
        "job_name": f"podMonitor/{meta['namespace']}/{meta['name']}/0", "metrics_path": ep.get("path", "/metrics"),
        "scrape_interval": interval, "scrape_timeout": interval, "static_configs": targets,
        "relabel_configs": [{"target_label": "job", "replacement": f"{meta['namespace']}/{meta['name']}"},
                            {"target_label": "endpoint", "replacement": ep["port"]}, *own],
    }


def api_get(prom: promserver.Prometheus, path: str) -> dict:
    with urllib.request.urlopen(prom.url + path, timeout=10) as r:
        doc = json.loads(r.read())
    assert doc["status"] == "success", doc
    return doc["data"]


def test_a_real_prometheus_scrapes_it_and_the_alert_rules_load(deployed, tmp_path) -> None:
    c, pod, _, _ = deployed
    need(promserver.have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    (pm,) = c.get("podmonitors.monitoring.coreos.com", "-n", NS)["items"]
    (rule,) = c.get("prometheusrules.monitoring.coreos.com", "-n", NS)["items"]
    # the rules as the API server holds them (what the operator would hand Prometheus), checked by promtool
    rules = tmp_path / "pinscope-rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    alerts = sorted(r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r)
    n = sum(len(g["rules"]) for g in rule["spec"]["groups"])
    assert len(alerts) == n == 4, alerts
    p = subprocess.run([promserver.PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and f"SUCCESS: {n} rules found" in p.stdout, p.stdout + p.stderr
    assert "WARNING" not in p.stdout + p.stderr, p.stdout + p.stderr
    job = podmonitor_scrape_config(pm, c.get("pods", "-n", NS)["items"], "2s")
    assert len(job["static_configs"]) == 1, job  # the PodMonitor selects the exporter's pod, by its port's name
    with promserver.Prometheus(scrape_configs=[job], rules=str(rules), scrape_interval="2s") as prom:
        def up_target():
            ts = [t for t in api_get(prom, "/api/v1/targets")["activeTargets"] if t["scrapePool"] == job["job_name"]]
            return ts if ts and all(t["health"] == "up" for t in ts) else None
        try:
            (target,) = rn.poll("Prometheus scraping the exporter's pod", up_target, timeout=90)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{api_get(prom, '/api/v1/targets')}") from None
        # the exporter's pod, at its IP and port
        d = target["discoveredLabels"]
        assert d["pod"] == pod["metadata"]["name"] and d["__address__"] == f"{pod['status']['podIP']}:9847", d
        # the PodMonitor's relabelings: job `pinscope` (the alerts' selector), none of the exporter pod's own
        # namespace/pod/container (pinscope's series use those for the workload)
        assert target["labels"]["job"] == "pinscope", target["labels"]
        assert not {"namespace", "pod", "container"} & set(target["labels"]), target["labels"]
        # pinscope's series of this node, with kubelet's own roles (its config and checkpoint, no workload)
        prom.wait_for(f'pinscope_read_success{{job="pinscope",node="{c.node_name}"}}', 1, deadline=90)
        names = {r["metric"]["__name__"] for r in prom.query(f'{{__name__=~"pinscope_.+",node="{c.node_name}"}}')}
        assert {"pinscope_cpu_info", "pinscope_node_info", "pinscope_cpus"} <= names, sorted(names)
        conf = rn.kubelet_config(c)
        info = prom.query(f'pinscope_node_info{{node="{c.node_name}"}}')
        assert [i["metric"]["cpu_manager_policy"] for i in info] == [conf["cpuManagerPolicy"]], info
        state = rn.cpu_state(c)
        reserved = rn.cpuset(conf["reservedSystemCPUs"])
        owned = rn.exclusive_cpus(c)
        want = {cpu: "reserved" if cpu in reserved else "exclusive" if cpu in owned else "shared"
                for cpu in rn.online_cpus()}
        assert not set(want) - reserved - owned - rn.cpuset(state["defaultCpuSet"]), state
        got = {int(r["metric"]["cpu"]): r["metric"]["role"]
               for r in prom.query(f'pinscope_cpu_info{{node="{c.node_name}"}}')}
        assert got == want, (got, want)
        # every alert of the PrometheusRule loaded, and evaluated without error
        def evaluated():
            groups = api_get(prom, "/api/v1/rules")["groups"]
            rs = [r for g in groups for r in g["rules"]]
            return rs if rs and all(r["health"] == "ok" for r in rs) else None
        try:
            loaded = rn.poll("Prometheus evaluating every rule", evaluated, timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{api_get(prom, '/api/v1/rules')}") from None
        assert sorted(r["name"] for r in loaded if r["type"] == "alerting") == alerts, loaded
        assert all(not r.get("lastError") and r["state"] in ("inactive", "pending") for r in loaded), loaded


# ---------------------------------------------------------------------------------------------- delete -k
def test_delete_k_leaves_nothing(deployed) -> None:
    """`kubectl delete -k` removes every object the overlay rendered (the namespace with them); on the node, the
    exporter's containers and its pod's cgroups are gone."""
    c, pod, ov, docs = deployed
    uid = pod["metadata"]["uid"]
    c.kubectl("delete", "-k", str(ov), "--wait=true", "--timeout=120s", timeout=180)
    left = []
    for d in docs:
        args = ["get", d["kind"].lower() + ("." + d["apiVersion"].split("/")[0] if "/" in d["apiVersion"]
                                              and "." in d["apiVersion"].split("/")[0] else ""),
                d["metadata"]["name"], "--ignore-not-found", "-o", "name"]
        if d["metadata"].get("namespace") and d["kind"] != "Namespace":
            if not namespace_exists(c):
                continue
            args += ["-n", d["metadata"]["namespace"]]
        if c.kubectl(*args).stdout.strip():
            left.append(f"{d['kind']} {d['metadata']['name']}")
    assert not left, left
    assert not namespace_exists(c)

    crictl = [str(build_paths()["CONTAINERD_BIN"] / "crictl"), "--runtime-endpoint", c.cri_endpoint]
    label = f"io.kubernetes.pod.uid={uid}"

    def node_clear():
        running = [subprocess.run([*crictl, *what, "-q", "--label", label], capture_output=True, text=True,
                                  timeout=30, check=True).stdout.split()
                   for what in (["ps"], ["pods", "--state", "ready"])]
        cg = list(rn.CPUSET_ROOT.glob(f"kubepods*/**/pod{uid}"))
        procs = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _in_pod(p, uid)]
        return (not any(running) and not cg and not procs) or None
    rn.poll("the exporter's pod gone from the node (its containers, sandbox, cgroups, processes)", node_clear,
            timeout=rn.DEADLINE)


def _in_pod(proc: Path, uid: str) -> bool:
    try:
        return f"pod{uid}" in (proc / "cgroup").read_text()
    except OSError:
        return False

