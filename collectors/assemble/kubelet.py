"""Assembly stage: what kubelet was told and what it wrote (config, cpu_manager_state, memory_manager_state).

The static frame's part (topology, kubelet config) is parsed once per static frame (the Assembler keeps
it); the state file changes when pods come and go, not every tick, so each text is parsed once.
"""
from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from ..errors import UNREAD, Problem
from ..frames import Frame
from ..parse.allocstate import parse_allocated_pods_state
from ..parse.kubelet import climbs_out, parse_cpu_manager_state, parse_kubelet_config, parse_memory_manager_state
from ..parse.topology import parse_topology


def _dropin_dir(argv: list[str] | None) -> str | None:
    if not argv:
        return None
    for i, a in enumerate(argv):
        if a.startswith("--config-dir="):
            return a.split("=", 1)[1]
        if a == "--config-dir" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def unreadable_problem(problems: list, frame_unreadable: set, path: str, what: str, refused=(),
                       sudo_refused: bool = False) -> None:
    """A file this user may not read: the node is read only in part, and the fix is said (once: with --sudo
    refused, 'run with --sudo' would be no answer)."""
    if path in frame_unreadable and path not in refused:  # a refused FIFO or directory is said as such
        fix = ("sudo -n was refused: give this user passwordless sudo for sh, or connect as root" if sudo_refused
               else "run with --sudo, or as root or a user in a group that may read it")
        problems.append(Problem(path, f"{what} is not readable by this user (root-only): {fix}", UNREAD))


def unlisted_problems(problems: list, dirs, sudo_refused: bool = False) -> None:
    """Directories this user may not list (probe.sh unlisted): what they hold is unknown, not absent; the
    node is read only in part (READ_PARTIAL), said once per directory, its path ending in "/"."""
    fix = ("sudo -n was refused: give this user passwordless sudo for sh, or connect as root" if sudo_refused
           else "run with --sudo, or as root or a user in a group that may read it")
    for d in sorted(dirs):
        problems.append(Problem(f"{d}/", "a directory this user may not list: what it holds is unknown, not absent "
                                f"(root-only): {fix}", UNREAD))


def _config_inputs(static: Frame, root_dir: str, cfg_path: str | None, sprobs: list[Problem]):
    """-> (the drop-ins to merge, whether the config's policy is unknown): paths from the node that climb
    out of --root were not read (probe.sh refuses them too); a config or drop-in not read whole is not
    parsed (its first MiB could say a policy the rest overrides). Each is a problem stated."""
    ddir = _dropin_dir(static.argv)
    for what, path in (("--root-dir", root_dir), ("--config", cfg_path), ("--config-dir", ddir)):
        if path and climbs_out(path):
            sprobs.append(Problem(path, f"{what} {path!r} refused: not absolute, or it climbs with "
                                  "'..' (under --root it would lead outside the prefix); nothing was read there"))
    ddir = None if ddir and climbs_out(ddir) else ddir
    mine = [p for p in static.files if ddir and p.startswith(ddir.rstrip("/") + "/") and p.endswith(".conf")]
    cut = [p for p in [cfg_path, *mine] if p in static.truncated]
    for p in cut:
        sprobs.append(Problem(p, "kubelet config not read whole (larger than pinscope's read bound): policy unknown"))
    dropins = [(p, static.files[p]) for p in mine if p not in cut]
    return dropins, bool(cut) or (cfg_path is not None and climbs_out(cfg_path))


