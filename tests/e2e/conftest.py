"""Fixtures the end-to-end tests share.

`server`: a real OpenSSH sshd on 127.0.0.1 with throwaway keys (tests/sshd.py), one per test module (each
module that asks for it gets its own, killed when the module ends). Without sshd the test skips on a laptop
and fails with CI=true (helpers.need).
"""
import pytest
from helpers import need

import sshd as sshd_mod


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    ok, why = sshd_mod.available()
    need(ok, why)
    s = sshd_mod.Sshd(tmp_path_factory.mktemp("sshd")).start()
    yield s
    s.kill()
