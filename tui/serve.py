"""`pinscope serve [options] -- ARGS…`: the same TUI in a browser, and no one else's to drive.

textual-serve runs `pinscope ARGS…` once per browser tab (each tab is its own session, with its own
connections to the nodes) and relays the terminal over a websocket to xterm.js. pinscope keeps
textual-serve's page, its websocket handler and its sessions, and gives them routes of its own: the page
(`/?token=`), its websocket (`/ws/<token>`) and the page's own files (`/static/<token>/…`, nothing else of
textual-serve's static folder, no listing; no `/download`, which pinscope never uses), behind the request
guard (tui/serveguard.py: token, Origin, Host) as one middleware; and it adds TLS (--certfile/--keyfile),
one plain log line per event, none with a token in it, and read-only sessions
(`s`/`e` write no file on this machine: PINSCOPE_READ_ONLY=1 in their environment) unless the server
listens on loopback only, or --no-read-only says otherwise.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import shutil
import signal
import socket
import ssl
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp_jinja2
import jinja2
import textual_serve
from aiohttp import web
from aiohttp.web_runner import GracefulExit
from textual_serve.server import Server, to_int

from pinscope.collectors.text import display
from pinscope.tui.serveguard import (TOKEN_ENV, WILDCARDS, Guard, answer_names, guard_middleware, is_loopback, make_token,
                                     origin_of, redact)

ROOT = Path(__file__).resolve().parent.parent  # the directory holding the tui and collectors packages

READ_ONLY_ENV = "PINSCOPE_READ_ONLY"  # read by the app (tui/app.py): "1" refuses `s` and `e`
STATIC = Path(textual_serve.__file__).parent / "static"
# the files the page asks for (textual-serve's template and pinscope's @font-face): all /static/ serves
PAGE_FILES = frozenset({"css/xterm.css", "js/textual.js", "images/background.png",
                        "fonts/RobotoMono-VariableFont_wght.ttf", "fonts/RobotoMono-Italic-VariableFont_wght.ttf"})

NO_TLS = """\
pinscope serve: listening on {host}:{port} without TLS: the token and every screen cross the network
  in clear. Give --certfile/--keyfile, or keep the default (--host 127.0.0.1) behind a reverse proxy that
  terminates TLS, and tell pinscope the address the browser uses, e.g. with nginx:
      pinscope serve --public-url https://pinscope.example.com -- --inventory nodes.yaml
      location / {{ proxy_pass http://127.0.0.1:{port}; proxy_http_version 1.1;
                   proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection "upgrade"; }}
  or reach it through an SSH tunnel instead: ssh -L {port}:127.0.0.1:{port} this-host"""


def app_command(args: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: this Python, this pinscope."""
    return shlex.join([sys.executable, "-m", "pinscope.cli", *args])


def offline_templates(into: Path) -> Path:
    """textual-serve's page template without its Google Fonts link (a war-room screen may be offline, and a
    page that fetches from Google tells Google who watches it): Roboto Mono comes from the font files
    textual-serve ships in its own static folder, served by this server. An empty icon of its own."""
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
        # no icon: else the browser asks for /favicon.ico without the token, a refusal line every load
        html = html.replace("<head>", '<head>\n    <link rel="icon" href="data:," />', 1)
        (into / t.name).write_text(html)
    return into


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8000
    public: str | None = None  # the URL browsers use (a reverse proxy's), without the trailing /
    token: str | None = None  # None: PINSCOPE_SERVE_TOKEN, else a random one
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    read_only: bool | None = None  # None: read-only unless listening on loopback only
    certfile: str | None = None
    keyfile: str | None = None
    title: str = "pinscope"

    @property
    def scheme(self) -> str:
        return "https" if self.certfile else "http"

    def url(self, token: str) -> str:
        """The URL to open, as printed."""
        if self.public:
            return f"{self.public}/?token={token}"
        host = socket.gethostname() if self.host.strip("[]") in WILDCARDS else self.host
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        return f"{self.scheme}://{shown}:{self.port}/?token={token}"


