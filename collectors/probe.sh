# pinscope probe: the only code pinscope runs on a node.
#
# Constant POSIX sh (dash, busybox ash, bash), sent as-is over the connection; no Python on the node.
# Read-only: it writes no file, changes no setting, installs nothing (the one exception the client may ask
# for: the probe's own CPU affinity, see "Requests" and confine).
#
# Protocol 4 (PROTO below; each frame says "Iprobe-protocol 4"; a client that says another one with
# --protocol N gets frames that read nothing and say why, and the client refuses a probe of another protocol).
# Shape: a forwarder reads one request per line on stdin and hands it to this shell's loop, which walks the directories with shell globs (builtins, no fork) and
# hands file paths to ONE long-lived awk process, which reads each file with getline and writes one tagged
# line per output line:
#   B<seq> <request>   frame begins            Z<seq>   frame ends (awk flushes here)
#   C<dir>             the directory of the F/X/T/U lines that follow (sent only when it changes)
#   c<rest> p<rest>    the same, under the last C/c/p directory ("c") or under its parent ("p"): see cdir
#   F<name>            a file follows          L<text>  one line of that file
#   X<name>            unreadable or missing   T<N> <name>  cut: larger than N bytes (no F before it: not read)
#   X<path>/           a directory this user may not list (read and enter): what it holds is unknown, not absent
#                      (an absolute path, ending in "/": see unlisted)
#   H<hex bytes>       content of the current F file as od prints it (kubelet's own files, see rk)
#   U<name>            unchanged: the very bytes this probe last sent of that file (a cgroup file, see rdcg;
#                      a kubelet file, see rks): the client takes its copy. Only what was sent whole, in this
#                      probe, within its last 64 frames; a file said X, N or T is sent whole the next time
#   N<kind> <path>     not a regular file (fifo, socket, device, dir, symlink inside a checked tree, other):
#                      refused, never opened
#   D<path>            a directory entry seen by a glob
#   A<arg>  one argv word of the kubelet process   I<key> <value>  a fact   W<text>  a warning
#   Iprobe-pids <pid>...  the probe's own processes (the client never reports them as tasks)
#   Iprobe-pgid <pgid>    its process group, when it leads one (what the forwarder kills at the end)
#   Iprobe-confine <cpulist> | no: <why>   the answer to a confinement request (a W when taskset failed)
# Paths are printed without the --root prefix, so a fixture tree reads like the node it models.
# A name may hold any byte but NUL: in every path (shell -> awk -> client) "\" is sent as "\\" and a
# newline as "\n" (esc), so a name can never split or forge a line; file content is never escaped (its
# lines are L lines).
# Every read is bounded in bytes and refuses what is not a regular file (a FIFO blocks, a device or a line
# without end never ends), whichever file it is:
#   - /proc and /sys of the node itself (no --root, or a --root whose proc and sys ARE the kernel's, test -ef):
#     the kernel makes those files; they are regular and their size is the kernel's (a sysfs file is at
#     most a page, a cgroup file lists what exists). awk reads them with getline, within a byte budget.
#   - any other tree (a copy, a fixture, a --root that is not the kernel's), its sys and its proc each:
#     before each frame ONE find lists, of what the frame reads there, what is not a regular file or is
#     larger than the budget; those are said (N, T) and never opened (precheck). (A file swapped between
#     that check and the read is the one case left: the client's deadline then ends the probe's whole
#     process group.)
#   - kubelet's own files (config, drop-ins, checkpoints): written as one long line, possibly huge when
#     corrupt: through od, which stops at the budget (-N), after test -f (see rk, rks). The kubelet config's
#     keys the shell needs are read through dd (one block), the kubelet's argv through tr after test -f.
# Forks: 3 at start (the forwarder | loop | awk pipeline; 4 with mawk, asked which awk it is), 0 per tick
# on a node's own /proc and /sys, 1 per tick on any other tree (the find; a second one only when it found
# something to refuse); od for kubelet's state file, its device checkpoint and its DRA checkpoint, each
# (when there) when kubelet replaced it, on static ticks and every 64th frame (rk, rks, rkd, rkr); one find on static
# ticks when irqbalance's or tuned's config files are there (readiness_static); taskset once per connection when the
# client asks (below). No sleep: the client paces the requests.
# Nothing is left running: "q" ends the probe in order (the loop ends after the requests before it, awk
# sees EOF). When stdin ends without "q" (the connection closed, or the client gave up on a frame) the
# forwarder kills the probe's process group (kill -KILL 0: the loop, awk and whatever either is stuck in),
# when the probe leads its own group (sshd makes every session one; pinscope starts it as one locally);
# else the loop ends, awk sees EOF and both exit. So a script that feeds requests ends them with "q".
# The static topology is read only on "s" (the client asks again when /sys/.../cpu/online changes);
# scaling_cur_freq is never read (20 ms a read on some CPUs).

# shellcheck disable=SC3013  # test -ef (same device and inode): not POSIX, but in dash, busybox ash and bash
ROOT_DIR=""
PROTO=4  # the wire format (frames.PROTOCOL on the client): a client that says another one is refused
CLIENT_PROTOCOL=""  # the protocol the client speaks (--protocol N), when it says
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT_DIR=${2-}; shift; [ $# -gt 0 ] && shift ;;
    --root=*) ROOT_DIR=${1#--root=}; shift ;;
    --protocol) CLIENT_PROTOCOL=${2-}; shift; [ $# -gt 0 ] && shift ;;
    *) shift ;;
  esac
done
case $CLIENT_PROTOCOL in *[!0-9]*) CLIENT_PROTOCOL="?" ;; esac
ROOT_DIR=${ROOT_DIR%/}
[ -d "$ROOT_DIR/proc" ] && [ -d "$ROOT_DIR/sys" ] || printf 'W%s\n' "no $ROOT_DIR/proc or $ROOT_DIR/sys here: is --root right?"
LC_ALL=C
export LC_ALL
NL='
'

# The helpers below are text (HELPERS) so that the check of a tree that is not the kernel's (precheck) runs
# the very same code in the one sh that find starts.
# esc NAME: ESCAPED = NAME with "\" -> "\\" and newline -> "\n" (no fork; the loop runs only for such names)
# pl TAG NAME...: one TAG line per name (one printf for the whole list when no name needs escaping)
# nonreg PATH: not a regular file: say what it is, never open it (a FIFO blocks, a device may never end)
# shellcheck disable=SC2016  # text for another shell (find's sh -c) or for awk: expanded there
HELPERS='NL="
"
esc() {
  ESCAPED=""
  _s=$1
  while :; do
    case $_s in
      *"$NL"*|*\\*) ;;
      *) ESCAPED=$ESCAPED$_s; return 0 ;;
    esac
    _a=${_s%%"$NL"*}
    _b=${_s%%\\*}
    if [ ${#_a} -lt ${#_b} ]; then ESCAPED="$ESCAPED$_a\\n"; _s=${_s#"$_a"}; else ESCAPED="$ESCAPED$_b\\\\"; _s=${_s#"$_b"}; fi
    _s=${_s#?}
  done
}
pl() {
  _t=$1
  shift
  case "$*" in
    *"$NL"*|*\\*) for _x in "$@"; do esc "$_x"; printf "%s%s\\n" "$_t" "$ESCAPED"; done ;;
    *) printf "$_t%s\\n" "$@" ;;
  esac
}
nonreg() {
  if [ -d "$1" ]; then _k=dir; elif [ -p "$1" ]; then _k=fifo; elif [ -S "$1" ]; then _k=socket
  elif [ -c "$1" ] || [ -b "$1" ]; then _k=device; else _k=other; fi
  pl "N$_k " "$1"
}
'
eval "$HELPERS"
# What precheck's find hands its sh: each path it found, said as refused (N) or too big to read (T: the
# budget awk would cut it at; /proc/interrupts has its own, see rd2)
# shellcheck disable=SC2016  # text for another shell (find's sh -c) or for awk: expanded there
CHECK=$HELPERS'for f; do
  if [ -h "$f" ]; then pl "Nsymlink " "$f"; continue; fi
  [ -e "$f" ] || continue
  if [ -f "$f" ]; then
    case $f in */interrupts) b=8388608 ;; *) b=1048576 ;; esac
    esc "$f"; printf "T%s %s\\n" "$b" "$ESCAPED"
  else nonreg "$f"; fi
done'
# REFUSED: what precheck said this frame (N and T lines, escaped paths); bad PATH: is PATH among them?
REFUSED=""
bad() {
  [ -n "$REFUSED" ] || return 1
  esc "$1"
  case "$NL$REFUSED$NL" in *" $ESCAPED$NL"*) return 0 ;; esac
  return 1
}
# KERNEL_SYS=1, KERNEL_PROC=1: the tree's sys, proc are the kernel's own (no --root, or a --root that holds them: test -ef
# compares device and inode, so a fixture cannot pass for them); KERNEL_TREE=1: both. What is not is checked before
# each frame (precheck).
KERNEL_SYS=1 KERNEL_PROC=1
if [ -n "$ROOT_DIR" ]; then
  [ "$ROOT_DIR/sys" -ef /sys ] || KERNEL_SYS=0
  [ "$ROOT_DIR/proc" -ef /proc ] || KERNEL_PROC=0
