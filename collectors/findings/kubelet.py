"""Checks on kubelet itself and its checkpoint: is it there, can its config and cpu_manager_state be read,
do they agree, and is the checkpoint consistent (overlaps, offline CPUs, orphans)."""
from __future__ import annotations

from ..errors import UNREAD
from ..parse.cpuset import format_cpuset as fmt
from .base import INPUTS, check, finding, who


@check({"KUBELET_NOT_FOUND": ("info", "no kubelet process was found: its files were looked for in the default places",
                              "Inside kubectl debug node/x, use --root /host; with a non-default --root-dir the files may be elsewhere.")})
def kubelet_not_found(ctx):
    if not ctx.k.pid:
        yield finding("KUBELET_NOT_FOUND", "no kubelet process found; looked in /var/lib/kubelet",
                      ["no /proc/<pid>/comm == kubelet"])


@check({"KUBELET_CONFIG_UNREADABLE": ("warning", "kubelet's config file was found but cannot be read or parsed: the policy is unknown",
                                      "Check the file named by kubelet's --config (YAML syntax); run with --sudo if it is not readable.")})
def kubelet_config(ctx):
    k, problems = ctx.k, ctx.snap.problems
    if any(p.source == k.config_path and p.kind == UNREAD for p in problems):
        return  # this user may not read it: READ_PARTIAL says so (not a fault of the node)
    if not k.parsed:
        why = [f"{p.source}: {p.message}" for p in problems if p.source == k.config_path]
        yield finding("KUBELET_CONFIG_UNREADABLE", f"kubelet config {k.config_path} cannot be read: CPU manager policy unknown", why)


@check({"READ_PARTIAL": ("info", "this user may not read part of the node (root-only files): the checks that need them were not run",
                         "Run with --sudo (passwordless sudo -n for sh), connect as root, or as a user in a group that may read the files named.")})
def read_partial(ctx):
    """Not a fault of the node: a fault of the view. `check` exits 4 for it when nothing worse is found."""
    unread = [p for p in ctx.snap.problems if p.kind == UNREAD]
    if unread:
        fix = unread[0].message.partition("(root-only): ")[2]  # the assembler's fix: --sudo, or why sudo failed
        skipped = sorted({c for codes in ctx.not_run.values() for c in codes})
        # a file by its name, a directory (its path ends in "/") whole
        yield finding("READ_PARTIAL", "read only in part: " + ", ".join(sorted({p.source if p.source.endswith("/") else
                                                                                p.source.rsplit("/", 1)[-1] for p in unread}))
                      + " not readable by this user" + (f"; {fix}" if fix else "")
                      + (f"; checks not run: {', '.join(skipped)}" if skipped else ""),
                      [f"{p.source}: {p.message}" for p in unread]
                      + [f"not run: {', '.join(codes)} (they judge by {INPUTS[i]})" for i, codes in sorted(ctx.not_run.items())])


@check({
    "STATE_UNREADABLE": ("critical", "cpu_manager_state exists but cannot be parsed, or the policy is static and it is missing or unreadable",
                         "Run with --sudo if it is only unreadable (mode 0600). A corrupt checkpoint stops kubelet's CPU manager: drain the node, delete the file, restart kubelet."),
    "STATE_POLICY_MISMATCH": ("critical", "the state file's policy differs from the configured one: kubelet will refuse to restart",
                              "Drain the node, delete <root-dir>/cpu_manager_state, then restart kubelet (kubelet's own message asks for exactly this)."),
    "STATE_CHECKSUM_MISMATCH": ("warning", "the state file's checksum does not match its content",
                                "The file may have been edited by hand; kubelet verifies the checksum when it restores the checkpoint."),
    "STATE_NOT_READ_WHOLE": ("info", "cpu_manager_state is larger than pinscope reads: it was not read whole, kubelet's assignment is unknown (the file may well be valid)",
                             "Nothing to do on the node for this alone; the checks that need kubelet's assignment were not run."),
}, reads=("assignment",))
def state_file(ctx):
    k, st, snap, sf = ctx.k, ctx.st, ctx.snap, ctx.sf
    unread = any(p.source == sf and p.kind == UNREAD for p in snap.problems)  # READ_PARTIAL says that
    if not unread and (snap.state_status == "invalid"
                       or (k.cpu_manager_policy == "static" and snap.state_status in ("missing", "unreadable"))):
        why = [f"{p.source}: {p.message}" for p in snap.problems if p.source == sf] or [f"{sf}: {snap.state_status}"]
        yield finding("STATE_UNREADABLE", f"cpu_manager_state is {snap.state_status}: kubelet's CPU assignments are unknown",
                      why + [f"policy {k.cpu_manager_policy!r} ({k.sources.get('cpu_manager_policy', 'default')})"])
    if snap.state_status == "cut":
        yield finding("STATE_NOT_READ_WHOLE", f"{sf} was not read whole (larger than pinscope's read bound): "
                      "kubelet's CPU assignments are unknown, not invalid",
                      [f"{p.source}: {p.message}" for p in snap.problems if p.source == sf])
    if st is not None and st.checksum_ok is False:
        yield finding("STATE_CHECKSUM_MISMATCH", f"{sf}: checksum {st.checksum} does not match the content",
                      [p.message for p in snap.problems if p.source == sf and "checksum" in p.message.lower()])
    mm = snap.memory_state
    if mm is not None and mm.checksum_ok is False:
        mf = f"{k.root_dir.rstrip('/')}/memory_manager_state"
        yield finding("STATE_CHECKSUM_MISMATCH", f"{mf}: checksum {mm.checksum} does not match the content",
                      [p.message for p in snap.problems if p.source == mf and "checksum" in p.message.lower()])
    if st is not None and k.cpu_manager_policy and st.policy != k.cpu_manager_policy:
        yield finding("STATE_POLICY_MISMATCH",
                      f"state file says policy {st.policy!r}, kubelet is configured with {k.cpu_manager_policy!r}",
                      [f"{sf}: policyName={st.policy}",
                       f"{k.sources.get('cpu_manager_policy', 'default')}: cpuManagerPolicy={k.cpu_manager_policy}"])


