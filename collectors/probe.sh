# pinscope probe: the only code pinscope runs on a node.
#
# Constant POSIX sh (dash, busybox ash, bash), sent as-is over the connection; no Python on the node.
# Read-only: it writes no file, changes no setting, installs nothing.
#
# Shape: this shell reads one request per line on stdin ("s", "g", "gt", "gta", "gi", ...; "q" quits),
# walks the directories with shell globs (builtins, no fork) and hands file paths to ONE long-lived awk
# process, which reads each file with getline and writes one tagged line per output line:
#   B<seq> <request>   frame begins            Z<seq>   frame ends (awk flushes here)
#   F<path>            a file follows          L<text>  one line of that file
#   X<path>            unreadable or missing   T<path>  truncated (too many lines)
#   D<path>            a directory entry seen by a glob
#   A<arg>  one argv word of the kubelet process   I<key> <value>  a fact   W<text>  a warning
# Paths are printed without the --root prefix, so a fixture tree reads like the node it models.
# So: 2 forks at start (the pipeline), 0 per tick. No sleep either: the client paces the requests, and
# when the connection closes stdin ends, the loop ends, awk sees EOF, and nothing is left running.
# The static topology is read only on "s" (the client asks again when /sys/.../cpu/online changes);
# scaling_cur_freq is never read (20 ms a read on some CPUs).

R=""
while [ $# -gt 0 ]; do
  case $1 in
    --root) R=${2-}; shift; [ $# -gt 0 ] && shift ;;
    --root=*) R=${1#--root=}; shift ;;
    *) shift ;;
  esac
done
R=${R%/}
LC_ALL=C
export LC_ALL

# One record per line to awk.  'R' asks awk to read a file; everything else is passed through.
r() { printf 'R%s\n' "$1"; }
rx() { for f in "$@"; do [ -e "$f" ] && printf 'R%s\n' "$f"; done; }

KROOT=/var/lib/kubelet
KCONF=""
KDROPIN=""
PODLOGS=/var/log/pods
CGV=1
CGBASE=""
KPODS=""

find_kubelet() {
  # the kubelet process: comm is "kubelet"; read with the read builtin (no fork)
  KPID=""
  for d in "$R"/proc/[0-9]*; do
    [ -r "$d/comm" ] || continue
    c=""
    read -r c < "$d/comm" 2>/dev/null
    if [ "$c" = kubelet ]; then KPID=${d##*/}; break; fi
  done
  KROOT=/var/lib/kubelet
  KCONF=""
  KDROPIN=""
  if [ -n "$KPID" ]; then
    printf 'Ikubelet-pid %s\n' "$KPID"
    # argv is NUL-separated: one tr per static read (not per tick)
    args=$(tr '\000' '\n' < "$R/proc/$KPID/cmdline" 2>/dev/null)
    want=""
    oldifs=$IFS
    IFS='
'
    set -f
    for a in $args; do
      printf 'A%s\n' "$a"
      case $want in
        config) KCONF=$a ;;
        root) KROOT=$a ;;
        dropin) KDROPIN=$a ;;
      esac
      want=""
      case $a in
        --config=*) KCONF=${a#--config=} ;;
        --config) want=config ;;
        --root-dir=*) KROOT=${a#--root-dir=} ;;
        --root-dir) want=root ;;
        --config-dir=*) KDROPIN=${a#--config-dir=} ;;
        --config-dir) want=dropin ;;
      esac
    done
    set +f
    IFS=$oldifs
  else
    printf 'Wno kubelet process found under %s/proc; assuming %s\n' "$R" "$KROOT"
  fi
  [ -n "$KCONF" ] || { [ -z "$KPID" ] && KCONF=$KROOT/config.yaml; }
  printf 'Ikubelet-root %s\n' "$KROOT"
  [ -n "$KCONF" ] && printf 'Ikubelet-config %s\n' "$KCONF"
  PODLOGS=/var/log/pods
  if [ -n "$KCONF" ] && [ -r "$R$KCONF" ]; then
    while read -r k v; do
      case $k in podLogsDir:) v=${v#\"}; v=${v%\"}; PODLOGS=$v ;; esac
    done < "$R$KCONF"
  fi
}

find_cgroups() {
  if [ -e "$R/sys/fs/cgroup/cgroup.controllers" ]; then
    CGV=2; CGBASE=$R/sys/fs/cgroup
  else
    CGV=1; CGBASE=$R/sys/fs/cgroup/cpuset
  fi
  printf 'Icgroup-version %s\n' "$CGV"
  # kubepods roots, also below a non-empty cgroupRoot (one level)
  KPODS=""
  for k in "$CGBASE"/kubepods "$CGBASE"/kubepods.slice "$CGBASE"/*/kubepods "$CGBASE"/*/kubepods.slice; do
    [ -d "$k" ] && KPODS="$KPODS $k"
  done
}

