"""A kubeconfig loaded so that its credentials are never left on disk.

The kubernetes client copies `certificate-authority-data`, `client-certificate-data` and `client-key-data`
(and an exec plugin's clientCertificateData / clientKeyData) into files, since urllib3 and ssl take only
paths, and removes them at the interpreter's exit (kubernetes/config/kube_config.py:
_create_temp_file_with_content, atexit). A pinscope killed with SIGKILL left them in TMPDIR: the cluster's
CA, a client's PRIVATE KEY. Here the client writes them into a directory of this process (0700, files 0600:
piddirs.make), each is at once copied into an anonymous memory file (memfd_create) whose path
/proc/self/fd/N only this process, and its user's ptrace, can open, and the directory is removed. What the
client later writes again (an exec plugin's new certificate) goes the same way. A SIGKILL in the
milliseconds between leaves the directory; the next pinscope of the user that loads a kubeconfig sweeps it
(piddirs.stale). Where memfd_create is missing (not Linux), the files stay in the private directory until
every exit pinscope controls (atexit, exitsignals.at_end) or that sweep.
"""
from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from . import piddirs
from .exitsignals import at_end

PREFIX = "pinscope-kube-"
FILES = ("ssl_ca_cert", "cert_file", "key_file")  # the client Configuration's paths to key material
_LOCK = threading.RLock()
_DIR: list[Path] = []  # this process's directory (its name; it exists only while the client writes)
_MEMORY: dict[str, str] = {}  # a path the client wrote -> the memory file that holds its content
_BY_DATA: dict[bytes, str] = {}  # content -> memory file: one file per content, never closed (paths in use)


def load_kube_config(config, cfg, kubeconfig: str | None, context: str | None) -> None:
    """`config.load_kube_config` (the kubernetes.config module) into `cfg`, credentials in memory."""
    with _LOCK:
        where = _private_dir()
        try:
            config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=_Mapped(cfg),
                                    persist_config=False, temp_file_path=str(where))
        finally:
            _tidy(where)


def _private_dir() -> Path:
    """This process's directory, made (0700, ours) if it is not there; the first time, the directories of
    pinscopes that died without removing theirs are swept."""
    if not _DIR:
        piddirs.sweep(piddirs.stale(tempfile.gettempdir(), PREFIX))
        _DIR.append(piddirs.make(PREFIX))
        atexit.register(_remove)
        at_end(_remove)
        return _DIR[0]
    where = _DIR[0]
    try:
        os.mkdir(where, 0o700)
    except FileExistsError:
        st = os.lstat(where)  # someone else's in its place (its name was seen in /tmp): never write there
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise PermissionError(f"{where} is not pinscope's own private directory: no key is written there") from None
    return where


def _tidy(where: Path) -> None:
    """Removes the directory when every file the client wrote in it is in memory (else it stays, 0700)."""
    try:
        os.rmdir(where)
    except OSError:
        pass


def _remove() -> None:
    for where in _DIR:
        shutil.rmtree(where, ignore_errors=True)


def _in_memory(path):
    """The memory file holding what the client wrote at `path` (then removed), or `path` itself when it is
    not one of ours or memory files cannot be had."""
    if not isinstance(path, str) or not _DIR or Path(path).parent != _DIR[0]:
        return path
    if path in _MEMORY:
        return _MEMORY[path]
    try:
        data = Path(path).read_bytes()
    except OSError:
        return path
    mem = _BY_DATA.get(data) or _memfd(data)
    if mem is None:
        return path
    _BY_DATA[data] = _MEMORY[path] = mem
    try:
        os.unlink(path)
    except OSError:
        pass
    return mem


def _memfd(data: bytes) -> str | None:
    """/proc/self/fd/N of a new memory file holding `data`, when this system has them and the path reads back."""
    try:
        fd = os.memfd_create("pinscope-kube", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        mem = f"/proc/self/fd/{fd}"
        with open(mem, "rb") as f:
            if f.read() == data:
                return mem
    except OSError:
        pass
    os.close(fd)
    return None


class _Mapped:
    """The client Configuration as the kubeconfig loader sees it: what the loader sets goes to the real one,
    a file it wrote as its memory file. The loader's refresh hook (a token's or an exec plugin's, run before
    requests) sets the paths again: it is given this view too, so the real configuration never holds a
    removed file's path, not even for a moment another thread could see."""

    __slots__ = ("_cfg",)

    def __init__(self, cfg) -> None:
        object.__setattr__(self, "_cfg", cfg)

    def __getattr__(self, name: str):
        return getattr(self._cfg, name)

    def __setattr__(self, name: str, value) -> None:
        if name == "refresh_api_key_hook" and value is not None:
            value = _refreshing(value)
        elif name in FILES:
            value = _in_memory(value)
        setattr(self._cfg, name, value)


def _refreshing(hook):
    def refresh(cfg) -> None:
        with _LOCK:
            where = _private_dir()  # an exec plugin's new certificate is written here
            try:
                hook(_Mapped(cfg))
            finally:
                _tidy(where)
    return refresh
