"""Carry kubelet's own test tables over as data: the topologies of
pkg/kubelet/cm/cpumanager/policy_test.go and the takeByTopology cases of
pkg/kubelet/cm/cpumanager/cpu_assignment_test.go (commonTakeByTopologyTestCases,
TestTakeByTopologyNUMAPacked, TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption,
TestTakeByTopologyNUMADistributed), read from the Go module cache at one release and written
as JSON (tests/kubeletsim/tables/v1.N.json), each case with its source file and description.

    python3 tests/kubeletsim/tables.py 1.37.2 > tests/kubeletsim/tables/v1.37.json

Only literal cases are carried (a case whose fields are computed in Go is skipped and counted).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path


def modcache() -> Path:
    return Path(subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip())


def _block(text: str, start: int) -> tuple[str, int]:
    """The text inside the brace that opens at or after start, and the index after its close."""
    i = text.index("{", start)
    depth = 0
    j = i
    in_str = False
    while j < len(text):
        ch = text[j]
        if in_str:
            if ch == "\\":
                j += 2
                continue
            if ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j], j + 1
        j += 1
    raise ValueError("unbalanced")


def _split(body: str) -> list[str]:
    """Top-level comma-separated elements of a Go composite literal body."""
    out, depth, cur, in_str, i = [], 0, [], False, 0
    while i < len(body):
        ch = body[i]
        if in_str:
            cur.append(ch)
            if ch == "\\":
                cur.append(body[i + 1])
                i += 2
                continue
            if ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            cur.append(ch)
        elif ch in "{([":
            depth += 1
            cur.append(ch)
        elif ch in "})]":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        elif ch == "/" and body[i:i + 2] == "//" and depth >= 0:
            while i < len(body) and body[i] != "\n":
                i += 1
            continue
        else:
            cur.append(ch)
        i += 1
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def topologies(text: str) -> dict:
    out = {}
    for m in re.finditer(r"(\w+)\s*=\s*&topology\.CPUTopology\{", text):
        body, _ = _block(text, m.end() - 1)
        topo: dict = {"details": {}}
        for key in ("NumCPUs", "NumSockets", "NumCores", "NumUncoreCache", "NumNUMANodes"):
            km = re.search(rf"\b{key}:\s*(\d+)", body)
            topo[key] = int(km.group(1)) if km else 0
        for em in re.finditer(r"(\d+):\s*\{([^}]*)\}", body):
            fields = dict(re.findall(r"(\w+):\s*(\d+)", em.group(2)))
            topo["details"][em.group(1)] = [int(fields.get("NUMANodeID", 0)), int(fields.get("SocketID", 0)),
                                            int(fields.get("CoreID", 0)), int(fields.get("UncoreCacheID", 0))]
        out[m.group(1)] = topo
    return out


def _cpuset(expr: str) -> list[int] | None:
    expr = expr.strip()
    m = re.fullmatch(r"cpuset\.New\(([\d,\s]*)\)", expr)
    if m:
        return sorted({int(x) for x in m.group(1).replace(" ", "").split(",") if x})
    m = re.fullmatch(r'mustParseCPUSet\(t,\s*"([^"]*)"\)', expr)
    if m:
        out: set[int] = set()
        for part in m.group(1).split(","):
            if not part:
                continue
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
        return sorted(out)
    return None


_OPTS = {"FullPhysicalCPUsOnly": "full-pcpus-only", "DistributeCPUsAcrossNUMA": "distribute-cpus-across-numa",
         "AlignBySocket": "align-by-socket", "DistributeCPUsAcrossCores": "distribute-cpus-across-cores",
         "StrictCPUReservation": "strict-cpu-reservation", "PreferAlignByUncoreCacheOption": "prefer-align-cpus-by-uncorecache"}


def _opts(expr: str) -> dict | None:
    m = re.fullmatch(r"StaticPolicyOptions\{(.*)\}", expr.strip(), re.S)
    if not m:
        return None
    out = {}
    for k, v in re.findall(r"(\w+):\s*(true|false)", m.group(1)):
        if k not in _OPTS:
            return None
        out[_OPTS[k]] = v
    return out


def _str(expr: str) -> str | None:
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', expr.strip())
    return m.group(1) if m else None


def take_cases(text: str, func: str, kind: str, topos: dict, skipped: list) -> list[dict]:
    """The literal cases of the slice literal(s) in func."""
    start = text.index(f"func {func}(")
    end = text.find("\nfunc ", start + 1)
    body = text[start:end if end > 0 else len(text)]
    out = []
    for lm in re.finditer(r"\[\]takeByTopology(?:Extended)?TestCase\{|\[\]struct \{", body):
        start_at = lm.end() - 1
        if lm.group(0).startswith("[]struct"):
            _, start_at = _block(body, start_at)  # the struct's fields, then its literal
        inner, _ = _block(body, start_at)
        for el in _split(inner):
            if not el.startswith("{"):
                continue
            fields = _split(el[1:-1])
            if len(fields) < 7:
                skipped.append(f"{func}: {fields[0] if fields else el[:40]}")
                continue
            group = None
            if kind == "distributed":  # takeByTopologyExtendedTestCase: no options, a group size
                desc, topo, avail, num, grp, experr, exp = fields[:7]
                opts = "StaticPolicyOptions{}"
                if not re.fullmatch(r"\d+", grp.strip()):
                    skipped.append(f"{func}: {desc[:60]}")
                    continue
                group = int(grp)
            else:
                desc, topo, opts, avail, num, experr, exp = fields[:7]
            d, o, a, e, r = _str(desc), _opts(opts), _cpuset(avail), _str(experr), _cpuset(exp)
            if None in (d, o, a, e, r) or topo.strip() not in topos or not re.fullmatch(r"\d+", num.strip()):
                skipped.append(f"{func}: {d or desc[:60]}")
                continue
            out.append({"source": f"pkg/kubelet/cm/cpumanager/cpu_assignment_test.go {func}", "description": d,
                        "kind": kind, "topology": topo.strip(), "options": o, "available": a,
                        "num_cpus": int(num), "cpu_group_size": group, "error": e, "result": r})
    return out


def _large_topo_sets(topos: dict) -> dict[str, list[int]]:
    """policy_static_test.go's largeTopoCPUSet, largeTopoSock0CPUSet, largeTopoSock1CPUSet: computed in Go
    from topoQuadSocketFourWayHT (every CPU; those of socket 0; of socket 1)."""
    details = topos.get("topoQuadSocketFourWayHT", {}).get("details", {})
    return {"largeTopoCPUSet": sorted(int(c) for c in details),
            "largeTopoSock0CPUSet": sorted(int(c) for c, v in details.items() if v[1] == 0),
            "largeTopoSock1CPUSet": sorted(int(c) for c, v in details.items() if v[1] == 1)}


def _cpuset_expr(expr: str, named: dict[str, list[int]]) -> list[int] | None:
    """A cpuset literal, or a named set (see _large_topo_sets) followed by .Difference(x) / .Union(x) calls
    whose arguments are such expressions; None when not understood."""
    expr = expr.strip()
    lit = _cpuset(expr)
    if lit is not None:
        return lit
    m = re.match(r"(\w+)", expr)
    if not m or m.group(1) not in named:
        return None
    out, rest = set(named[m.group(1)]), expr[m.end():]
    while rest:
        mm = re.match(r"\.(Difference|Union)\(", rest)
        if not mm:
            return None
        depth, i = 1, mm.end()
        while i < len(rest) and depth:
            depth += {"(": 1, ")": -1}.get(rest[i], 0)
            i += 1
        arg = _cpuset_expr(rest[mm.end():i - 1], named)
        if depth or arg is None:
            return None
        out = out - set(arg) if mm.group(1) == "Difference" else out | set(arg)
        rest = rest[i:].strip()
    return sorted(out)


def _assignments(expr: str, named: dict[str, list[int]] | None = None) -> dict | None:
    m = re.fullmatch(r"state\.ContainerCPUAssignments\{(.*)\}", expr.strip(), re.S)
    if not m:
        return None
    out: dict = {}
    for pod in _split(m.group(1)):
        pm = re.fullmatch(r'"([^"]+)":\s*map\[string\]cpuset\.CPUSet\{(.*)\}', pod.strip(), re.S)
        if not pm:
            return None
        ctrs = {}
        for ctr in _split(pm.group(2)):
            cm = re.fullmatch(r'"([^"]+)":\s*(.*)', ctr.strip(), re.S)
            cs = _cpuset_expr(cm.group(2), named or {}) if cm else None
            if cs is None:
                return None
            ctrs[cm.group(1)] = cs  # type: ignore[union-attr]
        out[pm.group(1)] = ctrs
    return out


_OPT_CONST = {"FullPCPUsOnlyOption": "full-pcpus-only", "DistributeCPUsAcrossNUMAOption": "distribute-cpus-across-numa",
              "AlignBySocketOption": "align-by-socket", "DistributeCPUsAcrossCoresOption": "distribute-cpus-across-cores",
              "StrictCPUReservationOption": "strict-cpu-reservation",
              "PreferAlignByUnCoreCacheOption": "prefer-align-cpus-by-uncorecache"}


def _err(expr: str) -> dict | None | bool:
    """{"message": ...} for an error, None for nil, False when not understood."""
    e = expr.strip()
    if e == "nil":
        return None
    m = re.fullmatch(r'fmt\.Errorf\("((?:[^"\\]|\\.)*)"\)', e)
    if m:
        return {"message": m.group(1)}
    m = re.fullmatch(r"SMTAlignmentError\{(.*)\}", e, re.S)
    if m:
        f = dict(re.findall(r"(\w+):\s*(\w+)", m.group(1)))
        req, per = int(f.get("RequestedCPUs", 0)), int(f.get("CpusPerCore", 0))
        if f.get("CausedByPhysicalCPUs") == "true":
            msg = (f"SMT Alignment Error: not enough free physical CPUs: available physical CPUs = "
                   f"{int(f.get('AvailablePhysicalCPUs', 0))}, requested CPUs = {req}, CPUs per core = {per}")
        else:
            msg = f"SMT Alignment Error: requested {req} cpus not multiple cpus per core = {per}"
        return {"kind": "SMTAlignmentError", "message": msg}
    return False


def policy_cases(text: str, topos: dict, skipped: list) -> list[dict]:
    """TestStaticPolicyAdd's literal staticPolicyTest cases (policy_static_test.go)."""
    start = text.index("func TestStaticPolicyAdd(")
    body = text[start:text.find("\nfunc ", start + 1)]
    named = _large_topo_sets(topos)
    out = []
    for lm in re.finditer(r"(\w+) := \[\]staticPolicyTest\{", body):
        group = lm.group(1)
        inner, _ = _block(body, lm.end() - 1)
        for el in _split(inner):
            if not el.startswith("{"):
                continue
            kv = {}
            for f in _split(el[1:-1]):
                k, _, v = f.partition(":")
                kv[k.strip()] = v.strip()
            desc = _str(kv.get("description", '""')) or ""
            pod = re.fullmatch(r'makePod\("([^"]*)",\s*"([^"]*)",\s*"(\d+)(?:000m)?",\s*"(\d+)(?:000m)?"\)', kv.get("pod", ""))
            topo = kv.get("topo", "")
            opts: dict | None = {}
            if "options" in kv:
                om = re.fullmatch(r"map\[string\]string\{(.*)\}", kv["options"], re.S)
                opts = None if not om else {}
                for k, v in re.findall(r"(\w+):\s*\"(\w+)\"", om.group(1) if om else ""):
                    if k not in _OPT_CONST:
                        opts = None
                        break
                    opts[_OPT_CONST[k]] = v  # type: ignore[index]
            hint = None
            if "topologyHint" in kv:
                hm = re.fullmatch(r"&topologymanager\.TopologyHint\{NUMANodeAffinity:\s*newNUMAAffinity\(([\d,\s]*)\),"
                                  r"\s*Preferred:\s*(true|false)\}", kv["topologyHint"])
                hint = [int(x) for x in hm.group(1).replace(" ", "").split(",") if x] if hm else False
            rexpr = kv.get("reservedCPUs", "")
            rm = re.fullmatch(r"newCPUSetPtr\(([\d,\s]*)\)", rexpr)
            reserved = (sorted(int(x) for x in rm.group(1).replace(" ", "").split(",") if x) if rm
                        else _cpuset(rexpr.lstrip("&")) if rexpr else [])
            assignments = _assignments(kv.get("stAssignments", "state.ContainerCPUAssignments{}"), named)
            default = _cpuset_expr(kv.get("stDefaultCPUSet", "cpuset.New()"), named)
            err = _err(kv.get("expErr", "nil"))
            exp = _cpuset_expr(kv.get("expCSet", "cpuset.New()"), named)
            if (pod is None or pod.group(3) != pod.group(4) or topo not in topos or opts is None or hint is False
                    or reserved is None or assignments is None or default is None or err is False or exp is None
                    or not re.fullmatch(r"\d+", kv.get("numReservedCPUs", "0"))):
                skipped.append(f"TestStaticPolicyAdd {group}: {desc}")
                continue
            if pod.group(2) in assignments.get(pod.group(1), {}):  # already allocated: kubelet skips it
                skipped.append(f"TestStaticPolicyAdd {group}: {desc} (container already in the state)")
                continue
            variants = [opts]
            if group == "optionsInsensitiveTestCases":  # run with and without full-pcpus-only, as kubelet does
                variants = [{}, {"full-pcpus-only": "true"}]
            for o in variants:
                out.append({"source": f"pkg/kubelet/cm/cpumanager/policy_static_test.go TestStaticPolicyAdd {group}",
                            "description": desc, "topology": topo, "options": o,
                            "num_reserved": int(kv.get("numReservedCPUs", "0")), "reserved": reserved,
                            "assignments": assignments, "default": default, "num_cpus": int(pod.group(3)),
                            "hint": hint, "error": err, "alloc": kv.get("expCPUAlloc") == "true", "result": exp})
    return out


