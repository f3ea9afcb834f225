"""What the real node showed (issue 33, tests/cluster) that no fixture had, kept as tests that run anywhere.

- Every pod's sandbox (pause) runs on every CPU, the exclusive ones too: kubelet's CPU manager sets only the
  containers' cpusets (kubelet 1.35.4 and 1.37.2, cgroup v1, cgroupfs: `Cpus_allowed_list: 0-1` on a node whose
  CPU 1 was exclusive to another pod). Its pid is in its pod's cgroup.procs, so the probe does not read its
  /proc/<pid>/cgroup: pinscope said IDENTITY_UNRESOLVED "/proc/<pid>/cgroup not read (the process may have
  exited)" of a live process it had placed itself.
"""
from pinscope.collectors.findings.tasks import placed
from pinscope.collectors.model import Owner, Task

OWNER = Owner("uid-guaranteed", "default", "g", "work")
PIDS = {"uid-guaranteed": frozenset({100, 101}), "uid-burstable": frozenset({200, 201})}


def test_another_pods_sandbox_on_an_exclusive_cpu_is_placed_not_unknown():
    pause = Task(tid=200, pid=200, comm="pause", last_cpu=1)  # cgroup not read: a pod's pid
    assert placed(pause, [OWNER], PIDS) is False  # another pod's: an outsider, not "unknown" (None before)


def test_the_owning_pods_own_and_an_unknown_task_stay_as_they_were():
    assert placed(Task(tid=101, pid=101, comm="sleep", last_cpu=1), [OWNER], PIDS) is True
    assert placed(Task(tid=300, pid=300, comm="x", last_cpu=1), [OWNER], PIDS) is None
