"""The probe's own processes are left out of every task list, and only they: its pids are this machine's, so on a
tree that is not this kernel's /proc (a fixture, a copy under --root) a task with one of those pids is someone
else's. A loaded CI run lost a container's three tasks when a fixture's simulated pid was the probe's shell's."""
from pinscope.collectors.assemble.tasks import _frame_tasks
from pinscope.collectors.frames import Frame


def _stat(pid: int, comm: str) -> str:
    return (f"{pid} ({comm}) S 1 {pid} {pid} 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 1 0 100 1000000 100 "
            "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n")


def test_a_task_of_a_probe_pid_is_dropped_only_when_it_is_the_probe():
    files = {"/proc/uptime": "1000.00 2000.00\n",
             "/proc/4242/task/4242/stat": _stat(4242, "feed"),  # a container's task that shares the pid
             "/proc/4242/task/4243/stat": _stat(4242, "feed"),
             "/proc/777/task/777/stat": _stat(777, "sh"),  # the probe's shell
             "/proc/778/task/778/stat": _stat(778, "mawk"),  # its awk
             "/proc/900/task/900/stat": _stat(900, "sh")}  # a shell that is not the probe's
    fr = Frame(files=files, info={"probe-pids": "777 778 4242"})
    tasks, probs, _ = _frame_tasks(fr)
    assert probs == ()
    assert sorted((t.pid, t.tid, t.comm) for t in tasks.values()) == [(900, 900, "sh"), (4242, 4242, "feed"),
                                                                      (4242, 4243, "feed")]
