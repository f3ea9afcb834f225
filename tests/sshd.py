"""A real OpenSSH sshd on 127.0.0.1, started by the test with throwaway host and user keys.

Every process that belongs to one Sshd carries a marker in its environment: the listener gets it from
us, its per-connection children inherit it, and the sessions' shells and probes get it from the
`SetEnv` line of sshd_config (OpenSSH >= 7.8). A session calls setsid() and is re-parented to init once
the listener dies, so neither the process group nor the process tree finds all of them; the marker
does. `kill()` kills the group and then every marked process until none is left, with a deadline, and
never waits without one; `probes()` and `sessions()` see this sshd's processes only, never another
test's or another pinscope's.
"""
from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
MARK = "PINSCOPE_TEST_SSHD"
_seq = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def available() -> tuple[bool, str]:
    if not os.path.exists(SSHD):
        return False, "no sshd (apt-get install openssh-server)"
    if os.geteuid() != 0:
        return False, "sshd tests run as root here (the node user is root)"
    return True, ""


def marked(prefix: str) -> list[int]:
    """Pids of live (non-zombie) processes whose environment has MARK=<prefix>... ."""
    needle = f"{MARK}={prefix}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
        except OSError:  # gone, or a kernel thread
            continue
        if any(v.startswith(needle) for v in env.split(b"\0")):
            pids.append(int(d))
    return pids


def kill_marked(prefix: str, timeout: float = 10.0) -> list[int]:
    """SIGKILL every process marked with `prefix` until none is left (or `timeout`); -> the ones left."""
    deadline = time.monotonic() + timeout
    while True:
        pids = marked(prefix)
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def leaked_by_this_run() -> list[int]:
    """Marked processes started by this test process (for a last check at the end of the session)."""
    return marked(f"{os.getpid()}-")


class Sshd:
    def __init__(self, d: Path, port: int | None = None) -> None:
        self.d = Path(d)
        self.d.mkdir(parents=True, exist_ok=True)
        self.fixed_port = port is not None  # else picked by free_port(): taken again if another bind won it
        self.port = port or free_port()
        self.mark = f"{os.getpid()}-{next(_seq)}-{self.port}"
        self.hostkey = self.d / "host_ed25519"
        self.userkey = self.d / "user_ed25519"
        for k in (self.hostkey, self.userkey):
            if not k.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)], check=True,
                               timeout=30)
        (self.d / "authorized_keys").write_text((self.d / "user_ed25519.pub").read_text())
        os.chmod(self.d / "authorized_keys", 0o600)
        self.known_hosts = self.d / "known_hosts"
        self.ssh_config = self.d / "ssh_config"
        self.ssh_config.write_text("")
        self.cfg = self.d / "sshd_config"
        self._configure()
        (self.d / "home").mkdir(exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.started = False  # a restart keeps its port; only the first start may move to another
        Path("/run/sshd").mkdir(exist_ok=True)

    def _configure(self) -> None:
        """known_hosts and sshd_config for self.port (written again when start() moves to another port)."""
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {self.hostkey.with_suffix('.pub').read_text()}")
        self.cfg.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.hostkey}\n"
            f"AuthorizedKeysFile {self.d}/authorized_keys\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.d}/sshd.pid\nMaxSessions 100\nMaxStartups 200\nLogLevel ERROR\n"
            # HOME: the session's shell reads $HOME/.bashrc (bash does when sshd runs it, even for a command), so
            # the tests never run this machine's root dotfiles: here they ran `pyenv rehash`, whose lock file a
            # session killed mid-way (a frozen node's test) left behind, and every later session waited 60 s for
            # it: every SSH test failed with "no frame". One SetEnv line: sshd takes the first one only.
            f"SetEnv {MARK}={self.mark} HOME={self.d / 'home'}\n")

    @property
    def target(self) -> str:
        return f"root@127.0.0.1:{self.port}"

    def args(self) -> list[str]:
        return ["-i", str(self.userkey), "--known-hosts", str(self.known_hosts), "--ssh-config", str(self.ssh_config)]

    def start(self, timeout: float = 10.0) -> "Sshd":
        """sshd on self.port. The port free_port() found free may be bound meanwhile by anything else on the
        machine (the other xdist worker's sshd, Prometheus, an exporter, a connection's local port): sshd then
        exits "Address already in use", and a port it picked itself is picked again (as promserver does) at
        the first start; a restart keeps its port (the tests bring a node back where it was)."""
        first, self.started = not self.started, True
        for _ in range(5 if first else 0):
            try:
                return self._start(timeout)
            except RuntimeError as err:
                if self.fixed_port or "Address already in use" not in str(err):
                    raise
            self.port = free_port()
            self.mark = f"{self.mark.rsplit('-', 1)[0]}-{self.port}"
            self._configure()
        return self._start(timeout)

    def _start(self, timeout: float) -> "Sshd":
        if self.proc is not None:
            self.kill()
        with open(self.d / "sshd.log", "ab") as log:
            self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.cfg)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, start_new_session=True,
                                         env={**os.environ, MARK: self.mark})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self._listening():
                return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("sshd did not start: " + (self.d / "sshd.log").read_text())

    def _listening(self) -> bool:
        """Our sshd listens on self.port: its own socket, not merely something that answers on the port (a
        connect succeeded against another process that had bound it meanwhile, and the test talked to that)."""
        try:
            conns = psutil.Process(self.proc.pid).net_connections(kind="tcp4") if self.proc else []
        except psutil.NoSuchProcess:
            return False
        return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == self.port for c in conns)

    def kill(self, timeout: float = 10.0) -> None:
        """sshd and every session it spawned: as if the node dropped off the network. Bounded: raises
        after `timeout` s naming what survived, never blocks forever."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the listener and its per-connection children at once
            except (ProcessLookupError, PermissionError):
                pass
        left = kill_marked(self.mark, timeout)
        if proc is not None:
            try:
                proc.wait(timeout=max(0.5, timeout / 2))
            except subprocess.TimeoutExpired:
                left.append(proc.pid)
        if left:
            raise RuntimeError(f"sshd on port {self.port}: processes {left} survived SIGKILL for {timeout:g} s")

    async def akill(self, timeout: float = 10.0) -> None:
        """kill() from inside an event loop, off the loop's thread."""
        await asyncio.to_thread(self.kill, timeout)

    async def astart(self) -> "Sshd":
        return await asyncio.to_thread(self.start)

    def pids(self) -> list[int]:
        """Every live process of this sshd: the listener, per-connection children, sessions, probes."""
        return marked(self.mark)

    def sessions(self) -> list[psutil.Process]:
        """This sshd's processes other than the listener."""
        listener = self.proc.pid if self.proc is not None else None
        out = []
        for pid in self.pids():
            if pid != listener:
                try:
                    out.append(psutil.Process(pid))
                except psutil.NoSuchProcess:
                    pass
        return out

    def probes(self) -> list[int]:
        """Pids of pinscope probes running in this sshd's sessions (one per probe: the shell whose
        parent is not itself a probe; the probe's pipeline forks one more shell of the same name)."""
        out = []
        for pid in self.pids():
            try:
                p = psutil.Process(pid)
                if "pinscope-probe" in p.cmdline() and "pinscope-probe" not in p.parent().cmdline():
                    out.append(pid)
            except (psutil.Error, AttributeError):
                pass
        return out

    def signal_all(self, sig: int) -> None:
        """SIGSTOP / SIGCONT the whole server (listener and sessions): a node that hangs, then resumes."""
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
