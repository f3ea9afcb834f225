"""pinscope's Grafana dashboard, built with Grafana's typed SDK (grafana-foundation-sdk, a test extra only)
and written to deploy/grafana/pinscope.json. Regenerate after a change, and commit both:

    .venv/bin/python deploy/grafana/generate.py          # writes deploy/grafana/pinscope.json
    .venv/bin/python deploy/grafana/generate.py --check  # exit 1 if the committed JSON differs

Every panel is per node ($node, from pinscope_node_info) and reads only the metrics of docs/prometheus.md's
contract; a panel per CPU has one series per node and CPU (CPU ids repeat across nodes), a panel of pinned
containers only those holding exclusive CPUs. tests/deploy/test_grafana.py checks that regenerating gives
the committed file, and runs every query through a real Prometheus scraping pinscope's exporter over two
nodes (each must return data, and the series its title says).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import bargauge, dashboard, heatmap, prometheus, stat, statetimeline, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, ValueMap, ValueMappingResult, VariableRefresh

from pinscope.collectors.model import Role

OUT = Path(__file__).with_name("pinscope.json")
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
N = 'node=~"$node"'
PINNED = f"on (node, namespace, pod, container) pinscope_container_exclusive_cpus{{{N}}} > 0"
# the CPU map's cell value: the role's number (pinscope_cpu_info is 1 for every role, so a cell read "1");
# the panel's value mappings turn it back into the role's name. Grafana's named colours.
ROLE_COLOUR = {Role.EXCLUSIVE: "orange", Role.RESERVED: "blue", Role.ISOLATED: "purple", Role.SHARED: "green",
               Role.OFFLINE: "dark-red", Role.UNASSIGNED: "yellow"}
ROLE_NUMBER = {role: i for i, role in enumerate(Role, 1)}


def role_of_each_cpu() -> str:
    """One series per (node, cpu) whose value is its role's number: a branch per role, joined by `or` (a CPU
    has one role at a time, so exactly one branch answers for it)."""
    return "\nor ".join(f'max by (node, cpu) (pinscope_cpu_info{{{N},role="{r}"}}) * {n}' for r, n in ROLE_NUMBER.items())


def role_mappings() -> list:
    return [ValueMap({str(n): ValueMappingResult(text=str(r), color=ROLE_COLOUR[r], index=n - 1)
                      for r, n in ROLE_NUMBER.items()})]


def q(expr: str, legend: str = "", ref: str = "A") -> prometheus.Dataquery:
    return prometheus.Dataquery().expr(expr).legend_format(legend or "__auto").ref_id(ref).datasource(DS)


def panels() -> list:
    """(builder, height, width) in reading order: the node at a glance, the CPU map, pods, findings,
    jitter, and the probe's own cost."""
    return [
        (stat.Panel().title("CPUs by role").unit("none")
         .with_target(q(f"sum by (role) (pinscope_cpus{{{N}}})", "{{role}}")), 5, 12),
        (stat.Panel().title("Findings by severity").unit("none")
         .with_target(q(f"sum by (severity) (pinscope_findings{{{N}}})", "{{severity}}")), 5, 12),
        # the CPU map: one row per node and CPU (CPU ids repeat across nodes), its role over time, each cell
        # named by its role (value mappings)
        (statetimeline.Panel().title("CPU map: role of each CPU")
         .description("one row per node and CPU; a CPU whose role changes shows the change in time")
         .mappings(role_mappings())
         .with_target(q(role_of_each_cpu(), "{{node}} cpu {{cpu}}")), 12, 12),
        (heatmap.Panel().title("CPU load by CPU")
         .description("busy share of each CPU over the exporter's read window (/proc/stat), one row per node and CPU")
         .with_target(q(f"max by (node, cpu) (pinscope_cpu_utilization_ratio{{{N}}})", "{{node}} {{cpu}}")), 12, 12),
        (bargauge.Panel().title("Exclusive CPUs per pod").unit("none")
         .with_target(q(f"sum by (namespace, pod) (pinscope_container_exclusive_cpus{{{N}}})",
                        "{{namespace}}/{{pod}}")), 8, 12),
        (timeseries.Panel().title("Findings over time, by severity").unit("none")
         .with_target(q(f"sum by (severity) (pinscope_findings{{{N}}})", "{{severity}}")), 8, 12),
        (timeseries.Panel().title("Run-queue wait of pinned containers").unit("s")
         .description("seconds per second a pinned container's tasks waited to run (jitter)")
         .with_target(q(f"max by (node, namespace, pod, container) (pinscope_container_runqueue_wait_seconds_per_second{{{N}}})"
                        f" and {PINNED}", "{{node}} {{namespace}}/{{pod}}/{{container}}")), 8, 12),
        (timeseries.Panel().title("Kernel noise on exclusive CPUs").unit("percentunit")
         .description("irq + softirq + steal share of each exclusive CPU")
         .with_target(q(f"max by (node, cpu) (pinscope_cpu_noise_ratio{{{N}}}"
                        f" and on (node, cpu) pinscope_cpu_info{{{N},role=\"exclusive\"}})", "{{node}} cpu {{cpu}}")), 8, 12),
        (timeseries.Panel().title("CFS throttling of pinned containers").unit("s")
         .description("seconds per second a pinned container was throttled by its CFS quota")
         .with_target(q(f"sum by (node, namespace, pod, container) (rate(pinscope_container_cpu_cfs_throttled_seconds_total{{{N}}}[$__rate_interval]))"
                        f" and {PINNED}", "{{node}} {{namespace}}/{{pod}}/{{container}}")), 8, 12),
        # what fits (issue 36): kubelet's own decision, ported; the finding when N CPUs are free yet refused
        (bargauge.Panel().title("What fits: largest pinned container per NUMA node").unit("none")
         .description("the largest Guaranteed container kubelet could give exclusive CPUs from each NUMA node alone "
                      "(any CPUs, or whole cores only), as kubelet's own code decides on the node's state")
         .with_target(q(f"max by (node, numa_node, alignment) (pinscope_fit_largest_exclusive_cpus{{{N}}})",
                        "{{node}} NUMA {{numa_node}} {{alignment}}")), 8, 12),
        (stat.Panel().title("Free exclusive CPUs fragmented (EXCLUSIVE_FRAGMENTED)").unit("none")
         .description("1: the node has N free CPUs, yet kubelet would refuse a container of N (N: its largest pinned "
                      "request); `pinscope fit NODE --cpus N` says where they are and what kubelet would answer")
         .mappings([ValueMap({"0": ValueMappingResult(text="ok", color="green", index=0),
                              "1": ValueMappingResult(text="fragmented", color="orange", index=1)})])
         .with_target(q(f'max by (node) (pinscope_finding{{{N},code="EXCLUSIVE_FRAGMENTED"}})'
                        f" or max by (node) (pinscope_node_info{{{N}}}) * 0", "{{node}}")), 8, 12),
        # latency readiness (issue 37): the node pane's checklist and the grid's "~", per node
        (stat.Panel().title("Latency readiness: checks ok of those that apply").unit("percentunit")
         .description("the node pane's score: checks ok over checks ok or not (n/a and unknown left out); "
                      "nodes with nothing to judge (no pinned or isolated CPU) are not shown")
         .with_target(q(f'max by (node) (pinscope_readiness_checks{{{N},status="ok"}})'
                        f' / (max by (node) (pinscope_readiness_checks{{{N},status="ok"}})'
                        f' + max by (node) (pinscope_readiness_checks{{{N},status="no"}}) > 0)',
                        "{{node}}")), 8, 12),
        (statetimeline.Panel().title("Latency readiness checks that fail")
         .description("one row per node and check whose status is no; `pinscope check` names the finding, the file "
                      "and value, and the fix")
         .mappings([ValueMap({"1": ValueMappingResult(text="no", color="orange", index=0)})])
         .with_target(q(f'max by (node, check) (pinscope_readiness_check{{{N},status="no"}}) == 1',
                        "{{node}} {{check}}")), 8, 12),
        (timeseries.Panel().title("Pinned CPUs not latency-ready").unit("none")
         .description("exclusive CPUs not isolated where the node isolates others, open to irqbalance, on powersave "
                      "or allowed a deep C-state (the grid's \"~\")")
         .with_target(q(f"max by (node) (pinscope_readiness_not_ready_cpus{{{N}}})", "{{node}}")), 8, 12),
        (timeseries.Panel().title("pinscope's own cost on the node").unit("s")
         .description("CPU seconds per second the probe used, and how long one read took")
         .with_target(q(f"sum by (node) (rate(pinscope_probe_cpu_seconds_total{{{N}}}[$__rate_interval]))",
                        "{{node}} probe CPU")
                      )
         .with_target(q(f"max by (node) (pinscope_read_duration_seconds{{{N}}})", "{{node}} read", "B")), 8, 12),
    ]


def build() -> dict:
    d = (dashboard.Dashboard("pinscope: CPU pinning by node")
         .uid("pinscope-nodes")
         .description("Core-by-core CPU pinning on Kubernetes nodes, from pinscope's exporter (deploy/)")
         .tags(["pinscope", "kubernetes", "cpu"])
         .refresh("30s")
         .time("now-6h", "now")
         .timezone("browser")
         .with_variable(dashboard.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
         .with_variable(dashboard.QueryVariable("node").label("Node").datasource(DS)
                        .query("label_values(pinscope_node_info, node)")
                        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
                        .multi(True).include_all(True)))
    for p, h, w in panels():
        d = d.with_panel(p.datasource(DS).height(h).span(w))
    return json.loads(json.dumps(d.build(), cls=JSONEncoder))


def render() -> str:
    return json.dumps(build(), indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUT.read_text() != text:
            print(f"{OUT} is not what generate.py builds: run it and commit the result", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
