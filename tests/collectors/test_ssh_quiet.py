"""The SSH transport's import says nothing on stderr, whatever warnings the Python it runs under shows.

cryptography 51 (released after 50.0.2) warns on every touch of its DSA classes, and asyncssh touches them at
import: a fresh install printed ten lines of CryptographyDeprecationWarning before every SSH error line and
before the exporter's first line (CI on a fresh machine failed on exactly that). The test does not need
cryptography 51 to mean something: it also holds any later deprecation asyncssh's import may raise to the
same rule, and it checks that a warning of pinscope's own or of another module is still shown.
"""
import subprocess
import sys


def _stderr(code: str) -> str:
    return subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True,
                          timeout=60, check=True).stderr


def test_importing_the_ssh_transport_prints_nothing():
    assert _stderr("import pinscope.collectors.transport.ssh") == ""


def test_the_ssh_transport_sets_up_asyncssh_key_types_without_a_word():
    # key loading touches the key classes again (asyncssh's DSA module defines them at import)
    code = ("import pinscope.collectors.transport.ssh, asyncssh;"
            "k = asyncssh.generate_private_key('ssh-ed25519'); asyncssh.import_private_key(k.export_private_key())")
    assert _stderr(code) == ""


def test_other_warnings_still_show():
    code = ("import warnings, pinscope.collectors.transport.ssh;"
            "from cryptography.utils import CryptographyDeprecationWarning as W;"
            "warnings.warn('mine', W); warnings.warn('also mine', UserWarning)")
    err = _stderr(code)
    assert "mine" in err and "also mine" in err
