"""deploy/: the manifests validate against the Kubernetes schemas, say what docs/ promises
(read-only host at /host, hostPID, read-only root fs, no capabilities, small resources, every taint
tolerated), and the alert rules pass `promtool check rules` and their `promtool test rules` unit tests.

Schemas, offline: the core kinds against the OpenAPI-derived JSON schemas that the `kubernetes-validate`
package ships (strict: an unknown field is an error), for the oldest and newest versions it has and
kubectl's 1.32; the Prometheus operator's PodMonitor and PrometheusRule against the models
`cloudcoil.models.prometheus_operator` generates from the operator's CRDs (a round trip: a field the CRD
does not know would be dropped, so the dump must equal the file).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers import need
from promserver import rules_file

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _kustomize(d: Path) -> list[dict]:
    k = yaml.safe_load((d / "kustomization.yaml").read_text())
    docs = []
    for r in k["resources"]:
        docs += [x for x in yaml.safe_load_all((d / r).read_text()) if x]
    return docs


CORE = _kustomize(DEPLOY)
OPERATOR = _kustomize(DEPLOY / "operator")
IN_CLUSTER = DEPLOY / "components/in-cluster"  # the ServiceAccount `pinscope` and its bindings: opt-in
BINDINGS = _kustomize(IN_CLUSTER)


def _kind(docs, kind):
    (d,) = [x for x in docs if x["kind"] == kind]
    return d


def test_every_file_is_listed_in_a_kustomization():
    listed = {DEPLOY / r for r in yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]}
    listed |= {DEPLOY / "operator" / r for r in yaml.safe_load((DEPLOY / "operator/kustomization.yaml").read_text())["resources"]}
    listed |= {IN_CLUSTER / r for r in yaml.safe_load((IN_CLUSTER / "kustomization.yaml").read_text())["resources"]}
    on_disk = {p for p in DEPLOY.rglob("*.yaml") if p.name != "kustomization.yaml"}
    assert on_disk == listed


@pytest.mark.parametrize("version", ["1.30.0", "1.32.0", "latest"])  # recursiveReadOnly: 1.30+ (below: older)
def test_core_manifests_validate_against_kubernetes_schemas(version):
    import kubernetes_validate
    from kubernetes_validate.utils import latest_version

    v = latest_version() if version == "latest" else version
    for doc in CORE + BINDINGS:
        kubernetes_validate.validate(doc, v, strict=True)  # raises ValidationError naming the field


def test_apply_k_deploy_grants_nothing_that_nothing_uses():
    """`kubectl apply -k deploy/` made the ServiceAccount `pinscope`, used by nothing, and bound it to
    pinscope-prober (root on every node, in effect) and the cluster-wide reader. deploy/ now defines the roles
    and binds none; the one ServiceAccount is the exporter's (no token, no role). Binding is opt-in: the
    in-cluster component, which binds exactly the roles deploy/rbac.yaml defines (the opt-in kubelet-metrics
    one apart), the prober only in pinscope's namespace."""
    docs = _render(DEPLOY)
    kinds = sorted(d["kind"] for d in docs)
    assert "RoleBinding" not in kinds and "ClusterRoleBinding" not in kinds, kinds
    (sa,) = [d for d in docs if d["kind"] == "ServiceAccount"]
    assert sa["metadata"]["name"] == "pinscope-exporter" and sa["automountServiceAccountToken"] is False
    ds = _kind(docs, "DaemonSet")["spec"]["template"]["spec"]
    assert ds["serviceAccountName"] == "pinscope-exporter" and ds["automountServiceAccountToken"] is False
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] in ("Role", "ClusterRole")}
    assert set(roles) == {"pinscope-node-reader", "pinscope-pod-reader", "pinscope-prober", "pinscope-kubelet-metrics"}
    # the component, rendered as a user applies it (kubectl apply -k deploy/in-cluster/)
    bound = _render(DEPLOY / "in-cluster")
    assert sorted(d["kind"] for d in bound) == ["ClusterRoleBinding", "ClusterRoleBinding", "RoleBinding",
                                               "ServiceAccount"]
    refs = {d["roleRef"]["name"]: d for d in bound if "roleRef" in d}
    assert set(refs) == set(roles) - {"pinscope-kubelet-metrics"}
    assert refs["pinscope-prober"]["kind"] == "RoleBinding" and refs["pinscope-prober"]["metadata"]["namespace"] == "pinscope"
    for d in refs.values():
        assert d["subjects"] == [{"kind": "ServiceAccount", "name": "pinscope", "namespace": "pinscope"}]
        assert d["roleRef"]["kind"] == roles[d["roleRef"]["name"]]["kind"]
    assert yaml.safe_load((IN_CLUSTER / "kustomization.yaml").read_text())["kind"] == "Component"


