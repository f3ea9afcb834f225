"""`python3 -m pinscope`: the `pinscope` command (pinscope.cli), for a checkout or an install without
the script on PATH."""
from pinscope.cli import main

raise SystemExit(main())
