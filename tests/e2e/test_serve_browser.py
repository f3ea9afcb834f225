"""`pinscope serve -- demo` in a real browser: headless Chromium (Debian's) loads the page, the app's grid
reaches it, a key typed in the page reaches the app, and the page is photographed.

Driven over the DevTools protocol (tests/browser.py). Needs chromium: skips on a laptop without it,
fails in CI.
"""
import asyncio
import os
import shutil
import signal
import socket
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from browser import CHROMIUM, Browser
from helpers import need

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`pinscope serve` as a user starts it, in its own process group (so its app sessions go with it).
    Up once it printed the URL to open; `url` is that URL (with its token), `token` the token in it."""

    def __init__(self, *args: str, port: int | None = None, env: dict | None = None, tls=None) -> None:
        self.port = port or free_port()
        self.args = args
        self.env = env
        self.tls = tls  # an ssl context trusting the server's certificate, for https
        self.lines: list[str] = []

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def __enter__(self) -> "Served":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pinscope.cli", "serve", "--port", str(self.port), *self.args], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
            env={**os.environ, **(self.env or {})})
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        end = time.monotonic() + 30
        while not (m := re.search(r"open (https?://\S+)", self.output)):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.__exit__()
                raise AssertionError(f"pinscope serve did not come up:\n{self.output}")
            time.sleep(0.1)
        self.url = m.group(1)
        q = parse_qs(urlsplit(self.url).query).get("token")
        self.token = q[0] if q else None
        self.base = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"  # the server itself (not a proxy)
        self.index = self.get("/")[1]
        return self

    def page(self, path: str = "/") -> str:
        """`path` with this run's token added."""
        if self.token is None:
            return path
        return f"{path}{'&' if '?' in path else '?'}token={self.token}"

    def get(self, path: str, with_token: bool = True, **headers: str) -> tuple[int, str, dict]:
        """GET from the server: (status, body, headers); a refusal is a status, not an exception."""
        req = urllib.request.Request(self.base + (self.page(path) if with_token else path), headers=headers)
        end = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(req, timeout=5, context=self.tls) as r:
                    return r.status, r.read().decode(errors="replace"), dict(r.headers)
            except urllib.error.HTTPError as err:
                return err.code, err.read().decode(), dict(err.headers)
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    raise
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.reader.join(5)


async def test_serve_demo_in_headless_chromium(tmp_path):
    shots = Path(os.environ.get("PINSCOPE_KEEP_SHOTS", tmp_path))
    need(shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists(), "chromium not installed (apt-get install chromium)")
    with Served("--", "demo") as srv:
        assert srv.token and f'"ws://127.0.0.1:{srv.port}/ws/{srv.token}"' in srv.index

        async with asyncio.timeout(150):
            async with Browser() as b:
                await b.goto(srv.url)  # the URL as printed, token and all
                # the app's first screen reaches the page: the status line and the core grid of the first node
                text = await b.wait_text("live", "Socket 0", "NUMA 0", "density", timeout=60)
                assert "demo-xeon" in text or "xeon" in text
                # ... and xterm.js drew it (the page marks its body when the terminal got the first bytes)
                await b.wait_js("document.body.classList.contains('-first-byte')")
                await asyncio.sleep(1.0)  # let a frame or two paint
                before = await b.screenshot(shots / "grid.png")
                # a key typed in the page reaches the app: `?` opens the help, generated from the bindings
                mark = len(b.received)
                await b.eval("document.querySelector('.xterm-helper-textarea').focus()")
                await b.type("?")
                await b.wait_text("pinscope — keys", "grid.select", since=mark, timeout=30)
                assert any('"stdin", "?"' in s or '"stdin","?"' in s for s in b.sent)
                await asyncio.sleep(0.5)
                after = await b.screenshot(shots / "help.png")
                assert before != after  # the page shows what the key did
                assert before[:8] == b"\x89PNG\r\n\x1a\n" and len(before) > 20_000  # a drawn terminal, not a blank page
                # `q` in the help closes it; `q` again quits the app: the page says the session ended
                await b.type("qq")
                await b.wait_js("document.body.classList.contains('-closed')", timeout=30)

    assert f"pinscope serve: open http://127.0.0.1:{srv.port}/?token={srv.token}" in srv.output
    assert "without TLS" not in srv.output and "read-only" not in srv.output.split("open")[1].split("\n")[1]


