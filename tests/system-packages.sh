#!/bin/sh
# The Debian/Ubuntu packages the test suite needs (run as root). The ONE list: the README's test command
# and .ci/run both run this file. A test that needs another program adds its package here.
#   python3-venv     the README's commands make a venv (the system pip refuses to install: PEP 668)
#   openssh-server   real sshd nodes        util-linux  taskset         busybox  the probe under busybox sh
#   tmux             the TUI driven as a user                           prometheus  promtool, a real Prometheus
#   chromium         `pinscope serve` in a real browser                 kubernetes-client  kubectl
#   prometheus-node-exporter  bench/ compares the probe with it         openssl  the stand-in Kubernetes API's TLS
# kubectl must be 1.30 or newer (exec over websockets) to check the stand-in API: Debian 12's kubernetes-client
# is 1.20 (SPDY only), so an older kubectl is joined by the v1.32.4 release binary in /usr/local/bin, checked
# against its published sha256 (end of this file).
set -eu
PACKAGES="python3-venv openssh-server tmux util-linux busybox prometheus prometheus-node-exporter chromium openssl"
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
  echo "installing: kubectl v1.32.4 (release binary) in /usr/local/bin"
  python3 - <<'PY'
import hashlib, os, urllib.request
u = "https://dl.k8s.io/release/v1.32.4/bin/linux/amd64/kubectl"
data = urllib.request.urlopen(u, timeout=120).read()
want = urllib.request.urlopen(u + ".sha256", timeout=60).read().decode().split()[0]
assert hashlib.sha256(data).hexdigest() == want, "kubectl: sha256 mismatch"
open("/usr/local/bin/kubectl", "wb").write(data)
os.chmod("/usr/local/bin/kubectl", 0o755)
PY
fi
