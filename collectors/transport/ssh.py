"""SSH (asyncssh) with ONE persistent channel per node: the probe runs once, frames flow on request.

Measured on loopback here: one `run()` per tick costs 82-85 ms and a fresh sshd session and login shell
on the node each time; a frame on a persistent channel ~1.3 ms (see bench/).

Honours ~/.ssh/config (ProxyJump, User, Port, IdentityFile), ~/.ssh/known_hosts, the agent and default
keys. Host keys are checked strictly; `accept_new` adds a key for a host that has NO key yet (OpenSSH's
StrictHostKeyChecking=accept-new) and still refuses a changed key. asyncssh has no connect timeout and
no keepalives by default: both are set here. Errors are translated once, here, into errors.py's kinds.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import warnings
from pathlib import Path

from ..aio import within
from ..errors import AuthFailed, HostKeyRejected, ProbeFailed, TransportError, Unreachable
from .base import FrameStream, probe_command


def _quiet_asyncssh_deprecations() -> None:
    """cryptography 51 warns, on every touch of its DSA classes, that DSA is deprecated; asyncssh touches them
    at import and again when it loads keys, whatever keys the user has. Each warning reached the user's
    terminal (two lines apiece, before the TUI or a one-line SSH error) and the exporter's first line. Only
    that category, raised from asyncssh's own modules, is silenced: any other warning still shows."""
    try:
        from cryptography.utils import CryptographyDeprecationWarning
    except ImportError:  # pragma: no cover - asyncssh requires cryptography
        return
    warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")


_quiet_asyncssh_deprecations()
import asyncssh  # noqa: E402  (after the filter above)


def parse_target(target: str) -> tuple[str | None, str, int | None]:
    """'[user@]host[:port]' (IPv6 as [addr]:port) -> (user, host, port)."""
    user = None
    if "@" in target:
        user, _, target = target.rpartition("@")
    port = None
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdecimal():
            port = int(rest[1:])
    elif target.count(":") == 1:
        host, _, p = target.partition(":")
        if p.isdecimal():
            port = int(p)
        else:
            host = target
    else:
        host = target
    return user or None, host, port


def _known_hosts_name(host: str, port: int | None) -> str:
    return host if not port or port == 22 else f"[{host}]:{port}"