@check({"EXCLUSIVE_OVERLAP": ("critical", "exclusive CPU sets of two different pods intersect",
                              "The checkpoint is inconsistent: drain the node, delete cpu_manager_state, restart kubelet.")}, reads=("assignment",))
def exclusive_overlap(ctx):
    """Within one pod, an init container's CPUs reused by its app containers is legitimate
    (k/k policy_static.go cpusToReuse): only pods are compared."""
    if ctx.st is None:
        return
    owner_pod: dict[int, str] = {}
    held = {uid: frozenset().union(*ctrs.values()) if ctrs else frozenset() for uid, ctrs in ctx.st.entries.items()}
    for uid, cs in ctx.st.pod_entries.items():  # a pod's pod-level CPUs are its own too
        held[uid] = held.get(uid, frozenset()) | cs
    for uid, cpus in held.items():
        if uid == "":
            continue
        for c in sorted(cpus):
            other = owner_pod.get(c)
            if other is not None and other != uid:
                a, b = ctx.pods_by_uid.get(other), ctx.pods_by_uid.get(uid)
                yield finding("EXCLUSIVE_OVERLAP", f"CPU {c} is exclusive to two pods: "
                              f"{who(a, None) if a else other} and {who(b, None) if b else uid}",
                              [f"{ctx.sf}: {_where(ctx.st, other, c)} and {_where(ctx.st, uid, c)} both hold {c}"], [c], b)
            owner_pod[c] = uid


def _where(st, uid: str, cpu: int) -> str:
    """Which part of the checkpoint gives `cpu` to pod `uid`: a container's entry, else the pod's own."""
    ctrs = st.entries.get(uid, {})
    return f"entries[{uid}]" if any(cpu in cs for cs in ctrs.values()) else f"podEntries[{uid}]"


@check({"OFFLINE_ASSIGNED": ("critical", "an offline CPU is in an assignment or in the shared pool",
                             "The CPU manager does not support CPU hot-plug: bring the CPU back online, or drain, delete the state file and restart kubelet.")}, reads=("assignment",))
def offline_assigned(ctx):
    """Only when the topology is known (no /sys/devices/system/cpu: unknown, not a fault), and a finding
    names only CPUs the node has: CPUs beyond `possible` are said as CPUs it does not have."""
    st, online, sf = ctx.st, ctx.topo.online, ctx.sf
    if st is None or not online:
        return
    known = ctx.topo.possible | online

    def what(cs: frozenset) -> str:
        off, absent = (cs - online) & known, cs - known
        return " and ".join(([f"offline CPUs {fmt(off)}"] if off else [])
                            + ([f"CPUs {fmt(absent)} this node does not have (it has {fmt(known)})"] if absent else []))

    for uid, ctrs in st.entries.items():
        for cname, cs in ctrs.items():
            if cs - online:
                p = ctx.pods_by_uid.get(uid)
                yield finding("OFFLINE_ASSIGNED", f"{what(cs)} assigned to {who(p, cname) if p else uid + '/' + cname}",
                              [f"{sf}: entries[{uid}][{cname}] = {fmt(cs)}", f"online = {fmt(online)}"],
                              (cs - online) & known, p, cname)
    for uid, cs in st.pod_entries.items():
        if cs - online:
            p = ctx.pods_by_uid.get(uid)
            yield finding("OFFLINE_ASSIGNED", f"{what(cs)} assigned to pod {who(p, None) if p else uid} as a whole",
                          [f"{sf}: podEntries[{uid}] = {fmt(cs)}", f"online = {fmt(online)}"], (cs - online) & known, p)
    off = st.default_cpuset - online
    if off and st.policy == "static":
        yield finding("OFFLINE_ASSIGNED", f"{what(st.default_cpuset)} are in the shared pool",
                      [f"{sf}: defaultCpuSet = {fmt(st.default_cpuset)}", f"online = {fmt(online)}"], off & known)


@check({"ORPHAN_STATE_ENTRY": ("warning", "a state entry names a pod that no source on the node knows (no cgroup, no log directory, no kubelet pods dir)",
                               "Kubelet normally removes stale entries; a lasting one holds CPUs nobody uses. It clears on kubelet restart.")},
       reads=("assignment", "pods"))
def orphan_state_entry(ctx):
    if ctx.st is None:
        return
    for uid, ctrs in ctx.st.entries.items():
        p = ctx.pods_by_uid.get(uid)
        if not uid or (p is not None and p.cgroup_path is not None):
            continue
        others = [s for s in (p.sources if p else ()) if s != "state"]
        if others:  # kubelet or the logs know it: its cgroup was not found (cgroupRoot?), not an orphan
            continue  # identity.py says so, at info
        cs = frozenset().union(*ctrs.values()) if ctrs else frozenset()
        yield finding("ORPHAN_STATE_ENTRY", f"state entry for pod {uid} ({', '.join(sorted(ctrs))}), but nothing on the node knows that pod",
                      [f"{ctx.sf}: entries[{uid}] = {', '.join(f'{n}: {fmt(s)}' for n, s in sorted(ctrs.items()))}",
                       "no kubepods*/…pod<uid> cgroup, no <podLogsDir>/<ns>_<pod>_<uid>/, no <root-dir>/pods/<uid>/"], cs, p)
