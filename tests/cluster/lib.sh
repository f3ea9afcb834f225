# shellcheck shell=bash
# Shared by tests/cluster/build, up and down: the pinned releases, where things live, and small helpers.
# Sourced, never run.

# The releases (issue 33). etcd is the one k8s.io/kubernetes v1.37.2 itself requires (go.etcd.io/etcd v3.7.0),
# linked into the same binary as the control plane; runc and the CNI plugins come from Debian.
KUBE_VERSION=v1.37.2                 # kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kubelet
KUBELET_VERSIONS="v1.37.2 v1.35.4"   # the newest served, and the newest 1.35 (before checkpoint v3/v4)
CONTAINERD_VERSION=v2.4.2
CRICTL_VERSION=v1.37.0              # sigs.k8s.io/cri-tools: down stops pods through CRI even without kubelet
# the devices of our device plugin (tests/cluster/src/device-plugin), which up runs beside the kubelet
DEVICE_RESOURCE=example.com/widget
DEVICE_COUNT=2
# github.com/prometheus-operator/prometheus-operator: its CRDs (PodMonitor, PrometheusRule) for deploy/operator/.
# The proxy serves this one release of the repository's root module (newer tags only of its submodules)
PROM_OPERATOR_VERSION=v0.85.0

CLUSTER_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$CLUSTER_SRC/../.." && pwd)
# Built binaries and images: outside the checkout, kept between runs, keyed by version and inputs.
CLUSTER_CACHE=${PINSCOPE_CLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pinscope-cluster}
# Everything a running cluster has: certificates, configs, etcd's data, containerd's root and state, the
# kubelet's root-dir, logs, pids. `down` removes all of it.
CLUSTER_RUN=${PINSCOPE_CLUSTER_RUN:-/var/lib/pinscope-cluster}

NODE_NAME=pinscope-node
# The pods' bridge and its subnet; its gateway address is the node's InternalIP, so nothing the cluster
# serves listens on the machine's own interfaces (the API server and etcd listen on 127.0.0.1 only).
BRIDGE=pinscope0
POD_SUBNET=10.217.0.0/24
NODE_IP=10.217.0.1
SERVICE_CIDR=10.217.128.0/24
APISERVER_PORT=16443
ETCD_PORT=23790
ETCD_PEER_PORT=23800

export PATH="$PATH:/usr/local/go/bin:/usr/local/sbin:/usr/sbin:/sbin"

# live PID: the process runs (a zombie does not: this machine's PID 1 reaps orphans late or never, and the
# daemons up starts in sessions of their own are orphans)
live() { [ -d "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

say() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# short content hash of files and directories (sorted paths, contents): a cache key for build inputs
inputs_hash() {
  local p
  for p in "$@"; do
    if [ -d "$p" ]; then
      (cd "$p" && find . -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z |
        xargs -0 sha256sum)
    else
      sha256sum "$p"
    fi
  done | sha256sum | cut -c1-12
}

# wait_until SECONDS WHAT COMMAND...: run COMMAND every 0.2 s until it succeeds; false past the deadline
wait_until() {
  local limit=$1 what=$2 end
  shift 2
  end=$(( $(date +%s) + limit ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$end" ]; then
      say "timed out after ${limit}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}
