"""`python3 -m pinscope`: the `pinscope` command (pinscope.tui.cli), for a checkout or an install without
the script on PATH."""
from pinscope.tui.cli import main

raise SystemExit(main())