def test_no_role_reads_pods_and_nodes_together():
    """Reading every pod of the cluster (env values and all) is a role of its own, so pinscope can be given
    the nodes and the probe without it; the prober lists pods in pinscope's namespace only."""
    roles = {d["metadata"]["name"]: d for d in CORE if d["kind"] in ("Role", "ClusterRole")}
    for d in roles.values():
        resources = {r for rule in d["rules"] for r in rule["resources"]}
        if d["kind"] == "ClusterRole" and "pods" in resources:
            assert resources == {"pods"} and d["metadata"]["name"] == "pinscope-pod-reader"
    assert {r for rule in roles["pinscope-node-reader"]["rules"] for r in rule["resources"]} == {"nodes"}


def test_the_validator_catches_a_mistake():
    """The schemas are really applied: a typo and a wrong type are refused."""
    import copy

    import kubernetes_validate

    ds = copy.deepcopy(_kind(CORE, "DaemonSet"))
    ds["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, "1.32.0", strict=True)
    ds = copy.deepcopy(_kind(CORE, "DaemonSet"))
    ds["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "9847"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, "1.32.0", strict=True)


def _operator_model(kind):
    from cloudcoil.models.prometheus_operator import v1

    return getattr(v1, kind)


@pytest.mark.parametrize("kind", ["PodMonitor", "PrometheusRule"])
def test_operator_manifests_validate_against_the_crd_models(kind):
    doc = _kind(OPERATOR, kind)
    m = _operator_model(kind).model_validate(doc)
    assert m.model_dump(mode="json", by_alias=True, exclude_unset=True) == doc  # no unknown field dropped


def test_the_crd_model_catches_a_mistake():
    import copy

    from pydantic import ValidationError

    doc = copy.deepcopy(_kind(OPERATOR, "PodMonitor"))
    doc["spec"]["podMetricsEndpoints"][0]["port"] = 9847  # the CRD wants the port's name
    with pytest.raises(ValidationError):
        _operator_model("PodMonitor").model_validate(doc)
    doc = copy.deepcopy(_kind(OPERATOR, "PodMonitor"))
    doc["spec"]["podMetricEndpoints"] = doc["spec"].pop("podMetricsEndpoints")  # a typo
    m = _operator_model("PodMonitor").model_validate(doc)
    assert m.model_dump(mode="json", by_alias=True, exclude_unset=True) != doc


def test_daemonset_is_read_only_least_privilege_and_everywhere():
    ds = _kind(CORE, "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    assert pod["automountServiceAccountToken"] is False
    assert pod["tolerations"] == [{"operator": "Exists"}]  # no key, no effect: every taint
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and not sc.get("privileged")
    for m in c["volumeMounts"]:  # every host directory read-only (which, test_only_what_pinscope_reads_...)
        if m["mountPath"].startswith("/host"):
            assert m["readOnly"] is True
    r = c["resources"]
    assert _cpu(r["requests"]["cpu"]) <= 0.05 and _cpu(r["limits"]["cpu"]) <= 0.25
    assert _mem(r["requests"]["memory"]) <= 64 << 20 and _mem(r["limits"]["memory"]) <= 256 << 20


def test_daemonset_args_are_what_pinscope_accepts_and_ports_agree():
    from pinscope.collectors.exporter.serve import parse_listen
    from pinscope.cli import build_parser

    ds = _kind(CORE, "DaemonSet")
    (c,) = ds["spec"]["template"]["spec"]["containers"]
    assert c["args"][0] == "exporter"
    a = build_parser("exporter").parse_args(c["args"][1:])
    assert a.root == "/host" and a.targets == ["local"] and a.node_name == "$(NODE_NAME)"
    assert [e["name"] for e in c["env"]] == ["NODE_NAME"]
    _, port = parse_listen(a.listen)
    (p,) = c["ports"]
    assert p["containerPort"] == port and p["name"] == "metrics"
    svc = _kind(CORE, "Service")
    assert svc["spec"]["selector"] == ds["spec"]["selector"]["matchLabels"]
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics"
    pm = _kind(OPERATOR, "PodMonitor")
    assert pm["spec"]["selector"]["matchLabels"] == ds["spec"]["selector"]["matchLabels"]
    assert pm["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


def _cpu(q: str) -> float:
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


def _mem(q: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    return int(q[:-2]) * units[q[-2:]] if q[-2:] in units else int(q)


def test_rules_check_and_unit_tests(tmp_path):
    need(shutil.which("promtool") is not None, "promtool (Debian package prometheus)")
    rules = rules_file(tmp_path / "pinscope-rules.yaml")
    shutil.copy(Path(__file__).with_name("alerts_test.yaml"), tmp_path / "alerts_test.yaml")
    r = subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 4 rules found" in r.stdout
    r = subprocess.run(["promtool", "test", "rules", "alerts_test.yaml"], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout + r.stderr


def _render(path: Path) -> list[dict]:
    need(shutil.which("kubectl") is not None, "kubectl renders kustomizations (kubectl kustomize)")
    r = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def test_kube_prometheus_stack_finds_the_podmonitor_and_the_rules():
    """kube-prometheus-stack's Prometheus selects PodMonitors and PrometheusRules by `release: <Helm
    release>`: deploy/kube-prometheus-stack/ renders deploy/operator/ with that label (from the component)
    and nothing else changed; the result still validates against the operator's CRD models."""
    docs = _render(DEPLOY / "kube-prometheus-stack")
    assert sorted(d["kind"] for d in docs) == ["PodMonitor", "PrometheusRule"]
    for d in docs:
        assert d["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        plain = _kind(OPERATOR, d["kind"])
        labels = dict(d["metadata"]["labels"])
        labels.pop("release")
        assert labels == plain["metadata"]["labels"]
        assert {**d, "metadata": {**d["metadata"], "labels": labels}} == plain
        m = _operator_model(d["kind"]).model_validate(d)
        assert m.model_dump(mode="json", by_alias=True, exclude_unset=True) == d
    # the component is usable in anyone's overlay, and touches only those two kinds
    comp = yaml.safe_load((DEPLOY / "components/kube-prometheus-stack/kustomization.yaml").read_text())
    assert comp["kind"] == "Component"


def test_the_kustomization_sets_the_image(tmp_path):
    """deploy/ renders with the image from its `images:` entry (what deploy/publish.sh sets); the core
    manifests keep no release label (that is for the operator's objects only)."""
    docs = _render(DEPLOY)
    (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
    k = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    (img,) = k["images"]
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == f"{img['newName']}:{img['newTag']}"
    assert not any("release" in (d["metadata"].get("labels") or {}) for d in docs)


# ---------------------------------------------------------------------------------------------- host mounts
def _host_mounts(pod: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """(hostPath, mountPath) of every host directory a pod spec mounts, and the mountPaths of its empty
    read-only shadows (an emptyDir mounted over a host directory it must not show)."""
    (c,) = pod["containers"]
    vols = {v["name"]: v for v in pod["volumes"]}
    host, shadows = [], []
    for m in c["volumeMounts"]:
        v = vols[m["name"]]
        if "hostPath" in v:
            assert m["readOnly"] is True and m.get("recursiveReadOnly") == "IfPossible", m
            assert m.get("mountPropagation", "None") == "None", m  # recursiveReadOnly needs it
            host.append((v["hostPath"]["path"], m["mountPath"]))
        elif m["mountPath"].startswith("/host/"):
            assert "emptyDir" in v and m["readOnly"] is True, m
            shadows.append(m["mountPath"])
    return host, shadows


PKI = "/host/var/lib/kubelet/pki"  # kubelet's keys: the one mount the DaemonSet and the debug pod differ by


def test_only_what_pinscope_reads_is_mounted_and_the_same_in_the_debug_pod_but_pki():
    """The DaemonSet mounted the host's whole / (kubelet's keys, every pod's secrets, the container runtime's
    socket); now each directory the probe reads, at its own path under /host, read-only and recursively so
    (the cgroupfs under /sys was writable under a plain read-only bind), and kubelet's directories holding
    every pod's volumes, the CSI-staged volumes and kubelet's keys hidden under empty read-only mounts.
    node/NAME's debug pod mounts the very same but for kubelet's keys (pki/), which it does not hide: a mount
    over a pki/ the node lacks failed it (collectors/transport/kube.py HIDDEN_PATHS), and it is short-lived
    and only for holders of pinscope-prober."""
    from pinscope.collectors.transport.kube import HOST_PATHS, HIDDEN_PATHS, debug_pod

    ds = _kind(CORE, "DaemonSet")["spec"]["template"]["spec"]
    host, shadows = _host_mounts(ds)
    assert "/" not in [p for p, _ in host]
    assert host == [(p, "/host" + p) for p in HOST_PATHS]
    assert sorted(shadows) == sorted(["/host" + p for p in HIDDEN_PATHS] + [PKI])
    assert set(HOST_PATHS) == {"/proc", "/sys", "/var/lib/kubelet", "/var/log/pods", "/var/log/containers"}
    assert set(HIDDEN_PATHS) == {"/var/lib/kubelet/pods", "/var/lib/kubelet/plugins"}  # no pki/: kube.py says why
    pod = debug_pod("worker-1")["spec"]
    assert _host_mounts(pod) == (host, [s for s in shadows if s != PKI])
    for p in (ds, pod):  # a shadow comes after the mount it hides (runtimes sort by depth; kept in order anyway)
        paths = [m["mountPath"] for m in p["containers"][0]["volumeMounts"]]
        for s in _host_mounts(p)[1]:
            assert paths.index(s) > paths.index("/host/var/lib/kubelet")


def test_the_daemonset_hides_kubelets_keys():
    """f3fb3f6 dropped the empty mount over /var/lib/kubelet/pki from the DaemonSet along with the debug pod's.
    Where kubelet manages its certificates (kubeadm, EKS, GKE, AKS), pki/kubelet-client-current.pem is the
    node's credential to the API server, and the exporter is a long-running uid-0 process listening on :9847:
    it hides pki/ by default, under the same empty read-only mount as pods/ and plugins/."""
    ds = _kind(CORE, "DaemonSet")["spec"]["template"]["spec"]
    (c,) = ds["containers"]
    (m,) = [m for m in c["volumeMounts"] if m["mountPath"] == PKI]
    assert m["readOnly"] is True and "subPath" not in m, m
    (v,) = [v for v in ds["volumes"] if v["name"] == m["name"]]
    assert "emptyDir" in v and "hostPath" not in v, v
    assert PKI in _host_mounts(ds)[1]


def test_the_patch_the_daemonset_gives_drops_the_pki_mount_and_nothing_else(tmp_path):
    """A kubelet given its certificates never makes pki/, and runc cannot make the mount point inside the
    read-only root-dir ("mkdir .../host/var/lib/kubelet/pki: read-only file system"): the exporter does not
    start there. deploy/daemonset.yaml's comment gives the kustomize patch for such nodes; in an overlay of
    deploy/, as a user would put it, it renders the DaemonSet without that one mount."""
    import os

    text = (DEPLOY / "daemonset.yaml").read_text()
    (line,) = [x for x in text.splitlines() if "$patch: delete" in x]
    patch = line.strip().removeprefix("#").strip()
    assert patch.startswith("- patch: '") and PKI in patch, patch
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    base_dir = os.path.relpath(DEPLOY, overlay)  # kustomize takes no absolute path to a base
    (overlay / "kustomization.yaml").write_text(f"resources:\n  - {base_dir}\npatches:\n  {patch}\n")
    base, patched = _render(DEPLOY), _render(overlay)

    def mounts(docs):
        (ds,) = [d for d in docs if d["kind"] == "DaemonSet"]
        return ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]

    assert PKI in [m["mountPath"] for m in mounts(base)]
    assert mounts(patched) == [m for m in mounts(base) if m["mountPath"] != PKI]
    strip = [d for d in base if d["kind"] != "DaemonSet"], [d for d in patched if d["kind"] != "DaemonSet"]
    assert strip[0] == strip[1]


@pytest.mark.parametrize("version", ["1.25.0", "1.29.0"])
def test_before_1_30_only_recursive_read_only_is_unknown(version):
    """recursiveReadOnly is in the API from 1.30: an older API server drops the field (kubectl warns) and the
    mounts are plain read-only. Apart from it, the manifests are valid there."""
    import copy

    import kubernetes_validate

    for doc in CORE:
        doc = copy.deepcopy(doc)
        if doc["kind"] == "DaemonSet":
            for m in doc["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]:
                m.pop("recursiveReadOnly", None)
        kubernetes_validate.validate(doc, version, strict=True)


def test_a_tree_of_only_the_mounted_paths_reads_the_same_node(tmp_path):
    """pinscope --root over a tree that holds only what the DaemonSet mounts (and empty directories where it
    hides kubelet's: pods/, plugins/, pki/) reads the node as it reads the whole tree: every CPU, pod,
    container and finding."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import run_cli
    from nodes import dual_socket_intel
    from pinscope.collectors.sim.node import SimNode

    whole = SimNode(dual_socket_intel(), tmp_path / "whole").write().root
    # what a real node also has beside them: the runtime's socket, kubelet's keys, a pod's secret, /etc
    (whole / "run/containerd").mkdir(parents=True)
    (whole / "run/containerd/containerd.sock").write_text("")
    (whole / "var/lib/kubelet/pki").mkdir(parents=True)
    (whole / "var/lib/kubelet/pki/kubelet-client-current.pem").write_text("KEY")
    (whole / "var/lib/kubelet/plugins").mkdir(parents=True)
    uid = next(p.name for p in (whole / "var/lib/kubelet/pods").iterdir())
    secret = whole / f"var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~secret/db"
    secret.mkdir(parents=True)
    (secret / "password").write_text("hunter2")
    (whole / "etc").mkdir()
    (whole / "etc/shadow").write_text("root:x")
    mounted = tmp_path / "mounted"
    host, shadows = _host_mounts(_kind(CORE, "DaemonSet")["spec"]["template"]["spec"])  # what the manifest mounts
    for p, at in host:
        if (whole / p.lstrip("/")).exists():
            shutil.copytree(whole / p.lstrip("/"), mounted / at.removeprefix("/host/"), symlinks=True)
    for at in shadows:
        shutil.rmtree(mounted / at.removeprefix("/host/"), ignore_errors=True)
        (mounted / at.removeprefix("/host/")).mkdir(parents=True)
    seen = {str(f.relative_to(mounted)) for f in mounted.rglob("*")}
    assert not [f for f in seen if "secret" in f or "pki/" in f or f.startswith(("run", "etc"))]

    def snap(root):
        r = run_cli("snapshot", "--json", "--root", str(root), "local", timeout=120)
        assert r.returncode == 0, r.stderr
        o = json.loads(r.stdout)
        for pod in o.get("pods") or []:  # kubelet's pods dir is one naming source among several: hidden
            pod.pop("sources", None)
        o.pop("target", None)
        return o

    a, b = snap(whole), snap(mounted)
    assert a["cpus"] and a["pods"] and a == b
