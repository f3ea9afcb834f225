"""Findings: every CPU-pinning fault pinscope can name on a node (filled in by the findings issue)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Finding:
    code: str
    severity: str  # critical | warning | info
    message: str
    hint: str
    evidence: tuple = ()
    cpus: tuple = ()
    pod_uid: str | None = None
    namespace: str | None = None
    pod: str | None = None
    container: str | None = None

    def to_json(self) -> dict:
        return {"code": self.code, "severity": self.severity, "message": self.message, "hint": self.hint,
                "evidence": list(self.evidence), "cpus": list(self.cpus), "pod_uid": self.pod_uid,
                "namespace": self.namespace, "pod": self.pod, "container": self.container}


def evaluate(snap, rates=None) -> list[Finding]:
    return []
