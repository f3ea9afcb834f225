#!/bin/sh
# The Debian/Ubuntu packages the test suite needs (run as root). The ONE list: the README's test command
# and .ci/run both run this file. A test that needs another program adds its package here.
#   python3-venv     the README's commands make a venv (the system pip refuses to install: PEP 668)
#   openssh-server   real sshd nodes        util-linux  taskset         busybox  the probe under busybox sh
#   tmux             the TUI driven as a user                           prometheus  promtool, a real Prometheus
#   chromium         `pinscope serve` in a real browser                 kubernetes-client  kubectl
#   prometheus-node-exporter  bench/ compares the probe with it         openssl  the stand-in Kubernetes API's TLS
#   shellcheck       .ci/run lints the probe (collectors/probe.sh) with it
#   the real node (tests/cluster/: up, down; Go itself is the machine's, /usr/local/go):
#   runc  containernetworking-plugins (CNI bridge, host-local, loopback)  iptables  curl  buildah (the images)
#   debootstrap (the base of pinscope's image)  gcc libc6-dev (the static sandbox program, pause.c)
# kubectl must be 1.30 or newer (exec over websockets) to check the stand-in API: Debian 12's kubernetes-client
# is 1.20 (SPDY only); the machine images we run on ship kubectl 1.32 (package kubectl, beside google-cloud-cli).
set -eu
PACKAGES="python3-venv openssh-server tmux util-linux busybox prometheus prometheus-node-exporter chromium openssl"
PACKAGES="$PACKAGES shellcheck"
PACKAGES="$PACKAGES runc containernetworking-plugins iptables curl buildah debootstrap gcc libc6-dev"
# /usr/bin/kubectl may come from another package (google-cloud-cli's): Debian's kubernetes-client
# conflicts with it, so it is installed only when there is no kubectl at all.
command -v kubectl >/dev/null 2>&1 || [ -x /usr/bin/kubectl ] || PACKAGES="$PACKAGES kubernetes-client"
# dpkg needs ldconfig and start-stop-daemon, which live in sbin: a PATH of /usr/bin:/bin must still work
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
export PATH DEBIAN_FRONTEND=noninteractive
missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
minor=$(kubectl version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["minor"].rstrip("+"))' 2>/dev/null || echo 0)
if [ "$minor" -lt 30 ]; then
  # Nothing is downloaded from outside the package registries: the machine images we run on ship kubectl
  # 1.32 (package kubectl). With an older one, the tests that check the stand-in API with kubectl fail
  # under CI=true and say why.
  echo "warning: kubectl 1.$minor cannot exec over websockets; the stand-in API's kubectl checks need 1.30+" >&2
fi
