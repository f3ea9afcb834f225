"""The close of node/NAME's exec stream (collectors/transport/kubeexec.py) whatever moment the server ends it.

A real API server closes the websocket as soon as the exec'd command ends; its end can reach the connection
before the stream's reader has taken it (CI on 74db307, tests/cluster's harness: aiohttp's "Cannot write to
closing transport"). The close sent v5's stdin close ([255, 0]) after checking only `ws.closed`, and raised:
the wait for what remains was skipped. Here a small real aiohttp websocket server plays the API's exec and
ends the stream at each moment; the close must be quiet and complete every time: stdin's close, what remains
read (the stdout sent, the Status), the websocket and the session closed.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest
from aiohttp import web
from kubernetes.client import Configuration

from pinscope.collectors.errors import ProbeFailed
from pinscope.collectors.transport.kubeexec import CLOSE, STDIN, V4, V5, ExecStream

OUT = b"hello from the probe\n"
SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}


async def _output(ws: web.WebSocketResponse) -> None:
    """The command's output and its end, as the API sends them: stdout (channel 1), then the Status (3)."""
    await ws.send_bytes(bytes([1]) + OUT)
    await ws.send_bytes(bytes([3]) + json.dumps(SUCCESS).encode())


async def _ends_at_once(request: web.Request, ws: web.WebSocketResponse) -> None:
    """The command ends at once and the connection ends with it, before the client's reader sees the end."""
    await _output(ws)
    assert request.transport is not None
    request.transport.close()


async def _closes_at_once(request: web.Request, ws: web.WebSocketResponse) -> None:
    """The command ends at once; the websocket is closed in order (close frame, the client's answer)."""
    await _output(ws)
    await ws.close()


async def _ends_on_stdins_close(request: web.Request, ws: web.WebSocketResponse) -> None:
    """The probe reads "q" or stdin's end (v5: [255, 0]; v4: the websocket's end) and exits: the orderly end."""
    async for msg in ws:
        if msg.type is not web.WSMsgType.BINARY or msg.data in (bytes([CLOSE, STDIN]), bytes([STDIN]) + b"q\n"):
            break
    await _output(ws)
    await ws.close()


@pytest.fixture
async def exec_api() -> AsyncIterator[Callable]:
    """start(behaviour, protocols) -> the exec URL of a websocket server that runs `behaviour`."""
    runners: list[web.AppRunner] = []
    ended: list[asyncio.Future] = []

    async def start(behaviour, protocols=(V5, V4)) -> str:
        done = asyncio.get_running_loop().create_future()
        ended.append(done)

        async def handler(request: web.Request) -> web.WebSocketResponse:
            ws = web.WebSocketResponse(protocols=protocols)
            await ws.prepare(request)
            try:
                await behaviour(request, ws)
            finally:
                done.set_result(True)
            return ws

        app = web.Application()
        app.router.add_get("/api/v1/namespaces/pinscope/pods/p/exec", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        return f"http://{host}:{port}/api/v1/namespaces/pinscope/pods/p/exec?command=sh&stdin=true"

    yield start
    for runner in runners:
        await runner.cleanup()
    assert all(f.done() for f in ended)  # each exec ran to its end


def _stream() -> ExecStream:
    cfg = Configuration()
    cfg.host = "http://127.0.0.1"
    return ExecStream(cfg, "node/x: debug pod pinscope/p", "pinscope")


async def _connection_lost(stream: ExecStream) -> None:
    """Until the connection has ended, one turn of the loop at a time: its end has reached the connection,
    and the stream's reader, a task of its own, has not taken it yet (the racy moment)."""
    assert stream.ws is not None
    for _ in range(1000):
        if stream.ws.get_extra_info("socket") is None:
            return
        await asyncio.sleep(0)
    raise AssertionError("the server's end never reached the connection")


async def _close_completely(stream: ExecStream, quit: bool) -> None:
    """kube.py's close: stdin's close, then the stream's; what remains is read before the session goes."""
    session = stream.session
    await stream.close_stdin(2.0, quit=quit)
    assert await stream.reader.readexactly(len(OUT)) == OUT  # the stdout sent before the end, all of it
    assert stream.reader.at_eof()  # the stream's end was read: close_stdin waited for it
    assert stream.status == SUCCESS and stream.why_ended() == ""
    await stream.aclose()
    assert session is not None and session.closed and stream.ws is None


@pytest.mark.parametrize("quit", [False, True], ids=["busy", "idle"])
async def test_an_end_that_reaches_the_connection_first_closes_quietly(exec_api, quit):
    """The racy moment, made deterministic: the server's end has closed the connection, `ws.closed` is still
    False. On 74db307 a busy probe's close (no "q" first) raised ClientConnectionResetError from the raw
    send of [255, 0], and skipped the wait for what remains."""
    stream = _stream()
    await stream.open(await exec_api(_ends_at_once), 5.0)
    assert stream.protocol == V5
    await _connection_lost(stream)
    assert stream.ws is not None and not stream.ws.closed, "not the racy moment: the reader saw the end first"
    await _close_completely(stream, quit)


@pytest.mark.parametrize("quit", [False, True], ids=["busy", "idle"])
async def test_a_websocket_closed_before_stdins_close_closes_quietly(exec_api, quit):
    stream = _stream()
    await stream.open(await exec_api(_closes_at_once), 5.0)
    for _ in range(1000):
        if stream.ws is not None and stream.ws.closed:
            break
        await asyncio.sleep(0.01)
    await _close_completely(stream, quit)


@pytest.mark.parametrize("protocols", [(V5, V4), (V4,)], ids=["v5", "v4"])
@pytest.mark.parametrize("quit", [False, True], ids=["busy", "idle"])
async def test_an_end_on_stdins_close_closes_quietly(exec_api, quit, protocols):
    """The orderly end: the probe exits on stdin's end (v5's [255, 0]; v4's "q", or the websocket's end)."""
    stream = _stream()
    await stream.open(await exec_api(_ends_on_stdins_close, protocols), 5.0)
    assert stream.protocol == protocols[0]
    if protocols == (V4,) and not quit:  # v4 cannot half-close: only the websocket's end ends the probe
        await stream.close_stdin(0.2, quit=quit)
        await stream.aclose()
        return
    await _close_completely(stream, quit)


async def test_a_send_after_the_connections_end_is_a_probe_failure(exec_api):
    """A request written after the server's end (the racy moment) is the probe's failure, a state the
    transport reports, never aiohttp's exception."""
    stream = _stream()
    await stream.open(await exec_api(_ends_at_once), 5.0)
    await _connection_lost(stream)
    with pytest.raises(ProbeFailed, match="exec stream"):
        stream.writer.write(b"s\n")
        await stream.writer.drain()
    await stream.aclose()
