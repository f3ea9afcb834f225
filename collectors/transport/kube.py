"""`node/NAME`: the probe through the Kubernetes API, for nodes nobody can SSH to (EKS, GKE, AKS, OpenShift).

If a pinscope exporter pod (deploy/, label app.kubernetes.io/name=pinscope-exporter, in --namespace) runs
on the node, the probe is exec'd in it, with --root at the path where that pod mounts the host's "/".
Otherwise a short-lived debug pod is created on the node, pinned by spec.nodeName with every taint
tolerated, like `kubectl debug node/NAME` (kubectl/pkg/cmd/debug: generateNodeDebugPod) but with the least
the probe needs, as the exporter DaemonSet runs: host PID (the node's tasks), the host's "/" mounted
READ-ONLY at /host, uid 0 (kubelet's cpu_manager_state is 0600 root: read as its owner, no capability),
every capability dropped, no privilege escalation, seccomp RuntimeDefault, a read-only root filesystem;
NOT privileged and NOT on the host network (the pod needs no address: the API server reaches it through
the kubelet). No service account token, pinscope's labels. The probe runs with --root /host over the
exec stream (kubeexec.py); on close stdin is closed so the probe exits, and the debug pod is deleted.

A pinscope that dies without closing (SIGKILL, OOM, a lost laptop) cannot delete its pod, so the pod ends
by itself: its container is not `sleep`, but a watchdog (WATCHDOG) that exits once no exec session has
been alive for `idle` seconds. Each session writes its pid (the probe's: the exec keeps it) to a file in
a small in-memory emptyDir, the watchdog checks /proc/<pid> every 2 s. A dead pinscope's TCP connection
ends, the API server ends the exec, the probe reads EOF on stdin and exits, and `idle` seconds later the
container exits: the pod is Succeeded and nothing runs on the node (the object stays for `pinscope gc`).
activeDeadlineSeconds (`lifetime`) stays as the hard upper bound; it is no heartbeat because the API
lets a running pod's activeDeadlineSeconds only be lowered, never raised (pod update validation), so
it cannot be renewed while in use: shortly before it, a running pinscope starts a fresh pod.

REST calls go through the `kubernetes` client (in a thread, each with a deadline); every refusal is one
plain line naming the verb and resource (collectors.kube.call). The frames are the same as over SSH.
"""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import re
import secrets
import string
import threading
import time
from typing import TYPE_CHECKING

from .. import probe_text
from ..aio import within
from ..errors import ProbeFailed, Unreachable
from ..exitsignals import at_end
from ..kube import KubeError, NotFound, Refused, call, load_config
from ..text import display
from .base import PROBE_END, FrameStream, stdin_probe_command
from .kubeexec import ExecStream, exec_url

if TYPE_CHECKING:  # imported when connecting (the package is slow to import)
    from kubernetes.client import Configuration, CoreV1Api

