"""Checks on what the Kubernetes API says of the node (with --kube or node/NAME; collectors/kube.py api_node):
pods kubelet rejected at admission, an Allocatable CPU that is not whole under the static policy, and kubelet's
own pinning and topology admission error counters growing over the window between two API rounds.

Run only with an API answer (evaluate_api): no answer, no check, nothing faked. A part of the answer that
failed (a 403 on nodes/proxy) is no evidence either way: its check stays silent, the part's reason is said
beside the findings. Kubelet's messages are kept raw here and escaped where they are shown, like any name.
"""
from __future__ import annotations

from ..kube import cpu_millis
from .base import check, finding


@check({"ADMISSION_REJECTED": ("warning", "kubelet rejected a pod at admission: status.phase Failed with one of kubelet's admission reasons "
                                          "(TopologyAffinityError, SMTAlignmentError, UnexpectedAdmissionError, OutOf<resource>, NodeAffinity ...)",
                               "Read kubelet's message in the evidence. TopologyAffinityError: the topology manager policy (restricted, "
                               "single-numa-node) found no NUMA placement for the pod's CPUs, memory and devices: request fewer, or free "
                               "a NUMA node. SMTAlignmentError: full-pcpus-only wants a CPU count that fills whole cores. OutOf<resource>: "
                               "the node lacked it at admission. A rejected pod stays Failed: delete it once understood (its controller "
                               "has made another, which may be rejected the same way).")},
       needs="k")
def admission_rejected(ctx):
    for r in ctx.api.now.rejected:
        said = r.message if len(r.message) <= 160 else r.message[:159] + "…"
        yield finding("ADMISSION_REJECTED", f"{r.namespace}/{r.name}: kubelet rejected the pod at admission: {r.reason}"
                      + (f" ({said})" if said else ""),
                      [f"Kubernetes API pods/{r.namespace}/{r.name}: status.phase Failed, status.reason {r.reason}",
                       f"kubelet's message: {r.message or '(none)'}"], pod=r)


@check({"ALLOCATABLE_FRACTIONAL": ("warning", "the node's Allocatable CPU is not a whole number of CPUs while its files say cpuManagerPolicy static",
                                   "The static policy takes its reserved CPUs whole (kubeReserved + systemReserved cpu rounded up) while "
                                   "Allocatable subtracts only the fraction: pinned pods still fit, but the scheduler counts that "
                                   "fraction of a CPU for the shared pool, which kubelet gave to the reserved set. Reserve whole CPUs "
                                   "(reservedSystemCPUs, or kube and system reserved cpu adding up to whole CPUs), then restart kubelet.")},
       needs="k")
def allocatable_fractional(ctx):
    api = ctx.api.now
    if ctx.policy != "static" or api.allocatable_cpu is None:
        return  # unknown policy, another policy, or no Allocatable read: no claim
    milli = cpu_millis(api.allocatable_cpu)
    if milli is None or milli % 1000 == 0:
        return
    said = (f"{ctx.sf}: policyName static" if ctx.st is not None and ctx.st.policy == "static"
            else f"{ctx.k.config_path or 'kubelet config'}: cpuManagerPolicy static")
    yield finding("ALLOCATABLE_FRACTIONAL", f"Allocatable cpu {api.allocatable_cpu} ({float(milli) / 1000:g} CPUs) "
                  "under the static CPU manager policy",
                  [f"Kubernetes API nodes/{api.node}: status.allocatable.cpu {api.allocatable_cpu}", said])


_COUNTERS = (("pinning_errors", "kubelet_cpu_manager_pinning_errors_total", "pinning_requests",
              "kubelet_cpu_manager_pinning_requests_total"),
             ("admission_errors", "kubelet_topology_manager_admission_errors_total", "admission_requests",
              "kubelet_topology_manager_admission_requests_total"))


@check({"KUBELET_PINNING_ERRORS": ("warning", "kubelet_cpu_manager_pinning_errors_total or kubelet_topology_manager_admission_errors_total "
                                              "grew between two API rounds (kubelet's metrics through the node proxy)",
                                   "kubelet failed to pin a container's CPUs or to align a pod's resources while admitting it: look for "
                                   "ADMISSION_REJECTED pods and kubelet's log (journalctl -u kubelet) for the pod and its reason.")},
       needs="k")
def pinning_errors(ctx):
    w = ctx.api
    if w.before is None or w.now.metrics is None or w.before.metrics is None:
        return  # one round, or metrics not read: no window, no claim
    now, before = w.now.metrics, w.before.metrics
    grew, evidence = [], []
    for err_f, err_name, req_f, req_name in _COUNTERS:
        a, b = getattr(before, err_f), getattr(now, err_f)
        if a is None or b is None:
            continue
        evidence.append(f"{err_name}: {a:g} -> {b:g}; {req_name}: {_v(getattr(before, req_f))} -> {_v(getattr(now, req_f))}")
        if b > a:  # a counter that went down is a restarted kubelet: no claim over that window
            grew.append(f"{err_name} +{b - a:g}")
    if grew:
        yield finding("KUBELET_PINNING_ERRORS", f"kubelet's error counters grew over {w.seconds:.0f} s: {', '.join(grew)}",
                      [f"GET /api/v1/nodes/{w.now.node}/proxy/metrics, {w.seconds:.0f} s apart", *evidence])


def _v(x: float | None) -> str:
    return "?" if x is None else f"{x:g}"