def static_parts(static: Frame):
    """(topology, kubelet config, problems) of a static frame (the assembler keeps them per static frame)."""
    sprobs: list[Problem] = []
    topo = parse_topology(static.files, sprobs)
    sinfo = static.info
    root_dir = sinfo.get("kubelet-root", "/var/lib/kubelet")
    cfg_path = sinfo.get("kubelet-config") or None
    pid = int(sinfo["kubelet-pid"]) if sinfo.get("kubelet-pid", "").isdecimal() else None
    dropins, refused_cfg = _config_inputs(static, root_dir, cfg_path, sprobs)
    if cfg_path and not refused_cfg:
        unreadable_problem(sprobs, static.unreadable, cfg_path, "kubelet config", sudo_refused=sudo_was_refused(static))
        if cfg_path not in static.files and cfg_path not in static.unreadable and cfg_path not in static.refused \
                and pid is not None:
            sprobs.append(Problem(cfg_path, "kubelet config named by --config is missing"))
    kubelet = parse_kubelet_config(static.files.get(cfg_path) if cfg_path and not refused_cfg else None, cfg_path,
                                   dropins, static.argv, sprobs, pid=pid, root_dir=root_dir)
    if (refused_cfg or cfg_path in static.unreadable) and "cpu_manager_policy" not in kubelet.sources:
        # a config refused, cut, or this user may not read says nothing: the policy is unknown, not "none"
        kubelet = replace(kubelet, parsed=False, cpu_manager_policy=None)
    return topo, kubelet, tuple(sprobs)


@lru_cache(maxsize=1024)  # one text per node of a fleet; it changes when pods come and go
def _state_cached(text: str, source: str):
    """The state file changes when pods come and go, not every tick: parse each text once."""
    probs: list[Problem] = []
    return parse_cpu_manager_state(text, source, probs), tuple(probs)


def sudo_was_refused(static: Frame) -> bool:
    return any(w.startswith("sudo -n was refused") for w in static.warnings)


def cpu_manager_state(files: dict, unreadable: set, kubelet, problems: list, refused=(), sudo_refused=False,
                      cut=()):
    """-> (state or None, state_status, state_file path). A file larger than the probe's read bound was not
    read whole: "cut", never "invalid" (a valid checkpoint may be that large; its content is unknown)."""
    state_file = f"{kubelet.root_dir.rstrip('/')}/cpu_manager_state"
    state = None
    if climbs_out(kubelet.root_dir):  # refused, said by static_parts: nothing was read there
        state_status = "refused"
    elif state_file in cut:
        problems.append(Problem(state_file, "not read whole (larger than pinscope's read bound): kubelet's "
                                "CPU assignments are unknown; the file itself may be valid"))
        state_status = "cut"
    elif state_file in files:
        state, sp = _state_cached(files[state_file], state_file)
        problems.extend(sp)
        state_status = "ok" if state is not None else "invalid"
    else:
        unreadable_problem(problems, unreadable, state_file, "cpu_manager_state", refused, sudo_refused)
        state_status = "unreadable" if state_file in unreadable else "missing"
        if state_status == "missing" and kubelet.cpu_manager_policy == "static":
            problems.append(Problem(state_file, "missing, but the configured policy is static"))
    return state, state_status, state_file


def memory_manager_state(sfiles: dict, kubelet, cut=()):
    """-> (memory manager state or None, problems): from the static frame (a file not read whole: unknown)."""
    problems: list[Problem] = []
    mm_file = f"{kubelet.root_dir.rstrip('/')}/memory_manager_state"
    mm_text = sfiles.get(mm_file) if mm_file not in cut and not climbs_out(kubelet.root_dir) else None
    state = parse_memory_manager_state(mm_text, mm_file, problems) if mm_text is not None else None
    return state, tuple(problems)


def allocated_pods_state(sfiles: dict, kubelet, cut=()):
    """-> ({pod uid: PodAllocation} or None, problems): kubelet's allocation checkpoint, from the static frame (a
    file not read whole, or absent: unknown)."""
    problems: list[Problem] = []
    path = f"{kubelet.root_dir.rstrip('/')}/allocated_pods_state"
    text = sfiles.get(path) if path not in cut and not climbs_out(kubelet.root_dir) else None
    return (parse_allocated_pods_state(text, path, problems) if text is not None else None), tuple(problems)