def main(version: str) -> None:
    root = modcache() / f"k8s.io/kubernetes@v{version}" / "pkg/kubelet/cm/cpumanager"
    topos = topologies((root / "policy_test.go").read_text())
    text = (root / "cpu_assignment_test.go").read_text()
    skipped: list[str] = []
    cases = []
    common = take_cases(text, "commonTakeByTopologyTestCases", "packed", topos, skipped)
    cases += common
    cases += take_cases(text, "TestTakeByTopologyNUMAPacked", "packed", topos, skipped)
    cases += take_cases(text, "TestTakeByTopologyWithSpreadPhysicalCPUsPreferredOption", "packed", topos, skipped)
    # commonTakeByTopologyExtendedTestCases: the common cases with group size 1, then its own
    cases += [dict(c, kind="distributed", cpu_group_size=1, options={},
                   source=c["source"] + " via commonTakeByTopologyExtendedTestCases") for c in common]
    cases += take_cases(text, "commonTakeByTopologyExtendedTestCases", "distributed", topos, skipped)
    cases += take_cases(text, "TestTakeByTopologyNUMADistributed", "distributed", topos, skipped)
    pskipped: list[str] = []
    pcases = policy_cases((root / "policy_static_test.go").read_text(), topos, pskipped)
    used = {c["topology"] for c in cases} | {c["topology"] for c in pcases}
    json.dump({"kubernetes": f"v{version}", "source": "k8s.io/kubernetes pkg/kubelet/cm/cpumanager "
               "(policy_test.go topologies, cpu_assignment_test.go tables), carried over as data",
               "topologies": {k: v for k, v in topos.items() if k in used}, "cases": cases, "skipped": skipped,
               "policy_cases": pcases, "policy_skipped": pskipped},
              sys.stdout, indent=0, sort_keys=True)
    print()
    print(f"{len(cases)} cases, {len(skipped)} skipped; {len(pcases)} policy cases, {len(pskipped)} skipped",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "1.37.2")
