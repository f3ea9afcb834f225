"""The device series through a real Prometheus (Debian's package): the exporter serving the demo cluster, whose
infer-epyc-64 holds a GPU on NUMA 3 for a container pinned on NUMA 1; PromQL finds it by its NUMA label, and
the per-NUMA count; the finding is exported too."""
from __future__ import annotations

from helpers import need
from promserver import Exporter, Prometheus, have_prometheus


def test_device_series_answer_promql():
    need(have_prometheus(), "prometheus and promtool (Debian package prometheus)")
    with Exporter("--interval", "1", "demo") as exp, Prometheus(scrape=[("pinscope", exp.addr)]) as prom:
        prom.wait_for('pinscope_read_success{node="infer-epyc-64"}', 1.0, deadline=60)
        prom.wait_for('count(pinscope_container_device_info{node="infer-epyc-64"})', 2.0, deadline=30)
        far = prom.query('pinscope_container_device_info{node="infer-epyc-64",numa_node="3"}')
        assert [(s["metric"]["pod"], s["metric"]["container"], s["metric"]["resource"]) for s in far] == [
            ("triton-0", "triton", "nvidia.com/gpu")]
        assert prom.value('pinscope_numa_node_devices{node="infer-epyc-64",numa_node="2",resource="nvidia.com/gpu"}') == 1
        assert prom.value('pinscope_finding{node="infer-epyc-64",code="DEVICE_CROSS_NUMA",pod="triton-0"}') == 1