class SSHTransport(FrameStream):
    def __init__(self, target: str, *, root: str | None = None, sudo: bool = False,
                 identity: str | None = None, ssh_config: str | None = None,
                 known_hosts: str | None = None, accept_new_host_key: bool = False,
                 connect_timeout: float = 10.0, keepalive: float = 5.0) -> None:
        self.target = target
        self.name = target
        self.user, self.host, self.port = parse_target(target)
        self.root, self.sudo = root, sudo
        self.identity = identity
        self.ssh_config = ssh_config
        self.known_hosts = known_hosts or os.path.expanduser("~/.ssh/known_hosts")
        self.accept_new = accept_new_host_key
        self.connect_timeout = connect_timeout
        self.keepalive = keepalive
        self.conn: asyncssh.SSHClientConnection | None = None
        self.proc: asyncssh.SSHClientProcess[bytes] | None = None
        self.slow_factor = 1.0  # see _open
        self.forward: _SocketForward | None = None  # kubelet's PodResources socket, forwarded (podresources)

    def _options(self) -> dict:
        kw: dict = dict(
            known_hosts=self.known_hosts if os.path.exists(self.known_hosts) else (),
            connect_timeout=self.connect_timeout,
            keepalive_interval=self.keepalive,
            keepalive_count_max=3,
            password_auth=False,  # never prompt: this is a dashboard, not a login
            kbdint_auth=False,
        )
        if self.ssh_config:
            kw["config"] = [self.ssh_config]
        if self.user:
            kw["username"] = self.user
        if self.port:
            kw["port"] = self.port
        if self.identity:
            kw["client_keys"] = [self.identity]
        return kw

    async def _host_key_text(self) -> str:
        with contextlib.suppress(Exception):
            key = await within(
                asyncssh.get_server_host_key(self.host, self.port or (),
                                             config=[self.ssh_config] if self.ssh_config else ()),
                self.connect_timeout)
            if key is not None:
                return f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"
        return "(could not fetch it)"

    def _has_known_key(self) -> bool:
        if not os.path.exists(self.known_hosts):
            return False
        try:
            kh = asyncssh.read_known_hosts(self.known_hosts)
            keys = kh.match(self.host, "", self.port or 22)
        except (OSError, ValueError, asyncssh.Error):
            return False
        return any(keys[:3])

    async def _accept_new(self) -> None:
        """accept-new: record the key of a host we have never seen; a changed key is never accepted."""
        if self._has_known_key():
            return
        key = await within(
            asyncssh.get_server_host_key(self.host, self.port or (),
                                         config=[self.ssh_config] if self.ssh_config else ()),
            self.connect_timeout)
        if key is None:
            return
        Path(self.known_hosts).parent.mkdir(parents=True, exist_ok=True)
        line = f"{_known_hosts_name(self.host, self.port)} {key.export_public_key().decode().strip()}\n"
        with open(self.known_hosts, "a", encoding="ascii") as f:
            f.write(line)

    async def _open(self, t: float) -> None:
        """Dead or slow, told apart: the TCP connection must be made within `t` s (else the host is down
        or the packets are dropped); the SSH handshake, login and session then get `t` x slow_factor,
        which doubles (up to 4) after each slow attempt, so a busy but live node is not cut off forever."""
        tcp_at = []

        class _Client(asyncssh.SSHClient):
            def connection_made(self, conn) -> None:  # the TCP connection is up; SSH has not begun
                tcp_at.append(time.monotonic())

        opts = self._options()
        opts["connect_timeout"] = None  # the deadlines are ours, below
        t0 = time.monotonic()
        budget = t * self.slow_factor
        task = asyncio.ensure_future(asyncssh.connect(self.host, client_factory=_Client, **opts))
        try:
            await asyncio.wait({task}, timeout=t)
            if not task.done() and not tcp_at:
                raise Unreachable(f"{self.target}: no answer within {t:g} s (host down, or packets dropped)")
            try:
                self.conn = await within(task, max(0.1, budget - (time.monotonic() - t0)))
                # encoding=None: bytes (create_process's AnyStr is not inferred from it)
                proc: asyncssh.SSHClientProcess[bytes] = await within(
                    self.conn.create_process(probe_command(self.root, self.sudo), encoding=None),
                    max(0.1, budget - (time.monotonic() - t0)))
                self.proc = proc
                self.reader, self.writer = proc.stdout, proc.stdin
            except (asyncio.TimeoutError, TimeoutError) as err:
                self.slow_factor = min(4.0, self.slow_factor * 2)
                raise Unreachable(f"{self.target}: connected, but no answer within {budget:g} s from sshd"
                                  " (stopped or overloaded?)") from err
        finally:
            if not task.done():
                task.cancel()
            elif not task.cancelled() and task.exception() is None and task.result() is not self.conn:
                task.result().close()  # finished just as we gave up on it
        self.slow_factor = 1.0

    async def connect(self, timeout: float | None = None) -> None:
        t = timeout or self.connect_timeout
        try:
            if self.accept_new:
                await self._accept_new()
            await self._open(t)
        except asyncssh.HostKeyNotVerifiable as err:
            keytext = await self._host_key_text()
            changed = self._has_known_key()
            why = "does not match the key in" if changed else "is not in"
            hint = "" if changed else " (pass --accept-new-host-key to trust it, or add it with ssh-keyscan)"
            raise HostKeyRejected(
                f"{self.target}: host key {keytext} {why} {self.known_hosts}{hint}") from err
        except asyncssh.PermissionDenied as err:
            raise AuthFailed(f"{self.target}: authentication failed ({err.reason or 'no key accepted'})") from err
        except (asyncio.TimeoutError, TimeoutError) as err:
            raise Unreachable(f"{self.target}: no answer within {t:g} s") from err
        except socket.gaierror as err:
            raise Unreachable(f"{self.target}: cannot resolve host ({err.strerror})") from err
        except UnicodeError as err:  # the resolver's idna codec: an empty or over-long label (an inventory's bad..host)
            raise Unreachable(f"{self.target}: cannot resolve host (not a valid host name)") from err
        except OSError as err:
            # asyncio's "Connect call failed ('h', p)" hides the reason: the errno says it (refused, no route)
            why = os.strerror(err.errno).lower() if err.errno else (err.strerror or str(err))
            raise Unreachable(f"{self.target}: {why}") from err
        except asyncssh.Error as err:
            raise TransportError(f"{self.target}: ssh: {err.reason or err}") from err

    async def _request(self, req: str):
        try:
            return await super()._request(req)
        except (asyncssh.Error, OSError, BrokenPipeError, ConnectionError) as err:
            raise ProbeFailed(f"{self.target}: connection lost ({err})") from err

    async def podresources(self, path: str, timeout: float):
        """kubelet's PodResources API at node path `path`, through an SSH stream forwarding of its socket
        (OpenSSH's direct-streamlocal channel: sshd opens the socket as the login user) to a socket of ours in
        a private directory; gRPC to that. Kept while the connection lives; the first use checks that sshd
        may open the socket for this user and says why not."""
        from ..podresources import LiveView, ask

        if self.conn is None:
            return LiveView(path, error=f"{path}: not connected", why="not connected")
        if self.root:
            return LiveView(path, error=f"{path}: not forwarded with --root over SSH (sshd would follow its links "
                                        "on the node: the path could not be kept inside the root)",
                            why="not forwarded over SSH")
        if self.forward is None or self.forward.path != path:
            if self.forward is not None:
                self.forward.close()
            self.forward = _SocketForward(self.conn, path)
        why = await self.forward.open(timeout)
        if why:
            self.forward.close()
            self.forward = None
            return LiveView(path, error=why[1], why=why[0])
        return await asyncio.to_thread(ask, f"unix:{self.forward.local}", path, timeout)

    async def close(self) -> None:
        """"q" to an idle probe; else only the end of its stdin: the probe's forwarder then kills its whole
        process group on the node (sshd makes each session one; signals are not forwarded reliably)."""
        with contextlib.suppress(Exception):
            if self.proc is not None:
                if self.idle:
                    self.proc.stdin.write(b"q\n")
                self.proc.stdin.write_eof()
        if self.forward is not None:
            self.forward.close()
            self.forward = None
        with contextlib.suppress(Exception):
            if self.conn is not None:
                self.conn.close()
                await within(self.conn.wait_closed(), 2)
        self.conn = self.proc = None