class OneLine(logging.Formatter):
    """aiohttp's and textual-serve's log records as one plain line each, escapes shown: a malformed request
    is the client's doing, and was a page of traceback with its locals on the operator's terminal.
    PINSCOPE_DEBUG=1 keeps the traceback. No token: aiohttp quotes a malformed request's line (`GET
    /ws/<token> HTTP/9.9`) and headers; `redact` hides every token in them, this run's or a wrong one."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def format(self, record: logging.LogRecord) -> str:
        text = redact(record.getMessage(), self.token)
        info = record.exc_info
        err = info[1] if info else None
        if info and err is not None:
            text += f": {type(err).__name__}: {redact(' '.join(str(err).split()), self.token)}"
            if os.environ.get("PINSCOPE_DEBUG"):
                text += "\n" + redact(self.formatException(info), self.token)
        return f"pinscope serve: {display(text)[:500]}"


class TlsError(Exception):
    """The certificate or key cannot be used: said before listening."""


class PinscopeServer(Server):
    """textual-serve's Server with the Guard in front of every route, the token in the websocket's path
    and in the page's files' paths, and TLS. Its websocket handler and app sessions are textual-serve's."""

    def __init__(self, command: str, opts: ServeOptions, guard: Guard, banner: str, templates: Path) -> None:
        super().__init__(command, host=opts.host, port=opts.port, title=opts.title, public_url=opts.public,
                         statics_path=STATIC, templates_path=templates)
        self.opts, self.guard, self.banner = opts, guard, banner
        self.checker = guard_middleware(guard)

    def initialize_logging(self) -> None:
        """Warnings and errors, one line each (OneLine); no access log: it would write the token (the URL's
        query, the websocket's path) into every log kept of this terminal, and refusals have a line of their
        own."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLine(self.guard.token))
        logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)

    async def _make_app(self) -> web.Application:
        """textual-serve's app with pinscope's routes, not its own: its `/static` listed its folder to anyone
        and served it without the token, its `/ws` had no token, and `/download` (files an app delivers)
        is not used by pinscope."""
        app = web.Application(middlewares=[self.checker])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([web.get("/", self.handle_index, name="index"),
                        web.get("/ws/{token}", self.handle_websocket, name="session"),
                        web.get("/static/{token}/{name:.+}", self.handle_static, name="static")])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_static(self, request: web.Request) -> web.StreamResponse:
        """One of the page's own files (the guard checked the token in the path), by its name in a fixed set:
        no path from the request reaches the file system."""
        name = request.match_info["name"]
        if name not in PAGE_FILES:
            raise web.HTTPNotFound()
        return web.FileResponse(STATIC / name)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's handler, for a websocket handshake only: a plain GET of the websocket's URL got no
        answer at all (textual-serve's handler fails to prepare it and closes the connection)."""
        if not web.WebSocketResponse().can_prepare(request).ok:
            raise web.HTTPBadRequest(text="pinscope serve: this is the page's websocket; open the page\n")
        return await super().handle_websocket(request)

    async def on_startup(self, app: web.Application) -> None:
        if self.checker not in app.middlewares:  # fail closed should textual-serve build its app otherwise
            raise RuntimeError("pinscope serve: the request guard is not installed")
        print(self.banner, file=sys.stderr, flush=True)  # one plain line instead of textual-serve's banner

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        # The page names the websocket URL: --public-url, else the address the browser used (the Host was
        # checked by the guard: no rebound name gets here); the token goes in its path, as textual.js
        # appends `?width=…&height=…` to the URL it is given.
        base = self.opts.public or f"{request.scheme}://{request.host}"
        ws = ("wss" if base.startswith("https") else "ws") + base[base.index(":"):]
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{ws}/ws/{self.guard.token}",
            "config": {"static": {"url": f"{base}/static/{self.guard.token}/"}},
            "application": {"name": self.title},
        }
        page = aiohttp_jinja2.render_template("app_index.html", request, context)
        # pinscope before issue 34 kept the token in a cookie of this port, which the browser sends to every
        # port of this host: expire it, should this browser still hold one (a fixed token outlives a run)
        page.del_cookie(f"pinscope-serve-{self.opts.port}", path="/")
        return page

    def serve(self, debug: bool = False) -> None:
        """textual-serve's serve(), with the TLS context it has no parameter for."""
        self.debug = debug
        self.initialize_logging()
        tls = None
        if self.opts.certfile:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            try:
                tls.load_cert_chain(self.opts.certfile, self.opts.keyfile)
            except ssl.SSLError as err:
                raise TlsError(f"--certfile/--keyfile: not a certificate and its key in PEM ({err.reason or err})") from err
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
        loop.add_signal_handler(signal.SIGINT, self.request_exit)
        loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        web.run_app(self._make_app(), host=self.host, port=self.port, ssl_context=tls, handle_signals=False,
                    loop=loop, print=lambda *args: None, access_log=None)


