"""pinscope installs one top-level name, `pinscope`: its folders (collectors/, tui/, themes/) are the
subpackages pinscope.collectors, pinscope.tui and pinscope.themes (pinscope/ links each), so an install
never puts a `collectors` or `tui` of its own into site-packages, where another project's would collide.
Checked on a built wheel (what pip and pipx install), with `twine check` on it."""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_links_name_the_four_folders():
    for name in ("cli", "collectors", "tui", "themes"):
        link = ROOT / "pinscope" / name
        assert link.is_symlink() and os.readlink(link) == f"../{name}", link
    # and `python3 -m pinscope` (the command without its script on PATH)
    assert sorted(p.name for p in (ROOT / "pinscope").iterdir() if p.name != "__pycache__") == [
        "__main__.py", "cli", "collectors", "themes", "tui"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # built from a copy: setuptools writes build/ and *.egg-info in the tree it builds, and two test workers
    # (or this and a test of the image) building the checkout at once trip over each other's files
    src = tmp_path_factory.mktemp("src") / "pinscope"
    shutil.copytree(ROOT, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache",
        ".hypothesis", "tests", "bench", "screenshots"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = out.glob("pinscope-*.whl")
    return whl


def test_the_wheel_holds_one_top_level_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.startswith("pinscope-")}
    assert tops == {"pinscope"}, tops
    for must in ("pinscope/__main__.py", "pinscope/collectors/probe.sh", "pinscope/collectors/__init__.py", "pinscope/cli/__init__.py",
                 "pinscope/themes/pinscope.tcss", "pinscope/collectors/sim/node.py", "pinscope/tui/widgets/coregrid.py"):
        assert must in names, must
    assert not [n for n in names if n.startswith(("pinscope/tests", "pinscope/bench"))]
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "pinscope = pinscope.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()


# the command's entry points: `pinscope` (pinscope.cli:main), `python3 -m pinscope`, `python3 -m pinscope.cli`
ENTRY_POINTS = ("pinscope.cli", "pinscope.__main__", "pinscope.cli.__main__")


def imported_by_the_command() -> set[str]:
    """Every pinscope module the command can import, from its entry points on: at the top of a module or inside
    a function (the app, the exporter and the demo are imported where they start), each package with its
    modules. Read from the source by grimp (import-linter's graph), nothing imported."""
    import grimp

    graph = grimp.build_graph("pinscope", exclude_type_checking_imports=True, cache_dir=None)
    seen: set[str] = set()
    todo = list(ENTRY_POINTS)
    while todo:
        m = todo.pop()
        if m in seen or m not in graph.modules:
            continue
        seen.add(m)
        todo += graph.find_modules_directly_imported_by(m)
        todo.append(m.rpartition(".")[0])  # a module's package runs first
    return seen


def test_the_wheel_holds_nothing_only_tests_use(wheel):
    """What only tests, benchmarks or screenshots import lives under tests/ (or bench/): the simulated
    Prometheus fleet (tests/promfleet.py, once collectors/sim/promfleet.py) is not installed with the command,
    and neither is any module the command never imports (issue 35)."""
    names = zipfile.ZipFile(wheel).namelist()
    modules = {n[:-3].removesuffix("/__init__").replace("/", ".") for n in names if n.endswith(".py")}
    assert "pinscope.collectors.sim.promfleet" not in modules and (ROOT / "tests" / "promfleet.py").is_file()
    assert "pinscope.collectors.sim.demo" in modules  # `pinscope demo` is the command's: it ships
    assert sorted(modules - imported_by_the_command()) == []


def test_the_wheel_passes_twine_check(wheel):
    r = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "PASSED" in r.stdout, r.stdout + r.stderr


def test_the_wheel_installs_and_runs_outside_the_checkout(wheel, tmp_path):
    """A venv of its own (what pipx makes), the wheel in it, run from elsewhere: `pinscope` works and no
    top-level collectors/tui/themes module exists in it."""
    venv = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # its dependencies from the test venv (a path, not a site dir: the editable install's finder there is
    # not loaded), so nothing is fetched; pip is the test venv's, installing into this venv
    ours = subprocess.run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "deps.pth").write_text(ours + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site,
                        str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert not any((Path(site) / n).exists() for n in ("collectors", "tui", "themes"))
    assert (Path(site) / "pinscope" / "collectors" / "probe.sh").is_file()
    r = subprocess.run([str(py), "-c", "import pinscope.cli, pinscope.collectors.sim.demo, sys; "
                        "print(pinscope.cli.__file__); print('tui' in sys.modules, 'collectors' in sys.modules)"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.splitlines() == [f"{site}/pinscope/cli/__init__.py", "False False"], r.stdout + r.stderr
    for module in ("pinscope.cli", "pinscope"):  # python3 -m pinscope: the command, installed
        r = subprocess.run([str(py), "-m", module, "check", "--help"], capture_output=True, text=True,
                           timeout=120, cwd=tmp_path)
        assert r.returncode == 0 and "usage: pinscope check" in r.stdout, (module, r.stdout + r.stderr)