fi
KERNEL_TREE=1
[ "$KERNEL_SYS$KERNEL_PROC" = 11 ] || KERNEL_TREE=0
# precheck: ONE find over what this frame reads of a tree that is not the kernel's. Physical (-H: only the
# paths given are followed when they are links, as cgroup v1's cpu -> cpu,cpuacct): a link inside is said
# as not a regular file, never followed (a link to / would walk the whole disk). Offenders: what is not a
# regular file, a directory where a file is read, a regular file over 1 MiB (8 MiB: interrupts).
precheck() {
  REFUSED=""
  [ "$KERNEL_TREE" = 1 ] && return 0
  set --
  if [ "$KERNEL_SYS" = 0 ]; then
    # "*" skips names that start with ".", and a cgroup's may (the kernel refuses only "\n"; kubelet takes
    # any cgroupRoot, "/.pods" too): ".[!.]*" and "..?*" are the rest but "." and ".." (one that matches
    # nothing stays the pattern: find says it is missing, to /dev/null)
    set -- "$ROOT_DIR"/sys/fs/cgroup/* "$ROOT_DIR"/sys/fs/cgroup/.[!.]* "$ROOT_DIR"/sys/fs/cgroup/..?* \
      "$ROOT_DIR"/sys/devices/system/cpu/online "$ROOT_DIR"/sys/devices/system/node/node[0-9]*
    case $req in *s*) set -- "$@" "$ROOT_DIR"/sys/devices/system/cpu "$ROOT_DIR"/sys/devices/system/node \
      "$ROOT_DIR"/sys/devices/virtual/workqueue/cpumask "$ROOT_DIR"/sys/kernel/mm/transparent_hugepage/enabled ;; esac
  fi
  if [ "$KERNEL_PROC" = 0 ]; then
    set -- "$@" "$ROOT_DIR"/proc/stat "$ROOT_DIR"/proc/uptime "$ROOT_DIR"/proc/softirqs "$ROOT_DIR"/proc/interrupts "$ROOT_DIR"/proc/irq
    case $req in *s*) set -- "$@" "$ROOT_DIR"/proc/cmdline "$ROOT_DIR"/proc/sys/kernel/hostname "$ROOT_DIR"/proc/sys/kernel/sched_rt_* \
      "$ROOT_DIR"/proc/sys/kernel/timer_migration "$ROOT_DIR"/proc/[0-9]*/comm \
      "$ROOT_DIR"/proc/[0-9]*/status "$ROOT_DIR"/proc/[0-9]*/cmdline ;; esac
    case $req in *a*) set -- "$@" "$ROOT_DIR"/proc/[0-9]*/cgroup ;; esac
    _p=$FOCUS$FOCUS_CPU
    case $req in *[tTaw]*) _p=1 ;; esac
    [ -z "$_p" ] || set -- "$@" "$ROOT_DIR"/proc/[0-9]*/task/[0-9]*/s*
  fi
  REFUSED=$(find -H "$@" \( -type f \( -name interrupts -size +8388608c -o ! -name interrupts -size +1048576c \) \
        -o -type d \( -name 'cpu*.*' -o -name 'cpuset.*' -o -name 'memory.*' -o -name 'cgroup.*' -o -name stat \
        -o -name sched -o -name status -o -name schedstat -o -name comm -o -name cmdline -o -name cgroup \
        -o -name numastat -o -name interrupts -o -name '*_list' -o -name online -o -name uptime \
        -o -name softirqs -o -name 'scaling_*' -o -name 'cpuinfo_*' -o -name latency -o -name disable \
        -o -name 'pm_qos_*' -o -name '*_hugepages' -o -name 'hugetlb.*' -o -name cpumask -o -name enabled \
        -o -name 'sched_rt_*' -o -name timer_migration -o -name default_smp_affinity -o -name no_turbo \) \
        -o ! -type f ! -type d \) -exec sh -c "$CHECK" pinscope-check {} + 2>/dev/null)
  [ -z "$REFUSED" ] || printf '%s\n' "$REFUSED"
}