def _refusal(args: list[str], opts: ServeOptions) -> str | None:
    if not args:
        return "give the pinscope arguments after --, e.g. pinscope serve -- demo"
    if opts.public and not opts.public.startswith(("http://", "https://")):
        return f"--public-url {opts.public!r}: give the URL browsers use, http://… or https://…"
    for o in opts.allow_origins:
        if origin_of(o) is None:
            return f"--allow-origin {o!r}: give an origin, http://host[:port] or https://host[:port]"
    if bool(opts.certfile) != bool(opts.keyfile):
        return "--certfile and --keyfile go together (the certificate chain and its private key)"
    for f in (opts.certfile, opts.keyfile):
        if f and not os.access(f, os.R_OK):
            return f"cannot read {f!r}"
    return None


def serve(args: list[str], opts: ServeOptions = ServeOptions()) -> int:
    if why := _refusal(args, opts):
        print(f"pinscope serve: {why}", file=sys.stderr)
        return 2
    try:
        token = make_token(opts.token)
    except ValueError as err:
        print(f"pinscope serve: {'--token' if opts.token is not None else TOKEN_ENV}: {err}", file=sys.stderr)
        return 2
    public = opts.public.rstrip("/") if opts.public else None
    opts = replace(opts, public=public)
    hosts, any_ip = answer_names(opts.host, public, opts.allow_hosts)
    origins = frozenset(o for o in (origin_of(u) for u in (public, *opts.allow_origins)) if o)
    guard = Guard(token, hosts, any_ip, origins)
    read_only = opts.read_only if opts.read_only is not None else not is_loopback(opts.host)
    if not is_loopback(opts.host) and not opts.certfile:
        print(NO_TLS.format(host=opts.host, port=opts.port), file=sys.stderr)
    # the sessions run `python -m pinscope.cli`: make this checkout importable for them (installed or not)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    os.environ[READ_ONLY_ENV] = "1" if read_only else "0"
    os.environ.pop(TOKEN_ENV, None)  # the sessions need not know it
    mode = "read-only sessions (s/e refused; --no-read-only)" if read_only else "s/e write files here"
    banner = (f"pinscope serve: open {opts.url(token)}\n"
              f"  (runs: pinscope {shlex.join(args)}; {mode}; Ctrl+C stops)")
    templates = offline_templates(Path(tempfile.mkdtemp(prefix="pinscope-serve-")))
    server = PinscopeServer(app_command(args), opts, guard, banner, templates)
    shown = f"[{opts.host}]" if ":" in opts.host else opts.host
    try:
        server.serve()
    except TlsError as err:
        print(f"pinscope serve: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the port is taken, the address is not ours, a bad certificate...
        print(f"pinscope serve: cannot listen on {shown}:{opts.port}: {err.strerror or err}", file=sys.stderr)
        return 1
    except GracefulExit:
        pass
    finally:
        shutil.rmtree(templates, ignore_errors=True)
    return 0