static() {
  c=$R/sys/devices/system/cpu
  rx "$c/online" "$c/offline" "$c/possible" "$c/present" "$c/isolated" "$c/nohz_full" "$c/kernel_max" \
     "$c/smt/active" "$R/proc/cmdline" "$R/proc/sys/kernel/hostname"
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
  n=$R/sys/devices/system/node
  rx "$n/possible" "$n/online" "$n/has_cpu" "$n/has_memory"
  for d in "$n"/node[0-9]*; do
    [ -d "$d" ] || continue
    rx "$d/cpulist" "$d/distance"
  done
  find_kubelet
  find_cgroups
  [ -n "$KCONF" ] && rx "$R$KCONF"
  if [ -n "$KDROPIN" ]; then
    for f in "$R$KDROPIN"/*.conf; do rx "$f"; done
  fi
  rx "$R$KROOT/memory_manager_state"
}

# the cgroup files of one leaf (a container, or a pod-level cgroup)
leaf() {
  if [ "$CGV" = 2 ]; then
    rx "$1/cpuset.cpus" "$1/cpuset.cpus.effective" "$1/cpuset.mems.effective" "$1/cpu.max" \
       "$1/cpu.weight" "$1/cpu.stat" "$1/cpu.pressure"
  else
    rel=${1#"$CGBASE"}
    cpu=$R/sys/fs/cgroup/cpu$rel
    rx "$1/cpuset.cpus" "$1/cpuset.effective_cpus" "$1/cpuset.effective_mems" \
       "$cpu/cpu.cfs_quota_us" "$cpu/cpu.cfs_period_us" "$cpu/cpu.shares" "$cpu/cpu.stat"
  fi
}

# every container cgroup: kubepods[/qos]/pod<uid>/<leaf>[/container]
each_leaf() {
  for k in $KPODS; do
    for p in "$k"/*pod*/ "$k"/*/*pod*/; do
      [ -d "$p" ] || continue
      p=${p%/}
      printf 'D%s\n' "${p#"$R"}"
      for l in "$p"/*/; do
        [ -d "$l" ] || continue
        l=${l%/}
        "$@" "$l"
        [ -d "$l/container" ] && "$@" "$l/container"
      done
    done
  done
}

grid_leaf() { printf 'D%s\n' "${1#"$R"}"; leaf "$1"; }

tasks_leaf() {
  [ -r "$1/cgroup.procs" ] || return 0
  r "$1/cgroup.procs"
  while read -r pid; do
    for t in "$R/proc/$pid/task"/*/; do
      [ -d "$t" ] || continue
      rx "${t}stat" "${t}status" "${t}sched"
    done
  done < "$1/cgroup.procs"
}

grid() {
  rx "$R/proc/uptime" "$R/proc/stat" "$R/sys/devices/system/cpu/online"
  for d in "$R"/sys/devices/system/node/node[0-9]*; do rx "$d/numastat"; done
  rx "$R$KROOT/cpu_manager_state"
  if [ "$CGV" = 2 ]; then
    rx "$CGBASE/cpuset.cpus.effective" "$CGBASE/cpuset.cpus.isolated"
  else
    rx "$CGBASE/cpuset.effective_cpus"
  fi
  for k in $KPODS; do
    printf 'D%s\n' "${k#"$R"}"
    leaf "$k"
    for q in "$k"/*besteffort* "$k"/*burstable*; do [ -d "$q" ] && leaf "$q"; done
  done
  each_leaf grid_leaf
  for p in "$R$PODLOGS"/*/; do
    [ -d "$p" ] || continue
    printf 'D%s\n' "${p#"$R"}"
    for c in "$p"*/; do [ -d "$c" ] && printf 'D%s\n' "${c#"$R"}"; done
  done
  for f in "$R"/var/log/containers/*.log; do [ -e "$f" ] && printf 'D%s\n' "${f#"$R"}"; done
}

alltasks() {
  for t in "$R"/proc/[0-9]*/task/[0-9]*/stat; do r "$t"; done
}

irqs() {
  r "$R/proc/interrupts"
  for i in "$R"/proc/irq/[0-9]*; do
    if [ -e "$i/effective_affinity_list" ]; then r "$i/effective_affinity_list"; else rx "$i/smp_affinity_list"; fi
  done
}

loop() {
  seq=0
  static_done=0
  while read -r req; do
    case $req in q*) break ;; esac
    seq=$((seq + 1))
    printf 'B%s %s\n' "$seq" "$req"
    case $req in *s*) static; static_done=1 ;; esac
    [ "$static_done" = 1 ] || { find_kubelet; find_cgroups; static_done=1; }
    case $req in *g*) grid ;; esac
    case $req in *t*) each_leaf tasks_leaf ;; esac
    case $req in *a*) alltasks ;; esac
    case $req in *i*) irqs ;; esac
    printf 'Z%s\n' "$seq"
  done
}

AWK='
BEGIN { maxl = 20000; maxw = 4096; rl = length(root) }
{
  t = substr($0, 1, 1); p = substr($0, 2)
  if (t != "R") {
    if (t == "D" && rl && substr(p, 1, rl) == root) p = substr(p, rl + 1)
    print t p
    if (t == "Z") fflush()
    next
  }
  q = p
  if (rl && substr(q, 1, rl) == root) q = substr(q, rl + 1)
  keep = ""
  if (q ~ /\/sched$/) keep = "^(se\\.nr_migrations|nr_switches|nr_voluntary_switches|nr_involuntary_switches) "
  else if (q ~ /\/task\/[0-9]+\/status$/) keep = "^(Name|Tgid|Pid|Cpus_allowed_list|Mems_allowed_list|voluntary_ctxt_switches|nonvoluntary_ctxt_switches):"
  n = 0
  s = (getline line < p)
  if (s < 0) { print "X" q; next }
  print "F" q
  while (s > 0) {
    if (keep == "" || line ~ keep || (n == 0 && q ~ /\/sched$/)) {
      if (++n > maxl) { print "T" q; break }
      if (length(line) > maxw) line = substr(line, 1, maxw)
      print "L" line
    }
    s = (getline line < p)
  }
  close(p)
}'

# mawk block-buffers its input unless told otherwise (it would sit on a request until 4 KiB arrive);
# one fork at start to ask which awk this is. gawk and busybox awk read pipes as data comes.
case $(awk -W version 2>&1 </dev/null) in
  *mawk*) loop | awk -W interactive -v root="$R" "$AWK" ;;
  *) loop | awk -v root="$R" "$AWK" ;;
esac
