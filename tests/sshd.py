"""A real OpenSSH sshd on 127.0.0.1, started by the test with throwaway host and user keys."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


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


class Sshd:
    def __init__(self, d: Path, port: int | None = None) -> None:
        self.d = Path(d)
        self.d.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.hostkey = self.d / "host_ed25519"
        self.userkey = self.d / "user_ed25519"
        for k in (self.hostkey, self.userkey):
            if not k.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(k)], check=True)
        (self.d / "authorized_keys").write_text((self.d / "user_ed25519.pub").read_text())
        os.chmod(self.d / "authorized_keys", 0o600)
        self.known_hosts = self.d / "known_hosts"
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {self.hostkey.with_suffix('.pub').read_text()}")
        self.ssh_config = self.d / "ssh_config"
        self.ssh_config.write_text("")
        self.cfg = self.d / "sshd_config"
        self.cfg.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.hostkey}\n"
            f"AuthorizedKeysFile {self.d}/authorized_keys\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            f"PidFile {self.d}/sshd.pid\nMaxSessions 100\nMaxStartups 200\nLogLevel ERROR\n")
        self.proc: subprocess.Popen | None = None
        Path("/run/sshd").mkdir(exist_ok=True)

    @property
    def target(self) -> str:
        return f"root@127.0.0.1:{self.port}"

    def args(self) -> list[str]:
        return ["-i", str(self.userkey), "--known-hosts", str(self.known_hosts), "--ssh-config", str(self.ssh_config)]

    def start(self) -> "Sshd":
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.cfg)], stderr=open(self.d / "sshd.log", "ab"))
        deadline = time.time() + 10
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        raise RuntimeError("sshd did not start: " + (self.d / "sshd.log").read_text())

    def kill(self) -> None:
        """sshd and every session it spawned: as if the node dropped off the network."""
        if self.proc is None:
            return
        try:
            parent = psutil.Process(self.proc.pid)
            for c in parent.children(recursive=True):
                c.kill()
            parent.kill()
        except psutil.NoSuchProcess:
            pass
        self.proc.wait()
        self.proc = None

    def sessions(self) -> list[psutil.Process]:
        if self.proc is None:
            return []
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