# One record per line to awk. 'R' asks awk to read a file; everything else is passed through.
r() { pl R "$1"; }
rx() {
  for _f in "$@"; do
    if [ -f "$_f" ]; then pl R "$_f"; elif [ -e "$_f" ]; then nonreg "$_f"; else unseen "$_f"; fi
  done
}
# a file that seems missing because its directory may not be entered (non-root, /var/lib/kubelet 0700):
# ask awk to read it anyway, so it is said unreadable (X), not missing
unseen() { _d=${1%/*}; [ -d "$_d" ] && [ ! -x "$_d" ] && pl R "$1"; }
# unlisted DIR...: say each directory this user may not list (no read or no search permission: a glob in it
# finds nothing, a test -e of what it holds fails) as X<dir>/, so the client tells "not readable" from
# "absent"; true (0) when one was. A root-only /sys/fs/cgroup read as empty was "no cpuset hierarchy mounted".
unlisted() {
  _u=1
  for _f in "$@"; do
    if [ -d "$_f" ] && { [ ! -r "$_f" ] || [ ! -x "$_f" ]; }; then pl X "$_f/"; _u=0; fi
  done
  return $_u
}
# kubelet's own files (config, drop-ins, checkpoints): written as one long line (a 256-CPU checkpoint is
# ~5 KB) and possibly huge when corrupt (any awk would read such a line whole; mawk in time quadratic in its
# length): they go through od, which stops at the budget (-N): one fork per file (the state file, read
# every grid tick: only when it changed, see rks). A node without od (said once) has awk read them.
KUBELET_FILE_MAX=1048576
rk() {
  for _f in "$@"; do
    if [ -f "$_f" ]; then
      if [ -n "$OD_PROG" ] && [ -r "$_f" ]; then
        pl M "$_f"
        od -An -v -tx1 -N $((KUBELET_FILE_MAX + 1)) -- "$_f" 2>/dev/null
      else
        pl R "$_f"
      fi
    elif [ -e "$_f" ]; then nonreg "$_f"; else unseen "$_f"; fi
  done
}
OD_PROG=""  # od, when the node has one (set below)
# kubelet's state file, every grid tick: through od only when it changed. Kubelet writes it whole and
# renames it into place (a new inode), so the shell keeps the file it last read open on fd 8 and compares
# inodes (test -ef, a builtin: no fork); the same inode is said unchanged ("u" -> U), as are the same bytes
# read anew. Static ticks and every 64th frame read it anew whatever the inode says: an edit in place (not
# kubelet's way: k/k pkg/kubelet/util/store/filestore.go writes a temp file and renames it) shows there,
# within 64 s at the live cadence (it showed on every cgroup-detail tick, an od fork every 5th tick, for
# what kubelet never does). od reads fd 8 itself, so the text kept is the text of the inode compared.
STATE_HEX=""  # od's lines of the last read
STATE_FILE=""  # the file they are of ("": read it anew)
STATE_SENT=""  # the file whose lines STATE_HEX the client holds (sent whole in this probe): unchanged, it is said "u"
rks() {
  if [ -n "$OD_PROG" ] && [ -f "$1" ] && [ -r "$1" ]; then
    _o=$STATE_HEX
    if [ "$STATE_FILE" != "$1" ] || ! [ "$1" -ef /proc/self/fd/8 ]; then
      if ! { command exec 8<"$1"; } 2>/dev/null; then STATE_FILE="" STATE_SENT=""; rk "$1"; return; fi
      STATE_HEX=$(od -An -v -tx1 -N $((KUBELET_FILE_MAX + 1)) <&8 2>/dev/null)
      STATE_FILE=$1
    fi
    if [ "$STATE_SENT" = "$1" ] && [ "$STATE_HEX" = "$_o" ]; then pl u "$1"; return; fi
    STATE_SENT=$1
    pl M "$1"
    [ -n "$STATE_HEX" ] && printf '%s\n' "$STATE_HEX"  # an empty file: no lines, as od gives none
  else
    STATE_FILE="" STATE_SENT=""
    rk "$1"
  fi
}

# Devices (issue 26). kubelet's device-manager checkpoint (/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint,
# 0600, rewritten whole and renamed into place like the state file): read as rks reads the state file, on fd 7,
# so under mawk a grid tick forks od only when kubelet replaced it. Where each device sits is static: every PCI
# function's numa_node (SR-IOV VFs are named by their PCI address) and NVIDIA's per-GPU information file (GPU UUID
# -> bus location), read on "s" only. Device ids come from the node: they are never put in a path here; the
# client joins them to what these globs found.
DEVICES_HEX=""  # od's lines of the last read of the device checkpoint
DEVICES_FILE=""  # the file they are of
DEVICES_SENT=""  # the file the client holds DEVICES_HEX of
rkd() {
  if [ -n "$OD_PROG" ] && [ -f "$1" ] && [ -r "$1" ]; then
    _o=$DEVICES_HEX
    if [ "$DEVICES_FILE" != "$1" ] || ! [ "$1" -ef /proc/self/fd/7 ]; then
      if ! { command exec 7<"$1"; } 2>/dev/null; then DEVICES_FILE="" DEVICES_SENT=""; rk "$1"; return; fi
      DEVICES_HEX=$(od -An -v -tx1 -N $((KUBELET_FILE_MAX + 1)) <&7 2>/dev/null)
      DEVICES_FILE=$1
    fi
    if [ "$DEVICES_SENT" = "$1" ] && [ "$DEVICES_HEX" = "$_o" ]; then pl u "$1"; return; fi
    DEVICES_SENT=$1
    pl M "$1"
    [ -n "$DEVICES_HEX" ] && printf '%s\n' "$DEVICES_HEX"
  else
    DEVICES_FILE="" DEVICES_SENT=""
    rk "$1"
  fi
}
# kubelet's DRA manager checkpoint (<root-dir>/dra_manager_state, 1.32+: written whole like the others): the
# same, on fd 6. A node without DRA has no such file: one stat, no fork.
DRA_HEX=""
DRA_FILE=""
DRA_SENT=""
rkr() {
  if [ -n "$OD_PROG" ] && [ -f "$1" ] && [ -r "$1" ]; then
    _o=$DRA_HEX
    if [ "$DRA_FILE" != "$1" ] || ! [ "$1" -ef /proc/self/fd/6 ]; then
      if ! { command exec 6<"$1"; } 2>/dev/null; then DRA_FILE="" DRA_SENT=""; rk "$1"; return; fi
      DRA_HEX=$(od -An -v -tx1 -N $((KUBELET_FILE_MAX + 1)) <&6 2>/dev/null)
      DRA_FILE=$1
    fi
    if [ "$DRA_SENT" = "$1" ] && [ "$DRA_HEX" = "$_o" ]; then pl u "$1"; return; fi
    DRA_SENT=$1
    pl M "$1"
    [ -n "$DRA_HEX" ] && printf '%s\n' "$DRA_HEX"
  else
    DRA_FILE="" DRA_SENT=""
    rk "$1"
  fi
}
devices_static() {
  for d in "$ROOT_DIR"/sys/bus/pci/devices/*:*:*.*; do [ -d "$d" ] && rx "$d/numa_node"; done
  for g in "$ROOT_DIR"/proc/driver/nvidia/gpus/*; do [ -d "$g" ] && rx "$g/information"; done
}

# Latency readiness (issue 37; each file: collectors/nodefiles.py), on static ticks only: the kernel's
# isolation, IRQ steering, power and noise settings, hugepages per NUMA node, the config files of irqbalance
# and tuned, and each Guaranteed pod's containers' load-balancing and hugetlb files. None changes without an
# admin's act (a reboot, a sysctl, a restarted container: the next static tick shows it). scaling_cur_freq
# and cpuinfo_cur_freq are not read (see the top: 20 ms a read on some CPUs).
readiness_static() {
  c=$ROOT_DIR/sys/devices/system/cpu
  rx "$ROOT_DIR/proc/irq/default_smp_affinity" "$ROOT_DIR/proc/sys/kernel/sched_rt_runtime_us" \
     "$ROOT_DIR/proc/sys/kernel/sched_rt_period_us" "$ROOT_DIR/proc/sys/kernel/timer_migration" \
     "$ROOT_DIR/sys/devices/virtual/workqueue/cpumask" "$ROOT_DIR/sys/kernel/mm/transparent_hugepage/enabled" \
     "$c/intel_pstate/status" "$c/intel_pstate/no_turbo"
  for d in "$c"/cpu[0-9]*; do
    [ -d "$d/cpufreq" ] && rx "$d/cpufreq/scaling_driver" "$d/cpufreq/scaling_governor" \
      "$d/cpufreq/scaling_min_freq" "$d/cpufreq/scaling_max_freq" "$d/cpufreq/cpuinfo_min_freq" \
      "$d/cpufreq/cpuinfo_max_freq"
    for i in "$d"/cpuidle/state[0-9]*; do [ -d "$i" ] && rx "$i/name" "$i/latency" "$i/disable"; done
    [ -e "$d/power/pm_qos_resume_latency_us" ] && rx "$d/power/pm_qos_resume_latency_us"
  done
  for h in "$ROOT_DIR"/sys/devices/system/node/node[0-9]*/hugepages/hugepages-*kB; do
    [ -d "$h" ] && rx "$h/nr_hugepages" "$h/free_hugepages"
  done
  # admins' files, not the kernel's: ONE find says which is not a regular file or is over the budget
  # (precheck's test, run on any tree: a line without end would be read whole); without find, none is read
  set --
  for f in "$ROOT_DIR/etc/default/irqbalance" "$ROOT_DIR/etc/sysconfig/irqbalance" "$ROOT_DIR/etc/tuned/active_profile" \
           "$ROOT_DIR/etc/tuned/cpu-partitioning-variables.conf"; do
    { [ -e "$f" ] || [ -h "$f" ]; } && set -- "$@" "$f"
  done
  if [ $# -gt 0 ]; then
    if command -v find >/dev/null 2>&1; then
      _off=$REFUSED
      REFUSED=$(find -H "$@" -prune \( -type f -size +1048576c -o ! -type f \) -exec sh -c "$CHECK" pinscope-check {} + 2>/dev/null)
      [ -z "$REFUSED" ] || printf '%s\n' "$REFUSED"
      for f; do bad "$f" || rx "$f"; done
      REFUSED=$_off
    else
      printf 'W%s\n' "no find on this node: irqbalance's and tuned's config files not read (unknown)"
    fi
  fi
  # the Guaranteed pods' containers (directly under kubepods; only they get exclusive CPUs): CRI-O's
  # cpu-load-balancing (v1 cpuset.sched_load_balance, v2 cpuset.cpus.partition) and hugetlb per NUMA node
  # (v2 hugetlb.<size>.numa_stat; v1 hugetlb.<size>.usage_in_bytes in the hugetlb hierarchy, and its numa_stat
  # where the kernel has one, since late 2021)
  for k in $KUBEPODS; do
    kd "$k"
    # shellcheck disable=SC2086  # $HEX, $HEX64 are globs ([0-9a-f]...): quoted they would be literal
    set -- "$k"/"$KUBEPODS_DOT"*pod$HEX*/*.scope "$k"/"$KUBEPODS_DOT"*pod$HEX*/crio-$HEX64 "$k"/"$KUBEPODS_DOT"*pod$HEX*/$HEX64
    # shellcheck disable=SC2086  # the same glob
    [ "$CGROUP_V" = 2 ] && set -- "$@" "$k"/"$KUBEPODS_DOT"*pod$HEX*/*.scope/container
    for l; do
      [ -d "$l" ] || continue
      if [ "$CGROUP_V" = 2 ]; then
        rx "$l/cpuset.cpus.partition"
        for f in "$l"/hugetlb.*.numa_stat; do [ -f "$f" ] && rx "$f"; done
      else
        rx "$l/cpuset.sched_load_balance"
        v=$ROOT_DIR/sys/fs/cgroup/hugetlb/${l#"$CGROUP_BASE"/}
        for f in "$v"/hugetlb.*.usage_in_bytes "$v"/hugetlb.*.numa_stat; do [ -f "$f" ] && rx "$f"; done
      fi
    done
  done
}

KUBELET_ROOT=/var/lib/kubelet
KUBELET_CONFIG=""
KUBELET_DROPINS=""
PODLOGS=/var/log/pods
CGROUP_V=1
DETAIL_V=1  # CGROUP_V for the detail records (3: cgroup v2 without cpu.pressure, see find_cgroups)
CGROUP_BASE=""
KUBEPODS=""
CGROUP_ROOT=""
# kd KUBEPODS_ROOT: KUBEPODS_DOT="." when the root's name starts with "." (cgroupRoot "/.pods" under the systemd driver:
# ".pods.slice/.pods-kubepods.slice"; systemd's unit_name_is_valid allows it, kubelet takes any cgroupRoot),
# else "". systemd names every slice below with the parent's name first (".pods-kubepods-burstable.slice",
# ".pods-kubepods-pod<uid>.slice"), and a glob's leading "*" skips a leading ".": the QoS and pod globs
# start with "$KUBEPODS_DOT". (cgroupfs names them burstable, besteffort, pod<uid>: never with a ".".)
KUBEPODS_DOT=""
kd() { case ${1##*/} in .*) KUBEPODS_DOT=. ;; *) KUBEPODS_DOT="" ;; esac; }

