"""Findings: every CPU-pinning fault pinscope can name on a node, with the evidence beside it.

One registered check per code or family (base.check); importing this package registers them all, in
the order of the modules below, and `CODES` (docs/findings.md's table) is built from the registry."""
from .base import CODES, REGISTRY, SEVERITIES, Check, Context, Finding, evaluate, evaluate_api, evaluate_live, ordered, worst  # noqa: F401
from . import kubelet, containers, cpus, tasks, window, identity, jitter, devices, api, live, fit, readiness  # noqa: F401  (registration)
