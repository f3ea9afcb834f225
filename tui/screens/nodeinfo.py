"""The node pane: kubelet settings and where each came from, NUMA nodes, cgroup version, problems."""
from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from pinscope.collectors.kube import ApiWindow
from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.text import display
from pinscope.tui.evidence import detail_lines
from pinscope.tui.human import amounts, settings, value
from pinscope.tui.screens.drill import DrillScreen
from pinscope.tui.widgets.readiness import checklist


class NodeInfoScreen(DrillScreen):
    def title_text(self) -> str:
        return "node"

    def body(self) -> ComposeResult:
        yield Static("", id="node-info")

    def render_body(self) -> None:
        v = self.view
        s = v.snap
        if s is None:
            return
        k = s.kubelet
        t = Text()
        t.append("kubelet\n", style="bold")
        t.append(_d(f"  process {'pid ' + str(k.pid) if k.pid else 'not found'}   config {k.config_path or '-'}   root-dir {k.root_dir}\n"))
        rows = [("cpuManagerPolicy", k.cpu_manager_policy or "unknown", "cpu_manager_policy"),
                ("cpuManagerPolicyOptions", settings(k.cpu_manager_policy_options), "cpu_manager_policy_options"),
                ("reservedSystemCPUs", format_cpuset(k.reserved_cpus) if k.reserved_cpus else "-", "reserved_cpus"),
                ("topologyManagerPolicy", value(k.topology_manager_policy), "topology_manager_policy"),
                ("topologyManagerScope", value(k.topology_manager_scope), "topology_manager_scope"),
                ("memoryManagerPolicy", value(k.memory_manager_policy), "memory_manager_policy"),
                ("cgroupDriver", k.cgroup_driver or "-", "cgroup_driver"),
                ("cgroupRoot", k.cgroup_root or "/ (none)", "cgroup_root"),
                ("kubeReserved", amounts(k.kube_reserved), "kube_reserved"),
                ("systemReserved", amounts(k.system_reserved), "system_reserved")]
        for name, val, field in rows:
            t.append(_d(f"  {name:<26} {str(val):<28} "))
            t.append(_d(f"from {k.sources.get(field, 'default')}\n"), style="dim")
        st = s.state
        t.append(_d(f"\ncpu_manager_state  {s.state_file or '-'}  ({s.state_status})\n"), style="bold")
        if st:
            ok = {True: "ok", False: "MISMATCH", None: "not checked"}[st.checksum_ok]
            t.append(_d(f"  version {value(st.version)}   policy {value(st.policy)}   defaultCpuSet {format_cpuset(st.default_cpuset) or '-'}   checksum {ok}\n"))
            names = {p.uid: f"{p.namespace or '?'}/{p.name or p.uid}" for p in s.pods}
            for uid, cs in sorted(st.pod_entries.items()):  # pod-level resources: CPUs held by the pod as a whole
                t.append(_d(f"  pod-level {names.get(uid, uid)}: {format_cpuset(cs) or '-'}"
                            f" ({format_cpuset(st.pod_level(uid)) or 'none'} held by no container of it)\n"))
        t.append(_d(f"  roles from: {s.roles_from}   shared pool {format_cpuset(s.shared_pool) if s.shared_pool is not None else '-'}\n"))
        t.append(_d(f"\ncgroup v{s.cgroup_version}  driver {s.cgroup_driver or 'unknown'}\n"), style="bold")
        t.append(_d(f"isolated {format_cpuset(s.topology.isolated) or '-'}   nohz_full {format_cpuset(s.topology.nohz_full) or '-'}\n"))
        t.append("\n")
        t.append_text(checklist(s.readiness))
        t.append("\nNUMA nodes\n", style="bold")
        for n in s.topology.numa_nodes:
            r = v.rates.numa.get(n.id) if v.rates else None
            rate = f"hit {r['numa_hit_per_s']:.0f}/s  miss {r['numa_miss_per_s']:.0f}/s ({r['miss_ratio'] * 100:.1f} %)" if r else "rates need two samples"
            t.append(_d(f"  node {n.id}: cpus {format_cpuset(n.cpus) or '(none: memory only)'}   distances {' '.join(map(str, n.distances))}   {rate}\n"))
        if v.report is not None and v.report.api is not None:
            _api_section(t, v.report.api)
        if v.findings:  # every finding whole, with its evidence and fix: the node screen's pane has only room to wrap them
            t.append("\nfindings\n", style="bold")
            for f in v.findings:
                t.append(_d(f"  {f.severity}: {f.code}: {f.message}\n"))
                for line in detail_lines(f.evidence, f.hint):
                    t.append(_d(f"    {line}") + "\n", style="dim")
        if s.problems:
            t.append("\nwhat could not be read\n", style="bold")
            for p in s.problems:
                t.append(_d(f"  {p.source}: {p.message}\n"))
        self.query_one("#node-info", Static).update(t)


def _api_section(t: Text, w: ApiWindow) -> None:
    """What the Kubernetes API said of the node (--kube, node/NAME): Allocatable, kubelet's own counters through
    the node proxy (what grew since the round before), the pods kubelet rejected; each part that failed, its line."""
    a = w.now
    t.append(_d(f"\nkubelet, through the Kubernetes API (node {a.node})\n"), style="bold")
    t.append(_d(f"  Allocatable cpu {a.allocatable_cpu or '-'}\n"))
    m = a.metrics
    if m is not None:
        b = w.before.metrics if w.before is not None else None
        rows = [("kubelet_cpu_manager_pinning_requests_total", m.pinning_requests, b.pinning_requests if b else None),
                ("kubelet_cpu_manager_pinning_errors_total", m.pinning_errors, b.pinning_errors if b else None),
                ("kubelet_topology_manager_admission_requests_total", m.admission_requests, b.admission_requests if b else None),
                ("kubelet_topology_manager_admission_errors_total", m.admission_errors, b.admission_errors if b else None),
                ("kubelet_cpu_manager_exclusive_cpu_allocation_count", m.exclusive_cpus, None)]
        for name, now, before in rows:
            val = "not exported by this kubelet" if now is None else f"{now:g}"
            grew = f"   (+{now - before:g} over {w.seconds:.0f} s)" if now is not None and before is not None and now > before else ""
            t.append(_d(f"  {name:<51} {val}{grew}\n"))
    for p in a.problems:
        t.append(_d(f"  {p}\n"), style="dim")
    if a.rejected:
        t.append(_d(f"  rejected at admission: {len(a.rejected)} pod(s)\n"))
        for r in a.rejected:
            t.append(_d(f"    {r.namespace}/{r.name}: {r.reason}: {r.message}\n"))


def _d(s: str) -> str:
    """A line of this pane (node data inside) escaped; the pane's own leading and trailing newlines kept."""
    core = s.strip("\n")
    i = s.index(core) if core else len(s)
    return s[:i] + display(core) + s[i + len(core):]