find_kubelet() {
  # the kubelet process: comm is "kubelet"; read with the read builtin (no fork). Anyone may name a process
  # "kubelet" (prctl PR_SET_NAME) and give it a --root-dir of their own: one whose status says it runs as
  # another user than root is named and passed over; believed only when it is the only one (rootless kubelet);
  # one that has exited (a zombie) is skipped
  KPID=""
  kalt=""
  for d in "$ROOT_DIR"/proc/[0-9]*; do
    { [ -f "$d/comm" ] && [ -r "$d/comm" ] && ! bad "$d/comm"; } || continue
    c=""
    read -r c < "$d/comm" 2>/dev/null
    [ "$c" = kubelet ] || continue
    u=""
    st=""
    if [ -f "$d/status" ] && ! bad "$d/status"; then
      while read -r k v _; do case $k in State:) st=$v ;; Uid:) u=$v; break ;; esac; done < "$d/status"
    fi
    # a kubelet that has exited and is not yet reaped (restarted, or a release switched): no argv, no files
    [ "$st" = Z ] && continue
    if [ -z "$u" ] || [ "$u" = 0 ]; then KPID=${d##*/}; break; fi
    printf 'W%s\n' "process ${d##*/} is named kubelet but runs as uid $u: not taken for kubelet"
    [ -n "$kalt" ] || kalt=${d##*/}
  done
  if [ -z "$KPID" ] && [ -n "$kalt" ]; then
    KPID=$kalt
    printf 'W%s\n' "no kubelet runs as root: taking process $kalt (a rootless kubelet?)"
  fi
  KUBELET_ROOT=/var/lib/kubelet
  KUBELET_CONFIG=""
  KUBELET_DROPINS=""
  CGROUP_ROOT=""
  cgflag=""
  if [ -n "$KPID" ]; then
    printf 'Ikubelet-pid %s\n' "$KPID"
    # argv is NUL-separated: one tr per static read (not per tick); a regular file within the budget
    args=""
    [ -f "$ROOT_DIR/proc/$KPID/cmdline" ] && ! bad "$ROOT_DIR/proc/$KPID/cmdline" &&
      args=$(tr '\000' '\n' < "$ROOT_DIR/proc/$KPID/cmdline" 2>/dev/null)
    want=""
    oldifs=$IFS
    IFS='
'
    set -f
    for a in $args; do
      printf 'A%s\n' "$a"
      case $want in
        config) KUBELET_CONFIG=$a ;;
        root) KUBELET_ROOT=$a ;;
        dropin) KUBELET_DROPINS=$a ;;
        cgroot) CGROUP_ROOT=$a ;;
      esac
      want=""
      case $a in
        --config=*) KUBELET_CONFIG=${a#--config=} ;;
        --config) want=config ;;
        --root-dir=*) KUBELET_ROOT=${a#--root-dir=} ;;
        --root-dir) want=root ;;
        --config-dir=*) KUBELET_DROPINS=${a#--config-dir=} ;;
        --config-dir) want=dropin ;;
        --cgroup-root=*) CGROUP_ROOT=${a#--cgroup-root=} ;;
        --cgroup-root) want=cgroot ;;
      esac
    done
    set +f
    IFS=$oldifs
  else
    printf 'Wno kubelet process found under %s/proc; assuming %s\n' "$ROOT_DIR" "$KUBELET_ROOT"
  fi
  [ -n "$KUBELET_CONFIG" ] || { [ -z "$KPID" ] && KUBELET_CONFIG=$KUBELET_ROOT/config.yaml; }
  printf 'Ikubelet-root %s\n' "$KUBELET_ROOT"
  # --root-dir comes from the node: not absolute, or climbing with "..", it would lead out of $ROOT_DIR (--root):
  # refused (the client says so from the line above) and nothing is read under it
  case "$KUBELET_ROOT/" in /*/../*|/../*|[!/]*) KUBELET_ROOT=/nonexistent/pinscope-refused-root-dir ;; esac
  [ -n "$KUBELET_CONFIG" ] && printf 'Ikubelet-config %s\n' "$KUBELET_CONFIG"
  case "$KUBELET_CONFIG/" in /*/../*|/../*|[!/]*) KUBELET_CONFIG=/nonexistent/pinscope-refused-config ;; esac  # the same for --config
  case "$KUBELET_DROPINS/" in /*/../*|/../*|[!/]*) KUBELET_DROPINS=/nonexistent/pinscope-refused-config-dir ;; esac
  PODLOGS=/var/log/pods
  cgflag=$CGROUP_ROOT
  if [ -n "$KUBELET_CONFIG" ] && [ -f "$ROOT_DIR$KUBELET_CONFIG" ] && [ -r "$ROOT_DIR$KUBELET_CONFIG" ]; then
    # the keys the shell needs, from the config's first 64 KiB (one dd: a config that is one endless line
    # is not read whole by the shell's read builtin)
    cfg=$(dd if="$ROOT_DIR$KUBELET_CONFIG" bs=65536 count=1 2>/dev/null)
    oldifs=$IFS
    IFS=$NL
    set -f
    n=0
    for line in $cfg; do
      n=$((n + 1))
      [ $n -le 1000 ] || break
      IFS=" 	"
      # shellcheck disable=SC2086  # split on IFS on purpose (set -f: no globbing)
      set -- $line
      k=${1-}
      [ $# -gt 0 ] && shift
      v="$*"
      IFS=$NL
      v=${v#\"}; v=${v%\"}
      case $k in
        podLogsDir:) case "$v/" in /*/../*|/../*|[!/]*) ;; *) PODLOGS=$v ;; esac ;;  # as --root-dir
        cgroupRoot:) [ -n "$cgflag" ] || CGROUP_ROOT=$v ;;
      esac
    done
    set +f
    IFS=$oldifs
  fi
}

find_cgroups() {
  KUBEPODS="" DETAIL_V=""
  if unlisted "$ROOT_DIR/sys/fs/cgroup"; then
    # not "v1 without a cpuset mount": which cgroups there are is not known (said: X, READ_PARTIAL)
    CGROUP_V="" CGROUP_BASE=$ROOT_DIR/sys/fs/cgroup
    return 0
  fi
  if [ -e "$ROOT_DIR/sys/fs/cgroup/cgroup.controllers" ]; then
    CGROUP_V=2; CGROUP_BASE=$ROOT_DIR/sys/fs/cgroup
  else
    CGROUP_V=1; CGROUP_BASE=$ROOT_DIR/sys/fs/cgroup/cpuset
  fi
  printf 'Icgroup-version %s\n' "$CGROUP_V"
  [ "$CGROUP_V" = 1 ] && [ ! -d "$CGROUP_BASE" ] && printf 'Icgroup-cpuset-mount no\n'
  unlisted "$CGROUP_BASE"
  # kubepods roots: where kubelet's cgroupRoot (config cgroupRoot, flag --cgroup-root) puts them for
  # either driver, then searched two levels down anyway (nodes are misconfigured). systemd spells
  # cgroupRoot /a/b-c as /a.slice/a-b_c.slice/a-b_c-kubepods.slice (k/k cgroup_manager_linux.go ToSystemd:
  # "-" in a part becomes "_", ExpandSlice nests the prefixes).
  sdpath="" sdpre=""
  oldifs=$IFS
  IFS=/
  set -f
  for c in $CGROUP_ROOT; do
    [ -n "$c" ] || continue
    e=""
    while :; do case $c in *-*) e="$e${c%%-*}_"; c=${c#*-} ;; *) e="$e$c"; break ;; esac; done
    sdpre=${sdpre:+$sdpre-}$e
    sdpath="$sdpath/$sdpre.slice"
  done
  set +f
  IFS=$oldifs
  KUBEPODS=""
  CGROUP_ROOT=${CGROUP_ROOT%/}
  case $CGROUP_ROOT in *..*) CGROUP_ROOT="" sdpath="" sdpre="" ;; esac  # a path that climbs out is no cgroupRoot
  for k in "$CGROUP_BASE$CGROUP_ROOT/kubepods" "$CGROUP_BASE$sdpath/${sdpre:+$sdpre-}kubepods.slice" \
           "$CGROUP_BASE"/kubepods "$CGROUP_BASE"/kubepods.slice "$CGROUP_BASE"/*/kubepods "$CGROUP_BASE"/*/*-kubepods.slice \
           "$CGROUP_BASE"/*/*/kubepods "$CGROUP_BASE"/*/*/*-kubepods.slice; do
    [ -d "$k" ] || continue
    case " $KUBEPODS " in *" $k "*) ;; *) KUBEPODS="$KUBEPODS $k" ;; esac
  done
  [ -n "$CGROUP_ROOT" ] && printf 'Icgroup-root %s\n' "$CGROUP_ROOT"
  # kubepods found but not listable (its pods unknown), or not found where a directory on the way may not
  # be listed (the first level of the search: kubelet.slice, a cgroupRoot of 0700)
  for k in $KUBEPODS; do kd "$k"; unlisted "$k" "$k"/"$KUBEPODS_DOT"*besteffort* "$k"/"$KUBEPODS_DOT"*burstable*; done
  [ -n "$KUBEPODS" ] || [ ! -d "$CGROUP_BASE" ] || unlisted "$CGROUP_BASE"/* "$CGROUP_BASE$CGROUP_ROOT" "$CGROUP_BASE$sdpath"
  # PSI (cpu.pressure) off (CONFIG_PSI unset, psi=0: the files are not there): the detail records skip it
  # (DETAIL_V 3: v2 without cpu.pressure) rather than ask for a missing file in every cgroup every 5th tick
  DETAIL_V=$CGROUP_V
  if [ "$CGROUP_V" = 2 ] && [ -n "$KUBEPODS" ]; then
    DETAIL_V=3
    for k in $KUBEPODS; do
      for f in "$k"/cpu.pressure "$k"/*/cpu.pressure "$k"/*/*/cpu.pressure; do [ -e "$f" ] && { DETAIL_V=2; break; }; done
      break
    done
  fi
}

