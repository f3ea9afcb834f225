"""Assembly stage: IRQ affinity and counts, from the newest frame that read them (letter "i")."""
from __future__ import annotations

from ..frames import Frame
from ..parse.procfs import build_irqs


def irqs_stage(tick: Frame, carry: tuple[Frame, ...], nmax: int | None):
    irq_fr = next((fr for fr in (tick, *reversed(carry)) if "i" in fr.letters), None)
    if irq_fr is None:
        return None
    if "irqs" not in irq_fr.cache:
        irq_fr.cache["irqs"] = build_irqs(irq_fr.files, nmax)
    return irq_fr.cache["irqs"]
