"""The exec stream of the Kubernetes API: a websocket carrying stdin/stdout/stderr as numbered channels.

Protocol (k8s.io/apimachinery/pkg/util/remotecommand, KEP-3396): the client asks for the subprotocols
`v5.channel.k8s.io` then `v4.channel.k8s.io`; every binary message is one channel byte and a payload:
0 stdin, 1 stdout, 2 stderr, 3 error (a v1 Status as JSON when the command ends), 4 resize. Only v5
(API servers from 1.30) can half-close a channel: the message [255, 0] closes stdin, so the probe reads
EOF and exits on its own. On v4 there is no such message: we send the probe's "q" and then close the
websocket, which makes the kubelet close the process's stdin.

Authentication and TLS come from the same `kubernetes.client.Configuration` the REST calls use
(kubeconfig or in-cluster; bearer tokens of exec plugins are refreshed by its hook), applied the way the
client's own websocket code does (kubernetes/stream/ws_client.py: create_websocket). The stream is
aiohttp's, so it lives on pinscope's event loop with a deadline on every await, like the SSH channel.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

from ..aio import within
from ..errors import ProbeFailed, TransportError, Unreachable
from ..frames import MAX_FRAME_BYTES
from ..kube import Refused

STDIN, STDOUT, STDERR, ERROR, CLOSE = 0, 1, 2, 3, 255
V5, V4 = "v5.channel.k8s.io", "v4.channel.k8s.io"


def ssl_context(cfg) -> ssl.SSLContext | bool:
    """TLS as kubernetes' own websocket code sets it up (CA, client certificate, verify flag)."""
    if cfg.verify_ssl:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
        if cfg.assert_hostname is False:
            ctx.check_hostname = False
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    return ctx


def auth_headers(cfg) -> dict[str, str]:
    """The auth headers the client's REST calls send (ApiClient.update_params_for_auth); an exec plugin's
    token is refreshed by the configuration's hook as it is read here."""
    out = {}
    for setting in (cfg.auth_settings() or {}).values():
        if setting.get("in") == "header" and setting.get("value"):
            out[setting["key"]] = setting["value"]
    if not out and (cfg.username or cfg.password):
        out["Authorization"] = aiohttp.BasicAuth(cfg.username or "", cfg.password or "").encode()
    return out


def exec_url(cfg, namespace: str, pod: str, container: str | None, command: list[str]) -> str:
    q = [("command", c) for c in command] + [("stdin", "true"), ("stdout", "true"), ("stderr", "true")]
    if container:
        q.append(("container", container))
    host = cfg.host.rstrip("/")
    return f"{host}/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(pod, safe='')}/exec?{urlencode(q)}"