PROBE_LABELS = {"app.kubernetes.io/name": "pinscope-probe", "app.kubernetes.io/managed-by": "pinscope"}
PROBE_SELECTOR = ",".join(f"{k}={v}" for k, v in PROBE_LABELS.items())
EXPORTER_SELECTOR = "app.kubernetes.io/name=pinscope-exporter"
DEFAULT_IMAGE = "busybox:1.36"  # has sh and awk (the probe needs nothing else)
DEFAULT_NAMESPACE = "pinscope"
DEFAULT_LIFETIME = 3600  # s: activeDeadlineSeconds of a debug pod (and the watchdog's own bound)
DEFAULT_IDLE = 30  # s without a live exec session before a debug pod's container exits by itself
DEFAULT_HEARTBEAT = 10  # s between a session's heartbeats on its debug pod
# What `gc` tells a live session's pod from a dead one's by: the session writes the time (its own clock,
# UTC) into HEARTBEAT every HEARTBEAT_EVERY s (a JSON merge patch: `patch` pods in --namespace). gc looks
# twice, 2 x that apart, and keeps the pods whose heartbeat moved: no clock is compared with another.
# Nothing in the pod names who made it (user, host, pid): anyone who may list pods reads its metadata.
HEARTBEAT = "pinscope.io/heartbeat"
HEARTBEAT_EVERY = "pinscope.io/heartbeat-every"
GC_WAIT_CAP = 121  # s: the longest gc watches heartbeats (a pod's heartbeat-every is capped at 60 s)
HOST_MOUNT = "/host"
# What the probe reads of the host (probe.sh under --root /host), each at its own path under /host, read-only
# and recursively so (recursiveReadOnly: IfPossible, which needs mountPropagation None): /proc and /sys (the
# cgroupfs under /sys/fs/cgroup is a submount: a plain read-only bind leaves it writable), kubelet's root-dir
# (its checkpoint files are replaced by rename, so the directory is mounted, not the files: a file's bind
# would keep the first inode), the pod log names. Not the host's / (the runtime's socket, /etc, every
# mount). A kubelet with another --root-dir or podLogsDir needs these paths changed (docs/kubernetes.md).
HOST_PATHS = ("/proc", "/sys", "/var/lib/kubelet", "/var/log/pods", "/var/log/containers")
# ... and under kubelet's root-dir, what it must not show, covered by an empty read-only mount: every pod's
# volumes (secrets, service account tokens, emptyDirs) and the CSI-staged volumes, which kubelet makes at its
# start (setupDataDirs); the probe reads neither (kubelet's pods dir only names containers, which the pod log
# names also do). Not pki/ (kubelet's keys): a real kubelet makes it only when it manages certificates itself
# (bootstrap, rotation, a self-signed serving certificate; 1.35.4 and 1.37.2 given their certificates made
# none), and a mount over a directory the read-only root-dir lacks fails the pod (runc: mkdir ... read-only
# file system): node/NAME could not read such a node at all. Where pki/ exists, whoever may exec into the debug
# pod may read it: pinscope-prober is root on every node anyway (docs/kubernetes.md). The exporter DaemonSet,
# long-running and listening, does hide pki/ (deploy/daemonset.yaml says why and how to drop it).
HIDDEN_PATHS = ("/var/lib/kubelet/pods", "/var/lib/kubelet/plugins")


def host_volumes() -> tuple[list[dict], list[dict]]:
    """(volumes, volumeMounts) of the host directories the probe reads and the shadows over what it must not
    see; the exporter DaemonSet (deploy/daemonset.yaml) mounts the very same (tests/deploy/test_deploy.py)."""
    vols: list[dict] = []
    mounts: list[dict] = []
    for path in HOST_PATHS:
        name = "host-" + (path.strip("/").replace("/", "-").replace("_", "-") or "root")
        vols.append({"name": name, "hostPath": {"path": path, "type": "Directory"}})
        mounts.append({"name": name, "mountPath": HOST_MOUNT + path, "readOnly": True,
                       "recursiveReadOnly": "IfPossible"})
    vols.append({"name": "hidden", "emptyDir": {"medium": "Memory", "sizeLimit": "1Ki"}})
    mounts += [{"name": "hidden", "mountPath": HOST_MOUNT + path, "readOnly": True} for path in HIDDEN_PATHS]
    return vols, mounts
RUN_DIR = "/run/pinscope"  # the debug pod's in-memory emptyDir: the session file, nothing else
SESSION_FILE = RUN_DIR + "/session"
# The debug pod's container: wait while an exec session lives, exit after $1 s without one (or at $2 s).
# Constant text; the pid is checked to be digits before it is used. A reused pid only keeps the pod up
# until activeDeadlineSeconds, as before. One `sleep` every 2 s is all it costs the node.
WATCHDOG = (
    'idle=0; up=0; '
    'while [ "$up" -lt "$2" ]; do '
    'sleep 2; up=$((up + 2)); '
    'p=; read -r p 2>/dev/null <' + SESSION_FILE + '; '
    'case $p in ""|*[!0-9]*) idle=$((idle + 2)) ;; '
    '*) if [ -d "/proc/$p" ]; then idle=0; else idle=$((idle + 2)); fi ;; esac; '
    '[ "$idle" -lt "$1" ] || exit 0; '
    'done')
# waiting reasons that will not resolve by waiting longer (kubelet: images.ErrImagePull and friends)
_HOPELESS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
             "CreateContainerConfigError", "CreateContainerError", "RunContainerError"}


