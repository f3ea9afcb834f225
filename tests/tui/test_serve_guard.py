"""`pinscope serve`'s request guard as pure functions (issue 23); tests/e2e/test_serve_browser.py tries it on
the running server and in a real browser."""
import socket

import pytest

from pinscope.tui.serveguard import Guard, answer_names, host_name, make_token, origin_of


def test_host_name_reads_the_host_header():
    assert host_name("127.0.0.1:8000") == "127.0.0.1" and host_name("LocalHost") == "localhost"
    assert host_name("[::1]:8000") == "::1" and host_name("[::1]") == "::1"
    for junk in (None, "", "::1", "[::1", "[::1]x", "a:b", ":8000"):
        assert host_name(junk) is None, junk


def test_origins_compare_scheme_host_and_port():
    assert origin_of("http://127.0.0.1:8000") == origin_of("HTTP://127.0.0.1:8000/") == "http://127.0.0.1:8000"
    assert origin_of("https://wall.example") == "https://wall.example:443"
    assert origin_of("http://[::1]:8000") == "http://[::1]:8000"
    for not_one in ("null", "file://", "ws://x", "", None, "http://x:99999"):
        assert origin_of(not_one) is None, not_one


def test_answer_names():
    hosts, any_ip = answer_names("127.0.0.1", None)
    assert hosts == {"localhost", "127.0.0.1", "::1"} and not any_ip
    hosts, _ = answer_names("10.0.0.5", "https://Pinscope.example.com/", ("Wall.example",))
    assert {"10.0.0.5", "pinscope.example.com", "wall.example"} <= hosts
    hosts, any_ip = answer_names("0.0.0.0", None)
    assert any_ip and socket.gethostname().lower() in hosts


def test_guard():
    g = Guard("t" * 20, frozenset({"localhost", "127.0.0.1"}), origins=frozenset({"https://ops.example:443"}))
    assert g.host_allowed("localhost:8000") and not g.host_allowed("evil.example:8000")
    assert not g.host_allowed("10.0.0.5")  # an IP literal only for a wildcard listener
    assert Guard("t" * 20, frozenset(), any_ip=True).host_allowed("10.0.0.5:8000")
    own = "http://127.0.0.1:8000"
    assert g.origin_allowed(None, own) and g.origin_allowed("http://127.0.0.1:8000", own)
    assert g.origin_allowed("https://ops.example", own)
    for o in ("http://evil.example", "http://127.0.0.1:8001", "null", "https://127.0.0.1:8000"):
        assert not g.origin_allowed(o, own), o
    assert g.token_matches("t" * 20) and not g.token_matches("t" * 19) and not g.token_matches(None)
    assert not g.token_matches("é" * 20)


def test_tokens(monkeypatch):
    monkeypatch.delenv("PINSCOPE_SERVE_TOKEN", raising=False)
    a, b = make_token(), make_token()
    assert a != b and len(a) >= 32
    monkeypatch.setenv("PINSCOPE_SERVE_TOKEN", "from-the-environment-1")
    assert make_token() == "from-the-environment-1" and make_token("given-on-the-command-line") == "given-on-the-command-line"
    for bad in ("short", "has space in it 12345", "x" * 300, "quote'quote'quote'q"):
        with pytest.raises(ValueError):
            make_token(bad)


def test_the_server_will_not_start_without_its_guard(tmp_path):
    """Fail closed: should textual-serve build its app some other way (an upgrade), the guard's absence stops
    the server at start-up instead of serving unguarded."""
    import asyncio

    from aiohttp import web

    from pinscope.tui.serve import PinscopeServer, ServeOptions

    guard = Guard("t" * 20, frozenset({"localhost"}))
    server = PinscopeServer("true", ServeOptions(), guard, "banner", tmp_path)
    with pytest.raises(RuntimeError, match="guard is not installed"):
        asyncio.run(server.on_startup(web.Application()))
    app = asyncio.run(server._make_app())
    assert server.checker in app.middlewares and "/ws/{token}" in [r.resource.canonical for r in app.router.routes()]


def test_no_token_survives_redaction():
    """Issue 34: a log line showed the path as it came (`//ws/<token>`). Whatever the shape, decoded as the
    server reads it, neither this run's token, nor a piece of it, nor a wrong token is left."""
    from pinscope.tui.serveguard import hide_tokens, redact

    t, wrong = "Zq3_x-Lk9PvA7mN2bC8dE4fG", "Yh6TrW1sQ0uI5oP3aS7dF9gJ"
    enc = "".join(f"%{ord(c):02X}" for c in t)
    shapes = [f"//ws/{t}", f"/./ws/{t}", f"/%77s/{t}", f"/ws/{enc}", f"/ws/%25{ord(t[0]):02X}{t[1:]}", f"/{t}",
              f"/ws/x{t}y", f"/ws/{t[:12]}/{t[12:]}", f"/ws/{t[:12]}%00{t[12:]}", f"/ws/{wrong}", f"/?token={wrong}",
              "/ws/" + "".join(chr(0xFF00 + ord(c) - 0x20) if c.isalnum() else c for c in t)]  # full-width letters
    for shape in shapes:
        for shown in (hide_tokens(shape, t), redact(f"Bad status line: b'GET {shape} HTTP/9.9'", t),
                      redact(f"Invalid header value char: b'X: \\x01{t}'", t)):
            for secret in (t, wrong):
                assert not any(secret[i:i + 6] in shown for i in range(len(secret) - 5)), (shape, shown)
    assert hide_tokens(f"//ws/{t}", t) == "//ws/..." and hide_tokens("/static/js/textual.js", t) == "/static/js/textual.js"
    # what is no token is left as it is: the operator reads which Host or Origin was refused
    assert redact("Host 'pinscope-wall.example.com' is not a name", t) == "Host 'pinscope-wall.example.com' is not a name"
