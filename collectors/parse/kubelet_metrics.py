"""kubelet's own /metrics text (Prometheus text format 0.0.4, as the API server's node proxy hands it over)
-> the few series pinscope shows: the CPU manager's pinning and the topology manager's admission counters,
and the exclusive-CPU gauge where the kubelet has it.

The names are kubelet's (k/k pkg/kubelet/metrics/metrics.go, subsystem "kubelet"):
  CPUManagerPinningRequestsTotalKey          cpu_manager_pinning_requests_total        counter
  CPUManagerPinningErrorsTotalKey            cpu_manager_pinning_errors_total          counter
  TopologyManagerAdmissionRequestsTotalKey   topology_manager_admission_requests_total counter
  TopologyManagerAdmissionErrorsTotalKey     topology_manager_admission_errors_total   counter
  CPUManagerExclusiveCPUsAllocationCountKey  cpu_manager_exclusive_cpu_allocation_count gauge (newer kubelets
                                             only: absent is "this kubelet does not say", not zero)
None of them has labels. Only the lines of these series are handed to prometheus_client's parser: a kubelet's
/metrics is hundreds of families, and a line pinscope does not read cannot stop it from reading the rest.
Pure: text in, a frozen dataclass out; what cannot be read is said in `problem`, never raised.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

SERIES = {
    "kubelet_cpu_manager_pinning_requests_total": "pinning_requests",
    "kubelet_cpu_manager_pinning_errors_total": "pinning_errors",
    "kubelet_topology_manager_admission_requests_total": "admission_requests",
    "kubelet_topology_manager_admission_errors_total": "admission_errors",
    "kubelet_cpu_manager_exclusive_cpu_allocation_count": "exclusive_cpus",
}
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


@dataclass(frozen=True, slots=True)
class KubeletMetrics:
    """kubelet's counters (since it started) and gauge; None: not in the answer, or not a number."""

    pinning_requests: float | None = None
    pinning_errors: float | None = None
    admission_requests: float | None = None
    admission_errors: float | None = None
    exclusive_cpus: float | None = None
    problem: str | None = None  # one line: what could not be read (a cut body, a line that is not Prometheus text)

    @property
    def known(self) -> bool:
        """Does the answer hold any of the series at all?"""
        return any(getattr(self, f) is not None for f in SERIES.values())


def _name_of(line: str) -> str | None:
    """The metric a line is about: `# HELP|TYPE name ...` or `name{...} value`; None for other comments."""
    if line.startswith("#"):
        parts = line.split(None, 3)
        return parts[2] if len(parts) >= 3 and parts[1] in ("HELP", "TYPE") else None
    m = _NAME.match(line)
    return m.group() if m else None


def _ours(text: str) -> str:
    return "".join(line + "\n" for line in text.splitlines() if _name_of(line) in SERIES)


def parse_kubelet_metrics(text: str, cut_at: int | None = None) -> KubeletMetrics:
    """kubelet's /metrics text -> KubeletMetrics. `cut_at`: the body was longer than this many bytes and was
    cut there (its last, partial line dropped): what came before is used and the cut is said."""
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, float] = {}
    problems: list[str] = []
    try:
        for fam in text_string_to_metric_families(_ours(text)):
            for s in fam.samples:
                if s.name in SERIES:
                    values[SERIES[s.name]] = values.get(SERIES[s.name], 0.0) + float(s.value)
    except (ValueError, TypeError, IndexError, KeyError) as err:  # the parser's ways of saying "not this format"
        problems.append(f"a line of kubelet's series is not Prometheus text ({str(err)[:120]})")
    bad = sorted(k for k, v in values.items() if not (math.isfinite(v) and v >= 0))
    for k in bad:  # a counter or a count is never negative, NaN or infinite: unknown, said
        del values[k]
    if bad:
        problems.append(f"not a count: {', '.join(bad)}")
    out = _metrics(values, None)
    if cut_at is not None:
        problems.append(f"the answer is longer than {cut_at} bytes: read up to there")
    if not out.known and not problems:
        problems.append("the answer has none of kubelet's CPU and topology manager series")
    return _metrics(values, "; ".join(problems) or None)


def _metrics(v: dict[str, float], problem: str | None) -> KubeletMetrics:
    return KubeletMetrics(v.get("pinning_requests"), v.get("pinning_errors"), v.get("admission_requests"),
                          v.get("admission_errors"), v.get("exclusive_cpus"), problem)
