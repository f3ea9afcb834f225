"""`pinscope serve [--host H] [--port P] [--public-url URL] -- ARGS…`: the same TUI in a browser.

textual-serve runs `pinscope ARGS…` once per browser tab (each tab is its own session, with its own
connections to the nodes) and relays the terminal over a websocket to xterm.js. It has no
authentication: anyone who reaches the port drives the app (and through it reads the nodes). So it
binds to localhost unless told otherwise, and says so plainly when it is told otherwise.
"""
from __future__ import annotations

import ipaddress
import os
import re
import shlex
import shutil
import tempfile
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the directory holding the tui and collectors packages

NO_AUTH = """\
pinscope serve: WARNING: listening on {host}:{port} with NO AUTHENTICATION.
  Anyone who can reach this port gets the full app, and through it every node it reads.
  Prefer the default (--host 127.0.0.1) behind a reverse proxy that authenticates and terminates TLS,
  and tell pinscope the address the browser uses, e.g. with nginx:
      pinscope serve --public-url https://pinscope.example.com -- --inventory nodes.yaml
      location / {{ auth_basic "pinscope"; auth_basic_user_file /etc/nginx/pinscope.htpasswd;
                   proxy_pass http://127.0.0.1:{port}; proxy_http_version 1.1;
                   proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection "upgrade"; }}
  or reach it through an SSH tunnel instead: ssh -L {port}:127.0.0.1:{port} this-host"""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def app_command(args: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: this Python, this pinscope."""
    return shlex.join([sys.executable, "-m", "tui.cli", *args])


def offline_templates(into: Path) -> Path:
    """textual-serve's page template without its Google Fonts link (a war-room screen may be offline, and a
    page that fetches from Google tells Google who watches it): Roboto Mono comes from the font files
    textual-serve ships in its own static folder, served by this server."""
    import textual_serve

    src = Path(textual_serve.__file__).parent / "templates"
    into.mkdir(parents=True, exist_ok=True)
    face = ('<style>@font-face { font-family: "Roboto Mono"; font-style: normal; '
            'src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype"); }\n'
            '@font-face { font-family: "Roboto Mono"; font-style: italic; '
            'src: url("{{ config.static.url }}fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype"); }'
            '</style>')
    for t in src.glob("*.html"):
        html = re.sub(r"<link[^>]*fonts\.(googleapis|gstatic)\.com[^>]*>", face, t.read_text(), flags=re.S)
        html = re.sub(r"<link[^>]*https?://[^>]*>", "", html, flags=re.S)  # nothing else from elsewhere either
        (into / t.name).write_text(html)
    return into


def serve(args: list[str], host: str = "127.0.0.1", port: int = 8000, public: str | None = None,
          title: str = "pinscope") -> int:
    try:
        from textual_serve.server import Server
    except ImportError:
        print("pinscope serve: needs the textual-serve package (python3 -m pip install textual-serve)", file=sys.stderr)
        return 1
    if not args:
        print("pinscope serve: give the pinscope arguments after --, e.g. pinscope serve -- demo", file=sys.stderr)
        return 2
    if public and not public.startswith(("http://", "https://")):
        print(f"pinscope serve: --public-url {public!r}: give the URL browsers use, http://… or https://…", file=sys.stderr)
        return 2
    if not is_loopback(host):
        print(NO_AUTH.format(host=host, port=port), file=sys.stderr)
    # the sessions run `python -m tui.cli`: make this checkout importable for them (installed or not)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    shown = f"[{host}]" if ":" in host else host

    class PinscopeServer(Server):
        async def on_startup(self, app) -> None:  # one plain line instead of textual-serve's banner
            print(f"pinscope serve: open http://{shown}:{port}/ (runs: pinscope {shlex.join(args)}; Ctrl+C stops)",
                  file=sys.stderr, flush=True)

        async def handle_index(self, request):
            # The page names the websocket URL. Without --public-url, build it from the address the browser
            # used (textual-serve would write the bind address, useless for 0.0.0.0 or behind a proxy).
            if not public:
                self.public_url = f"{request.scheme}://{request.host}"
            return await super().handle_index(request)

    import textual_serve

    templates = offline_templates(Path(tempfile.mkdtemp(prefix="pinscope-serve-")))
    server = PinscopeServer(app_command(args), host=host, port=port, title=title,
                            public_url=public.rstrip("/") if public else None,
                            statics_path=Path(textual_serve.__file__).parent / "static", templates_path=templates)
    try:
        server.serve()
    except OSError as err:  # the port is taken, the address is not ours...
        print(f"pinscope serve: cannot listen on {shown}:{port}: {err.strerror or err}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(templates, ignore_errors=True)
    return 0