# Our debug pods not known deleted yet, by (namespace, name): deleted once more when the program's work is done,
# and by the exit watchdog when an orderly end has not ended within its grace (exitsignals.at_end), rather than
# left to their own watchdog (a delete cut short by the app's 2 s a node, or one the API did not answer).
_UNDELETED: dict[tuple[str, str], CoreV1Api] = {}
LAST_DELETE = 3.0  # s for all of the last resort's deletes together (they run at once)


def _delete_undeleted() -> None:
    """Delete every debug pod still ours, at once, LAST_DELETE s at most in all; errors ignored (the pod's
    own watchdog and activeDeadlineSeconds remain). Runs in the exit watchdog's thread."""
    def delete(ns: str, name: str, api: CoreV1Api) -> None:
        with contextlib.suppress(Exception):
            call(api.delete_namespaced_pod, "delete", "pods", ns, LAST_DELETE, namespace=ns, name=name,
                 grace_period_seconds=0)
    threads = [threading.Thread(target=delete, args=(ns, name, api), daemon=True)
               for (ns, name), api in list(_UNDELETED.items())]
    for t in threads:
        t.start()
    end = time.monotonic() + LAST_DELETE
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))


at_end(_delete_undeleted)


# a node's name is a DNS subdomain (k8s.io/apimachinery validation.IsDNS1123Subdomain)
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def node_name(target: str) -> str | None:
    """'node/NAME' (as kubectl spells it; also 'nodes/NAME') -> NAME, else None."""
    for prefix in ("node/", "nodes/"):
        if target.startswith(prefix) and len(target) > len(prefix):
            return target[len(prefix):]
    return None


def valid_node_name(name: str) -> bool:
    return len(name) <= 253 and _DNS_SUBDOMAIN.fullmatch(name) is not None


# An image reference as container runtimes parse it (github.com/distribution/reference, reference.go):
# [host[:port]/]path[:tag][@digest]; path components are lowercase; a digest is algorithm:hex, and the
# algorithms the OCI image spec registers have a fixed length (sha256: 64 hex digits, sha512: 128)
_HOST = r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"(?P<name>(?:{_HOST}(?::[0-9]+)?/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
                    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
                    r"(?:@(?P<alg>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*):(?P<hex>[0-9a-zA-Z]+))?", re.ASCII)
_DIGEST_HEX = {"sha256": 64, "sha512": 128}


def image_problem(image: str) -> str | None:
    """Why `image` is not a reference a runtime can pull (one phrase), or None. A tag (busybox:1.36) or a
    digest (busybox@sha256:...: the very image, whatever the tag points at later), or both."""
    if not image:
        return "an image reference is not empty"
    m = _IMAGE.fullmatch(image)
    if m is None or len(m["name"]) > 255:
        return f"{image!r} is not an image reference (NAME[:TAG][@sha256:DIGEST], e.g. busybox:1.36)"
    if m["alg"] is not None:
        want = _DIGEST_HEX.get(m["alg"])
        if want is None:
            return f"{image!r}: a digest is sha256:<64 hex digits> (or sha512:<128>)"
        if len(m["hex"]) != want or not re.fullmatch("[0-9a-f]+", m["hex"]):
            return f"{image!r}: a {m['alg']} digest is {want} lowercase hex digits"
    return None


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def debug_pod(node: str, image: str = DEFAULT_IMAGE, lifetime: int = DEFAULT_LIFETIME,
              idle: int = DEFAULT_IDLE, heartbeat: int = DEFAULT_HEARTBEAT) -> dict:
    """The debug pod's manifest (see the module docstring for what it may do and why)."""
    suffix = "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5))
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": f"pinscope-{node[:40].rstrip('.-')}-{suffix}",
            "labels": dict(PROBE_LABELS),
            "annotations": {HEARTBEAT: _utc_now(), HEARTBEAT_EVERY: str(int(heartbeat))},
        },
        "spec": {
            "nodeName": node,
            "hostPID": True,  # the node's tasks (/host/proc), their pids matching the cgroups' cgroup.procs
            "restartPolicy": "Never",
            "activeDeadlineSeconds": int(lifetime),
            "terminationGracePeriodSeconds": 0,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "tolerations": [{"operator": "Exists"}],
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "runAsNonRoot": False,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [*host_volumes()[0], {"name": "run", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}],
            "containers": [{
                "name": "probe",
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", WATCHDOG, "pinscope-watchdog", str(int(idle)), str(int(lifetime))],
                "securityContext": {"privileged": False, "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}},
                "volumeMounts": [*host_volumes()[1], {"name": "run", "mountPath": RUN_DIR}],
                # no CPU request: the pod is bound to its node (nodeName), so kubelet's admission alone judges it,
                # and a node whose allocatable CPU is all requested (a fully pinned node: what one inspects)
                # refused 10m with OutOfcpu (real kubelet 1.37.2)
                "resources": {"requests": {"memory": "16Mi"}, "limits": {"memory": "128Mi"}},
            }],
        },
    }


