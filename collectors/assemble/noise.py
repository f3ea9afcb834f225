"""Assembly stage: the jitter counters, each stamped with the node uptime of the frame that read it.

Counters read at different cadences (softirqs every grid tick, /proc/interrupts with the IRQ scan or
the CPU in focus, cpu.pressure with the cgroup detail or the container in focus) are stamped with the
uptime of their own frame, so rates.py never divides a stale counter's delta by a fresh interval.
cpu.pressure is stamped where it is read (the pods stage's CgroupReader), with this stage's `at`.
"""
from __future__ import annotations

from functools import partial

from ..frames import Frame
from ..model import KernelNoise, Lazy
from ..parse.noise import parse_ipis, parse_sched_wait, parse_schedstat, parse_softirqs
from ..parse.procfs import parse_uptime


def runq_of(files: dict):
    """A task's run-queue counters: schedstat, or wait_sum from sched when sched_info reads 0 0 0."""
    return parse_schedstat(files.get("schedstat")) or parse_sched_wait(files.get("sched"))


class NoiseStage:
    """Keeps each frame's uptime and parsed IPIs while the frame is the tick or carried (frames compare by
    identity), so a carried /proc/interrupts is parsed once."""

    def __init__(self) -> None:
        self._at: dict[Frame, float | None] = {}
        self._ipis: tuple = (None, None)

    def at(self, fr: Frame) -> float | None:
        if fr not in self._at:
            self._at[fr] = parse_uptime(fr.files.get("/proc/uptime"))
        return self._at[fr]

    def next_tick(self, tick: Frame, carry: tuple[Frame, ...]) -> None:
        """Forget the frames no longer carried."""
        self._at = {fr: at for fr, at in self._at.items() if fr is tick or fr in carry}

    def run(self, tick: Frame, carry: tuple[Frame, ...] = ()) -> KernelNoise | None:
        """Softirqs from this tick (the grid reads them every tick); IPIs from the newest frame that read
        /proc/interrupts. Parsed once per frame."""
        soft = tick.files.get("/proc/softirqs")
        ipi_fr = next((fr for fr in (tick, *reversed(carry)) if "/proc/interrupts" in fr.files), None)
        if soft is None and ipi_fr is None:
            return None
        ipis = None
        if ipi_fr is not None:
            if self._ipis[0] is not ipi_fr:
                self._ipis = (ipi_fr, parse_ipis(ipi_fr.files["/proc/interrupts"]))
            ipis = self._ipis[1]
        # parsed when first read: only the rates read it, and only for a CPU or a query that asks (rates.py)
        return KernelNoise(Lazy(partial(parse_softirqs, soft)) if soft is not None else {},
                           self.at(tick) if soft is not None else None,
                           ipis or {}, self.at(ipi_fr) if ipi_fr is not None else None)