def test_serve_elsewhere_warns_plainly(tmp_path):
    from pinscope.tui.serve import NO_TLS, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5") and not is_loopback("pinscope.example")
    with Served("--host", "0.0.0.0", "--", "demo") as srv:
        # the page names the address the browser came by, not the wildcard it listens on
        assert f'"ws://127.0.0.1:{srv.port}/ws/{srv.token}"' in srv.index
        # the URL printed names this machine, which a wildcard listener answers to
        assert urlsplit(srv.url).hostname == socket.gethostname()
    assert "without TLS" in srv.output and "read-only sessions" in srv.output
    assert "proxy_pass http://127.0.0.1:" in srv.output and "ssh -L" in srv.output
    assert NO_TLS.splitlines()[0].split("{")[0] in srv.output


def test_serve_page_loads_nothing_from_elsewhere():
    """The page linked Google Fonts (an offline war-room screen waits on it, and Google learns who watches):
    Roboto Mono now comes from this server, from the font files textual-serve ships."""
    import re

    with Served("--", "demo") as srv:
        assert "googleapis" not in srv.index and "gstatic" not in srv.index
        assert not re.search(r"(src|href)=\"https?://(?!127\.0\.0\.1)", srv.index), srv.index[:1500]
        fonts = re.findall(r'url\("([^"]+\.ttf)"\)', srv.index)
        assert fonts, srv.index[:1500]
        for url in fonts:  # as the page names them: /static/<token>/fonts/…
            with urllib.request.urlopen(url if url.startswith("http") else f"http://127.0.0.1:{srv.port}{url}",
                                        timeout=10) as r:
                assert r.status == 200 and len(r.read()) > 10000


@pytest.mark.parametrize("args, message", [
    (["--port", "abc", "--", "demo"], "pinscope serve: error: argument --port: a port is a number from 1 to 65535 (got abc)"),
    (["--", "snapshto", "local"], "pinscope serve: 'snapshto' is not a command or a target; did you mean the command "
                                  "'snapshot'? (a host of that name: write user@snapshto or snapshto:22)"),
    (["--", "h;reboot"], "pinscope serve: 'h;reboot': a host name is letters, digits, '.', '-' and '_' "
                         "('local', [user@]host[:port] or node/NAME)"),
    (["--", "--interval", "abc", "local"], "pinscope: error: argument --interval: 'abc' is not a number"),
    (["--", "demo", "--theme", "bogus"], "pinscope serve: no theme 'bogus'; the themes are dark, light, okabe-ito, warroom"),
    (["--", "--theme", "dark"], "pinscope serve: give a TARGET ('local', [user@]host[:port] or node/NAME), --inventory "
                                "or --kube after --, or demo"),
    (["--", "check", "local"], "pinscope serve: 'check' does not run in a browser; give the live view's arguments: "
                               "demo, --inventory F, TARGET..."),
])
def test_serve_refuses_bad_arguments_before_serving(args, message):
    from helpers import run_cli

    r = run_cli("serve", "--port", str(free_port()), *args, timeout=20)
    assert (r.returncode, r.stderr.strip()) == (2, message), r.stderr
    assert "open http" not in r.stderr and "Traceback" not in r.stderr


def test_serve_usage_errors():
    from helpers import run_cli

    r = run_cli("serve")
    assert r.returncode == 2 and "pinscope serve: give the pinscope arguments after --" in r.stderr
    r = run_cli("serve", "--public-url", "pinscope.example.com", "--", "demo")
    assert r.returncode == 2 and "http://… or https://…" in r.stderr
    with socket.socket() as s:  # a port that is taken: one plain line, no traceback
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = run_cli("serve", "--port", str(s.getsockname()[1]), "--", "demo", timeout=30)
    assert r.returncode == 1 and "cannot listen on 127.0.0.1:" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("serve", "--port", str(free_port()), "--certfile", "README.md", "--keyfile", "README.md", "--", "demo",
                timeout=30)
    assert r.returncode == 2 and "--certfile/--keyfile: not a certificate and its key in PEM" in r.stderr
    assert "Traceback" not in r.stderr and "open http" not in r.stderr
    r = run_cli("serve", "--certfile", "README.md", "--", "demo")
    assert r.returncode == 2 and "--certfile and --keyfile go together" in r.stderr
    r = run_cli("serve", "--allow-origin", "evil.example", "--", "demo")
    assert r.returncode == 2 and "--allow-origin 'evil.example': give an origin" in r.stderr


