"""kubelet's own admission walks the cross product of its providers' hints (collectors/fit/combinations.py):
with memory and two hugepages sizes on 8 NUMA nodes that is 255^4 combinations, minutes in kubelet's code.
pinscope answers at once and says so; under single-numa-node only single-node hints are crossed (8^4)."""

from __future__ import annotations

import time

from pinscope.collectors.fit.combinations import SLOW_COMBINATIONS, admission_cost, slow_note
from pinscope.collectors.fit.kubelet import Kubelet

GI = 2**30


def _table(size: int) -> dict:
    return {"total": size, "systemReserved": 0, "allocatable": size, "reserved": 0, "free": size}


def eight_numa(policy: str, pages: tuple[str, ...] = ("hugepages-2Mi", "hugepages-1Gi")) -> dict:
    """8 NUMA nodes of 2 CPUs (no SMT), CPU 0 reserved; every node 16Gi of memory and 4Gi of each hugepages size."""
    cpus = [[i, 0, i // 2, i, -1] for i in range(16)]
    machine = {str(n): {"numberOfAssignments": 0, "cells": [n],
                        "memoryMap": {"memory": _table(16 * GI), **{p: _table(4 * GI) for p in pages}}}
               for n in range(8)}
    return {"cpus": cpus, "num_reserved": 1, "reserved": "0", "tm_policy": policy, "tm_scope": "container",
            "assignments": {}, "containers": [1], "memory": {"machine_state": machine}}


def _cost(policy: str, request: dict) -> tuple[int | None, list]:
    k = Kubelet(eight_numa(policy))
    d = k.admit([1], memory=[request])
    assert d.error is None, d.error
    return admission_cost(k, d, [request])


def test_memory_and_two_hugepages_sizes_on_8_numa_nodes_is_255_to_the_4th():
    """Each list holds every one of the 255 NUMA masks (1 CPU and 1Gi fit anywhere): kubelet walks 255^4."""
    req = {"memory": GI, "hugepages-2Mi": 2**21, "hugepages-1Gi": GI}
    t = time.perf_counter()
    total, counts = _cost("restricted", req)
    assert time.perf_counter() - t < 1.0  # pinscope's merge is not kubelet's loop
    assert total == 255**4 > SLOW_COMBINATIONS
    assert dict(counts) == {"cpu": 255, "memory": 255, "hugepages-2Mi": 255, "hugepages-1Gi": 255}
    note = slow_note(total, counts)
    assert note is not None and "about 4,228,250,625 hint combinations" in note and "may take long" in note
    assert "second" not in note and "minute" not in note  # no time is guessed


def test_single_numa_node_crosses_the_single_node_hints_alone():
    total, counts = _cost("single-numa-node", {"memory": GI, "hugepages-2Mi": 2**21, "hugepages-1Gi": GI})
    assert total == 8**4 and slow_note(total, counts) is None


def test_the_cpus_alone_are_not_slow_and_policy_none_merges_nothing():
    k = Kubelet(eight_numa("best-effort"))
    d = k.admit([1])
    assert admission_cost(k, d, None) == (255, [("cpu", 255)])
    k = Kubelet(eight_numa("none"))
    assert admission_cost(k, k.admit([1], memory=[{"memory": GI}]), [{"memory": GI}]) == (None, [])


def test_memory_alone_on_8_numa_nodes_is_not_said():
    total, counts = _cost("best-effort", {"memory": GI})
    assert total == 255 * 255 and slow_note(total, counts) is None


def test_fit_help_and_docs_say_the_count_and_the_warning():
    from helpers import run_cli

    from pinscope.cli.fit import render
    from pinscope.collectors.fit.predict import FitAnswer

    flat = " ".join(run_cli("fit", "--help").stdout.split())
    assert "hint_combinations" in flat and "warnings" in flat and "may take long" in flat
    doc = " ".join(open(__file__.rsplit("/tests/", 1)[0] + "/docs/fit.md").read().split())
    assert "`hint_combinations`" in doc and "`warnings`" in doc and "may take long" in doc
    ans = FitAnswer("n", None, "1.37", cpus=[1], warnings=["kubelet's own admission ... may take long"])
    assert "  warning: kubelet's own admission ... may take long" in render(ans, 1).splitlines()
    assert set(ans.as_json()) >= {"hint_combinations", "warnings"}


def test_one_hugepages_size_is_255_cubed_said_as_kubelets_12_s_were():
    """255^3 combinations took kubelet 1.37's own code 12 s in the oracle (SLOW_COMBINATIONS' comment): said;
    the threshold itself is not."""
    total, counts = _cost("restricted", {"memory": GI, "hugepages-1Gi": GI})
    assert total == 255**3 and slow_note(total, counts) is not None
    assert slow_note(SLOW_COMBINATIONS, counts) is None and slow_note(SLOW_COMBINATIONS + 1, counts) is not None


def test_device_hints_multiply_it_too():
    """kubelet's device manager is the first provider: two device resources on 8 NUMA nodes, a device of each on
    every node, add a list of 255 masks each (1.35 walks every node; the CPUs' 255 with them: 255^3, which took
    kubelet 1.35's code over 5 s in the oracle, docs/fit.md)."""
    case = eight_numa("restricted")
    del case["memory"]
    case["devices"] = {"resources": {r: {f"{r}-{n}": [n] for n in range(8)} for r in ("example.com/a", "example.com/b")}}
    k = Kubelet(case, "1.35")
    want = {"example.com/a": 1, "example.com/b": 1}
    d = k.admit([1], devices=[want])
    assert d.error is None, d.error
    total, counts = admission_cost(k, d, None, want)
    assert dict(counts) == {"example.com/a": 255, "example.com/b": 255, "cpu": 255} and total == 255**3
    assert slow_note(total, counts) is not None
    assert admission_cost(k, d, None)[0] == 255  # without the devices asked: the CPUs alone
