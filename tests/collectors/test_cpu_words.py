"""A finding names one CPU as "CPU 6", several as "CPUs 6-7" (issue 34, item 16: the demo said "fires on
exclusive CPUs 6" for one CPU, which reads as a count). Every finding of the demo's nodes and of the
fixture nodes, read through the real probe over two samples."""
import re

import pytest

from helpers import read_sim
from nodes import broken, dual_socket_intel, offline_isolated
from pinscope.collectors.sim.demo import demo_specs

ONE_AS_MANY = re.compile(r"\bCPUs (\d+)(?![\d,-])")  # "CPUs" before a single CPU id


def test_cpus_named():
    from pinscope.collectors.parse.cpuset import cpus_named

    assert cpus_named({6}) == "CPU 6" and cpus_named({6, 7}) == "CPUs 6-7" and cpus_named({1, 5}) == "CPUs 1,5"
    assert cpus_named(set()) == "no CPU"


SPECS = {s.hostname: (lambda s=s: s) for s in demo_specs()} | {
    "broken": broken, "dual_socket_intel": dual_socket_intel, "offline_isolated": offline_isolated}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_no_finding_names_one_cpu_as_cpus(tmp_path, name):
    report = read_sim(SPECS[name](), tmp_path, samples=2)
    said = [f"{f.code}: {f.message}" for f in report.findings]
    assert said
    for line in said:
        assert not ONE_AS_MANY.search(line), line
    for f in report.findings:  # a finding about one CPU says "CPU n" of it
        if f.code in ("IRQ_ON_EXCLUSIVE", "SYSTEM_NOT_CONFINED", "ISOLATED_IN_SHARED_POOL") and len(f.cpus) == 1:
            assert f"CPU {f.cpus[0]}" in f.message, f.message


def test_the_demos_irq_on_one_exclusive_cpu(tmp_path):
    report = read_sim(demo_specs()[0], tmp_path, samples=2)
    irqs = [f for f in report.findings if f.code == "IRQ_ON_EXCLUSIVE"]
    assert irqs and all(f.message.endswith(f"exclusive CPU {f.cpus[0]}") for f in irqs if len(f.cpus) == 1), irqs