class _SocketForward:
    """One unix socket of the node forwarded to a socket of ours: `local`, in a directory only this user may
    enter (mkdtemp: 0700), removed with it on close()."""

    def __init__(self, conn: asyncssh.SSHClientConnection, path: str) -> None:
        self.conn, self.path = conn, path
        self.dir: str | None = None
        self.local = ""
        self.listener: asyncssh.SSHListener | None = None

    async def open(self, timeout: float) -> tuple[str, str] | None:
        """Forward (once); None, or why the socket cannot be asked through this connection: (its cause in
        plain words, one of podresources.WHY; what happened)."""
        if self.listener is not None:
            return None
        user = self.conn.get_extra_info("username") or "?"
        try:  # may sshd open it for this user? (the forwarding opens a channel only when gRPC connects)
            _r, w = await within(self.conn.open_unix_connection(self.path), timeout)
            w.close()
        except asyncssh.ChannelOpenError as err:  # OpenSSH says "open failed" for absent and forbidden alike
            return ("no socket" if user == "root" else "not root"), f"{self.path}: sshd could not open it for {user} ({err.reason}: " + (
                "no such socket on the node, or sshd forwards no unix socket)" if user == "root" else
                "kubelet's socket is root's: connect as root, sudo cannot forward it)")
        except (asyncio.TimeoutError, TimeoutError):
            return "not answering", f"{self.path}: sshd did not open it within {timeout:g} s"
        except (asyncssh.Error, OSError) as err:
            return "not forwarded over SSH", f"{self.path}: not forwarded ({err})"
        import tempfile

        try:
            self.dir = tempfile.mkdtemp(prefix="pinscope-pr-")  # 0700; a full or unwritable TMPDIR: said
        except OSError as err:
            return "not forwarded over SSH", f"{self.path}: not forwarded (no private directory for its local end: {err})"
        self.local = os.path.join(self.dir, "kubelet.sock")
        try:
            self.listener = await within(self.conn.forward_local_path(self.local, self.path), timeout)
        except (asyncssh.Error, OSError, asyncio.TimeoutError, TimeoutError) as err:
            self.close()
            return "not forwarded over SSH", f"{self.path}: not forwarded ({err or type(err).__name__})"
        return None

    def close(self) -> None:
        import shutil

        with contextlib.suppress(Exception):
            if self.listener is not None:
                self.listener.close()
        self.listener = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
