"""Carry kubelet's own test tables over as data, from kubelet's own test code: the tables that
kubelet's tests build in Go functions (topologymanager's commonPolicyMergeTestCases and each policy's
mergeTestCases, ...) are dumped by running them, not by reading the Go text.

For each package, kubelet's files (its _test.go files too, unchanged) are linked with go's -overlay
into a package of a throw-away copy of the oracle's module (tests/kubeletsim/v1.N/go.mod, copied:
the test files need modules the oracle does not, and the oracle's go.mod is not touched), beside
pinscope's dump file (tests/kubeletsim/tabledump/<package>_test.go), which calls kubelet's table
functions and writes the cases as JSON. A table that is a local variable of a kubelet test function
(CAPTURES) is taken from a copy of kubelet's test file in which that function, right after its table,
hands the table to pinscopeCapture (tabledump/capture.go.in) and returns. The result is committed as
tests/kubeletsim/tables/dump-v1.N.json (not v1.N.*.json: test_fit_tables reads those, tables.py's output);
pinscope's tests read that file and need no Go.

    python3 tests/kubeletsim/tabledump.py 1.37 > tests/kubeletsim/tables/dump-v1.37.json
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = {"topologymanager": "pkg/kubelet/cm/topologymanager", "cpumanager": "pkg/kubelet/cm/cpumanager",
            "devicemanager": "pkg/kubelet/cm/devicemanager", "memorymanager": "pkg/kubelet/cm/memorymanager"}
# tables that are local variables of a kubelet test function: (package, file, function, variable); the
# function's copy calls pinscopeCapture (tabledump/capture.go.in) right after the table and returns
CAPTURES = [
    ("topologymanager", "numa_info_test.go", "TestCalculateAvgDistanceFor", "tcases"),
    ("topologymanager", "numa_info_test.go", "TestClosest", "tcases"),
    ("topologymanager", "policy_test.go", "TestCompareHintsNarrowest", "tcases"),
    ("memorymanager", "policy_static_test.go", "TestStaticPolicyGetTopologyHints", "testCases"),
    ("memorymanager", "policy_static_test.go", "TestStaticPolicyAllocate", "testCases"),
    ("memorymanager", "policy_static_test.go", "TestStaticPolicyGetPodTopologyHints", "testCases"),
    ("cpumanager", "topology_hints_test.go", "TestGetPodTopologyHintsWithPolicyOptions", "testCases"),
    ("cpumanager", "policy_static_test.go", "TestStaticPolicyAddWithResvList", "testCases"),
    ("cpumanager", "policy_static_test.go", "TestStaticPolicyStart", "testCases"),
    ("cpumanager", "policy_static_test.go", "TestStaticPolicyStartWithResvList", "testCases"),
    ("cpumanager", "policy_options_test.go", "TestValidateStaticPolicyOptions", "testCases"),
    ("cpumanager", "policy_options_test.go", "TestPolicyOptionsCompatibility", "testCases"),
    ("cpumanager", "policy_static_test.go", "TestStaticPolicyAddWithUncoreAlignment", "testCases"),
    ("cpumanager", "policy_static_test.go", "TestTopologyAwareAllocateCPUs", "testCases"),
    ("cpumanager", "policy_static_test.go", "TestPolicyWithAlignBySocketAndDistributeCPUsAcrossNUMAEnabled", "testCases"),
]


def _brace_end(text: str, i: int) -> int:
    """The index after the brace that closes the one at i (Go strings, runes and comments skipped)."""
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'`":
            close = ch
            i += 1
            while text[i] != close:
                i += 2 if text[i] == "\\" and close != "`" else 1
        elif text.startswith("//", i):
            i = text.index("\n", i)
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced braces")


def captured(text: str, func: str, var: str) -> str:
    """text with pinscopeCapture(t, func, var) and a return right after var's table literal in func."""
    start = text.index(f"func {func}(t *testing.T) {{")
    m = re.compile(rf"\b{var}\s*:?=\s*\[\](struct\s*)?\w*\{{").search(text, start)
    if not m or text.find("\nfunc ", start + 1, m.start()) > 0:
        raise ValueError(f"no table {var} in {func}")
    brace = m.end() - 1
    if m.group(1):  # an anonymous struct type: its fields, then the literal
        brace = text.index("{", _brace_end(text, brace))
    end = _brace_end(text, brace)
    return f'{text[:end]}\n\tpinscopeCapture(t, "{func}", {var})\n\treturn\n{text[end:]}'


def _module_dir(release: str, env: dict) -> Path:
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/kubernetes"], cwd=HERE / f"v{release}",
                         env=env, check=True, capture_output=True, text=True, timeout=600).stdout
    return Path(out.strip())


def dump(release: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(HERE / f"v{release}" / "go.mod", work / "dump.mod")
        shutil.copy(HERE / f"v{release}" / "go.sum", work / "dump.sum")
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS=f"-mod=mod -buildvcs=false -modfile={work / 'dump.mod'}")
        mod = _module_dir(release, env)
        out: dict = {}
        for name, rel in PACKAGES.items():
            dest = HERE / f"v{release}" / f"zz_tabledump_{name}"  # a directory only the overlay holds
            replace = {str(dest / f.name): str(f) for f in sorted((mod / rel).glob("*.go"))}
            own = HERE / "tabledump" / f"{name}_test.go"
            if own.exists():
                replace[str(dest / "zz_pinscope_dump_test.go")] = str(own)
            tests = ["TestPinscopeDump"]
            for pkg, file, func, var in CAPTURES:
                if pkg != name:
                    continue
                text = Path(replace[str(dest / file)]).read_text()
                if f"func {func}(t *testing.T) {{" not in text:  # a test this release has not
                    continue
                copy = work / f"{name}.{func}.{file}"
                copy.write_text(captured(text, func, var))
                replace[str(dest / file)] = str(copy)
                tests.append(func)
            if len(tests) > 1:
                common = (HERE / "tabledump" / "capture.go.in").read_text().replace("package PACKAGE", f"package {name}")
                (work / f"{name}.capture_test.go").write_text(common)
                replace[str(dest / "zz_pinscope_capture_test.go")] = str(work / f"{name}.capture_test.go")
            (work / "overlay.json").write_text(json.dumps({"Replace": replace}))
            binary = work / f"{name}.test"
            subprocess.run(["go", "test", "-vet=off", f"-overlay={work / 'overlay.json'}", "-c", "-o", str(binary),
                            f"./{dest.name}"], cwd=HERE / f"v{release}", env=env, check=True, timeout=3000)
            result, caught = work / f"{name}.json", work / f"{name}.captured"
            caught.mkdir()
            subprocess.run([str(binary), "-test.run", f"^({'|'.join(tests)})$"], cwd=work, check=True, timeout=600,
                           env=dict(os.environ, PINSCOPE_DUMP=str(result), PINSCOPE_CAPTURE=str(caught)),
                           stdout=subprocess.DEVNULL)
            if result.exists():
                out.update(json.loads(result.read_text()))
            for f in sorted(caught.glob("*.json")):
                out[f"{name}.{f.stem}"] = json.loads(f.read_text())
        version = mod.name.partition("@")[2]
        return {"kubernetes": version, "source": f"k8s.io/kubernetes@{version}: {', '.join(PACKAGES.values())} "
                "(their test tables, dumped by tests/kubeletsim/tabledump)", **out}


if __name__ == "__main__":
    json.dump(dump(sys.argv[1] if len(sys.argv) > 1 else "1.37"), sys.stdout, indent=0, sort_keys=True)
    print()