def session_command(root: str) -> str:
    """The exec'd command in our debug pod: the session's pid for the watchdog, then the probe (which
    keeps that pid: the stdin reader execs it)."""
    return f"echo $$ >{SESSION_FILE}; " + stdin_probe_command(root)


def host_root_of(pod: dict) -> tuple[str, str] | None:
    """(container, root) where this pod reads the host (how the exporter DaemonSet reads the node): the
    mountPath of the host's /proc less "/proc" (or, as older manifests did, of the host's whole "/"), or
    None. Read from the pod spec, so the exporter's manifest may choose its own path."""
    spec = pod.get("spec") or {}
    host_vols = {v.get("name"): ((v.get("hostPath") or {}).get("path") or "").rstrip("/")
                 for v in spec.get("volumes") or [] if v.get("hostPath")}
    for c in spec.get("containers") or []:
        for m in c.get("volumeMounts") or []:
            path, where = host_vols.get(m.get("name")), str(m.get("mountPath") or "").rstrip("/")
            if path == "" and where:
                return str(c.get("name")), where
            if path == "/proc" and where.endswith("/proc") and len(where) > len("/proc"):
                return str(c.get("name")), where[:-len("/proc")]
    return None


def _running(pod: dict) -> bool:
    st = pod.get("status") or {}
    return st.get("phase") == "Running" and any(
        "running" in (cs.get("state") or {}) for cs in st.get("containerStatuses") or [])


