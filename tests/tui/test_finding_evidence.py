"""A finding's evidence (file and value) and fix where a user looks (issue 37 item 6): `pinscope check`'s text,
the findings pane once asked for (f), the node pane; short (three evidence lines, the rest counted) and
escaped (collectors.text.display), never twice."""

from frozen import FrozenApp, frozen_node, frozen_node_async
from nodes import dual_socket_intel

from pinscope.collectors.findings.base import Finding
from pinscope.collectors.model import Severity
from pinscope.collectors.text import CONTROL
from pinscope.cli import render_check
from pinscope.tui.screens.nodelayout import finding_rows

HOSTILE = "/sys/fs/cgroup/kubepods.slice/x\x1b]0;pwned\x07\u202e.scope/hugetlb.2MB.numa_stat: N0=0, N1=2097152 (bytes)"
EVIDENCE = [HOSTILE, "CPUs 1,5 on NUMA node 0", "third", "fourth", "fifth"]
HINT = "topologyManagerPolicy single-numa-node with memoryManagerPolicy Static"
SHOWN = ("/sys/fs/cgroup/kubepods.slice/x\\033]0;pwned\\a\\u202e.scope/hugetlb.2MB.numa_stat: N0=0, N1=2097152 "
         "(bytes)")


def test_check_text_shows_evidence_and_fix_escaped_and_short():
    o = {"node": "n1", "errors": [], "findings": [
        {"code": "PINNED_MEMORY_REMOTE", "severity": "warning", "message": "rt/engine-0/engine: hugepages 2MB on NUMA node 1",
         "hint": HINT, "evidence": EVIDENCE, "cpus": [1, 5], "namespace": "rt", "pod": "engine-0", "container": "engine"},
        {"code": "SYSTEM_NOT_CONFINED", "severity": "info", "message": "m", "hint": "", "evidence": [], "cpus": []}]}
    lines = render_check(o).split("\n")
    assert lines[:6] == [
        "n1: warning  PINNED_MEMORY_REMOTE     rt/engine-0/engine: hugepages 2MB on NUMA node 1  [cpus 1,5; rt/engine-0/engine]",
        f"    evidence: {SHOWN}",
        "    evidence: CPUs 1,5 on NUMA node 0",
        "    evidence: third",
        "    evidence: +2 more (--json)",
        f"    fix: {HINT}"]
    assert lines[6].startswith("n1: info     SYSTEM_NOT_CONFINED") and lines[7] == "n1: 0 critical, 1 warning, 1 info"
    assert not any(CONTROL.search(ln) for ln in lines)


def _finding(message: str = "m") -> Finding:
    return Finding("PINNED_MEMORY_REMOTE", Severity("warning"), message, HINT, tuple(EVIDENCE), (1, 5))


def test_findings_pane_rows_gain_evidence_and_fix_only_when_asked_for():
    f = _finding()
    wide = finding_rows([f], 200)
    assert wide[0][2] == ["m"]
    wide = finding_rows([f], 200, detail=True)
    assert wide[0][2] == ["m", f"  evidence: {SHOWN}", "  evidence: CPUs 1,5 on NUMA node 0", "  evidence: third",
                          "  evidence: +2 more (--json)", f"  fix: {HINT}"]
    narrow = finding_rows([f], 60, detail=True)[0][1]
    assert narrow[0] == "PINNED_MEMORY_REMOTE  m" and narrow[-1] == "  memoryManagerPolicy Static"
    assert all(ln.startswith("  ") for ln in narrow[1:]) and all(len(ln) <= 53 for ln in narrow)
    assert not any(CONTROL.search(ln) for ln in narrow)


async def test_the_pane_asked_for_shows_the_evidence_on_screen():
    """xeon-2s (tests/nodes.py dual_socket_intel): PID 1's affinity is unset, all 48 CPUs: SYSTEM_NOT_CONFINED's
    evidence is /proc/1/status's Cpus_allowed_list 0-47."""
    data = {"xeon-2s": await frozen_node_async(dual_socket_intel)}

    app = FrozenApp(data)
    async with app.run_test(size=(200, 60)) as pilot:
        await pilot.pause()
        before = app.export_screenshot()
        await pilot.press("f")
        await pilot.pause()
        after = app.export_screenshot()

    before, after = (s.replace("&#160;", " ") for s in (before, after))
    assert "evidence: /proc/1/status: Cpus_allowed_list = 0-47" in after and "fix: Kubelet does not confine" in after
    assert "evidence:" not in before


def test_the_cpu_and_container_panes_show_the_evidence_of_their_findings():
    """Enter on a finding opens the container or CPU it names: there too, each finding's evidence and fix.
    xeon-2s: SYSTEM_NOT_CONFINED names exclusive CPU 1. edge-16 (tests/nodes.py trouble_16): matcher-7d9f/engine
    assigned 3,11, the kernel runs it on 3-4,11-12: STATE_CGROUP_DRIFT about that container."""
    from nodes import trouble_16

    from pinscope.tui.screens import container, cpu
    from pinscope.tui.state import NodeView

    v = NodeView("xeon-2s")
    v.apply(frozen_node(dual_socket_intel))
    info = cpu.cpu_info(v, 1).plain
    assert "info: SYSTEM_NOT_CONFINED: PID 1" in info
    assert "\n  evidence: /proc/1/status: Cpus_allowed_list = 0-47\n  fix: Kubelet does not confine" in info
    t = NodeView("edge-16")
    t.apply(frozen_node(trouble_16))
    drift = next(f for f in t.findings if f.code == "STATE_CGROUP_DRIFT")
    p = next(p for p in t.snap.pods if p.uid == drift.pod_uid)
    c = next(c for c in p.containers if c.name == drift.container)
    info = container.container_info(t, p, c).plain
    assert f"critical: STATE_CGROUP_DRIFT: {drift.message}\n" in info and f"  fix: {drift.hint}\n" in info
    assert drift.evidence and all(f"  evidence: {e}\n" in info for e in drift.evidence[:3])
