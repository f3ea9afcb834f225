"""`pinscope serve [options] -- ARGS…`: the same TUI in a browser, and no one else's to drive.

textual-serve runs `pinscope ARGS…` once per browser tab (each tab is its own session, with its own
connections to the nodes) and relays the terminal over a websocket to xterm.js. textual-serve checks
nothing: any web page the operator visits could open that websocket (browsers do not apply the
same-origin policy to websockets) and drive the wall, and a name rebound to 127.0.0.1 (DNS rebinding)
could load the page itself. So, on textual-serve's own aiohttp app (one middleware, its handlers
reused), every request passes the `Guard`:

- the `Host` header names this server: the listen address, the loopback names, the --public-url's host,
  --allow-host (a wildcard listen address also answers to this machine's names and to IP literals, which
  no rebinding can produce);
- the per-run token (random, printed as the URL to open, like Jupyter's; `--token` or
  PINSCOPE_SERVE_TOKEN fix one) is on the page's URL (`?token=`, then a cookie of this port) and in the
  websocket's path (the page writes it there), compared in constant time;
- a websocket's `Origin`, when it has one (browsers always send it), is this server's own origin, the
  --public-url's, or an --allow-origin.

A refusal is 403 (a websocket never gets its 101) and one line on stderr. Sessions are read-only
(`s`/`e` write no file on this machine: PINSCOPE_READ_ONLY=1 in their environment) unless the server
listens on loopback only, or --no-read-only says otherwise. TLS: --certfile/--keyfile, or a reverse proxy.
"""
from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import ssl
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp_jinja2
import textual_serve
from aiohttp import web
from aiohttp.web_runner import GracefulExit
from textual_serve.server import Server, to_int

from collectors.text import display

ROOT = Path(__file__).resolve().parent.parent  # the directory holding the tui and collectors packages

TOKEN_ENV = "PINSCOPE_SERVE_TOKEN"
READ_ONLY_ENV = "PINSCOPE_READ_ONLY"  # read by the app (tui/app.py): "1" refuses `s` and `e`
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]{16,256}")  # fits a URL path and query unescaped
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")

NO_TLS = """\
pinscope serve: listening on {host}:{port} without TLS: the token and every screen cross the network
  in clear. Give --certfile/--keyfile, or keep the default (--host 127.0.0.1) behind a reverse proxy that
  terminates TLS, and tell pinscope the address the browser uses, e.g. with nginx:
      pinscope serve --public-url https://pinscope.example.com -- --inventory nodes.yaml
      location / {{ proxy_pass http://127.0.0.1:{port}; proxy_http_version 1.1;
                   proxy_set_header Upgrade $http_upgrade; proxy_set_header Connection "upgrade"; }}
  or reach it through an SSH tunnel instead: ssh -L {port}:127.0.0.1:{port} this-host"""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def host_name(header: str | None) -> str | None:
    """The name in a `Host` header (`[::1]:8000` -> `::1`, `Example.com` -> `example.com`); None when it
    is not one."""
    h = (header or "").strip().lower()
    if h.startswith("["):
        name, bracket, rest = h[1:].partition("]")
        return name if name and bracket and re.fullmatch(r"(:\d{1,5})?", rest) else None
    name, colon, port = h.partition(":")
    if colon and not port.isdigit():
        return None  # a bare IPv6 address, or junk
    return name or None


def origin_of(url: str | None) -> str | None:
    """`scheme://host:port` with the default port written out, for comparing origins; None for what is
    not an http(s) origin (`null`, from a sandboxed frame or a file, among them)."""
    try:
        u = urlsplit((url or "").strip())
        port = u.port
    except ValueError:
        return None
    if u.scheme.lower() not in ("http", "https") or not u.hostname:
        return None
    scheme = u.scheme.lower()
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname.lower()
    return f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"


def make_token(given: str | None = None) -> str:
    """The token of this run: the one given (--token, PINSCOPE_SERVE_TOKEN), else a random one."""
    token = given if given is not None else os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    if not TOKEN_SHAPE.fullmatch(token):
        raise ValueError("a token is 16 to 256 of the characters A-Z a-z 0-9 . _ ~ - "
                         "(leave it out and pinscope makes a random one)")
    return token


@dataclass(frozen=True, slots=True)
class Guard:
    """What a request must show to be served. Pure: the middleware asks, the tests ask."""

    token: str
    hosts: frozenset[str]  # Host names answered to (lower case, no port, no brackets)
    any_ip: bool = False  # a wildcard listen address: any IP literal too (no DNS rebinding makes one)
    origins: frozenset[str] = frozenset()  # origins allowed besides the request's own (origin_of form)
    cookie: str = "pinscope-serve"
    https: bool = False  # the browser reaches us over https: the cookie is Secure

    def host_allowed(self, header: str | None) -> bool:
        name = host_name(header)
        return name is not None and (name in self.hosts or (self.any_ip and is_ip(name)))

    def origin_allowed(self, origin: str | None, own: str) -> bool:
        """A websocket's Origin: none (not a browser: the token still holds), its own, or one allowed."""
        if origin is None:
            return True
        o = origin_of(origin)
        return o is not None and (o == origin_of(own) or o in self.origins)

    def token_matches(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())


def answer_names(listen: str, public: str | None, extra: tuple[str, ...] = ()) -> tuple[frozenset[str], bool]:
    """The Host names the server answers to, and whether any IP literal is answered to as well."""
    names = set(LOOPBACK_NAMES)
    wildcard = listen.strip("[]") in WILDCARDS
    if wildcard:
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    else:
        names.add(listen.strip("[]").lower())
    if public and (u := urlsplit(public)).hostname:
        names.add(u.hostname.lower())
    names |= {h.strip("[]").lower() for h in extra}
    return frozenset(names), wildcard