# ---------------------------------------------------------------- issue 23: who may drive the wall

def ws_url(srv: Served) -> str:
    """The websocket URL the page names (the page textual.js reads it from)."""
    m = re.search(r'data-session-websocket-url="([^"]+)"', srv.index)
    assert m, srv.index[:1500]
    return m.group(1)


async def handshake(url: str, tls=None, **headers: str) -> tuple[int, bytes]:
    """Open the app's websocket as a browser would (`?width=…&height=…` appended, as textual.js does):
    (101, the first bytes the app sent) or (the HTTP status it was refused with, b"")."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        try:
            async with session.ws_connect(f"{url}?width=100&height=30", headers=headers, ssl=tls or True) as ws:
                first = await asyncio.wait_for(ws.receive(), 60)
                return 101, first.data if isinstance(first.data, bytes) else b""
        except aiohttp.WSServerHandshakeError as err:
            return err.status, b""


@pytest.fixture(scope="module")
def served():
    with Served("--", "demo") as srv:
        yield srv


def test_the_page_wants_the_token(served):
    srv = served
    status, body, _ = srv.get("/", with_token=False)
    assert status == 403 and "token" in body and "data-session-websocket-url" not in body
    assert srv.token and len(srv.token) >= 16 and re.fullmatch(r"[A-Za-z0-9_-]+", srv.token)
    assert srv.token not in body
    # a wrong last character (the token is random: one in 64 ends in "x", and a loaded CI run's did, so
    # "...x" was the right token and the page came: 200)
    wrong = srv.token[:-1] + ("y" if srv.token.endswith("x") else "x")
    status, body, _ = srv.get(f"/?token={wrong}", with_token=False)
    assert status == 403 and srv.token not in body
    status, body, headers = srv.get("/")
    assert status == 200 and "data-session-websocket-url" in body and headers["Cache-Control"] == "no-store"
    # no cookie carries the token (a browser sends a cookie of 127.0.0.1 to every port of it, issue 34): the
    # one an earlier pinscope set is expired, and is no key
    assert srv.token not in headers.get("Set-Cookie", "") and "Max-Age=0" in headers["Set-Cookie"]
    assert srv.get("/", with_token=False, Cookie=f"pinscope-serve-{srv.port}={srv.token}")[0] == 403


def test_the_websocket_wants_the_token_and_its_own_origin(served):
    srv = served
    url = ws_url(srv)
    own = f"http://127.0.0.1:{srv.port}"
    # a page of another site opens the websocket (browsers send its Origin): refused before the 101
    assert asyncio.run(handshake(url, Origin="http://evil.example")) == (403, b"")
    assert asyncio.run(handshake(url, Origin=f"http://127.0.0.1:{srv.port + 1}")) == (403, b"")  # another port
    assert asyncio.run(handshake(url, Origin="null")) == (403, b"")  # a sandboxed frame, a file
    # without the token, or with a wrong one, even from the page's own origin
    bare = url.rsplit("/", 1)[0] if srv.token else url
    assert asyncio.run(handshake(bare, Origin=own)) == (403, b"")
    assert asyncio.run(handshake(f"{bare}/{'x' * 32}", Origin=own)) == (403, b"")
    # the page's own websocket: the app answers
    status, first = asyncio.run(handshake(url, Origin=own))
    assert status == 101 and first
    assert "refused" in srv.output and "evil.example" in srv.output


def test_the_log_has_no_token_and_no_traceback(served):
    """The server's stderr: no access log (it wrote every URL, token and all), and a malformed request from
    anyone is one escaped line, not a page of traceback with its locals and a raw escape sequence."""
    srv = served
    assert srv.get("/")[0] == 200
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a\x1b[2J\x1b]0;pwned\x07\r\n\r\n")
        assert s.recv(100).split(b" ")[1] == b"400"
    end = time.monotonic() + 20
    while "Error handling request" not in srv.output and time.monotonic() < end:
        time.sleep(0.1)
    line = next(ln for ln in srv.output.splitlines() if "Error handling request" in ln)
    assert line.startswith("pinscope serve: ") and "\\x1b[2J" in line
    assert "\x1b" not in srv.output and "\x07" not in srv.output and "Traceback" not in srv.output
    assert srv.output.count(srv.token) == 1  # the URL printed to open, and nowhere else


def test_a_foreign_host_is_refused(served):
    """DNS rebinding: evil.example rebound to 127.0.0.1 sends `Host: evil.example`; it gets neither the page
    (which named its websocket after the Host) nor the websocket."""
    srv = served
    status, body, _ = srv.get("/", Host=f"evil.example:{srv.port}")
    assert status == 403 and "ws://evil.example" not in body
    url = ws_url(srv)
    assert asyncio.run(handshake(url, Host=f"evil.example:{srv.port}",
                                 Origin=f"http://evil.example:{srv.port}")) == (403, b"")
    for name in ("localhost", "127.0.0.1"):
        status, body, _ = srv.get("/", Host=f"{name}:{srv.port}")
        assert status == 200 and f"ws://{name}:{srv.port}/ws/" in body


def test_allowed_hosts_and_origins_and_a_fixed_token():
    """--allow-host / --allow-origin widen the defaults, as --public-url does (a TLS-terminating proxy in
    front: the browser's Origin and maybe its Host are the proxy's); the token comes from
    PINSCOPE_SERVE_TOKEN."""
    token = "wall-screen-token-0123456789"
    with Served("--allow-host", "wall.example", "--allow-origin", "https://ops.example",
                "--public-url", "https://pinscope.example.com/", "--", "demo",
                env={"PINSCOPE_SERVE_TOKEN": token}) as srv:
        assert srv.token == token and srv.url == f"https://pinscope.example.com/?token={token}"
        assert f'"wss://pinscope.example.com/ws/{token}"' in srv.index  # the page names the proxy's address
        for host in ("wall.example", "pinscope.example.com"):
            assert srv.get("/", Host=host)[0] == 200
        assert srv.get("/", Host=f"other.example:{srv.port}")[0] == 403
        url = f"ws://127.0.0.1:{srv.port}/ws/{token}"  # where the proxy forwards the browser's websocket
        assert asyncio.run(handshake(url, Origin="https://pinscope.example.com"))[0] == 101
        assert asyncio.run(handshake(url, Origin="https://ops.example"))[0] == 101
        assert asyncio.run(handshake(url, Origin="http://ops.example"))[0] == 403  # another scheme: another origin
        assert asyncio.run(handshake(url, Origin="https://evil.example"))[0] == 403
    assert token in srv.output  # printed, as the URL to open


def test_a_token_too_weak_is_refused():
    from helpers import run_cli

    r = run_cli("serve", "--port", str(free_port()), "--token", "short", "--", "demo", timeout=20)
    assert r.returncode == 2 and r.stderr.startswith("pinscope serve: --token: a token is 16 to 256") and "open" not in r.stderr


def test_tls_with_certfile_and_keyfile(tmp_path):
    import ssl

    need(shutil.which("openssl") is not None, "openssl not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    tls = ssl.create_default_context(cafile=str(cert))
    with Served("--certfile", str(cert), "--keyfile", str(key), "--", "demo", tls=tls) as srv:
        assert srv.url.startswith(f"https://127.0.0.1:{srv.port}/?token=")
        assert f'"wss://127.0.0.1:{srv.port}/ws/{srv.token}"' in srv.index
        status, _, headers = srv.get("/")
        assert status == 200 and srv.token not in headers.get("Set-Cookie", "")
        status, first = asyncio.run(handshake(ws_url(srv), tls=tls, Origin=f"https://127.0.0.1:{srv.port}"))
        assert status == 101 and first
        assert asyncio.run(handshake(ws_url(srv), tls=tls, Origin=f"http://127.0.0.1:{srv.port}"))[0] == 403


async def foreign_page_opens(b: Browser, url: str, mark: int) -> None:
    """Chromium on a page served from another port (another origin) opens `url`: the socket never opens
    and no byte of the app arrives."""
    from aiohttp import web

    page = ("<html><body><script>document.title = 'trying';"
            f"const ws = new WebSocket({url!r} + '?width=80&height=24');"
            "ws.onopen = () => { document.title = 'open'; };"
            "ws.onclose = () => { if (document.title !== 'open') document.title = 'refused'; };"
            "</script></body></html>")
    async def evil(request: web.Request) -> web.Response:
        return web.Response(text=page, content_type="text/html")

    app = web.Application()
    app.router.add_get("/", evil)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        await b.goto(f"http://127.0.0.1:{port}/")
        await b.wait_js("['open', 'refused'].includes(document.title)", timeout=30)
        assert await b.eval("document.title") == "refused"
        assert len(b.received) == mark
    finally:
        await runner.cleanup()


async def test_read_only_wall_in_the_browser(tmp_path):
    """Beyond 127.0.0.1 the sessions are read-only by default: `s` in the page writes no file on the serving
    machine and says so. And the page without the token shows no terminal."""
    need(shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists(), "chromium not installed (apt-get install chromium)")
    shots = tmp_path / "shots"
    with Served("--host", "0.0.0.0", "--", "demo", env={"PINSCOPE_SCREENSHOTS": str(shots)}) as srv:

        async with asyncio.timeout(150):
            async with Browser(width=1200, height=800) as b:
                await b.goto(srv.base + srv.page("/"))
                await b.wait_text("live", "Socket 0", timeout=60)
                await b.wait_js("document.body.classList.contains('-first-byte')")
                mark = len(b.received)
                await b.eval("document.querySelector('.xterm-helper-textarea').focus()")
                await b.type("s")
                await b.wait_text("read-only", since=mark, timeout=30)
                await b.type("e")
                await b.type("q")  # keys are handled in order: the page closes after `e` was refused
                await b.wait_js("document.body.classList.contains('-closed')", timeout=30)
                # the same page without the token: the refusal, no terminal, no websocket
                mark = len(b.received)
                await b.send("Network.clearBrowserCookies")
                await b.goto(f"http://127.0.0.1:{srv.port}/")
                await b.wait_js("document.body.innerText.includes('token')", timeout=30)
                assert await b.eval("document.getElementById('terminal') === null")
                assert len(b.received) == mark
                # a page of another site that knows even the token: Chromium sends its Origin, the server refuses
                await foreign_page_opens(b, ws_url(srv), mark)

    assert not shots.exists() or not any(shots.iterdir())
    assert "a websocket from another origin 'http://127.0.0.1:" in srv.output  # refused for that reason


# ---------------------------------------------------------------- issue 34: the token stays with this server

class Recorder:
    """A plain HTTP server on another port of 127.0.0.1 (another user's dev server, say): it answers every
    path with a small page and keeps each request's line and headers."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __aenter__(self) -> "Recorder":
        from aiohttp import web

        async def any_path(request: web.Request) -> web.Response:
            self.seen.append("\n".join([f"{request.method} {request.raw_path}",
                                         *(f"{k}: {v}" for k, v in request.headers.items())]))
            return web.Response(text="<html><body>another server</body></html>", content_type="text/html")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", any_path)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        self.port = free_port()
        await web.TCPSite(self.runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.runner.cleanup()


async def test_the_token_reaches_no_other_server_on_the_host():
    """Cookies are not kept apart by port: the page's cookie (`pinscope-serve-PORT=<token>`, Path=/) went
    with every request of this browser to any server on 127.0.0.1. Chromium opens the printed URL, the wall
    works (the websocket connects, the app draws, a reload draws again); then the same browser (same
    profile) visits another server on another port of 127.0.0.1, at the paths the wall uses: no request it
    receives carries the token, in its line or in any header."""
    need(shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists(), "chromium not installed (apt-get install chromium)")
    with Served("--", "demo") as srv:

        async with asyncio.timeout(150):
            async with Browser() as b, Recorder() as other:
                await b.goto(srv.url)
                await b.wait_text("live", "Socket 0", timeout=60)
                await b.wait_js("document.body.classList.contains('-first-byte')")
                mark = len(b.received)  # a reload (the URL in the address bar) draws the app again
                await b.send("Page.reload")
                await b.wait_text("live", "Socket 0", since=mark, timeout=60)
                await b.wait_js("document.body.classList.contains('-first-byte')")
                for path in ("/", "/ws/", "/static/js/textual.js", "/download/x", "/?token="):
                    n = len(other.seen)
                    await b.goto(f"http://127.0.0.1:{other.port}{path}")
                    end = time.monotonic() + 30
                    while len(other.seen) == n and time.monotonic() < end:
                        await asyncio.sleep(0.1)
                    # and from that server's page: a fetch to this server's address with credentials
                    await b.eval(f"fetch('http://127.0.0.1:{other.port}/fetched', {{credentials: 'include'}})")
                end = time.monotonic() + 30
                while sum("/fetched" in s for s in other.seen) < 5 and time.monotonic() < end:
                    await asyncio.sleep(0.1)
                seen = list(other.seen)

    assert len(seen) >= 10, seen
    for request in seen:
        assert srv.token not in request, request
        assert "pinscope-serve" not in request, request
    # the page asks this server for nothing it refuses (a favicon without the token was a refusal a load)
    assert "refused" not in srv.output, srv.output


def raw_request(port: int, head: bytes) -> bytes:
    """`head` sent as it is (no client tidies the path): the status line of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        return s.recv(200).split(b"\r\n")[0]


def test_no_log_line_carries_a_token():
    """A refusal line printed the path as it came: `//ws/TOKEN` (or `/./ws/`, `/TOKEN`, a percent-encoded
    `w`...) wrote the whole token on stderr, and aiohttp's own line for a malformed request quoted the request
    line, token and all. Every shape here is refused or answered, and no line names the token (nor a piece of
    it), nor a wrong token; a wrong token is said to be wrong."""
    import secrets

    wrong = secrets.token_urlsafe(24)
    with Served("--", "demo") as srv:
        t, p = srv.token, srv.port
        enc = "".join(f"%{ord(c):02X}" for c in t)  # every character percent-encoded
        paths = [f"//ws/{t}", f"/ws/{t}/", f"/ws//{t}", f"/./ws/{t}", f"/static/../ws/{t}", f"/%77s/{t}",
                 f"/ws/{enc}", f"/ws/%25{t[:2]}{t}", f"/{t}", f"/ws/x{t}", f"/static/{t}", f"/static/{t}/../../ws/{t}",
                 f"/static/{t}/nothing/{t}", f"/{t[:16]}/{t[16:]}", f"/ws/{t};x", f"/ws/{t}%00", f"/download/{t}",
                 f"/ws/{wrong}", f"/?token={wrong}", f"/static/{wrong}/js/textual.js", "/ws/", "/"]
        for path in paths:
            status = raw_request(p, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{p}\r\n\r\n".encode())
            assert status.startswith(b"HTTP/1.1 4"), (path, status)
        for head in (f"GET /ws/{t} HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",  # aiohttp's parser quotes the line
                     f"GET /ws/{t}\x01 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                     f"GET /\xff/{wrong} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                     f"GET /?token={t} HTTP/1.1\r\nHost: 127.0.0.1\r\nX: \x01{t}\r\n\r\n",
                     f"GET /ws/{t} HTTP/1.1\r\nHost: {t}\r\n\r\n",  # a foreign Host, and the right token
                     f"GET http://127.0.0.1:{p}/ws/{t} HTTP/1.1\r\nHost: evil.example\r\n\r\n",
                     f"{wrong} /ws/{t} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"):  # a method of token characters
            assert raw_request(p, head.encode("latin-1")).startswith(b"HTTP/1."), head
        # every line has come (the last refusal or error); then the whole stderr
        end = time.monotonic() + 20
        while srv.output.count("\npinscope serve: ") < len(paths) + 7 and time.monotonic() < end:
            time.sleep(0.1)
    banner, log = srv.output.split("\n", 1)
    assert t in banner and "Traceback" not in log, srv.output
    for secret in (t, wrong):
        for i in range(len(secret) - 7):
            assert secret[i:i + 8] not in log, (secret[i:i + 8], log)
    assert "refused GET '/ws/...' from 127.0.0.1: a websocket with a wrong token" in log
    assert "refused GET '/' from 127.0.0.1: a page request with a wrong token" in log
    assert "refused GET '/ws/' from 127.0.0.1: a websocket without the token" in log
    assert "refused GET '/' from 127.0.0.1: a page request without the token" in log


def test_static_files_want_the_token_and_are_only_the_pages_own():
    """`/static/` listed textual-serve's static directory to anyone. Now the page's own files (its script,
    style sheet, fonts and background) come from `/static/<token>/…` and nothing else does: no listing, no
    other file, nothing without the token."""
    with Served("--", "demo") as srv:
        found = re.findall(r'(?:src|href)="([^"]*/static/[^"]+)"|url\("([^"]+)"\)', srv.index)
        urls = {u for pair in found for u in pair if u}
        names = {urlsplit(u).path.split(f"/static/{srv.token}/", 1)[1] for u in urls}
        assert names == {"css/xterm.css", "js/textual.js", "fonts/RobotoMono-VariableFont_wght.ttf",
                         "fonts/RobotoMono-Italic-VariableFont_wght.ttf", "images/background.png"}, urls
        for name in names:
            status, _, headers = srv.get(f"/static/{srv.token}/{name}", with_token=False)
            assert status == 200 and headers["Cache-Control"] == "no-store", name
            assert srv.get(f"/static/{name}", with_token=False)[0] == 403, name
            assert srv.get(f"/static/{'x' * 32}/{name}", with_token=False)[0] == 403, name
        for path in ("/static/", "/static", "/static/css/", "/static/js/textual.js"):
            status, body, _ = srv.get(path, with_token=False)
            assert status == 403 and "Index of" not in body, path
        for path in (f"/static/{srv.token}/", f"/static/{srv.token}/js/", f"/static/{srv.token}/../server.py",
                     f"/static/{srv.token}/%2e%2e/server.py", f"/static/{srv.token}/js/../../server.py"):
            assert raw_request(srv.port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()) \
                == b"HTTP/1.1 404 Not Found", path


async def test_the_browser_leaves_nothing_in_tmp(tmp_path, monkeypatch):
    """Issue 34, item 22: every Browser left `$TMPDIR/org.chromium.Chromium.XXXXXX` (Chromium's
    SingletonSocket, not removed when it is stopped by a signal) behind, and a Chromium that failed to start
    left its profile. With TMPDIR a directory of the test's own: nothing is left in it, either way."""
    import tempfile

    import browser as browser_mod

    need(shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists(), "chromium not installed (apt-get install chromium)")
    # short: Chromium's socket under TMPDIR must fit a socket's path (108 bytes); tmp_path's is too long
    tmp = Path(tempfile.mkdtemp(prefix="ps-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile reads TMPDIR once: read it again

    async def open_a_page() -> None:
        async with Browser() as b:
            await b.goto("data:text/html,<p>hello</p>")
            await b.wait_js("document.body && document.body.innerText === 'hello'")

    try:
        await asyncio.wait_for(open_a_page(), 90)
        assert sorted(p.name for p in tmp.iterdir()) == []
        monkeypatch.setattr(browser_mod, "CHROMIUM", "/bin/false")  # a browser that does not start
        with pytest.raises(RuntimeError, match="chromium exited"):
            await asyncio.wait_for(open_a_page(), 90)
        assert sorted(p.name for p in tmp.iterdir()) == []
        # a TMPDIR too long for Chromium's socket (pytest's tmp_path): a short directory of its own, removed
        monkeypatch.setattr(browser_mod, "CHROMIUM", CHROMIUM)
        long = tmp_path / ("x" * 40)
        long.mkdir()
        monkeypatch.setenv("TMPDIR", str(long))
        monkeypatch.setattr(tempfile, "tempdir", None)
        used: list[str | None] = []

        async def with_a_long_tmpdir() -> None:
            async with Browser() as b:
                used.append(b.own_tmp)
                assert await b.eval("1 + 1") == 2

        await asyncio.wait_for(with_a_long_tmpdir(), 90)
        assert used[0] and not os.path.lexists(used[0]) and list(long.iterdir()) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