static() {
  c=$ROOT_DIR/sys/devices/system/cpu
  rx "$c/online" "$c/offline" "$c/possible" "$c/present" "$c/isolated" "$c/nohz_full" "$c/kernel_max" \
     "$c/smt/active" "$ROOT_DIR/proc/cmdline" "$ROOT_DIR/proc/sys/kernel/hostname" "$ROOT_DIR/proc/1/status"
  for d in "$c"/cpu[0-9]*; do
    [ -d "$d" ] || continue
    rx "$d/online"
    t=$d/topology
    [ -d "$t" ] || continue
    rx "$t/physical_package_id" "$t/die_id" "$t/core_id" "$t/core_cpus_list" "$t/thread_siblings_list"
    for i in "$d"/cache/index[0-9]*; do
      rx "$i/level" "$i/type" "$i/id" "$i/shared_cpu_list"
    done
  done
  n=$ROOT_DIR/sys/devices/system/node
  rx "$n/possible" "$n/online" "$n/has_cpu" "$n/has_memory"
  for d in "$n"/node[0-9]*; do
    [ -d "$d" ] || continue
    rx "$d/cpulist" "$d/distance"
  done
  find_kubelet
  find_cgroups
  [ -n "$KUBELET_CONFIG" ] && rk "$ROOT_DIR$KUBELET_CONFIG"
  if [ -n "$KUBELET_DROPINS" ]; then
    for f in "$ROOT_DIR$KUBELET_DROPINS"/*.conf; do rk "$f"; done
    # kubelet merges every file whose filepath.Ext is ".conf", ".x.conf" and ".conf" too (filepath.WalkDir,
    # mergeKubeletConfigurations in k/k cmd/kubelet/app/server.go); "*" skips them. A pattern that matched
    # nothing is no file: not said (the one above says an unlistable directory)
    for f in "$ROOT_DIR$KUBELET_DROPINS"/.*.conf "$ROOT_DIR$KUBELET_DROPINS"/.conf; do { [ -e "$f" ] || [ -h "$f" ]; } && rk "$f"; done
  fi
  rk "$ROOT_DIR$KUBELET_ROOT/memory_manager_state" "$ROOT_DIR$KUBELET_ROOT/allocated_pods_state"
  devices_static
  readiness_static
  if [ "$CGROUP_V" = 2 ]; then
    rx "$CGROUP_BASE/cgroup.subtree_control"
    for k in $KUBEPODS; do rx "${k%/*}/cgroup.subtree_control" "$k/cgroup.controllers" "$k/cgroup.subtree_control"; done
  fi
}

# Per tick the shell only globs and hands whole lists to awk with one printf each (printf repeats its
# format for every argument); awk knows which files make up a record:
#   G<v><dir>  a cgroup, every tick: effective cpuset, cpu.stat  (v: cgroup version; v1: cpu.stat lives
#              in the cpu hierarchy)
#   H<v><dir>  a cgroup's detail ("c"): requested cpuset, mems, quota, pressure (v 3: v2 without PSI)
#   J<v><dir>  all of a cgroup's CPU files (the focused container): also weight/shares, pressure
#   K<dir>     a task (thread): stat (last CPU) and sched (migrations, switches: read up to them only)
#   S<dir>     a task with status too (Cpus_allowed_list): "T"
#   Y<dir> V<dir>  K and S plus schedstat (run-queue wait): "w", and the focused container (V)
#   U<dir>     a task of the every-task scan: stat; schedstat if it last ran on the CPU in focus (Q<cpu>),
#              status if on an exclusive CPU (x<cpulist>, "x*": any CPU) and neither a pod's nor the kernel's
# A glob that matched nothing stays a literal pattern; awk drops those.
HEX='[0-9a-f]'
HEX8=$HEX$HEX$HEX$HEX$HEX$HEX$HEX$HEX
HEX64=$HEX8$HEX8$HEX8$HEX8$HEX8$HEX8$HEX8$HEX8

tasks() {
  [ -f "$1/cgroup.procs" ] && [ -r "$1/cgroup.procs" ] && ! bad "$1/cgroup.procs" || return 0
  r "$1/cgroup.procs"
  while read -r pid; do
    set -- "$ROOT_DIR/proc/$pid/task"/[0-9]*
    case $1 in *'*'*) continue ;; esac
    pl "$TASK_RECORD" "$@"
  done < "$1/cgroup.procs"
}

# Every container cgroup: kubepods[/qos]/pod<uid>/<leaf>[/container] (crun's sub-cgroup on v2). The
# globs name what they want (a trailing "/" would stat every control file of every cgroup): pods
# "*pod<hex>*", leaves "*.scope" (systemd), "crio-<64hex>", "crio-conmon-<64hex>" or 64 hex digits
# (cgroupfs).
# The globs read every pod's directory (~1.5 ms a tick at 120 pods, a quarter of a grid tick), so on
# cgroup v2 they are redone only when what they found may have changed (LEAVES: every leaf found, a line
# each): while every kubepods root's cgroup.stat says the same number of live descendants
# (nr_descendants, the kernel's count of every cgroup below it, read before the glob, LEAF_COUNTS) and every
# pod directory and leaf found is still a directory (LEAF_PODS: the pods, tested, never printed), no leaf came
# (one that came while one went keeps the count: a container restarted, a pod gone in a rollout while
# another's container started; the one gone fails its test). A cgroup the globs do not list (one a
# workload made inside its container) that went while a leaf came is the case left: every static and
# cgroup-detail request globs anew, so such a leaf waits until the next one (every 5th tick at the live
# cadence, every 10th in the fleet overview). v1 (no cgroup.stat), a root without one, a cgroup.stat the
# precheck refused and a name that holds a newline or a backslash (what pl escapes): globbed every tick.
LEAVES="" LEAF_LINES="" LEAF_COUNTS="" LEAF_PODS=""  # LEAF_LINES: the G lines of LEAVES, as pl prints them
# KUBEPODS_COUNTS: each kubepods root's nr_descendants, "" when one is not known (v1, no file, refused, other format)
kcount() {
  KUBEPODS_COUNTS=""
  [ "$CGROUP_V" = 2 ] && [ -n "$KUBEPODS" ] || return 0
  for k in $KUBEPODS; do
    _w="" _n=""  # (not _a: bad's esc uses it)
    if [ -f "$k/cgroup.stat" ] && ! bad "$k/cgroup.stat" && read -r _w _n 2>/dev/null <"$k/cgroup.stat" \
       && [ "$_w" = nr_descendants ]; then
      case $_n in ''|*[!0-9]*) KUBEPODS_COUNTS=""; return 0 ;; esac
      KUBEPODS_COUNTS="$KUBEPODS_COUNTS $_n"
    else
      KUBEPODS_COUNTS=""; return 0
    fi
  done
}
each_leaf() {
  kcount
  if [ -n "$LEAF_COUNTS" ] && [ "$KUBEPODS_COUNTS" = "$LEAF_COUNTS" ]; then
    case $req in
      *[sc]*) ;;
      *)
        _o=$IFS; IFS=$NL; set -f
        # shellcheck disable=SC2086  # split on IFS on purpose (set -f: no globbing)
        set -- $LEAF_PODS
        set +f; IFS=$_o
        _ok=1
        for _d; do [ -d "$_d" ] || { _ok=0; break; }; done
        IFS=$NL; set -f
        # shellcheck disable=SC2086  # split on IFS on purpose (set -f: no globbing)
        set -- $LEAVES
        set +f; IFS=$_o
        [ "$_ok" = 1 ] && for _d; do [ -d "$_d" ] || { _ok=0; break; }; done
        if [ "$_ok" = 1 ]; then
          [ "$GRID" = 1 ] && printf '%s' "$LEAF_LINES"
          _g=$GRID; GRID=0; leafq - "$@"; GRID=$_g
          return 0
        fi ;;
    esac
  fi
  LEAVES="" LEAF_LINES="" LEAF_COUNTS="" LEAF_PODS=""
  for k in $KUBEPODS; do
    kd "$k"
    for q in "$k" "$k"/"$KUBEPODS_DOT"*besteffort* "$k"/"$KUBEPODS_DOT"*burstable*; do
      case $q in *'*'*) continue ;; esac
      # shellcheck disable=SC2086  # the same glob
      set -- "$q"/"$KUBEPODS_DOT"*pod$HEX*
      [ "$DETAIL" = 1 ] && pl "H$DETAIL_V" "$@"
      if [ -n "$KUBEPODS_COUNTS" ]; then
        for _d; do
          case $_d in *"$NL"*|*\\*) KUBEPODS_COUNTS=""; break ;; esac
          [ -d "$_d" ] && LEAF_PODS="$LEAF_PODS$_d$NL"
        done
      fi
      # shellcheck disable=SC2086  # $HEX, $HEX64 are globs ([0-9a-f]...): quoted they would be literal
      set -- "$q"/"$KUBEPODS_DOT"*pod$HEX*/*.scope "$q"/"$KUBEPODS_DOT"*pod$HEX*/crio-$HEX64 "$q"/"$KUBEPODS_DOT"*pod$HEX*/crio-conmon-$HEX64 \
        "$q"/"$KUBEPODS_DOT"*pod$HEX*/$HEX64
      # shellcheck disable=SC2086  # the same glob
      [ "$CGROUP_V" = 2 ] && set -- "$@" "$q"/"$KUBEPODS_DOT"*pod$HEX*/*.scope/container
      leafq "$q" "$@"
      [ -n "$KUBEPODS_COUNTS" ] || continue
      for _d; do
        case $_d in *"$NL"*|*\\*) KUBEPODS_COUNTS=""; break ;; esac  # (pl would escape it: not kept)
        [ -d "$_d" ] || continue  # (a glob that matched nothing stays the pattern: no directory)
        LEAVES="$LEAVES$_d$NL" LEAF_LINES="${LEAF_LINES}G$CGROUP_V$_d$NL"
      done
    done
  done
  LEAF_COUNTS=$KUBEPODS_COUNTS
}
# leafq QOSDIR LEAF...: one kubepods (QoS) directory's container leaves, as the request asks
leafq() {
  shift
  [ $# -gt 0 ] || return 0
  [ "$GRID" = 1 ] && pl "G$CGROUP_V" "$@"
  [ "$DETAIL" = 1 ] && pl "H$DETAIL_V" "$@"
  if [ "$TASKS" = 1 ]; then
    for l in "$@"; do
      TASK_RECORD=$TASK_KIND
      [ -n "$FOCUS" ] && case $l in *"$FOCUS"*) TASK_RECORD=V ;; esac
      tasks "$l"
    done
  fi
  if [ -n "$FOCUS" ]; then
    for l in "$@"; do
      case $l in
        *"$FOCUS"*) pl "J$DETAIL_V" "$l"; TASK_RECORD=V; [ "$TASKS" = 1 ] || tasks "$l" ;;
      esac
    done
  fi
}

node_wide() {
  rx "$ROOT_DIR/proc/uptime" "$ROOT_DIR/proc/stat" "$ROOT_DIR/proc/softirqs" "$ROOT_DIR/sys/devices/system/cpu/online"
  for d in "$ROOT_DIR"/sys/devices/system/node/node[0-9]*; do r "$d/numastat"; done
  rks "$ROOT_DIR$KUBELET_ROOT/cpu_manager_state"
  # the device manager's directory is fixed, whatever --root-dir says (k8s.io/kubelet DevicePluginPath)
  rkd "$ROOT_DIR/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
  rkr "$ROOT_DIR$KUBELET_ROOT/dra_manager_state"
  if [ "$CGROUP_V" = 2 ]; then
    rx "$CGROUP_BASE/cpuset.cpus.effective" "$CGROUP_BASE/cpuset.cpus.isolated"
  else
    rx "$CGROUP_BASE/cpuset.effective_cpus"
  fi
  for k in $KUBEPODS; do
    pl D "$k"
    kd "$k"
    pl "G$CGROUP_V" "$k" "$k"/"$KUBEPODS_DOT"*besteffort* "$k"/"$KUBEPODS_DOT"*burstable*
  done
}

# Pod and container names (the log layout): only on "n", which the client sends when it sees a pod or
# container it cannot name yet.
names() {
  # kubelet's root-dir (0700 on a real node: its pods directory then unknown, not empty) and the logs
  unlisted "$ROOT_DIR$KUBELET_ROOT" "$ROOT_DIR$KUBELET_ROOT/pods" "$ROOT_DIR$PODLOGS" "$ROOT_DIR/var/log/containers"
  for p in "$ROOT_DIR$PODLOGS"/*/; do
    [ -d "$p" ] || continue
    pl D "$p"
    for c in "$p"*/; do [ -d "$c" ] && pl D "$c"; done
  done
  # absolute symlinks into /var/log/pods: under --root they dangle, and the name is what we want
  for f in "$ROOT_DIR"/var/log/containers/*.log; do { [ -e "$f" ] || [ -h "$f" ]; } && pl D "$f"; done
  # kubelet's pods dir: every pod it knows, with a dir per container that ran (no names of pods)
  for p in "$ROOT_DIR$KUBELET_ROOT"/pods/*/; do
    [ -d "$p" ] || continue
    pl D "$p"
    for c in "$p"containers/*/; do [ -d "$c" ] && pl D "$c"; done
  done
}

alltasks() {
  # each task's stat; schedstat too for the tasks that last ran on the focused CPU (Q), and status
  # (Cpus_allowed_list: pinned there?) for those that last ran on an exclusive CPU (x)
  [ -n "$FOCUS_CPU" ] && printf 'Q%s\n' "$FOCUS_CPU"
  [ -n "$EXCLUSIVE" ] && printf 'x%s\n' "$EXCLUSIVE"
  set -- "$ROOT_DIR"/proc/[0-9]*/task/[0-9]*
  pl U "$@"
  # each process's cgroup (awk keeps the cpuset or unified line): who a task belongs to, positively
  set -- "$ROOT_DIR"/proc/[0-9]*/cgroup
  pl O "$@"
}

