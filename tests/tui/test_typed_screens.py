"""The app and its screens talk through declared types (tui/screens/base.py: ReportScreen; the app's
replay_status, replay_clock, want_detail, keymap_in_force), not by asking objects what they happen to have:
no getattr/hasattr in the app, the screens, the widgets, export or replay (issue 10)."""
import ast
from pathlib import Path

import pytest

TUI = Path(__file__).resolve().parents[2] / "tui"
FILES = [TUI / "app.py", TUI / "promapp.py", TUI / "export.py", TUI / "replay.py",
         *sorted((TUI / "screens").glob("*.py")), *sorted((TUI / "widgets").glob("*.py"))]


def duck_typing(path: Path) -> list[str]:
    return [f"{path.name}:{n.lineno} {n.func.id}" for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr")]


def test_no_getattr_or_hasattr_between_the_app_and_its_screens():
    assert len(FILES) > 15
    assert [hit for f in FILES for hit in duck_typing(f)] == []


@pytest.mark.parametrize("code, hits", [("x = getattr(a, 'b', None)\n", 1), ("x = a.b\n", 0), ("hasattr(s, 'r')\n", 1)])
def test_the_check_sees_them(tmp_path, code, hits):
    f = tmp_path / "m.py"
    f.write_text(code)
    assert len(duck_typing(f)) == hits


# ---------------------------------------------------------------- screens ask the app only through Navigator
SCREENS = sorted((TUI / "screens").glob("*.py"))


def reaches(path: Path, name: str) -> list[tuple[int, str]]:
    """(line, attribute) of every `self.<name>.<attribute>` in the file."""
    return [(n.lineno, n.attr) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == name
            and isinstance(n.value.value, ast.Name) and n.value.value.id == "self"]


def declared(protocol) -> set[str]:
    names = set()
    for klass in protocol.__mro__:
        if klass.__name__ in ("Protocol", "Generic", "object"):
            continue
        names |= {k for k in vars(klass) if not k.startswith("_")} | set(vars(klass).get("__annotations__", {}))
    return names


def test_screens_use_only_textuals_app_api_and_the_declared_navigator():
    from textual.app import App

    from pinscope.tui.screens.base import Navigator, PromNavigator

    textual_api = set(dir(App))
    untyped = [f"{p.name}:{line} self.app.{a}" for p in SCREENS for line, a in reaches(p, "app") if a not in textual_api]
    assert untyped == []  # views, targets, navigation: through self.nav (typed), not self.app
    nav = declared(Navigator)
    prom = declared(PromNavigator)
    undeclared = [f"{p.name}:{line} self.nav.{a}" for p in SCREENS for line, a in reaches(p, "nav")
                  if a not in (prom if p.name == "promfleet.py" else nav)]
    assert undeclared == []
    used = {a for p in SCREENS for _, a in reaches(p, "nav")}
    assert {"views", "open_container", "set_focus_cpu", "replay_status"} <= used  # the check looks at real uses


def test_the_apps_implement_what_their_screens_may_ask():
    from pinscope.tui.app import PinscopeApp
    from pinscope.tui.promapp import PromApp
    from pinscope.tui.replay import ReplayApp
    from pinscope.tui.screens.base import Navigator, PromNavigator

    app = PinscopeApp([])  # an instance: what its __init__ sets counts, what it only reads does not
    assert [n for n in declared(Navigator) if not hasattr(app, n)] == []
    for sub in (ReplayApp, PromApp):  # they inherit it all; nothing of it may be taken away
        assert issubclass(sub, PinscopeApp)
    assert [n for n in declared(PromNavigator) - declared(Navigator) if not callable(getattr(PromApp, n, None))] == []
    assert isinstance(ReplayApp.replay_status, property)  # a recording says where in it we are


def bare_app(path: Path) -> list[str]:
    """`self.app` used other than as `self.app.<attribute>`: aliased, passed on, returned."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out = []
    for n in ast.walk(tree):
        if (isinstance(n, ast.Attribute) and n.attr == "app" and isinstance(n.value, ast.Name) and n.value.id == "self"
                and not isinstance(parents.get(n), ast.Attribute)):
            call = parents.get(n)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "binding_rows":
                continue  # the help lists the app's own key bindings: it reads the App's BINDINGS and keymap
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "cast"
                    and isinstance(call.args[0], ast.Constant) and str(call.args[0].value).endswith("Navigator")):
                continue  # the one door: `nav`, the app as the Navigator protocol
            out.append(f"{path.name}:{n.lineno}")
    return out


def test_no_screen_hands_the_app_around():
    assert [hit for p in SCREENS for hit in bare_app(p)] == []


@pytest.mark.parametrize("code, hits", [("a = self.app\n", 1), ("f(self.app)\n", 1), ("self.app.notify('x')\n", 0),
                                        ("binding_rows(self.app, s)\n", 0),
                                        ("cast('Navigator', self.app)\n", 0), ("cast('PinscopeApp', self.app)\n", 1)])
def test_the_bare_app_check_sees_them(tmp_path, code, hits):
    f = tmp_path / "s.py"
    f.write_text(code)
    assert len(bare_app(f)) == hits


def test_a_node_screen_draws_the_view_it_was_given(tmp_path):
    """The screens of one node hold its NodeView from the start; they never look it up by name."""
    from pinscope.tui.screens.cpu import CpuScreen
    from pinscope.tui.screens.node import NodeScreen
    from pinscope.tui.screens.fleet import FleetScreen
    from pinscope.tui.state import NodeView

    v = NodeView("w-1")
    assert NodeScreen(v).view is v and NodeScreen(v).target == "w-1"
    assert CpuScreen(v, 3).view is v and CpuScreen(v, 3).cpu == 3
    with pytest.raises(LookupError):
        FleetScreen().view  # noqa: B018 -- reading the property is the test


@pytest.mark.parametrize("code, hits", [("self.app.views['a']\n", ["views"]), ("self.app.notify('x')\n", []),
                                        ("self.nav.views\n", [])])
def test_the_reach_check_sees_them(tmp_path, code, hits):
    from textual.app import App

    f = tmp_path / "s.py"
    f.write_text(code)
    assert [a for _, a in reaches(f, "app") if a not in set(dir(App))] == hits
