"""Assembly stage: IRQ affinity and counts, from the newest frame that read them (letter "i"); parsed once
per such frame (it is carried for several ticks)."""
from __future__ import annotations

from ..frames import Frame
from ..model import Irq
from ..parse.procfs import build_irqs


class IrqsStage:
    def __init__(self) -> None:
        self._key: tuple[Frame, int | None] | None = None
        self._out: tuple[Irq, ...] | None = None

    def run(self, tick: Frame, carry: tuple[Frame, ...], nmax: int | None):
        irq_fr = next((fr for fr in (tick, *reversed(carry)) if "i" in fr.letters), None)
        if irq_fr is None:
            return None
        if (irq_fr, nmax) != self._key:
            self._key, self._out = (irq_fr, nmax), build_irqs(irq_fr.files, nmax)
        return self._out
