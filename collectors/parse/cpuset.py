"""CPU list ("cpuset") strings and hex masks.

Two dialects, one parser:
- kubelet's (k8s.io/utils cpuset.Parse): "0-5,34,46-48"; "" is empty; "5-3" is an error.
- the kernel's cpulists (sysfs, isolcpus=, nohz_full=; kdoc admin-guide/kernel-parameters.rst "cpu lists"):
  also "a-b:used/group", "N" (the last CPU) and "all". Those need to know the highest CPU id (`nmax`).
Whitespace and a trailing newline are tolerated (sysfs files end in "\n").
"""
from __future__ import annotations

from functools import lru_cache

# Ids beyond this are garbage, not CPUs: Linux NR_CPUS tops out at 8192 (CONFIG_NR_CPUS_RANGE_END).
MAX_CPU_ID = 8191


class CpusetError(ValueError):
    """A cpuset string that cannot be parsed; the message quotes it."""


def _num(tok: str, nmax: int | None, text: str) -> int:
    if tok == "N" and nmax is not None:
        return nmax
    if not tok.isdecimal() or not tok.isascii():
        raise CpusetError(f"bad CPU id {tok!r} in {text!r}")
    v = int(tok)
    if v > MAX_CPU_ID:
        raise CpusetError(f"CPU id {v} out of range in {text!r}")
    return v


@lru_cache(maxsize=4096)
def parse_cpuset(text: str | None, nmax: int | None = None) -> frozenset[int]:
    """Parse a cpuset/cpulist. Raises CpusetError quoting the text on anything malformed.
    Cached: a node repeats the same few strings (the shared pool) in every container, every tick."""
    if text is None:
        raise CpusetError("no cpuset")
    s = text.strip()
    if not s:
        return frozenset()
    if s == "all":
        if nmax is None:
            raise CpusetError("'all' needs the highest CPU id")
        return frozenset(range(nmax + 1))
    out: set[int] = set()
    for part in s.split(","):
        part = part.strip()
        if not part:
            raise CpusetError(f"empty element in {text!r}")
        stride = None
        if ":" in part:
            part, _, grp = part.partition(":")
            used, slash, size = grp.partition("/")
            if not slash:
                raise CpusetError(f"bad group {grp!r} in {text!r}")
            stride = (_num(used, None, text), _num(size, None, text))
            if stride[1] == 0 or stride[0] > stride[1]:
                raise CpusetError(f"bad group {grp!r} in {text!r}")
        if "-" in part:
            a, _, b = part.partition("-")
            lo, hi = _num(a, nmax, text), _num(b, nmax, text)
            if lo > hi:
                raise CpusetError(f"reversed range {part!r} in {text!r}")
        else:
            if stride:
                raise CpusetError(f"group without range in {text!r}")
            lo = hi = _num(part, nmax, text)
        if stride:
            used_n, size_n = stride  # ints (used and size above are their text)
            out.update(c for c in range(lo, hi + 1) if (c - lo) % size_n < used_n)
        else:
            out.update(range(lo, hi + 1))
    return frozenset(out)


def format_cpuset(cpus) -> str:
    """Kubelet's canonical form: sorted, runs collapsed: {0,1,2,5} -> "0-2,5"."""
    ids = sorted(set(cpus))
    out: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def cpus_named(cpus) -> str:
    """A set of CPUs as a message names it: "CPU 6", "CPUs 6-7,9" ("CPUs 6" for one read as a count)."""
    ids = set(cpus)
    if not ids:
        return "no CPU"
    return f"CPU {next(iter(ids))}" if len(ids) == 1 else f"CPUs {format_cpuset(ids)}"


def parse_hexmask(text: str) -> frozenset[int]:
    """A kernel bitmap as in Cpus_allowed / smp_affinity: hex, comma-separated 32-bit groups."""
    s = text.strip().replace(",", "")
    if not s:
        return frozenset()
    try:
        v = int(s, 16)
    except ValueError as err:
        raise CpusetError(f"bad mask {text!r}") from err
    out = set()
    i = 0
    while v:
        if v & 1:
            out.add(i)
        v >>= 1
        i += 1
    return frozenset(out)
