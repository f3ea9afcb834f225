"""Who may use `pinscope serve` (issue 23): the request guard in front of textual-serve's routes.

textual-serve checks nothing: any web page the operator visits could open its websocket (browsers do not
apply the same-origin policy to websockets) and drive the wall, and a name rebound to 127.0.0.1 (DNS
rebinding) could load the page itself. Every request passes the `Guard` (one aiohttp middleware):

- the `Host` header names this server: the listen address, the loopback names, the --public-url's host,
  --allow-host (a wildcard listen address also answers to this machine's names and to IP literals, which
  no rebinding can produce);
- the per-run token (random, printed as the URL to open, like Jupyter's; `--token` or
  PINSCOPE_SERVE_TOKEN fix one) is on the page's URL (`?token=`) and in the websocket's path (the page
  writes it there), compared in constant time. No cookie carries it: browsers do not keep cookies apart by
  port, so a cookie of 127.0.0.1:8000 went with every request to any other server on 127.0.0.1 (issue 34);
  a reload and the page's Restart button keep the URL, token and all;
- a websocket's `Origin`, when it has one (browsers always send it), is this server's own origin, the
  --public-url's, or an --allow-origin.

- the page's own files (its script, style sheet, fonts) want it too, in their path: `/static/<token>/…`.

A refusal is 403 (a websocket never gets its 101) and one line on stderr. No log line carries a token,
the right one or a wrong one, whatever shape the request gave it (`redact`, issue 34). The checks are pure
(`Guard`); the middleware only asks them.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
import re
import secrets
import socket
import sys
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from aiohttp import web

TOKEN_ENV = "PINSCOPE_SERVE_TOKEN"
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]{16,256}")  # fits a URL path and query unescaped
TOKEN_RUN = re.compile(r"[A-Za-z0-9._~-]{16,}")  # as long as the shortest token: one, right or wrong
URL_PATH = re.compile(r"/[^\s'\"]*")  # a URL path in a log line (aiohttp quotes a malformed request's line)
PIECE = 6  # no 6 characters of this run's token in a row reach a log line
HIDDEN = "..."
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::", "")


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
    if colon and not port.isdecimal():
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


def _decoded(text: str) -> str:
    """Text as a server reads it: percent-decoded (three times: `%2577` is `%77` is `w`), then NFKC (a
    full-width letter is the letter)."""
    for _ in range(3):
        text = unquote(text, errors="replace")
    return unicodedata.normalize("NFKC", text)


def _without_pieces(text: str, token: str) -> str:
    """`text` with every run of characters that is a piece of `token` (PIECE long or more) hidden."""
    grams = {token[i:i + PIECE] for i in range(len(token) - PIECE + 1)}
    cut = [False] * len(text)
    for i in range(len(text) - PIECE + 1):
        if text[i:i + PIECE] in grams:
            cut[i:i + PIECE] = [True] * PIECE
    out: list[str] = []
    for i, ch in enumerate(text):
        if not cut[i]:
            out.append(ch)
        elif i == 0 or not cut[i - 1]:
            out.append(HIDDEN)
    return "".join(out)


def hide_tokens(text: str, token: str) -> str:
    """What a request said (its path, its method) as a log line may show it: decoded as the server reads
    it, then every run of token characters as long as a token (this run's, or a wrong one: a typo of the
    right one) and every piece of this run's token hidden."""
    return _without_pieces(TOKEN_RUN.sub(HIDDEN, _decoded(text)), token)


def redact(text: str, token: str) -> str:
    """Any log line: each URL path in it as `hide_tokens` shows it, and no piece of this run's token
    anywhere (a Host or Origin header, a header aiohttp quotes)."""
    return _without_pieces(_decoded(URL_PATH.sub(lambda m: hide_tokens(m.group(), token), text)), token)


def _said(value: object) -> str:
    """A header's value in a log line: bounded, escapes shown, never raw on the terminal."""
    return ascii(str(value)[:120])


def guard_middleware(guard: Guard) -> Callable:
    @web.middleware
    async def check(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]):
        def refuse(why: str, tell: str) -> web.Response:
            method, path = hide_tokens(request.method, guard.token), hide_tokens(request.rel_url.raw_path, guard.token)
            line = f"refused {method} {_said(path)} from {request.remote}: {why}"
            print(f"pinscope serve: {_without_pieces(line, guard.token)}", file=sys.stderr, flush=True)
            return web.Response(status=403, text=f"pinscope serve: {tell}\n",
                                headers={"X-Content-Type-Options": "nosniff"})

        def lacking(what: str, given: str | None) -> str:
            return f"{what} {'with a wrong token' if given else 'without the token'}"

        if not guard.host_allowed(request.headers.get("Host")):
            return refuse(f"Host {_said(request.headers.get('Host'))} is not a name this server answers to "
                          "(--allow-host)", "this server does not answer to that host name (--allow-host)")
        # the path as the router reads it (decoded): /ws/<token>, /static/<token>/<file>, else the page's ?token=
        first, _, rest = request.path[1:].partition("/")
        in_path = rest.partition("/")[0]
        shaped = in_path if TOKEN_SHAPE.fullmatch(in_path) else None  # `/static/js/…` holds no token at all
        if first == "ws":
            origin, own = request.headers.get("Origin"), f"{request.scheme}://{request.host}"
            if not guard.origin_allowed(origin, own):
                return refuse(f"a websocket from another origin {_said(origin)} (--allow-origin)",
                              "a websocket from another site is refused (--allow-origin)")
            if not guard.token_matches(in_path):
                return refuse(lacking("a websocket", shaped), "no valid token")
        elif first == "static":
            if not guard.token_matches(in_path):
                return refuse(lacking("a static file", shaped), "no valid token")
        elif not guard.token_matches(query := request.query.get("token")):
            return refuse(lacking("a page request", query),
                          "open the URL with the token that `pinscope serve` printed (…/?token=…)")
        response = await handler(request)
        if not response.prepared:  # a page, a file, a refusal (a websocket has begun already)
            response.headers.update({"Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
                                     "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"})
        return response

    return check
