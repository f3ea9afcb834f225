"""What Go's encoding/json and go-spew do to kubelet's checkpoints, so they are read as kubelet reads them.

Kubelet decodes a checkpoint into a Go struct (keys matched case-insensitively, the last match winning,
unknown keys ignored, a value of the wrong type an error, null leaving a field as it was) and verifies its
checksum: FNV-1a 32 over go-spew's `%#v` rendering of that struct (k8s.io/utils/dump.ForHash: SortKeys,
DisableMethods, DisablePointerAddresses). `GoError` is a decode error kubelet would also get; `spew_*`
render values exactly as go-spew does (strings bare, nil maps and slices `<nil>`, map keys sorted, a
pointer inside a map `<*>`, a type printed only where spew prints one).
Sources: go-spew spew/format.go; Go encoding/json decode.go (foldName, indirect); k/k
pkg/kubelet/checkpointmanager/checksum/checksum.go.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

U64 = (1 << 64) - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


class GoError(ValueError):
    """A value Go's json.Unmarshal refuses (kubelet's load of that version fails)."""


def loads(text: str) -> Any:
    """JSON as Go accepts it: NaN and Infinity are not JSON (Python's json would take them)."""
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")
    try:
        return json.loads(text, parse_constant=no_constant)
    except RecursionError as err:  # Go stops at 10000 levels; Python's parser at its recursion limit
        raise ValueError("nested too deeply to be read") from err


def go_string_bytes(s: str) -> bytes:
    """A decoded JSON string's bytes as Go holds them: a lone surrogate escape decodes to U+FFFD there."""
    return _SURROGATE.sub("\ufffd", s).encode()


def fnv1a32(s: str) -> int:
    """FNV-1a 32 of the text's UTF-8 (Go's json decodes a lone surrogate escape to U+FFFD)."""
    h = 0x811C9DC5
    for b in _SURROGATE.sub("\ufffd", s).encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def fold(k: str) -> str:
    """Go's case folding of a key against an ASCII field name (bytes.EqualFold: 'ſ' is 's', 'K' is 'k')."""
    return k.replace("\u017f", "s").lower()


def fields(obj: dict, names: tuple[str, ...]) -> dict[str, Any]:
    """{field name: value} of a JSON object decoded into a struct with these JSON names: keys match
    case-insensitively and the last one in the document wins; other keys are ignored."""
    want = {n.lower(): n for n in names}
    out: dict[str, Any] = {}
    for k, v in obj.items():
        n = want.get(fold(k))
        if n is not None:
            out[n] = v
    return out


def go_string(v: Any, what: str) -> str | None:
    """A Go string field: None when JSON null (the field keeps its zero value)."""
    if v is None or isinstance(v, str):
        return v
    raise GoError(f"{what}: cannot unmarshal {_kind(v)} into a string")


def go_uint(v: Any, what: str, top: int = U64) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
        raise GoError(f"{what}: cannot unmarshal {_kind(v)} {v!r} into an unsigned integer")
    return v


def go_int(v: Any, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not -(1 << 63) <= v < (1 << 63):
        raise GoError(f"{what}: cannot unmarshal {_kind(v)} {v!r} into an int")
    return v


def go_map(v: Any, what: str, elem: Callable[[Any, str], Any]) -> dict | None:
    """A Go map[string]T: None for JSON null (a nil map); each value decoded by `elem`."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise GoError(f"{what}: cannot unmarshal {_kind(v)} into a map")
    return {k: elem(x, f"{what}[{k}]") for k, x in v.items()}


def go_list(v: Any, what: str, elem: Callable[[Any, str], Any]) -> list | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise GoError(f"{what}: cannot unmarshal {_kind(v)} into a slice")
    return [elem(x, f"{what}[{i}]") for i, x in enumerate(v)]


def is_v_data(obj: dict) -> bool:
    """Does kubelet take this file for its data-string version (CPU v4, memory v3)? When `data` decodes to a
    non-empty string or `dataChecksum` to a non-zero uint64 (a value of the wrong type leaves the field
    zero: then kubelet falls back to the older versions)."""
    f = fields(obj, ("data", "dataChecksum"))
    data, dsum = f.get("data"), f.get("dataChecksum")
    return (isinstance(data, str) and data != "") or (
        isinstance(dsum, int) and not isinstance(dsum, bool) and 0 < dsum <= U64)


def _kind(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(v), "number")


# ------------------------------------------------------------------------------------------------ spew


def spew_map(m: dict | None, value: Callable[[Any], str], int_keys: bool = False) -> str:
    """A map's body as spew prints it (keys sorted: numerically for int keys), or <nil>."""
    if m is None:
        return "<nil>"
    keys = sorted(m, key=int) if int_keys else sorted(m)
    return "map[" + " ".join(f"{k}:{value(m[k])}" for k in keys) + "]"


def spew_list(xs: list | None, value: Callable[[Any], str]) -> str:
    if xs is None:
        return "<nil>"
    return "[" + " ".join(value(x) for x in xs) + "]"


def spew_str(v: str | None) -> str:
    """A string as spew prints it: bare (a nil map value of type string never occurs: '' then)."""
    return _SURROGATE.sub("\ufffd", v or "")
