""""How many of N fit one after another" (predict.how_many_fit: admissions committed on one Kubelet, which keeps
what it learnt of the machine between them) against kubelet's own code, step by step: each admission of a
chain is also asked of kubelet (tests/kubeletsim) as a case of its own, the node with the chain's earlier
containers in its state. The same CPUs or the same error at every step, so the count is kubelet's.

Every run: chains on 150 drawn cases per release (PINSCOPE_FIT_CHAIN_CASES; 500 with PINSCOPE_FIT_FULL=1), up to
12 admissions each. The single admissions themselves are test_fit_differential.py's.
"""

from __future__ import annotations

import copy
import os

import pytest
from fit_cases import cases
from hypothesis import HealthCheck, given, settings
from test_fit_differential import _oracle, _report, _same

from pinscope.collectors.fit.kubelet import RELEASES, Hang, Kubelet, KubeletError
from pinscope.collectors.fit.predict import how_many_fit

FULL = os.environ.get("PINSCOPE_FIT_FULL") == "1"
N = int(os.environ.get("PINSCOPE_FIT_CHAIN_CASES") or (500 if FULL else 150))
STEPS = 12


def _chain(case: dict, release: str) -> tuple[list[dict], list[dict]]:
    """pinscope's chain on one Kubelet -> (each step's case, as kubelet gets it; pinscope's answer to it)."""
    try:
        k = Kubelet(case, release)
    except (KubeletError, Hang):
        return [], []
    steps, answers = [], []
    state = copy.deepcopy(case)
    for i in range(STEPS):
        if i and not k.default:  # all taken: kubelet refuses to start on such a state, so no case can ask it
            break
        d = k.admit(list(case["containers"]), commit=True)
        steps.append(copy.deepcopy(state))
        answers.append(d.as_json())
        if d.error is not None:
            break
        state["assignments"][f"chain{i}"] = {f"c{j}": cpus for j, cpus in enumerate(d.cpus or ()) if cpus}
        try:  # kubelet may give a reserved CPU (a core of more threads than CPUs per core, taken whole), and then
            # refuses that state at a start (validateState): the running kubelet goes on, no case can say so
            if Kubelet(state, release).default != k.default:
                break
        except (KubeletError, Hang):
            break
    return steps, answers


@pytest.mark.timeout(3600 if FULL else 300)
@pytest.mark.parametrize("release", RELEASES)
def test_committed_admissions_agree_step_by_step(release):
    oracle = _oracle(release)
    drawn: list[dict] = []

    @settings(max_examples=N, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def draw(case):
        drawn.append(case)

    draw()
    steps: list[dict] = []
    ours: list[dict] = []
    for case in drawn:
        s, a = _chain(case, release)
        steps += s
        ours += a
    with oracle:
        theirs = oracle.ask_many(steps)
    bad = [_report(release, c, py, go) for c, py, go in zip(steps, ours, theirs) if not _same(py, go)]
    admitted = sum(1 for a in ours if a["error"] is None)
    print(f"\nkubelet {release}: {len(drawn)} chains, {len(steps)} admissions ({admitted} admitted), {len(bad)} disagree")
    assert not bad, f"{len(bad)} of {len(steps)} steps disagree; the first:\n" + "\n\n".join(bad[:3])
    assert admitted > len(drawn)  # chains, not single admissions


def test_how_many_fit_is_the_chain_length():
    """how_many_fit counts the admissions of that chain, and leaves the Kubelet as it was (twice: the same)."""
    drawn: list[dict] = []

    @settings(max_examples=60, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def draw(case):
        if len(case["containers"]) == 1:
            drawn.append(case)

    draw()
    checked = 0
    for case in drawn:
        _steps, answers = _chain(case, "1.37")
        if not answers or answers[-1]["error"] is None:  # setup refused, or the chain did not end within STEPS
            continue
        k = Kubelet(case, "1.37")
        n = case["containers"][0]
        assert how_many_fit(k, n) == how_many_fit(k, n) == len(answers) - 1
        checked += 1
    assert checked > 10