class KubeTransport(FrameStream):
    """One node through the API: a pod (the exporter's, or our debug pod) and one exec session in it."""

    # an exec stream carries the probe's bytes, not a connection to a unix socket
    podresources_not = ("through the Kubernetes API (node/NAME): an exec stream carries no socket connection; "
                        "pinscope run on the node as root (local, the exporter DaemonSet) or over SSH as root asks it")

    def __init__(self, target: str, *, context: str | None = None, kubeconfig: str | None = None,
                 namespace: str = DEFAULT_NAMESPACE, image: str = DEFAULT_IMAGE,
                 lifetime: int = DEFAULT_LIFETIME, start_timeout: float = 120.0,
                 use_exporter: bool = True, idle: int = DEFAULT_IDLE, heartbeat: int = DEFAULT_HEARTBEAT) -> None:
        self.target = self.name = target
        self.node = node_name(target) or target
        self.context, self.kubeconfig = context, kubeconfig
        self.namespace, self.image, self.lifetime, self.pod_idle = namespace, image, int(lifetime), int(idle)
        self.start_timeout = start_timeout
        self.heartbeat = max(1, int(heartbeat))
        self._beating: asyncio.Task | None = None  # the heartbeat on our debug pod, while we hold it
        self.use_exporter = use_exporter
        self.api: CoreV1Api | None = None
        self.cfg: Configuration | None = None
        self.pod: str | None = None  # the pod we exec in
        self.owned = False  # True for our debug pod: deleted on close
        self.deadline = 0.0  # monotonic time at which the debug pod's activeDeadlineSeconds ends
        self.stream: ExecStream | None = None
        self.via = ""  # "exporter pod X" / "debug pod X": said in errors and shown by the CLI
        # the create request of our debug pod while it is in flight, and the pod's name (chosen here): a close()
        # meanwhile (a signal) waits for the answer and deletes the pod it made
        self._creating: tuple[asyncio.Future, str] | None = None

    # ------------------------------------------------------------------ the API, in a thread, with deadlines
    def _core(self) -> CoreV1Api:
        if self.api is None:  # made by connect() before anything asks the API
            raise Unreachable(f"{self.target}: not connected to the Kubernetes API")
        return self.api

    async def _call(self, fn, verb: str, resource: str, in_ns: str | None = None, timeout: float = 10.0, **kw):
        try:
            return await within(
                asyncio.to_thread(call, fn, verb, resource, in_ns, timeout, **kw), timeout + 2)
        except asyncio.TimeoutError as err:
            raise Unreachable(f"{self.target}: Kubernetes API did not answer {verb} {resource} "
                              f"within {timeout:g} s") from err
        except KubeError as err:
            raise type(err)(f"{self.target}: {err}") from err

    async def connect(self, timeout: float = 10.0) -> None:
        if self.stream is not None or self.pod is not None:
            await self.close()
        self.said = ""
        if not valid_node_name(self.node):  # it goes into a field selector and a pod name: checked first
            raise Unreachable(f"{self.target}: {self.node!r} is not a node name (a DNS subdomain: a-z, 0-9, '-', '.')")
        from kubernetes import client

        if self.api is None:  # one client (and its connection pool) for the life of the transport
            self.cfg = await asyncio.to_thread(load_config, self.context, self.kubeconfig)
            self.api = client.CoreV1Api(client.ApiClient(self.cfg))
        try:
            await self._call(self.api.read_node, "get", "nodes", None, timeout, name=self.node)
        except NotFound as err:
            raise Unreachable(f"{self.target}: the Kubernetes API has no node named {self.node}") from err
        try:
            container, root = await self._pick_pod(timeout)
            await self._exec(container, root, timeout)
        except BaseException:
            await self.close()
            raise

    async def _pick_pod(self, timeout: float) -> tuple[str, str]:
        if self.use_exporter:
            doc = await self._call(self._core().list_namespaced_pod, "list", "pods", self.namespace, timeout,
                                   namespace=self.namespace, label_selector=EXPORTER_SELECTOR,
                                   field_selector=f"spec.nodeName={self.node}")
            for pod in doc.get("items") or []:
                where = host_root_of(pod)
                if where and _running(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp"):
                    self.pod, self.owned = pod["metadata"]["name"], False
                    self.via = f"exporter pod {self.namespace}/{self.pod}"
                    return where
        manifest = debug_pod(self.node, self.image, self.lifetime, self.pod_idle, self.heartbeat)
        creating = asyncio.ensure_future(self._call(
            self._core().create_namespaced_pod, "create", "pods", self.namespace, timeout,
            namespace=self.namespace, body=manifest,
            # kubernetes 37's generated client sends no Content-Type for a dict body (it goes out as
            # application/octet-stream: a 415 from a real API server, caught by the stand-in); older clients
            # read _content_type
            _content_type="application/json", _headers={"Content-Type": "application/json"}))
        self._creating = (creating, manifest["metadata"]["name"])
        _UNDELETED[(self.namespace, manifest["metadata"]["name"])] = self._core()
        try:
            created = await asyncio.shield(creating)  # cancelled (a signal): the request goes on, close() waits
        except NotFound as err:
            raise KubeError(f"{self.target}: namespace {self.namespace} does not exist (kubectl apply -k deploy/ "
                            f"makes it; or pass --namespace)") from err
        self._creating = None
        self.pod = (created.get("metadata") or {}).get("name") or manifest["metadata"]["name"]
        self.owned = True
        self.deadline = time.monotonic() + self.lifetime
        self.via = f"debug pod {self.namespace}/{self.pod}"
        self._beating = asyncio.ensure_future(self._beat(self.pod))  # from now on: gc must see it is ours
        self._said(f"{self.via} created, waiting for it to run")
        await self._wait_running(timeout)
        return "probe", HOST_MOUNT

    async def _wait_running(self, timeout: float) -> None:
        """Poll until the debug pod runs; a hopeless state (image pull, kubelet refusal) ends the wait early."""
        t0 = time.monotonic()
        end = t0 + self.start_timeout
        why = "Pending"
        pause = 0.1  # a pod on a node with the image already there runs within a second or two
        while time.monotonic() < end:
            pod = await self._call(self._core().read_namespaced_pod, "get", "pods", self.namespace, timeout,
                                   namespace=self.namespace, name=self.pod)
            if _running(pod):
                return
            st = pod.get("status") or {}
            why = st.get("phase") or "Pending"
            if why in ("Failed", "Succeeded"):
                raise ProbeFailed(f"{self.target}: {self.via} ended ({why}: "
                                  f"{st.get('reason') or ''} {st.get('message') or ''})".rstrip() + ")")
            for cs in st.get("containerStatuses") or []:
                waiting = (cs.get("state") or {}).get("waiting") or {}
                if waiting.get("reason"):
                    why = f"{waiting['reason']}: {waiting.get('message') or ''}".strip().rstrip(":")
                    if waiting["reason"] in _HOPELESS:
                        raise ProbeFailed(f"{self.target}: {self.via} cannot start ({why}; image {self.image})")
            self._said(f"{self.via} not running yet ({why[:200]}), {time.monotonic() - t0:.0f} s of at most "
                       f"{self.start_timeout:g} s")
            await asyncio.sleep(pause)
            pause = min(1.0, pause * 1.5)
        raise Unreachable(f"{self.target}: {self.via} not running after {self.start_timeout:g} s ({why})")

    async def _beat(self, pod: str) -> None:
        """Write the time into our debug pod's heartbeat annotation every `heartbeat` s while we hold it (until
        close() cancels this). A missed beat (the API slow or down) is tried again at the next; a pod gone, or
        a refusal (a role without `patch` pods), ends the beating: gc then takes the pod for one a dead
        pinscope left, and this session reconnects on a new pod if gc deletes it."""
        beat = time.monotonic()
        while True:
            # on a fixed cadence: a slow patch does not push the next one later (gc watches 2 periods + 1 s)
            beat += self.heartbeat
            await asyncio.sleep(max(0.0, beat - time.monotonic()))
            beat = max(beat, time.monotonic() - self.heartbeat)
            try:
                await self._call(self._core().patch_namespaced_pod, "patch", "pods", self.namespace,
                                 max(1.0, self.heartbeat - 0.5), namespace=self.namespace, name=pod,
                                 body={"metadata": {"annotations": {HEARTBEAT: _utc_now()}}},
                                 _content_type="application/merge-patch+json",
                                 _headers={"Content-Type": "application/merge-patch+json"})
            except (NotFound, Refused) as err:
                self.heartbeat_problem = str(err)
                return
            except (KubeError, Unreachable):
                continue

    heartbeat_problem = ""  # why the heartbeat stopped (a refusal, the pod gone)

    def _said(self, what: str) -> None:
        self.said = what
        if self.progress is not None:
            self.progress(what)

    async def _exec(self, container: str, root: str, timeout: float) -> None:
        if self.pod is None:  # _pick_pod() named it
            raise ProbeFailed(f"{self.target}: no pod to exec in")
        self.stream = ExecStream(self.cfg, f"{self.target}: {self.via}", self.namespace)
        command = session_command(root) if self.owned else stdin_probe_command(root)
        url = exec_url(self.cfg, self.namespace, self.pod, container, ["sh", "-c", command])
        await self.stream.open(url, timeout)
        self.reader, self.writer = self.stream.reader, self.stream.writer
        await self._write((probe_text().rstrip("\n") + "\n" + PROBE_END + "\n").encode())

    # ------------------------------------------------------------------ frames
    async def _request(self, req: str):
        if self.owned and time.monotonic() > self.deadline - min(30.0, self.lifetime / 10):
            # activeDeadlineSeconds cannot be raised on a running pod: start a fresh one (one reconnect)
            raise ProbeFailed(f"{self.target}: {self.via} reaches its {self.lifetime} s lifetime; starting a new one")
        try:
            return await super()._request(req)
        except ProbeFailed as err:
            why = self.stream.why_ended() if self.stream else ""
            raise ProbeFailed(f"{self.target}: {self.via}: {err}" + (f" ({why})" if why else "")) from err

    async def close(self) -> None:
        """Close stdin so the probe exits (in the exporter's pod it must), then delete our debug pod. Quick:
        the app gives every node 2 s to close; cancelled meanwhile, the delete and the stream's close go on in
        their own tasks, not waited for. A pod left behind is deleted at the program's end (at_end), else ends
        `idle` s later (its watchdog)."""
        stream, self.stream = self.stream, None
        pod, owned, self.pod, self.owned = self.pod, self.owned, None, False
        beating, self._beating = self._beating, None
        if beating is not None:
            beating.cancel()  # not awaited: a beat in flight lands on a pod about to be deleted
        creating, self._creating = self._creating, None
        cancelled: list[BaseException] = []  # a cancel of our caller's (a signal): each step still runs

        async def step(aw) -> None:
            try:
                await aw
            except asyncio.CancelledError as err:
                cancelled.append(err)
            except Exception:  # noqa: BLE001 -- closing: what failed is read from the futures below
                pass

        made_by: asyncio.Future | None = None  # the create in flight, when the pod's existence hangs on it
        if creating is not None and pod is None:  # closed while its create was in flight: the pod may exist
            fut, name = creating
            await step(within(asyncio.shield(fut), 3))
            if not fut.done():
                fut.add_done_callback(lambda f: f.cancelled() or f.exception())  # its error is nobody's now
                made_by = fut
            refused = fut.done() and not fut.cancelled() and isinstance(fut.exception(), (Refused, NotFound))
            if not refused:  # made, or maybe made (no answer yet, a timeout): deleted by name, NotFound ignored
                pod, owned = name, True
            else:
                _UNDELETED.pop((self.namespace, name), None)
        if stream is not None:
            await step(stream.close_stdin(0.2 if owned else 1.0, quit=self.idle))
        if pod and owned and self.api is not None:
            # 4 s for the API's answer (1.5 s ran out once in a loaded CI run: the pod was left to its
            # watchdog); `snapshot`/`check` wait for it inside the exit grace, the app's 2 s a node cut it short.
            # Its own task: a cancel meanwhile does not stop it, and its end says whether the pod is gone
            deleting = asyncio.ensure_future(self._call(
                self.api.delete_namespaced_pod, "delete", "pods", self.namespace, 4.0, namespace=self.namespace,
                name=pod, grace_period_seconds=0))
            deleting.add_done_callback(functools.partial(_deleted, (self.namespace, pod), made_by))
            _RUNNING.add(deleting)
            deleting.add_done_callback(_RUNNING.discard)
            if not cancelled:  # cancelled meanwhile (a caller's deadline: the app's 2 s a node): not waited for
                await step(asyncio.shield(deleting))
        if stream is not None:
            if cancelled:
                closing = asyncio.ensure_future(stream.aclose())  # its session closed, on its own
                _RUNNING.add(closing)
                closing.add_done_callback(_RUNNING.discard)
            else:
                await step(stream.aclose())
        if cancelled:
            raise cancelled[0]


_RUNNING: set[asyncio.Future] = set()  # the deletes and stream closes a cancelled close() left running


def _deleted(key: tuple[str, str], made_by: asyncio.Future | None, deleting: asyncio.Future) -> None:
    """A debug pod's delete ended: gone (deleted, or not found while no create of it is still in flight) is
    forgotten; else it stays in _UNDELETED for the program's end (exitsignals.at_end) and the watchdog."""
    if deleting.cancelled():
        return
    err = deleting.exception()
    if err is None:
        _UNDELETED.pop(key, None)
    elif isinstance(err, NotFound):  # gone; or not made yet, when its create was still in flight: made later?
        if made_by is None or (made_by.done() and not made_by.cancelled()
                               and isinstance(made_by.exception(), (Refused, NotFound))):
            _UNDELETED.pop(key, None)


def _first_verdicts(pods: dict[str, dict]) -> tuple[dict[str, tuple[bool, str]], dict[str, str], int]:
    """gc's verdicts from one listing -> ({name: (delete?, why)}, {name: its heartbeat, for the pods still to
    watch}, how long to watch them in s)."""
    verdicts: dict[str, tuple[bool, str]] = {}  # name -> (delete?, why)
    watched: dict[str, str] = {}  # name -> its heartbeat when first seen
    wait = 0
    for name, pod in pods.items():
        meta, st = pod.get("metadata") or {}, pod.get("status") or {}
        notes = meta.get("annotations") or {}
        phase = st.get("phase") or "Pending"
        if meta.get("deletionTimestamp"):
            verdicts[name] = (False, "kept: being deleted already")
        elif phase in ("Succeeded", "Failed"):
            verdicts[name] = (True, "ended: nothing runs in it")
        elif HEARTBEAT not in notes:
            verdicts[name] = (False, "kept: it has no heartbeat to judge it by (an older pinscope's?); it ends by "
                                     "itself (its watchdog, its activeDeadlineSeconds)")
        else:
            every = str(notes.get(HEARTBEAT_EVERY) or "")
            every_s = min(int(every), 60) if every.isdecimal() and int(every) > 0 else DEFAULT_HEARTBEAT
            wait = max(wait, min(2 * every_s + 1, GC_WAIT_CAP))
            watched[name] = str(notes[HEARTBEAT])
    return verdicts, watched, wait


def _watched_verdicts(watched: dict[str, str], wait: int, now_pods: dict[str, dict],
                      pods: dict[str, dict], verdicts: dict[str, tuple[bool, str]]) -> None:
    """The watched pods' verdicts once `wait` s have passed (`now_pods`: the listing then); a pod still listed
    replaces its first listing in `pods`."""
    for name, beat in watched.items():
        again = now_pods.get(name)
        if again is None:
            verdicts[name] = (False, "gone meanwhile")
        elif str(((again.get("metadata") or {}).get("annotations") or {}).get(HEARTBEAT)) != beat:
            verdicts[name] = (False, f"kept: a live session renewed its heartbeat within {wait} s")
            pods[name] = again
        else:
            verdicts[name] = (True, f"no heartbeat for {wait} s: its pinscope is gone")
            pods[name] = again


def _gc_line(namespace: str, name: str, pod: dict, why: str, now: dt.datetime) -> str:
    """The start of gc's line for one pod: where it runs, its phase, its age and the verdict's why."""
    meta, spec, st = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    age = "?"
    with contextlib.suppress(KeyError, ValueError, AttributeError):
        born = dt.datetime.fromisoformat(meta["creationTimestamp"].replace("Z", "+00:00"))
        age = f"{int((now - born).total_seconds())}s"
    return f"{namespace}/{name}  node {spec.get('nodeName')}  {st.get('reason') or st.get('phase')}  age {age}  {why}"


def gc(context: str | None, kubeconfig: str | None, namespace: str = DEFAULT_NAMESPACE,
       dry_run: bool = False, out=None, err=None) -> int:
    """`pinscope gc`: delete pinscope's debug pods in `namespace` (by their labels) that no live session holds,
    and say of each pod what was done and why. A pod that ended (Succeeded, Failed) runs nothing: deleted. A
    pod that runs (or is starting) is watched for 2 x its heartbeat-every s: a live session renews its
    heartbeat within that (kept), a dead one's stays put (deleted). Clocks are never compared: only whether
    the heartbeat moved, as gc saw it. A pod without a heartbeat (an older pinscope's) is kept: it ends by
    itself (its watchdog, its activeDeadlineSeconds)."""
    import sys

    from kubernetes import client

    out = out or sys.stdout
    err = err or sys.stderr
    api = client.CoreV1Api(client.ApiClient(load_config(context, kubeconfig)))

    def listed() -> dict[str, dict]:
        doc = call(api.list_namespaced_pod, "list", "pods", namespace, namespace=namespace,
                   label_selector=PROBE_SELECTOR)
        return {str((p.get("metadata") or {}).get("name")): p for p in doc.get("items") or []}

    pods = listed()
    if not pods:
        print(f"no pinscope debug pods in namespace {namespace}", file=out)
        return 0
    verdicts, watched, wait = _first_verdicts(pods)
    if watched:
        print(f"watching the heartbeat of {len(watched)} running debug pod(s) for {wait} s", file=err, flush=True)
        time.sleep(wait)
        _watched_verdicts(watched, wait, listed(), pods, verdicts)
    now = dt.datetime.now(dt.timezone.utc)
    for name, pod in pods.items():
        delete, why = verdicts[name]
        line = _gc_line(namespace, name, pod, why, now)
        if delete and dry_run:
            line += "; would be deleted"
        elif delete:
            try:
                call(api.delete_namespaced_pod, "delete", "pods", namespace, namespace=namespace, name=name,
                     grace_period_seconds=0)
                line += "; deleted"
            except NotFound:
                line += "; already gone"
        print(display(line), file=out)  # the API's words (a status reason) are escaped like any text output
    return 0
