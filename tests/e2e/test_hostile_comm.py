"""A real process renames itself with escape bytes (as any unprivileged user can, PR_SET_NAME via
/proc/self/comm) and runs on an exclusive CPU beside a kubelet-shaped cgroup (issue 15). It is still
reported as INTRUDER_TASK, and shown escaped: by `check`, and by the TUI in a real terminal (tmux), whose
title it does not change."""
import shutil
import subprocess
import sys
import time
import uuid

from test_tmux import REPO, screen, tmux, wait_for
from helpers import RealPod, need, run_cli

COMM = "\x1b]0;pw\x07e\nil\x1b[2J"  # 15 bytes (the kernel's most): retitle the terminal, a newline, clear it
SHOWN = "\\033]0;pw\\ae\\nil\\033[2J"  # as `ls -b` would show it


def hostile_intruder(pod: RealPod, cpu: int) -> subprocess.Popen:
    # the shell writes its own comm (a redirection of a builtin: no fork), then spins on the CPU
    script = "printf '\\033]0;pw\\007e\\nil\\033[2J' > /proc/self/comm; while :; do :; done"
    p = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", script])
    pod.procs.append(p)
    for _ in range(250):  # until it has renamed itself
        with open(f"/proc/{p.pid}/comm", "rb") as f:
            if f.read() == COMM.encode() + b"\n":
                break
        time.sleep(0.02)
    return p


def test_an_intruder_named_with_escapes_is_reported_and_shown_escaped(tmp_path):
    ok, why = RealPod.available()
    need(ok, why)
    need(shutil.which("tmux") is not None, "tmux not installed (apt-get install tmux)")
    with RealPod(cpus="1", reserved="0") as pod:
        p = hostile_intruder(pod, 1)
        assert open(f"/proc/{p.pid}/comm", "rb").read() == COMM.encode() + b"\n"
        time.sleep(0.3)
        r = run_cli("check", "--samples", "2", "--interval", "0.5", "local")  # its share of CPU 1: the evidence
        assert r.returncode == 2, r.stderr
        lines = [ln for ln in r.stdout.splitlines() if "INTRUDER_TASK" in ln and f"(pid {p.pid}," in ln]
        assert lines and SHOWN + f" (pid {p.pid}, tid {p.pid}) last ran on CPU 1" in lines[0], r.stdout  # why, if not
        assert "\x1b" not in r.stdout and "\x07" not in r.stdout

        session = f"pinscope-hostile-{uuid.uuid4().hex[:8]}"
        cmd = f"cd {REPO} && TERM=xterm-256color {sys.executable} -m pinscope.cli --interval 0.5 local; sleep 30"
        tmux("new-session", "-d", "-s", session, "-x", "220", "-y", "60", cmd)
        try:
            wait_for(session, "live", 30)
            tmux("send-keys", "-t", session, "f")  # the findings pane; its cursor walks down to our row
            wait_for(session, "INTRUDER_TASK", 30)
            text = screen(session)
            for _ in range(300):
                if f"(pid {p.pid}, tid" in text:
                    break
                tmux("send-keys", "-t", session, "Down")
                time.sleep(0.05)
                text = screen(session)
            assert SHOWN in text, text
            title = tmux("display-message", "-p", "-t", session, "#{pane_title}").stdout.strip()
            assert title != "pw", title
            tmux("send-keys", "-t", session, "q")
        finally:
            tmux("kill-session", "-t", session, check=False)