def _said(value: object) -> str:
    """A header's value in a log line: bounded, escapes shown, never raw on the terminal."""
    return ascii(str(value)[:120])


def guard_middleware(guard: Guard) -> Callable:
    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        def refuse(why: str, tell: str) -> web.Response:
            shown = "/ws/..." if request.path.startswith("/ws/") else request.path  # not the token (a right one)
            print(f"pinscope serve: refused {request.method} {_said(shown)} from "
                  f"{request.remote}: {why}", file=sys.stderr, flush=True)
            return web.Response(status=403, text=f"pinscope serve: {tell}\n",
                                headers={"X-Content-Type-Options": "nosniff"})

        if not guard.host_allowed(request.headers.get("Host")):
            return refuse(f"Host {_said(request.headers.get('Host'))} is not a name this server answers to "
                          "(--allow-host)", "this server does not answer to that host name (--allow-host)")
        path = request.path
        if path.startswith("/static/"):
            return await handler(request)  # textual-serve's own scripts, styles and fonts: nothing of ours
        if path == "/ws" or path.startswith("/ws/"):
            origin, own = request.headers.get("Origin"), f"{request.scheme}://{request.host}"
            if not guard.origin_allowed(origin, own):
                return refuse(f"a websocket from another origin {_said(origin)} (--allow-origin)",
                              "a websocket from another site is refused (--allow-origin)")
            if not guard.token_matches(request.match_info.get("token")):
                return refuse("a websocket without the right token", "no valid token")
            return await handler(request)
        query = request.query.get("token")
        if not guard.token_matches(query if query is not None else request.cookies.get(guard.cookie)):
            return refuse("a page request without the token",
                          "open the URL with the token that `pinscope serve` printed (…/?token=…)")
        response = await handler(request)
        if isinstance(response, web.Response):
            if path == "/" and query is not None:  # a reload or the Restart button without ?token= works
                response.set_cookie(guard.cookie, guard.token, httponly=True, samesite="Strict", path="/",
                                    secure=guard.https)
            response.headers.update({"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                                     "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"})
        return response

    return check


def app_command(args: list[str]) -> str:
    """The shell command textual-serve runs for each browser session: this Python, this pinscope."""
    return shlex.join([sys.executable, "-m", "tui.cli", *args])


def offline_templates(into: Path) -> Path:
    """textual-serve's page template without its Google Fonts link (a war-room screen may be offline, and a
    page that fetches from Google tells Google who watches it): Roboto Mono comes from the font files
    textual-serve ships in its own static folder, served by this server."""
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
    PINSCOPE_DEBUG=1 keeps the traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        err = record.exc_info[1] if record.exc_info else None
        if err is not None:
            text += f": {type(err).__name__}: {' '.join(str(err).split())}"
            if os.environ.get("PINSCOPE_DEBUG"):
                text += "\n" + self.formatException(record.exc_info)
        return f"pinscope serve: {display(text)[:500]}"


class TlsError(Exception):
    """The certificate or key cannot be used: said before listening."""


class PinscopeServer(Server):
    """textual-serve's Server with the Guard in front of every route, the token in the websocket's path,
    and TLS. Its websocket handler, app sessions and download route are textual-serve's, unchanged."""

    def __init__(self, command: str, opts: ServeOptions, guard: Guard, banner: str, templates: Path) -> None:
        super().__init__(command, host=opts.host, port=opts.port, title=opts.title, public_url=opts.public,
                         statics_path=Path(textual_serve.__file__).parent / "static", templates_path=templates)
        self.opts, self.guard, self.banner = opts, guard, banner
        self.checker = guard_middleware(guard)

    def initialize_logging(self) -> None:
        """Warnings and errors, one line each (OneLine); no access log: it would write the token (the URL's
        query, the websocket's path) into every log kept of this terminal, and refusals have a line of their
        own."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OneLine())
        logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.router.add_get("/ws/{token}", self.handle_websocket, name="session")
        app.middlewares.append(self.checker)
        return app

    async def on_startup(self, app: web.Application) -> None:
        if self.checker not in app.middlewares:  # fail closed should textual-serve build its app otherwise
            raise RuntimeError("pinscope serve: the request guard is not installed")
        print(self.banner, file=sys.stderr, flush=True)  # one plain line instead of textual-serve's banner

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        # The page names the websocket URL: --public-url, else the address the browser used (the Host was
        # checked by the guard: no rebound name gets here); the token goes in its path, as textual.js
        # appends `?width=…&height=…` to the URL it is given.
        base = self.opts.public or f"{request.scheme}://{request.host}"
        ws = ("wss" if base.startswith("https") else "ws") + base[base.index(":"):]
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{ws}/ws/{self.guard.token}",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

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
    guard = Guard(token, hosts, any_ip, origins, cookie=f"pinscope-serve-{opts.port}",
                  https=opts.scheme == "https" or bool(public and public.startswith("https")))
    read_only = opts.read_only if opts.read_only is not None else not is_loopback(opts.host)
    if not is_loopback(opts.host) and not opts.certfile:
        print(NO_TLS.format(host=opts.host, port=opts.port), file=sys.stderr)
    # the sessions run `python -m tui.cli`: make this checkout importable for them (installed or not)
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
