"""`python3 -m pinscope.cli`: the `pinscope` command (pinscope.cli.main)."""
from pinscope.cli import main

raise SystemExit(main())