irqs() {
  r "$ROOT_DIR/proc/interrupts"
  for i in "$ROOT_DIR"/proc/irq/[0-9]*; do
    if [ -e "$i/effective_affinity_list" ]; then r "$i/effective_affinity_list"; else rx "$i/smp_affinity_list"; fi
  done
}

# Requests. A request is "<letters> [<container id> | @<cpu> | -] [<cpulist> | ?]":
#   s static  g grid  c cgroup detail  t pod tasks  T pod tasks with status  a every task's stat
#   w pod tasks with schedstat (run-queue wait)  i IRQs  n names  q quit;  the id (hex only, else
#   ignored) is the focused container: all of its files and tasks (with schedstat) every time; @<cpu>
#   is the focused CPU: the every-task scan ("a") adds schedstat for the tasks that last ran there,
#   and /proc/interrupts is read (its timer and IPI rows). The cpulist (digits, commas, dashes; once per
#   connection) asks the probe to keep to those CPUs (confine); "?" says the client knows none.
# the probe's processes: this shell and its children (the forwarder, the loop, awk: the kernel lists them
# in /proc/<pid>/task/<pid>/children, CONFIG_PROC_CHILDREN), else this shell and the loop; awk adds itself
own_pids() {
  PIDS=""
  read -r PIDS </proc/$$/task/$$/children 2>/dev/null
  if [ -z "$PIDS" ]; then _st=""; read -r _st _ </proc/self/stat 2>/dev/null; PIDS=$_st; fi
  PIDS="$$ $PIDS"
}
# "<letters> <focus> <cpulist>": the client, once it knows the node's reserved CPUs (else its shared pool),
# asks the probe to keep to them, so it adds no jitter to the CPUs it watches: one taskset per process of
# the probe (-a: every thread; what they start inherits it), once. Digits, commas and dashes only; "?"
# when the client knows neither (said as a warning).
confine() {
  if [ "$KERNEL_TREE" != 1 ]; then
    printf 'Iprobe-confine %s\n' "no: this tree is not this kernel's (its CPUs are not the ones the probe runs on)"
    return
  fi
  if ! command -v taskset >/dev/null 2>&1; then
    printf 'W%s\n' "no taskset on this node: the probe runs unconfined (it may run on any CPU, pinned ones too)"
    return
  fi
  # the probe's processes listed again: at the first frame the loop may run before the shell has forked awk
  # (seen under load: awk left on every CPU)
  own_pids
  for _p in $PIDS; do
    if ! taskset -a -p -c "$1" "$_p" >/dev/null 2>&1; then
      printf 'W%s\n' "taskset -a -p -c $1 $_p failed (no permission, or CPUs this node does not offer): the probe runs unconfined"
      return
    fi
  done
  printf 'Iprobe-confine %s\n' "$1"
}
loop() {
  PIDS=""
  seq=0
  static_done=0
  while read -r req focus cpus excl; do
    case $req in q*) break ;; esac
    case $excl in \*) EXCLUSIVE='*' ;; *[!0-9,-]*) EXCLUSIVE="" ;; *) EXCLUSIVE=$excl ;; esac
    FOCUS_CPU=""
    case $focus in @*) FOCUS_CPU=${focus#@}; focus="" ;; esac
    case $FOCUS_CPU in *[!0-9]*) FOCUS_CPU="" ;; esac
    case $focus in *[!0-9a-f]*) focus="" ;; esac
    FOCUS=$focus
    seq=$((seq + 1))
    printf 'B%s %s %s\nIprobe-protocol %s\n' "$seq" "$req" "$FOCUS${FOCUS_CPU:+@$FOCUS_CPU}" "$PROTO"
    if [ -n "$CLIENT_PROTOCOL" ] && [ "$CLIENT_PROTOCOL" != "$PROTO" ]; then  # nothing read for a client that would misread it
      printf 'W%s\nZ%s\n%s' "refused: the client speaks protocol $CLIENT_PROTOCOL, this probe speaks $PROTO" "$seq" "$PAD"
      continue
    fi
    [ -n "$PIDS" ] || own_pids
    printf 'Iprobe-pids %s\n' "$PIDS"
    [ -n "$LEADS_GROUP" ] && printf 'Iprobe-pgid %s\n' "$$"
    case $cpus in
      ''|-|*[!0-9,?-]*) ;;
      \?) [ "$KERNEL_TREE" = 1 ] && printf 'W%s\n' "no reserved CPUs and no shared pool known: the probe runs unconfined (it may run on any CPU, pinned ones too)" ;;
      *) confine "$cpus" ;;
    esac
    precheck
    case $req in *s*) static; static_done=1 ;; esac
    [ "$static_done" = 1 ] || { find_kubelet; find_cgroups; static_done=1; }
    GRID=0 DETAIL=0 TASKS=0
    case $req in *g*) GRID=1 ;; esac
    case $req in *c*) DETAIL=1 ;; esac
    case $req in *[tT]*) TASKS=1 ;; esac
    TASK_KIND=K
    case $req in *T*w*|*w*T*) TASK_KIND=V ;; *T*) TASK_KIND=S ;; *w*) TASK_KIND=Y ;; esac
    # the state files read anew and sent whole in a static frame and every 64th (see rks, rkd, rkr; what a
    # client holds of them is never older: rdcg)
    case $req in *s*) STATE_FILE="" DEVICES_FILE="" DRA_FILE="" STATE_SENT="" DEVICES_SENT="" DRA_SENT="" ;;
      *) [ $((seq % 64)) = 0 ] && STATE_FILE="" DEVICES_FILE="" DRA_FILE="" STATE_SENT="" DEVICES_SENT="" DRA_SENT="" ;; esac
    [ "$GRID" = 1 ] && node_wide
    [ "$GRID$DETAIL$TASKS" != 000 ] || [ -n "$FOCUS" ] && each_leaf
    case $req in *n*) names ;; esac
    case $req in *a*) alltasks ;; esac
    case $req in *i*) irqs ;; *) [ -n "$FOCUS_CPU" ] && r "$ROOT_DIR/proc/interrupts" ;; esac
    # the probe's own CPU so far: this shell's (the builtin read, no fork: /proc/self is this shell), and
    # awk adds its own. ns on CPU from schedstat (CONFIG_SCHED_INFO), else clock ticks from stat
    S=""
    if read -r S 2>/dev/null </proc/self/schedstat; then S="s $S"
    elif read -r S 2>/dev/null </proc/self/stat; then S="t $S"; fi
    printf 'E%s\n' "$S"
    printf 'Z%s\n%s' "$seq" "$PAD"
  done
}

