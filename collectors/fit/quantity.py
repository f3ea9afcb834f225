"""Kubernetes resource quantities (512Mi, 1.5Gi, 500M) read as kubelet reads them, for `pinscope fit --memory`
and the what-fits pane's memory field alike: one parser, so both take and refuse the same text."""

from __future__ import annotations

import math
import re
from fractions import Fraction

# Kubernetes' resource.Quantity (k8s.io/apimachinery pkg/api/resource quantity.go, suffix.go): sign, digits,
# an optional fraction, then a suffix: binary Ki..Ei, decimal n u m "" k M G T P E, or an exponent e/E[+-]digits.
# ASCII digits only: \d takes "٣Gi" too.
_QUANTITY = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_INT64_MAX = 2**63 - 1


def parse_quantity(text: str) -> Fraction:
    """The exact value of a Kubernetes quantity as ParseQuantity keeps it: rounded up to a nano unit, a binary one
    capped at the int64 maximum. As there, "" is refused while "+", "." and "Mi" are zero."""
    m = _QUANTITY.match(text)
    if not m or not text:
        raise ValueError(f"not a memory size: {text!r} (e.g. 512Mi, 4Gi, 1.5Gi, 500M)")
    sign, whole, frac, suf = m.group(1), m.group(2).lstrip("0"), m.group(3) or "", m.group(4) or ""
    if len(whole) > 40:
        raise ValueError(f"{text!r} is more than {_INT64_MAX} bytes")
    if len(frac) > 60:  # digits far below a nano unit: only whether they are there counts (rounded up)
        frac = frac[:60] + ("1" if frac[60:].strip("0") else "")
    value = Fraction(int(whole + frac or "0"), 10 ** len(frac))
    if suf in _BINARY:
        value = min(value * 2 ** _BINARY[suf], Fraction(_INT64_MAX))
    else:
        exp = _DECIMAL[suf] if suf in _DECIMAL else int(suf[1:])
        if exp > 40:  # beyond any int64 byte count (and beyond what an int32 exponent keeps)
            raise ValueError(f"{text!r} is more than {_INT64_MAX} bytes")
        value *= Fraction(10) ** max(exp, -(len(whole) + len(frac) + 20))  # lower still rounds up to 1n alike
    value = Fraction(math.ceil(value * 10**9), 10**9)  # ParseQuantity rounds a non-zero value up to 1n
    return -value if sign == "-" else value


def parse_size(text: str) -> int:
    """A Kubernetes memory quantity in bytes as kubelet reads it: Quantity.Value(), the value rounded up
    (0.5 -> 1, 256m -> 1)."""
    n = math.ceil(parse_quantity(text))
    if n > _INT64_MAX:
        raise ValueError(f"{text!r} is more than {_INT64_MAX} bytes")
    return n


def size_hint(text: str) -> str | None:
    """A size Kubernetes takes but a person almost surely did not mean (milli-, micro-, nano-bytes), said."""
    m = _QUANTITY.match(text)
    if m and m.group(4) in ("m", "u", "n") and parse_quantity(text) != 0:
        said = f"{text} is {_plain(parse_quantity(text))} bytes (kubelet counts {parse_size(text)})"
        return said + (f": did you mean {text[:-1]}Mi?" if m.group(4) == "m" else "")
    return None


def _plain(value: Fraction) -> str:
    return f"{float(value):.9f}".rstrip("0").rstrip(".")


def check_sizes(memory: str | None, pages: dict[str, str | None], flag: str = "--") -> str | None:
    """Why the API server would refuse these sizes in a Guaranteed container (pkg/apis/core/validation: a
    quantity >= 0, hugepages a whole number of pages, in its words); None: it would take them. `flag`: what
    comes before a resource's name in the answer ("--" for the command line's options)."""
    if memory is not None and parse_size(memory) <= 0:
        return f"{flag}memory: {memory!r} is not above zero (a Guaranteed container's memory limit is above zero)"
    for res, text in pages.items():
        if text is None:
            continue
        n = parse_size(text)
        if n < 0:
            return f"{flag}{res}: must be greater than or equal to 0"
        if n % parse_size(res.removeprefix("hugepages-")):
            return f"{flag}{res}: {text} is not positive integer multiple of {res}"
    return None


def format_size(n: int) -> str:
    """Bytes as a person reads them: 4Gi, 512Mi, 1.5Gi (rounded to a tenth), or the bytes below 1Mi."""
    for unit, m in (("Gi", 2**30), ("Mi", 2**20)):
        if n >= m and n % m == 0:
            return f"{n // m}{unit}"
    for unit, m in (("Gi", 2**30), ("Mi", 2**20)):
        if n >= m:
            return f"{n / m:.1f}{unit}"
    return str(n)


HUGEPAGES = {"2Mi": "hugepages-2Mi", "1Gi": "hugepages-1Gi"}  # the sizes `fit` takes (--hugepages-2Mi, -1Gi)


def parse_memory_field(text: str) -> tuple[dict[str, int] | None, str]:
    """One line of text, "SIZE [2Mi=SIZE] [1Gi=SIZE]" (the memory, then hugepages of either size), read as
    `fit --memory` and `--hugepages-*` read them: (bytes per resource, a note on a size Kubernetes takes but
    a person hardly means) or (None, what is wrong, in words); "" is (None, ""). Bad text is said, never raised."""
    words = text.replace(",", " ").split()
    if not words:
        return None, ""
    memory, pages = words[0], {}
    for w in words[1:]:
        size, eq, amount = w.partition("=")
        res = HUGEPAGES.get(size.removeprefix("hugepages-"))
        if not eq or res is None:
            return None, f"{w!r} is not 2Mi=SIZE or 1Gi=SIZE (hugepages, after the memory: 4Gi 1Gi=2Gi)"
        if res in pages:
            return None, f"{res} given twice (a container has one limit per resource)"
        pages[res] = amount
    try:
        req = {"memory": parse_size(memory), **{r: parse_size(t) for r, t in pages.items()}}
        refused = check_sizes(memory, dict(pages), flag="")
    except ValueError as err:
        return None, str(err)
    if refused is not None:
        return None, refused
    return req, "; ".join(h for t in (memory, *pages.values()) if (h := size_hint(t)))
