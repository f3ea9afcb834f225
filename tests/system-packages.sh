#!/bin/sh
# The Debian/Ubuntu packages the test suite needs (run as root). The ONE list: the README's test command
# and .ci/run both run this file. A test that needs another program adds its package here.
#   python3-venv     the README's commands make a venv (the system pip refuses to install: PEP 668)
#   openssh-server   real sshd nodes        util-linux  taskset         busybox  the probe under busybox sh
#   tmux             the TUI driven as a user                           prometheus  promtool, a real Prometheus
#   chromium         `pinscope serve` in a real browser                 kubernetes-client  kubectl
#   prometheus-node-exporter  bench/ compares the probe with it
set -eu
PACKAGES="python3-venv openssh-server tmux util-linux busybox prometheus prometheus-node-exporter chromium"
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
[ -z "$missing" ] && exit 0
echo "installing:$missing"
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
