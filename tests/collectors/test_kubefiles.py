"""A kubeconfig's credentials (CA, client certificate, client PRIVATE KEY) are never left on disk: the
kubernetes client's copies of them go to memory files (collectors/kubefiles.py); what a killed pinscope
left is swept by the next one; where memory files cannot be had, they stay private (0600 in a 0700
directory of pinscope's) and go at the exit.

The e2e half (a pinscope killed with SIGKILL, files unreadable to another user) is in
tests/e2e/test_kube_api.py.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers import need
from pinscope.collectors import kube, kubefiles


@pytest.fixture
def tmpdir_(tmp_path, monkeypatch):
    """An empty TMPDIR, and a kubefiles that has made nothing yet in this process."""
    where = tmp_path / "tmpdir"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    monkeypatch.setattr(kubefiles, "_DIR", [])
    monkeypatch.setattr(kubefiles, "_MEMORY", {})
    monkeypatch.setattr(kubefiles, "_BY_DATA", {})
    monkeypatch.setattr(kube, "_CONFIGS", {})
    return where


def credentials(tmp_path: Path) -> dict[str, bytes]:
    """A CA certificate, and a client certificate and its private key, made by openssl."""
    need(shutil.which("openssl") is not None, "openssl makes the certificates")
    out = {}
    for name in ("ca", "client"):
        key, crt = tmp_path / f"{name}.key", tmp_path / f"{name}.crt"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "1", "-subj", f"/CN={name}", "-keyout", str(key), "-out", str(crt)],
                       check=True, capture_output=True)
        out[f"{name}.crt"], out[f"{name}.key"] = crt.read_bytes(), key.read_bytes()
        key.unlink()
    return out


def kubeconfig(path: Path, creds: dict[str, bytes], user: dict | None = None) -> str:
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
           "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1",
                                                  "certificate-authority-data": b64(creds["ca.crt"])}}],
           "users": [{"name": "u", "user": user or {"client-certificate-data": b64(creds["client.crt"]),
                                                    "client-key-data": b64(creds["client.key"]),
                                                    "token": "t0k3n"}}],
           "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}]}
    path.write_text(json.dumps(doc))
    return str(path)


def left(where: Path) -> list[str]:
    return sorted(str(p.relative_to(where)) for p in where.rglob("*"))


def test_the_ca_certificate_and_client_key_are_in_memory_only(tmp_path, tmpdir_):
    """Before: the client wrote them as tmpXXXXXXXX files in TMPDIR, removed only at a normal exit."""
    creds = credentials(tmp_path)
    cfg = kube.load_config(kubeconfig=kubeconfig(tmp_path / "kc", creds))
    assert left(tmpdir_) == []
    for attr, want in (("ssl_ca_cert", "ca.crt"), ("cert_file", "client.crt"), ("key_file", "client.key")):
        path = getattr(cfg, attr)
        assert path.startswith("/proc/self/fd/"), (attr, path)
        assert Path(path).read_bytes() == creds[want]
        assert os.readlink(path).startswith("/memfd:pinscope-kube")
    # what the client's TLS does with them works from memory
    import ssl

    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    # the token's refresh hook, run before each request, sets the paths again: still in memory
    cfg.refresh_api_key_hook(cfg)
    assert cfg.key_file.startswith("/proc/self/fd/") and cfg.api_key["BearerToken"] == "Bearer t0k3n"
    assert left(tmpdir_) == []


def test_an_exec_plugins_client_key_is_in_memory_only(tmp_path, tmpdir_):
    creds = credentials(tmp_path)
    out = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
           "status": {"clientCertificateData": creds["client.crt"].decode(),
                      "clientKeyData": creds["client.key"].decode()}}
    plugin = tmp_path / "plugin.json"
    plugin.write_text(json.dumps(out))
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                     "args": ["-c", f"print(open({str(plugin)!r}).read())"]}}
    cfg = kube.load_config(kubeconfig=kubeconfig(tmp_path / "kc", creds, user))
    assert Path(cfg.key_file).read_bytes() == creds["client.key"] and cfg.key_file.startswith("/proc/self/fd/")
    assert left(tmpdir_) == []


def test_the_directory_of_a_dead_pinscope_is_swept_by_the_next(tmp_path, tmpdir_):
    """A SIGKILL between the client's write and the move to memory leaves pinscope's directory: the next
    pinscope of the user that loads a kubeconfig removes it; a live one's, another user's, a link stay."""
    creds = credentials(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmpdir_ / f"pinscope-kube-{dead.pid}-abc123"
    gone.mkdir(mode=0o700)
    (gone / "tmpk3y").write_bytes(creds["client.key"])
    alive = tmpdir_ / f"pinscope-kube-{os.getpid()}-def456"
    alive.mkdir()
    link = tmpdir_ / f"pinscope-kube-{dead.pid}-link"
    link.symlink_to(alive)
    others = tmpdir_ / f"pinscope-kube-{dead.pid}-other"
    others.mkdir()
    if os.geteuid() == 0:
        os.chown(others, 65534, 65534)
    kube.load_config(kubeconfig=kubeconfig(tmp_path / "kc", creds))
    assert not gone.exists() and alive.is_dir() and link.is_symlink()
    assert others.is_dir() == (os.geteuid() == 0)


def test_without_memory_files_the_keys_are_private_and_go_at_the_exit(tmp_path, tmpdir_, monkeypatch):
    """Not Linux (no memfd_create): the files stay where the client wrote them, 0600 in pinscope's 0700
    directory, until the exit (atexit, exitsignals.at_end run kubefiles._remove)."""
    monkeypatch.delattr(os, "memfd_create")
    creds = credentials(tmp_path)
    cfg = kube.load_config(kubeconfig=kubeconfig(tmp_path / "kc", creds))
    (where,) = tmpdir_.iterdir()
    assert where.name.startswith(f"pinscope-kube-{os.getpid()}-")
    assert stat.S_IMODE(where.stat().st_mode) == 0o700 and where.stat().st_uid == os.geteuid()
    assert Path(cfg.key_file).parent == where and Path(cfg.key_file).read_bytes() == creds["client.key"]
    for f in where.iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    kubefiles._remove()
    assert left(tmpdir_) == []


def test_a_directory_of_another_in_its_place_is_never_written_to(tmp_path, tmpdir_):
    """Its name was seen in TMPDIR while it existed: a directory another user makes there after it was
    removed is refused (the client would write a key in it)."""
    creds = credentials(tmp_path)
    kube.load_config(kubeconfig=kubeconfig(tmp_path / "kc", creds))
    (where,) = kubefiles._DIR
    where.mkdir(mode=0o777)
    os.chmod(where, 0o777)
    with pytest.raises(PermissionError, match="not pinscope's own private directory"):
        kubefiles._private_dir()
    assert left(tmpdir_) == [where.name]
