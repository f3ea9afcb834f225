"""Latency readiness on this machine's real kernel (issue 37): `pinscope snapshot --json local` says what
/proc and /sys say, read here directly by the test (never by pinscope's parsers), and says unknown or not
applicable where this kernel has no such file (no cpufreq in a VM: n/a, never wrong)."""
import json
from pathlib import Path

from helpers import run_cli

CPU = Path("/sys/devices/system/cpu")


def cpulist(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return sorted(out)


def mask(text: str) -> list[int]:
    v = int(text.strip().replace(",", ""), 16)
    return [i for i in range(v.bit_length()) if v >> i & 1]


def kernel_words() -> dict:
    out = {}
    for w in Path("/proc/cmdline").read_text().split():
        if w == "--":
            break
        k, eq, v = w.partition("=")
        out[k] = v if eq else None
    return out


def snap() -> dict:
    p = run_cli("snapshot", "--json", "local", timeout=120)
    assert p.returncode in (0, 1, 2, 4), p.stderr
    return json.loads(p.stdout)


def test_readiness_matches_the_kernel_read_directly():
    o = snap()
    r = o["readiness"]
    assert r is not None
    words = kernel_words()
    for name in ("isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity"):
        if name not in words:
            assert r["kernel"][name] is None, name
    if "nohz_full" in words and words["nohz_full"]:
        assert r["kernel"]["nohz_full"] == cpulist(words["nohz_full"])
    iso = CPU / "isolated"
    assert r["isolated"] == (cpulist(iso.read_text()) if iso.exists() else None)
    nohz = CPU / "nohz_full"
    if nohz.exists() and nohz.read_text().strip() not in ("", "(null)"):
        assert r["nohz_full"] == cpulist(nohz.read_text())
    elif not nohz.exists():
        assert r["nohz_full"] is None
    assert r["default_irq_affinity"] == mask(Path("/proc/irq/default_smp_affinity").read_text())
    assert r["sched_rt_runtime_us"] == int(Path("/proc/sys/kernel/sched_rt_runtime_us").read_text())
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        assert f"[{r['thp']}]" in thp.read_text()


def test_power_per_cpu_matches_sysfs_or_is_not_applicable():
    r = snap()["readiness"]
    online = cpulist((CPU / "online").read_text())
    assert [c["id"] for c in r["cpus"]] == online
    checks = {c["check"]: c for c in r["checks"]}
    for c in r["cpus"]:
        gov = CPU / f"cpu{c['id']}/cpufreq/scaling_governor"
        assert c["governor"] == (gov.read_text().strip() if gov.exists() else None)
        states = sorted((CPU / f"cpu{c['id']}/cpuidle").glob("state[0-9]*"))
        if not states:
            assert c["deepest_cstate"] is None
            continue
        qos = CPU / f"cpu{c['id']}/power/pm_qos_resume_latency_us"
        q = qos.read_text().strip() if qos.exists() else "0"
        limit = None if q == "0" else (0 if q == "n/a" else int(q))
        allowed = [(int((s / "latency").read_text()), (s / "name").read_text().strip()) for s in states
                   if (s / "disable").read_text().strip() == "0"]
        allowed = [a for a in allowed if limit is None or a[0] <= limit]
        if allowed:
            assert (c["deepest_cstate_latency_us"], c["deepest_cstate"]) == max(allowed)
        else:
            assert c["deepest_cstate"] is None
    if not any((CPU / f"cpu{i}/cpufreq").exists() for i in online) and r["target"]:
        assert checks["governor"]["status"] == "n/a"  # a VM without cpufreq: not applicable, never wrong
    codes = {f["code"] for f in snap()["findings"]}
    if not any((CPU / f"cpu{i}/cpufreq").exists() for i in online):
        assert "PINNED_CPU_POWERSAVE" not in codes