# shellcheck disable=SC2016  # text for another shell (find's sh -c) or for awk: expanded there
AWK='
BEGIN {
  root = ENVIRON["PSROOT"]; rl = length(root); maxw = 4096
  split("cpuset.cpus.effective cpu.stat", G2, " ")
  split("cpuset.cpus cpuset.mems.effective cpu.max cpu.pressure", H2, " ")
  split("cpuset.cpus cpuset.mems.effective cpu.max cpu.weight cpu.pressure memory.numa_stat", J2, " ")
  split("cpuset.cpus cpuset.mems.effective cpu.max", H3, " ")
  split("cpuset.cpus cpuset.mems.effective cpu.max cpu.weight memory.numa_stat", J3, " ")
  split("stat sched", K, " "); split("stat sched status", S, " ")
  split("stat sched schedstat", Y, " "); split("stat sched status schedstat", V, " ")
  split("cpuset.effective_cpus @cpu.stat", G1, " ")
  split("cpuset.cpus cpuset.effective_mems @cpu.cfs_quota_us @cpu.cfs_period_us", H1, " ")
  split("cpuset.cpus cpuset.effective_mems @cpu.cfs_quota_us @cpu.cfs_period_us @cpu.shares %memory.numa_stat", J1, " ")
  # awk pid (the kernel /proc: this awk), added to the probe-pids line
  if ((getline line < "/proc/self/stat") > 0) { split(line, w, " "); mypid = w[1] }
  close("/proc/self/stat")
}
# an escaped path (see esc in the shell) -> the real one, to open it
function un(p,   o, i, c) {
  if (!index(p, "\\")) return p
  o = ""
  while ((i = index(p, "\\")) > 0) {
    c = substr(p, i + 1, 1)
    o = o substr(p, 1, i - 1) (c == "n" ? "\n" : c)
    p = substr(p, i + 2)
  }
  return o p
}
# the directory of the F/X/T/U lines that follow (escaped, without the root prefix), said when it changes:
# "c<rest>" when it lies under the last one, "p<rest>" under the parent of that (the cgroup of a container
# after that of its pod, or of a sibling: half the bytes of a grid frame were these lines), else "C<dir>"
function cdir(d,   r) {
  if (cd != "" && index(d, cd "/") == 1) { r = substr(d, length(cd) + 2); print "c" r; pd = cd }
  else if (pd != "" && index(d, pd "/") == 1) { r = substr(d, length(pd) + 2); print "p" r }
  else { r = "/"; print "C" d }
  cd = d
  if (index(r, "/")) { pd = d; sub(/\/[^\/]*$/, "", pd) }  # else the parent is the one it came under
}
# the directory and name of an escaped path, without the root prefix: a C line when the directory changes
function dn(p,   q) {
  q = p
  if (rl && substr(q, 1, rl) == root) q = substr(q, rl + 1)
  match(q, /\/[^\/]*$/)
  dd = substr(q, 1, RSTART - 1); bb = substr(q, RSTART + 1)
  if (dd != cd) cdir(dd)
}
# read one file (p escaped): F + L lines, or X. Budget in bytes: cgroup files 64 KiB (a kernel list of
# ~9000 pids), /proc/interrupts 8 MiB (4096 CPUs), others 1 MiB; a cut file ends with T<budget> <name>
function rd(p) {
  if (p in off) return  # the shell said it (N, T) and it is never opened
  dn(p)
  rd2(un(p), dd, bb)
}
function rd2(p, d, b,   s, n, line, lim, k) {
  if (d != cd) cdir(d)
  if (p in gone) { print "X" b; return }
  s = (getline line < p)
  if (s < 0) {
    print "X" b; delete sent[p]
    if (fresh && d ~ /^\/sys\/fs\/cgroup\/.*pod[0-9a-f]/) gone[p] = 1
    return
  }
  if (b != "cpu.stat" && d ~ /^\/sys\/fs\/cgroup\//) { rdcg(p, b, s, line); return }  # cpu.stat moves every tick
  print "F" b
  n = 0
  if (b == "sched") {
    # only the counters we use; they come first, so stop early (and squeeze the padding). wait_sum is
    # there only with schedstats on (about 30 lines more before the switch counters)
    while (s > 0) {
      if (line ~ /^(se\.nr_migrations|nr_switches|nr_voluntary_switches|nr_involuntary_switches|se\.sum_exec_runtime|(se\.statistics\.)?wait_sum) /) { gsub(/  +/, " ", line); print "L" line }
      if (line ~ /^nr_involuntary_switches/ || ++n > 64) break
      s = (getline line < p)
    }
  } else if (b == "cgroup" && d ~ /^\/proc\/[0-9]+$/) {
    # the cgroups of a process: only the unified line and the line of the v1 cpuset hierarchy
    while (s > 0 && ++n <= 64) {
      if (line ~ /^0::/ || line ~ /^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:/) print "L" substr(line, 1, maxw)
      s = (getline line < p)
    }
  } else if (b == "status" && d ~ /\/task\//) {
    while (s > 0) {
      if (line ~ /^(Tgid|Cpus_allowed_list):/) print "L" line
      if (line ~ /^Cpus_allowed_list:/) break  # nothing after it is used
      s = (getline line < p)
    }
  } else {
    lim = d ~ /^\/sys\/fs\/cgroup\// ? 65536 : (b == "interrupts" ? 8388608 : 1048576)
    while (s > 0) {
      n += length(line) + 1
      if (n > lim) {
        k = lim - (n - length(line) - 1)
        if (k > 0) print "L" substr(line, 1, k)
        print "T" lim " " b
        break
      }
      print "L" line
      if (b == "cgroup.procs") podpid[line] = 1
      s = (getline line < p)
    }
  }
  close(p)
  last = line
  if (b == "stat" && d ~ /\/task\//) {
    # a kernel thread (PF_KTHREAD 0x00200000 in the flags, field 9): its cgroup is never asked for
    q = line; sub(/^.*\) /, "", q)
    if (split(q, w, " ") >= 7 && int(w[7] / 2097152) % 2 == 1) { split(d, w, "/"); kth[w[3]] = 1 }
  }
}
# gone[]: the files of pod and container cgroups that a static frame or a 64th frame found missing or
# unreadable (a cgroup v2 leaf without the cpuset controller has no cpuset.cpus.effective): said X again
# from memory, not opened, until the next such frame (a file that came meanwhile shows within 64 frames).
# Pod and container cgroups only (a pod uid in the path): their paths are never reused (the uid of a pod,
# the id of a container); the kubepods and QoS directories are (a file missing there while kubelet
# restarts is back at once), and so are the paths of tasks (pids wrap).
# a cgroup file (its first line read, s its getline status): sent only when its bytes changed since this
# probe last sent them (U<name>: unchanged, the client holds them); a file cut at the budget is always sent
# (F, L lines, T) and never said unchanged later. sent[]: the bytes last sent per path; sg[]: the frame that
# sent them. What was sent 48 to 64 frames ago is forgotten (every 16th frame) and a static frame ("s")
# forgets everything, so every file is sent whole at least every 64 frames and in every static frame: a
# recording can be replayed from any static frame, or from the 64 frames before any frame (record.restore)
function rdcg(p, b, s, line,   n, c, i, lim) {
  lim = 65536; n = 0; c = ""
  while (s > 0) {
    n += length(line) + 1
    if (n > lim) {
      printf "F%s\n%s", b, c
      i = lim - (n - length(line) - 1)
      if (i > 0) print "L" substr(line, 1, i)
      print "T" lim " " b
      delete sent[p]
      close(p)
      return
    }
    c = c "L" line "\n"
    if (b == "cgroup.procs") podpid[line] = 1
    s = (getline line < p)
  }
  close(p)
  if ((p in sent) && sent[p] == c) { print "U" b; return }
  printf "F%s\n%s", b, c
  sent[p] = c; sg[p] = gen
}
# a /proc/<pid>/schedstat ("s ...", ns on CPU first) or /proc/<pid>/stat ("t ...", utime + stime in
# clock ticks, fields 14 and 15; USER_HZ is 100 on Linux) line -> ns, or -1
function cpuns(k, line,   w) {
  if (k == "s") return split(line, w, " ") >= 1 && w[1] ~ /^[0-9]+$/ ? w[1] + 0 : -1
  sub(/^.*\) /, "", line)
  return split(line, w, " ") >= 13 && w[12] ~ /^[0-9]+$/ && w[13] ~ /^[0-9]+$/ ? (w[12] + w[13]) * 10000000 : -1
}
# the CPU line of the shell (E) plus that of awk itself, read the same way -> I probe_cpu <seconds so far> <source>
function selfcpu(p,   k, sh, me, line, f) {
  k = substr(p, 1, 1); sh = cpuns(k, substr(p, 3))
  if (sh < 0) return
  f = k == "s" ? "/proc/self/schedstat" : "/proc/self/stat"
  if ((getline line < f) <= 0) { close(f); return }
  close(f)
  me = cpuns(k, line)
  if (me < 0) return
  printf "Iprobe_cpu %.9f %s\n", (sh + me) / 1e9, k == "s" ? "schedstat" : "stat"
}
# the files of a cgroup or task record; "@name" lives in the v1 cpu hierarchy, "%name" in the memory one
function cg(dir, names,   i, nm, p, d, line, u) {
  d = dir
  if (rl && substr(d, 1, rl) == root) d = substr(d, rl + 1)
  u = un(dir)
  for (i = 1; i in names; i++) {
    nm = names[i]
    if (substr(nm, 1, 1) == "@") {
      nm = substr(nm, 2); p = dir
      sub(/\/sys\/fs\/cgroup\/cpuset\//, "/sys/fs/cgroup/cpu/", p)
      rd(p "/" nm)
    } else if (substr(nm, 1, 1) == "%") {
      nm = substr(nm, 2); p = dir
      if (!sub(/\/sys\/fs\/cgroup\/cpuset\//, "/sys/fs/cgroup/memory/", p)) continue
      if ((p "/" nm) in off) { rd(p "/" nm); continue }
      if ((getline line < (un(p) "/" nm)) < 0) continue  # no memory hierarchy, or not NUMA: nothing to say
      close(un(p) "/" nm)
      rd(p "/" nm)
    } else if (!((dir "/" nm) in off)) rd2(u "/" nm, d, nm)
  }
}
# a glob that matched nothing stays the literal pattern (a real name may hold "*": only these are dropped)
function unmatched(p) {
  return index(p, "[0-9a-f]") || p ~ /\/(\*\.scope(\/container)?|crio-\*|\.?\*besteffort\*|\.?\*burstable\*)$/
}
{
  t = substr($0, 1, 1); p = substr($0, 2)
  if (t == "R") { rd(p); next }
  if (t == "O") {
    # the cgroup of a process, unless this frame already placed it: a pid of some cgroup.procs read above,
    # or a kernel thread (that is most processes of a node; /proc/<pid>/cgroup costs the kernel a walk)
    if (index(p, "*")) next
    q = p; if (rl && substr(q, 1, rl) == root) q = substr(q, rl + 1)
    split(q, w, "/")
    if (!((w[3] in podpid) || (w[3] in kth))) rd(p)
    next
  }
  if (t == "Q") { fcpu = p; next }
  if (t == "x") {
    # the exclusive CPUs (of the last report the client made): "2-5,9" -> excl[2..5, 9]; "*": not known
    # yet (a one-sample snapshot), every CPU (nx -1)
    if (p == "*") { nx = -1; next }
    n = split(p, w, ","); nx = 0
    for (i = 1; i <= n; i++) {
      if (w[i] !~ /^[0-9]+(-[0-9]+)?$/) continue  # "", "-", "1-": no CPU
      k = index(w[i], "-"); a = k ? substr(w[i], 1, k - 1) + 0 : w[i] + 0; b = k ? substr(w[i], k + 1) + 0 : a
      for (; a <= b && nx < 65536; a++) { excl[a] = 1; nx++ }
    }
    next
  }
  if (t == "U") {
    # a task of the every-task scan: its stat; schedstat when it last ran on the CPU in focus, status when
    # it last ran on an exclusive CPU (field 39)
    if (index(p, "*")) next
    last = ""
    rd(p "/stat")
    if (fcpu == "" && !nx) next
    q = last; sub(/^.*\) /, "", q)
    if (split(q, w, " ") < 37) next
    if (w[37] == fcpu) rd(p "/schedstat")
    if (!nx || (nx > 0 && !(w[37] in excl))) next
    # a task of a pod (a pid of a cgroup.procs read above) or a kernel thread is no outsider to ask about
    q = p; if (rl && substr(q, 1, rl) == root) q = substr(q, rl + 1)
    split(q, w, "/")
    if (!((w[3] in podpid) || (w[3] in kth))) rd(p "/status")
    next
  }
  if (t == "E") { selfcpu(p); next }
  if (t == " ") { print "H" $0; next }
  if (t == "M") { dn(p); print "F" bb; next }
  if (t == "u") { dn(p); print "U" bb; next }  # a kubelet file the client holds (rks, rkd, rkr)
  if (t == "N" || t == "T") {
    # refused (N) or too big to read (T, from the shell: precheck): never opened in this frame
    k = index(p, " "); q = substr(p, k + 1); off[q] = 1; delete sent[un(q)]
    if (rl && substr(q, 1, rl) == root) q = substr(q, rl + 1)
    print t substr(p, 1, k) q; next
  }
  if (t == "I" && substr(p, 1, 11) == "probe-pids ") { print "I" p (index(p " ", " " mypid " ") ? "" : " " mypid); next }
  if (t == "G" || t == "H" || t == "J" || t == "K" || t == "S" || t == "Y" || t == "V") {
    if (unmatched(p)) next
    if (t == "K") { cg(p, K); next }
    if (t == "S") { cg(p, S); next }
    if (t == "Y") { cg(p, Y); next }
    if (t == "V") { cg(p, V); next }
    v = substr(p, 1, 1); p = substr(p, 2)
    if (t == "G") { if (v == 1) cg(p, G1); else cg(p, G2) }
    else if (t == "H") { if (v == 1) cg(p, H1); else if (v == 3) cg(p, H3); else cg(p, H2) }
    else { if (v == 1) cg(p, J1); else if (v == 3) cg(p, J3); else cg(p, J2) }
    next
  }
  if (t == "P") next
  if ((t == "D" || t == "X") && rl && substr(p, 1, rl) == root) p = substr(p, rl + 1)  # (X: a directory said by unlisted)
  print t p
  if (t == "B") {
    cd = ""; pd = ""; split("", podpid); split("", kth); split("", off); fcpu = ""; split("", excl); nx = 0
    gen++; split(p, w, " ")
    stat = w[2] ~ /s/; fresh = stat || gen % 64 == 0
    if (fresh) split("", gone)
    if (stat) { split("", sent); split("", sg) }
    else if (gen % 16 == 0) for (q in sg) if (sg[q] < gen - 48) { delete sent[q]; delete sg[q] }
  }
  else if (t == "Z") fflush()
}'

# mawk block-buffers its input unless told otherwise (it would sit on a request until 4 KiB arrive);
# one fork at start to ask which awk this is. gawk and busybox awk read pipes as data comes.
# mawk block-buffers its input: it would sit on a request until 4 KiB more arrive. So after each frame
# the shell sends 8 KiB of padding lines that awk skips. (-W interactive would also fix it, but it makes
# every print a write(2).) One fork at start to ask which awk this is; gawk and busybox need no padding.
PAD=""
case $(awk -W version 2>&1 </dev/null) in
  *mawk*)
    l=PPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPP
    i=0
    while [ $i -lt 128 ]; do PAD="$PAD$l
"; i=$((i + 1)); done ;;
esac
# kubelet's files go through od under every awk: any awk reads a line whole (a corrupt or hostile
# checkpoint can be one endless line), od stops at its budget
command -v od >/dev/null 2>&1 && OD_PROG="od"
esc "$ROOT_DIR"
PSROOT=$ESCAPED
export PSROOT
# Does this shell lead its process group (pgrp, field 5 of its stat, after the comm in parentheses)?
LEADS_GROUP=""
_st=""
read -r _st </proc/self/stat 2>/dev/null
_st=${_st##*) }
set -f
# shellcheck disable=SC2086
set -- $_st
set +f
[ "${3-}" = "$$" ] && LEADS_GROUP=1
# The forwarder: the one reader of stdin, never blocked by what the loop or awk do. "q" is passed on and
# ends the probe in order. When stdin ends without it (the client closed the connection, or gave up on a
# frame), it ends the whole probe: kill -KILL 0 is every process of the group (the loop, awk, an od or find
# in flight, and a read stuck on a file swapped under it), so only when this shell leads its own group;
# else the loop sees the end and ends by itself.
forward() {
  while IFS= read -r _l; do
    printf '%s\n' "$_l"
    case $_l in q*) return 0 ;; esac
  done
  [ -n "$LEADS_GROUP" ] && kill -KILL 0
}
forward | loop | awk "$AWK"
