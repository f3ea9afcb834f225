"""One name per module (issue 35 item 1): tests/conftest.py imports this first.

pinscope/ links collectors/, tui/ and themes/, and `python -m pytest` puts the repository root (its cwd) on
sys.path: `import collectors.model` would load a second copy of pinscope.collectors.model, with classes and
registries that are not pinscope's. The finder below, first on the meta path, refuses the three names at
the top level, saying which name to use. tests/test_one_name.py checks the sources as well, and that a
stray import fails a run here.
"""
import sys

SECOND = ("collectors", "tui", "themes")


class OneName:
    """A meta path finder that finds nothing, and refuses the second names."""

    def find_spec(self, name, path=None, target=None):
        if path is None and name in SECOND:
            raise ImportError(f"{name!r} is a second name for 'pinscope.{name}': import pinscope.{name} "
                              "(one name per module, issue 35)", name=name)
        return None


if not any(type(f).__name__ == "OneName" for f in sys.meta_path):
    sys.meta_path.insert(0, OneName())
