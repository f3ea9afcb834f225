"""kubelet's /metrics text -> KubeletMetrics: literal texts shaped like a real kubelet's (k/k
pkg/kubelet/metrics/metrics.go names and help; component-base's "[ALPHA]" in HELP), values written by hand.
Bad text is a stated problem, never an exception."""
from pinscope.collectors.parse.kubelet_metrics import KubeletMetrics, parse_kubelet_metrics

KUBELET = """\
# HELP kubelet_cgroup_manager_duration_seconds [ALPHA] Duration in seconds for cgroup manager operations. Broken down by method.
# TYPE kubelet_cgroup_manager_duration_seconds histogram
kubelet_cgroup_manager_duration_seconds_bucket{operation_type="create",le="0.005"} 9
kubelet_cgroup_manager_duration_seconds_bucket{operation_type="create",le="+Inf"} 14
kubelet_cgroup_manager_duration_seconds_sum{operation_type="create"} 0.213
kubelet_cgroup_manager_duration_seconds_count{operation_type="create"} 14
# HELP kubelet_cpu_manager_exclusive_cpu_allocation_count [ALPHA] The total number of CPUs exclusively allocated to containers running on this node
# TYPE kubelet_cpu_manager_exclusive_cpu_allocation_count gauge
kubelet_cpu_manager_exclusive_cpu_allocation_count 6
# HELP kubelet_cpu_manager_pinning_errors_total [ALPHA] The number of cpu core allocations which required pinning failed.
# TYPE kubelet_cpu_manager_pinning_errors_total counter
kubelet_cpu_manager_pinning_errors_total 2
# HELP kubelet_cpu_manager_pinning_requests_total [ALPHA] The number of cpu core allocations which required pinning.
# TYPE kubelet_cpu_manager_pinning_requests_total counter
kubelet_cpu_manager_pinning_requests_total 17
# HELP kubelet_topology_manager_admission_errors_total [ALPHA] The number of admission request failures where resources could not be aligned.
# TYPE kubelet_topology_manager_admission_errors_total counter
kubelet_topology_manager_admission_errors_total 1
# HELP kubelet_topology_manager_admission_requests_total [ALPHA] The number of admission requests where resources have to be aligned.
# TYPE kubelet_topology_manager_admission_requests_total counter
kubelet_topology_manager_admission_requests_total 19
"""


def test_a_kubelets_metrics():
    assert parse_kubelet_metrics(KUBELET) == KubeletMetrics(17, 2, 19, 1, 6, None)


def test_an_older_kubelet_without_the_exclusive_gauge_is_unknown_not_zero():
    text = "\n".join(ln for ln in KUBELET.splitlines() if "exclusive" not in ln) + "\n"
    m = parse_kubelet_metrics(text)
    assert m == KubeletMetrics(17, 2, 19, 1, None, None)


def test_garbage_elsewhere_does_not_stop_the_series_read():
    text = "<<< not prometheus {{\n\x1b]0;owned\x07 42\n" + KUBELET + "kubelet_running_pods{ 7\n"
    assert parse_kubelet_metrics(text) == KubeletMetrics(17, 2, 19, 1, 6, None)


def test_a_garbage_line_of_our_series_is_said():
    text = KUBELET.replace("kubelet_cpu_manager_pinning_requests_total 17",
                           "kubelet_cpu_manager_pinning_requests_total{\x1b[2J 17")
    m = parse_kubelet_metrics(text)
    assert m.pinning_requests is None
    assert m.problem and m.problem.startswith("a line of kubelet's series is not Prometheus text")
    assert m.exclusive_cpus == 6 and m.pinning_errors == 2  # what came before the bad line is kept


def test_not_a_count_is_unknown_and_said():
    text = KUBELET.replace("pinning_errors_total 2", "pinning_errors_total NaN").replace(
        "admission_errors_total 1", "admission_errors_total -3")
    m = parse_kubelet_metrics(text)
    assert (m.pinning_errors, m.admission_errors, m.pinning_requests) == (None, None, 17)
    assert m.problem == ("not a count: admission_errors, pinning_errors")


def test_an_answer_that_is_not_kubelets_metrics():
    m = parse_kubelet_metrics("<html><body>502 Bad Gateway</body></html>\n")
    assert not m.known
    assert m.problem == "the answer has none of kubelet's CPU and topology manager series"
    assert parse_kubelet_metrics("").problem == m.problem


def test_a_cut_body_is_said_and_what_came_before_kept():
    m = parse_kubelet_metrics(KUBELET[:KUBELET.index("# HELP kubelet_topology")], cut_at=4 << 20)
    assert (m.pinning_requests, m.pinning_errors, m.admission_errors) == (17, 2, None)
    assert m.problem == f"the answer is longer than {4 << 20} bytes: read up to there"
