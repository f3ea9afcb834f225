"""The command line's old name: it is pinscope.cli since issue 35 item 2 (tui/ is the Textual app only).
Kept, as a thin alias, for `python -m pinscope.tui.cli` and `from pinscope.tui.cli import main` in
tests/cluster/ (another developer's, under edit): when they say pinscope.cli, delete this file."""
from pinscope.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