class ExecStream:
    """One exec session. `reader` is an asyncio.StreamReader of stdout; `writer` writes stdin."""

    def __init__(self, cfg, what: str, namespace: str) -> None:
        self.cfg = cfg
        self.what = what  # "node/x: debug pod pinscope/pinscope-x-7k2q", for messages
        self.namespace = namespace
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.protocol: str | None = None
        self.reader = asyncio.StreamReader(limit=MAX_FRAME_BYTES)
        self.writer = _StdinWriter(self)
        self.stderr = bytearray()
        self.status: dict | None = None  # the v1 Status of channel 3, when the command ended
        self._pump: asyncio.Task | None = None

    async def open(self, url: str, timeout: float) -> None:
        if url.startswith("https:"):
            url = "wss:" + url[6:]
        elif url.startswith("http:"):
            url = "ws:" + url[5:]
        tls = ssl_context(self.cfg) if url.startswith("wss:") else None
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout))
        kw: dict[str, Any] = {}  # ws_connect's keywords, only those this configuration sets
        if tls is not None:
            kw["ssl"] = tls
            if getattr(self.cfg, "tls_server_name", None):
                kw["server_hostname"] = self.cfg.tls_server_name
        if getattr(self.cfg, "proxy", None):
            kw["proxy"] = self.cfg.proxy
        try:
            self.ws = ws = await within(self.session.ws_connect(
                url, protocols=(V5, V4), headers=auth_headers(self.cfg), heartbeat=15.0,
                max_msg_size=MAX_FRAME_BYTES, **kw), timeout)
        except aiohttp.WSServerHandshakeError as err:
            await self.aclose()
            if err.status in (401, 403):  # RBAC: "get" pods/exec, and "create" on servers that ask for it too
                raise Refused(f"{self.what}: Kubernetes API refused create pods/exec in namespace "
                              f"{self.namespace} ({err.status})") from err
            raise TransportError(f"{self.what}: the API refused the exec stream ({err.status} {err.message})") from err
        except (asyncio.TimeoutError, TimeoutError) as err:
            await self.aclose()
            raise Unreachable(f"{self.what}: no exec stream within {timeout:g} s") from err
        except (aiohttp.ClientError, OSError) as err:
            await self.aclose()
            raise Unreachable(f"{self.what}: {err}") from err
        self.protocol = ws.protocol
        if self.protocol not in (V5, V4):
            await self.aclose()
            raise TransportError(f"{self.what}: the API offered no channel protocol we speak "
                                 f"(got {self.protocol!r}, want {V5} or {V4})")
        self._pump = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        """Demultiplex: stdout to the reader, stderr kept (its tail names a failure), the Status kept."""
        try:
            if self.ws is None:  # open() failed: nothing will come
                return
            async for msg in self.ws:
                if msg.type is aiohttp.WSMsgType.BINARY:
                    data = msg.data
                elif msg.type is aiohttp.WSMsgType.TEXT:  # not sent by v4/v5 servers; tolerated
                    data = msg.data.encode()
                else:
                    break
                if not data:
                    continue
                ch, payload = data[0], data[1:]
                if ch == STDOUT:
                    if payload:
                        self.reader.feed_data(payload)
                elif ch == STDERR:
                    self.stderr += payload
                    del self.stderr[:-4096]
                elif ch == ERROR and payload:
                    with contextlib.suppress(ValueError):
                        self.status = json.loads(payload)
        except (aiohttp.ClientError, OSError, asyncio.CancelledError):
            pass
        finally:
            self.reader.feed_eof()

    def why_ended(self) -> str:
        """The command's end as the API told it (Status message, last stderr line), for one plain line."""
        parts = []
        if self.status and self.status.get("status") != "Success":
            parts.append(str(self.status.get("message") or self.status.get("reason") or "failed"))
        tail = bytes(self.stderr).decode("utf-8", "replace").strip().splitlines()
        if tail:
            parts.append(tail[-1][:200])
        return "; ".join(parts)

    async def send(self, channel: int, data: bytes) -> None:
        if self.ws is None or self.ws.closed:
            raise ProbeFailed(f"{self.what}: the exec stream is closed" + _why(self))
        try:
            await self.ws.send_bytes(bytes([channel]) + data)
        except (aiohttp.ClientError, ConnectionError, OSError) as err:
            raise ProbeFailed(f"{self.what}: exec stream lost ({err})") from err

    async def close_stdin(self, wait: float = 2.0, quit: bool = True) -> None:
        """Let the probe exit by itself: "q" (only when it is idle: without it, the end of stdin makes the
        probe's forwarder kill its whole process group), then EOF on v5 (or the websocket's end on v4).
        Quiet whenever the server ends the stream: a real API server closes it as soon as the command ends, and
        its end can reach the connection before our reader has seen it (ws.closed still False, aiohttp's
        "Cannot write to closing transport"): every frame goes through send(), whose errors are ProbeFailed,
        and what remains is read all the same."""
        if self.ws is None:
            return
        with contextlib.suppress(ProbeFailed):  # the stream ended (or ends meanwhile): nothing to close
            if quit:
                await self.send(STDIN, b"q\n")
            if self.protocol == V5:
                await self.send(CLOSE, bytes([STDIN]))
        if self._pump is not None:
            # the server closes the websocket after the command's Status: wait for it, briefly
            # asyncio.wait: neither cancels the pump nor raises its end; a cancel of ours goes on (no suppress)
            await asyncio.wait({self._pump}, timeout=wait)

    async def aclose(self) -> None:
        try:
            with contextlib.suppress(Exception):
                if self.ws is not None:
                    await within(self.ws.close(), 2)
            if self._pump is not None:
                self._pump.cancel()
                await asyncio.wait({self._pump})  # its end, whatever it was; a cancel of ours is not swallowed
                if not self._pump.cancelled():
                    self._pump.exception()  # read: never "Task exception was never retrieved"
        finally:  # cancelled meanwhile: the session (its connector, its sockets) is closed all the same
            session, self.session = self.session, None
            if session is not None:
                with contextlib.suppress(Exception):
                    await session.close()
            self.ws = self._pump = None


def _why(stream: ExecStream) -> str:
    w = stream.why_ended()
    return f" ({w})" if w else ""


class _StdinWriter:
    """What FrameStream writes requests to: write() buffers, drain() sends one stdin message."""

    def __init__(self, stream: ExecStream) -> None:
        self.stream = stream
        self.buf = bytearray()

    def write(self, data: bytes) -> None:
        self.buf += data

    async def drain(self) -> None:
        data, self.buf = bytes(self.buf), bytearray()
        if data:
            await self.stream.send(STDIN, data)
