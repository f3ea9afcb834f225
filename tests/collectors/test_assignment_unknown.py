"""Issue 34 item 7: kubelet's assignment not read is unknown, never "shared".

Without cpu_manager_state (unreadable by this user, not JSON, larger than pinscope reads, missing under the
static policy) the roles come from the cgroups and kubelet's assignment of each container is unknown:
`snapshot` said `kubelet shared` for the very containers its grid showed on exclusive CPUs, and --json said
`"exclusive": false`. Each form says unknown (text `kubelet unknown`, JSON `"exclusive": null`); with the
file read, shared stays shared. (As an unprivileged user over SSH: tests/e2e/test_ssh_unprivileged.py.)
"""
import asyncio

import pytest

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.sim.node import CtrSpec, NodeSpec, PodSpec, SimNode
from pinscope.cli import render_table

STATES = {"not JSON": '{"policyName":"static","defaultCpuSet":"0-3","entries":{"abc', "missing": None}


def node(state_text: str | None = None) -> NodeSpec:
    """A pinned container beside a Burstable one; `state_text`: cpu_manager_state's text in place of kubelet's."""
    return NodeSpec(hostname="n", sockets=1, cores=4, threads=1, policy="static", reserved="0", cgroup=2,
                    driver="systemd", pods=[
                        PodSpec("pinned", "prod", containers=[CtrSpec("engine", cpus="2-3")]),
                        PodSpec("web", "prod", qos="Burstable", containers=[CtrSpec("nginx")])],
                    state_text=state_text)


def read(tmp_path, spec, drop_state=False) -> dict:
    SimNode(spec, tmp_path).write()
    if drop_state:
        (tmp_path / "var/lib/kubelet/cpu_manager_state").unlink()
    return asyncio.run(snapshot("local", Options(root=str(tmp_path)))).to_json()


def containers(o) -> dict:
    return {c["name"]: c for p in o["pods"] for c in p["containers"] if c["name"]}


@pytest.mark.parametrize("how", sorted(STATES))
def test_an_assignment_not_read_is_unknown_in_json_and_text(tmp_path, how):
    text = STATES[how]
    o = read(tmp_path, node(text), drop_state=text is None)
    assert o["roles_from"] == "cgroups", o["errors"]
    ctr = containers(o)
    assert ctr["engine"]["exclusive"] is None and ctr["engine"]["cpuset"] is None
    assert ctr["nginx"]["exclusive"] is None  # unknown too: the pool it runs in is the kernel's word, not kubelet's
    assert {c["id"]: c["role"] for c in o["cpus"]}[2] == "exclusive"  # the grid: inferred from the cgroups
    lines = render_table(o).splitlines()
    engine = next(x for x in lines if " engine [" in x)
    assert "kubelet unknown" in engine and "kernel 2-3" in engine, engine
    assert not any("kubelet shared" in x for x in lines), lines


def test_an_assignment_read_says_shared_and_exclusive(tmp_path):
    o = read(tmp_path, node())
    assert o["roles_from"] == "state"
    ctr = containers(o)
    assert ctr["engine"]["exclusive"] is True and ctr["engine"]["cpuset"] == [2, 3]
    assert ctr["nginx"]["exclusive"] is False and ctr["nginx"]["cpuset"] is None
    lines = render_table(o).splitlines()
    assert "kubelet 2-3" in next(x for x in lines if " engine [" in x)
    assert "kubelet shared" in next(x for x in lines if " nginx [" in x)


def test_policy_none_assigns_nothing_so_every_container_is_shared(tmp_path):
    spec = node()
    spec.policy, spec.reserved = "none", None
    spec.pods[0].containers[0].cpus = None
    o = read(tmp_path, spec, drop_state=True)
    assert o["roles_from"] == "policy-none"
    assert {c["exclusive"] for c in containers(o).values()} == {False}
    assert "kubelet shared" in next(x for x in render_table(o).splitlines() if " engine [" in x)
