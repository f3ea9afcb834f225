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
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from browser import CHROMIUM, Browser
from helpers import need

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`pinscope serve` as a user starts it, in its own process group (so its app sessions go with it)."""

    def __init__(self, *args: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.args = args

    def __enter__(self) -> "Served":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "serve", "--port", str(self.port), *self.args], cwd=REPO,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        end = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2) as r:
                    self.index = r.read().decode()
                    return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > end:
                    self.__exit__()
                    raise AssertionError(f"pinscope serve did not come up:\n{self.output}") from None
                time.sleep(0.2)

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.output = self.proc.stdout.read()


def test_serve_demo_in_headless_chromium(tmp_path):
    shots = Path(os.environ.get("PINSCOPE_KEEP_SHOTS", tmp_path))
    need(shutil.which(CHROMIUM) is not None or Path(CHROMIUM).exists(), "chromium not installed (apt-get install chromium)")
    with Served("--", "demo") as srv:
        assert f"ws://127.0.0.1:{srv.port}/ws" in srv.index

        async def drive():
            async with Browser() as b:
                await b.goto(f"http://127.0.0.1:{srv.port}/")
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

        asyncio.run(asyncio.wait_for(drive(), 150))
    assert "pinscope serve: open http://127.0.0.1:" in srv.output
    assert "NO AUTHENTICATION" not in srv.output


def test_serve_elsewhere_warns_plainly(tmp_path):
    from tui.serve import NO_AUTH, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.5") and not is_loopback("pinscope.example")
    with Served("--host", "0.0.0.0", "--", "demo") as srv:
        # the page names the address the browser came by, not the wildcard it listens on
        assert f"ws://127.0.0.1:{srv.port}/ws" in srv.index
    assert "NO AUTHENTICATION" in srv.output
    assert "proxy_pass http://127.0.0.1:" in srv.output and "ssh -L" in srv.output
    assert NO_AUTH.splitlines()[0].split("{")[0] in srv.output


def test_serve_page_loads_nothing_from_elsewhere():
    """The page linked Google Fonts (an offline war-room screen waits on it, and Google learns who watches):
    Roboto Mono now comes from this server, from the font files textual-serve ships."""
    import re

    with Served("--", "demo") as srv:
        assert "googleapis" not in srv.index and "gstatic" not in srv.index
        assert not re.search(r"(src|href)=\"https?://(?!127\.0\.0\.1)", srv.index), srv.index[:1500]
        fonts = re.findall(r'url\("([^"]+\.ttf)"\)', srv.index)
        assert fonts, srv.index[:1500]
        for url in fonts:
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
