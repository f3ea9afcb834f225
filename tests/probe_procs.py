"""The probe's processes as the node sees them (issue 22 item 4): found by the PSROOT=<root> mark in their
environment, what they read (rchar), and a probe made to hang in a read (its awk stopped)."""
import os
import time

from pinscope.collectors.sim.node import SimNode


def probe_procs(root) -> list[int]:
    """Live processes of the probe reading `root`: its shells (a forked shell keeps the argv it was started
    with: "... pinscope-probe --root <root>") and what they exec'd after the probe exported PSROOT=<root>
    (awk, od, find: an exec'd program's /proc/<pid>/environ is the environment it got)."""
    mark = f"PSROOT={root}".encode() + b"\0"
    argv = b"\0pinscope-probe\0--root\0" + str(root).encode() + b"\0"
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read()
                if argv in cmd or mark in open(f"/proc/{d}/environ", "rb").read():
                    out.append(int(d))
            except OSError:
                pass
    return out


def rchar(pid: int) -> int:
    with open(f"/proc/{pid}/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


def fifo_and_endless_line(root) -> tuple[str, str, str, SimNode]:
    """A FIFO as one container's cpuset.cpus.effective, a 1 GB line (sparse: no bytes on disk, no newline)
    as another's cpu.stat: what any user owning a cgroup directory of a copied tree can leave there."""
    from nodes import dual_socket_intel

    sim = SimNode(dual_socket_intel(), root).write()
    leaves = [sim.cg_dir(p, c) for p in sim.spec.pods for c in p.containers if not c.init][:3]
    fifo, big = leaves[0] + "/cpuset.cpus.effective", leaves[1] + "/cpu.stat"
    os.unlink(str(root) + fifo)
    os.mkfifo(str(root) + fifo)
    os.truncate(str(root) + big, 1 << 30)
    # and a link to / where a file is read: said, never followed (the check would walk the whole disk)
    os.unlink(str(root) + leaves[2] + "/cpu.stat")
    os.symlink("/", str(root) + leaves[2] + "/cpu.stat")
    return fifo, big, leaves[2] + "/cpu.stat", sim


class StopAwk:
    """Stops (SIGSTOP) the awk of the probe reading `root` as soon as it runs: a read that never returns,
    as a file swapped under the probe between its check and its read would make it. The forwarder stays
    awake, as it would."""

    def __init__(self, root) -> None:
        import threading

        self.root, self.stopped = root, []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import signal

        while not self.done.wait(0.02) and not self.stopped:
            for pid in probe_procs(self.root):
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        argv0 = f.read().split(b"\0")[0]
                except OSError:
                    continue
                if argv0.endswith(b"awk"):
                    os.kill(pid, signal.SIGSTOP)
                    self.stopped.append(pid)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


def gone(root, wait: float = 10.0) -> list[int]:
    """The probe's processes still alive after up to `wait` s (an end that is asynchronous: a killed
    group is reaped by its parent)."""
    end = time.monotonic() + wait
    while probe_procs(root) and time.monotonic() < end:
        time.sleep(0.05)
    return probe_procs(root)

