"""The `pinscope` command line: snapshot, check, demo, and the live TUI (the default).

No traceback ever reaches the user: node-level failures are one plain line on stderr and a non-zero exit;
anything unexpected is reported the same way (with PINSCOPE_DEBUG=1 the traceback is shown).
"""
from __future__ import annotations

# first: with PINSCOPE_TRACE_START set, importing it notes "interpreter up" (bench/bench_start.py's phases)
from pinscope.collectors.starttrace import mark  # noqa: F401

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import re
import sys
import time
from pathlib import Path

from pinscope.collectors.collect import Options, snapshot
from pinscope.collectors.errors import PinscopeError
from pinscope.collectors.findings.jitter import Thresholds, set_thresholds
from pinscope.collectors.model import Role
from pinscope.collectors.naming import node_name
from pinscope.collectors.parse.cpuset import format_cpuset
from pinscope.collectors.pipeline import unread_reason
from pinscope.collectors.targets import target_problem
from pinscope.collectors.text import display, display_lines
from pinscope.tui.evidence import detail_lines

COMMANDS = ("snapshot", "check", "fit", "demo", "replay", "serve", "exporter", "gc")
ABOUT = "pinscope shows, core by core, which pod holds each CPU of a Kubernetes node, and what is amiss."
COMMAND_HELP = """commands:
  (none) TARGET...   the live view (a terminal UI) of one node or a fleet
  snapshot TARGET... what a node's CPUs are doing, as text or --json
  check TARGET...    lint nodes for pinning faults; exit 0 ok, 1 warnings, 2 critical,
                     3 a target could not be read (and no critical found on the others),
                     4 read only in part (and nothing worse found)
  fit TARGET... --cpus N  the CPUs kubelet would give the next Guaranteed container of N
                     CPUs, or its admission error; exit 0 fits, 1 rejected, 2 bad usage,
                     3 not read
  demo               the live view over simulated nodes
  replay FILE        the live view over a --record recording
  serve -- ARGS      the live view in a browser (textual-serve)
  exporter TARGET... Prometheus metrics over the nodes (--listen ADDR:PORT)
  gc                 delete debug pods left by node/NAME targets
TARGET: 'local', [user@]host[:port], node/NAME (through the Kubernetes API), or a node of --inventory.
'pinscope COMMAND --help' for a command's options."""
CHECK_ABOUT = """Read each node (twice with --samples 2, for the rates) and lint its CPU pinning: kubelet's CPU
manager state and policy against the cgroup cpusets the kernel enforces, SMT siblings, NUMA alignment,
IRQs, isolcpus, devices, and tasks on exclusive CPUs. One line per finding (severity, code, what, where)
and a hint; the codes (docs/findings.md says each):"""
CHECK_EXIT = """exit status:
  0  no warning or critical finding (info only)
  1  warnings found
  2  a critical finding; also a command line refused (one line on stderr)
  3  a target could not be read (its line on stderr), and no critical finding on the others
  4  a node read only in part (READ_PARTIAL, STATE_NOT_READ_WHOLE, CHECK_FAILED), nothing worse
  128+N  ended by signal N (SIGTERM: 143), after every node was closed"""
FIT_ABOUT = """What kubelet would do with the next Guaranteed container of N whole CPUs (and --memory, --device) on each
node: the exact CPUs, or the error kubelet would refuse it with (docs/fit.md)."""
FIT_EXIT = """exit status (with several nodes the worst: 3, then 1, then 0):
  0  it fits on every node read (or runs on the shared pool: cpuManagerPolicy none)
  1  kubelet would reject it on a node (error.kind says why), or would not start on its configuration
  2  the command line refused (one line on stderr): --cpus missing or not above 0, a bad --memory or
     --device, --memory, a hugepages size or a --device resource given twice, an unknown option
  3  a node not read (its line on stderr), or read too little to say (its checkpoint unreadable or
     missing, the policy unknown: error null, cpus null, note says why)
  128+N  ended by signal N
--json: one object a node (a list with several): node, kubelet_version, assumed, cpus (null: none given),
error (null or {"kind", "message"}), per_numa, per_socket, how_many_fit, unknown, note, live (kubelet's
PodResources view), memory (with --memory), devices (with --device: per resource the NUMA nodes its
devices come from, or a note where kubelet's PodResources API, which alone says them, was not reached).
A node not read at all is only
  {"node": NAME, "error": {"kind": "NotRead", "message": WHY}, "cpus": null}
so cpus null does not mean rejected: a script tells "rejected" from "not read" by the exit status or
error.kind. The kinds:
  SMTAlignmentError, TopologyAffinityError, UnexpectedAdmissionError: kubelet's admission errors, in
    its words (its memory manager's refusals are UnexpectedAdmissionError "... [memorymanager] ...")
  PolicyError, TopologyManagerError, StateError, TopologyError: kubelet would refuse its own
    configuration or checkpoint and not start
  Panic, Hang: kubelet's own code would crash, or its admission never return (a bug of that release)
  BadCase: the node's files give a value kubelet's code cannot take
  NotRead: the node could not be read (exit 3)
hint_combinations: how many combinations of hints kubelet's topology manager walks admitting it (null:
its policy none); warnings: kubelet's own admission would walk more than 10^7 of them (memory and two
hugepages sizes on 8 NUMA nodes: 255^4) and may take long. pinscope's answer does not wait for it."""
NO_TARGET = "none: 'local', this machine"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pinscope")
    except PackageNotFoundError:
        return "unknown"


def _positive(kind=float):
    """An argparse type: a number > 0 (an interval of 0 would busy-loop, a timeout of 0 never connects)."""
    def conv(text: str):
        try:
            v = kind(text)
        except ValueError:
            whole = kind is int and _is_float(text)
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole ' if whole else ''}number") from None
        if not v > 0 or v != v or v == float("inf"):
            raise argparse.ArgumentTypeError(f"must be greater than 0 (got {text})")
        return v
    conv.__name__ = "positive number"
    return conv


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _non_negative(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more (got {text})")
    return v


def _port(text: str) -> int:
    if not text.isdecimal() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 1 to 65535 (got {text})")
    return int(text)


def _image(text: str) -> str:
    """--image: a reference a container runtime can pull, by tag or by digest (checked before anything connects)."""
    from pinscope.collectors.transport.kube import image_problem

    if why := image_problem(text):
        raise argparse.ArgumentTypeError(why)
    return text


def _err(msg: str) -> None:
    """One line on stderr; node data in it (names, a server's words) is escaped like any text output."""
    print(display(msg), file=sys.stderr)


def _common(p: argparse.ArgumentParser, no_target: str | None = None) -> None:
    p.add_argument("targets", nargs="*", metavar="TARGET",
                   help="'local', [user@]host[:port], or node/NAME (through the Kubernetes API)"
                        + (f"; {no_target}" if no_target else ""))
    p.add_argument("--root", help="read the node's files under this prefix (fixture trees, kubectl debug: /host)")
    p.add_argument("--sudo", action="store_true", help="read root-only files (cpu_manager_state) through sudo -n")
    _sampling(p)
    p.add_argument("-i", dest="identity", metavar="KEY", help="SSH private key")
    p.add_argument("--ssh-config", metavar="F", help="OpenSSH client config file (default ~/.ssh/config)")
    p.add_argument("--known-hosts", metavar="F", help="known_hosts file (default ~/.ssh/known_hosts)")
    p.add_argument("--accept-new-host-key", action="store_true",
                   help="trust and record the key of a host never seen before (a changed key is still refused)")
    p.add_argument("--connect-timeout", type=_positive(), default=10.0, help="seconds (default 10)")
    p.add_argument("--inventory", metavar="FILE", help="YAML inventory of nodes (host, user, port, root, sudo, labels, groups)")
    p.add_argument("--kube", action="store_true", help="list nodes through the Kubernetes API (kubeconfig or in-cluster)")
    _kube_api(p)
    p.add_argument("--selector", metavar="LABELS", help="with --kube: a node label selector (pool=trading)")
    p.add_argument("--host-template", default="{ip}", help="with --kube: how to reach a node over SSH ({name}, {ip}); default {ip}")
    p.add_argument("--kube-user", metavar="USER", help="with --kube: the SSH user")
    p.add_argument("--via", choices=("ssh", "api"), default="ssh",
                   help="with --kube: reach each node over SSH (default) or through the Kubernetes API (as node/NAME)")
    p.add_argument("--image", type=_image, default="busybox:1.36",
                   help="node/NAME: the debug pod's image when no exporter pod runs there (needs sh and awk); "
                        "a tag or a digest (busybox@sha256:...)")
    p.add_argument("--pod-lifetime", type=_positive(int), default=3600, metavar="S",
                   help="node/NAME: a debug pod's activeDeadlineSeconds (a new one is started after it)")
    p.add_argument("--pod-idle", type=_positive(int), default=30, metavar="S",
                   help="node/NAME: a debug pod whose pinscope died (SIGKILL) ends this many seconds after (default 30)")
    p.add_argument("--pod-heartbeat", type=_positive(int), default=10, metavar="S",
                   help="node/NAME: seconds between the heartbeats a session writes on its debug pod; `pinscope gc` "
                        "keeps a pod whose heartbeat moves (default 10)")


def _sampling(p: argparse.ArgumentParser) -> None:
    """The shared options that mean something wherever nodes are sampled and rated, the demo's simulated
    ones included (docs/use.md: "options shared by every command"); the connection options do not (no SSH)."""
    p.add_argument("--interval", type=_positive(), default=1.0, help="seconds between samples (default %(default)g)")
    p.add_argument("--runq-wait-ms", type=_non_negative, default=Thresholds().runq_wait_ms, metavar="MS",
                   help="RUNQUEUE_WAIT_EXCLUSIVE above this many ms waited per second (default %(default)g)")
    p.add_argument("--noise-pct", type=_non_negative, default=Thresholds().noise_pct, metavar="PCT",
                   help="KERNEL_NOISE_EXCLUSIVE above this %% of an exclusive CPU in irq+softirq+steal (default %(default)g)")
    p.add_argument("--intruder-pct", type=_non_negative, default=Thresholds().intruder_pct, metavar="PCT",
                   help="INTRUDER_TASK: a task outside the owning pod that used more than this %% of a CPU over the window, "
                        "on one exclusive CPU at both ends (default %(default)g)")
    p.add_argument("--fit-cpus", type=_positive(int), metavar="N",
                   help="EXCLUSIVE_FRAGMENTED: judge by a container of N CPUs (default: the largest pinned request)")


def _kube_api(p: argparse.ArgumentParser) -> None:
    p.add_argument("--context", help="with --kube or node/NAME: the kubeconfig context")
    p.add_argument("--kubeconfig", metavar="F", help="with --kube or node/NAME: the kubeconfig file")
    p.add_argument("--namespace", default="pinscope",
                   help="node/NAME: where the exporter pods run and debug pods are made (default pinscope)")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one plain line naming the option (exit 2), like every other refusal
    (argparse printed its whole usage first: ~13 lines for `--interval abc`)."""

    lead: str | None = None  # said first, before the usage: what the program is, then its commands

    def error(self, message: str):
        _err(f"{self.prog}: error: {message}")
        raise SystemExit(2)

    def format_help(self) -> str:
        return f"{self.lead}\n\n{super().format_help()}" if self.lead else super().format_help()


def _theme(p: argparse.ArgumentParser) -> None:
    from pinscope.themes import THEME_KEYS  # the names only (Textual is not imported for them)

    p.add_argument("--theme", default="dark", help=f"the colours: {', '.join(THEME_KEYS)} (default %(default)s)")


def _codes_text(width: int = 100) -> str:
    """Every finding code, as lines of at most `width` (check --help)."""
    import textwrap

    from pinscope.collectors.findings import CODES

    return "\n".join(textwrap.wrap(", ".join(sorted(CODES)), width, initial_indent="  ", subsequent_indent="  ",
                                    break_on_hyphens=False))


def build_parser(cmd: str) -> argparse.ArgumentParser:
    p = _Parser(prog=f"pinscope {cmd}".strip(), formatter_class=argparse.RawDescriptionHelpFormatter)
    if not cmd:  # `pinscope --help`: what pinscope is, its commands, then the live view's usage and options
        p.lead = f"{ABOUT}\n\n{COMMAND_HELP}"
    p.add_argument("--version", action="version", version=f"pinscope {_version()}")
    _OPTIONS.get(cmd, _live_options)(p)
    return p


def _snapshot_options(p: argparse.ArgumentParser) -> None:
    p.description = "What each node's CPUs are doing: topology, roles, owners, load, pods; as text or --json."
    _report_options(p)


def _check_options(p: argparse.ArgumentParser) -> None:
    p.description = f"{CHECK_ABOUT}\n{_codes_text()}"
    p.epilog = CHECK_EXIT
    _report_options(p)


def _report_options(p: argparse.ArgumentParser) -> None:
    """snapshot's and check's: a report of each node, read once or sampled, or read from a recording."""
    _common(p, NO_TARGET)
    p.add_argument("--json", action="store_true", help="one JSON object (a list with several targets)")
    p.add_argument("--samples", type=_positive(int), default=1, help="samples to take; rates need 2 (default 1)")
    p.add_argument("--timeout", type=_positive(), default=30.0,
                   help="seconds for the whole run of one target, connecting and every sample (default 30); "
                        "a target not done by then is said, with the file its probe was at, as unread")
    p.add_argument("--replay", metavar="FILE", help="read the nodes from a recording instead")
    p.add_argument("--at", metavar="TIME", help="with --replay: ISO time, HH:MM[:SS], epoch or -5m (default: the end)")


def _fit_options(p: argparse.ArgumentParser) -> None:
    p.description = FIT_ABOUT
    p.epilog = FIT_EXIT
    _common(p)
    p.add_argument("--cpus", type=_positive(int), required=True, metavar="N", help="the container's CPUs (a whole number)")
    from pinscope.cli.fit import Once, device_arg

    p.add_argument("--memory", action=Once, metavar="SIZE", help="its memory (512Mi, 4Gi): the NUMA nodes kubelet's "
                   "memory manager would take it from")
    p.add_argument("--hugepages-2Mi", action=Once, dest="hugepages_2mi", metavar="SIZE", help="its 2Mi hugepages (with --memory)")
    p.add_argument("--hugepages-1Gi", action=Once, dest="hugepages_1gi", metavar="SIZE", help="its 1Gi hugepages (with --memory)")

    p.add_argument("--device", action="append", type=device_arg, metavar="RESOURCE=COUNT",
                   help="its devices of a device plugin's resource (example.com/gpu=2; repeat for others): the NUMA nodes "
                   "kubelet's device manager would take them from, where its PodResources API is reached (as root)")
    p.add_argument("--json", action="store_true", help="one JSON object (a list with several targets)")
    p.add_argument("--timeout", type=_positive(), default=30.0, help="seconds to read one target (default 30)")


def _exporter_options(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.set_defaults(interval=15.0)
    p.add_argument("--listen", required=True, metavar="ADDR:PORT", help="serve /metrics here (:9847 for every address)")
    p.add_argument("--node-name", metavar="NAME", help="the node label of a 'local' target (a DaemonSet passes spec.nodeName)")


def _gc_options(p: argparse.ArgumentParser) -> None:
    p.description = ("Delete pinscope's debug pods that no live session holds (ended, or whose heartbeat stopped), "
                     "and say of each what was done and why.")
    _kube_api(p)
    p.add_argument("--dry-run", action="store_true", help="say what would be done, delete nothing")


def _demo_options(p: argparse.ArgumentParser) -> None:
    _sampling(p)
    _theme(p)
    p.add_argument("--record", metavar="FILE", help="append every frame of every node to FILE, compressed")


def _serve_options(p: argparse.ArgumentParser) -> None:
    p.usage = "pinscope serve [--host HOST] [--port PORT] [--public-url URL] [options] -- ARGS..."
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8000, help="default 8000")
    p.add_argument("--public-url", metavar="URL", help="the URL browsers use, when behind a reverse proxy")
    p.add_argument("--token", help="the token the URL must carry (default: $PINSCOPE_SERVE_TOKEN, else a "
                   "random one per run, printed); the environment variable keeps it out of `ps`")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="also answer to this Host name (default: the listen address and the loopback names)")
    p.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="also accept websockets from pages of this origin (https://wall.example:443)")
    p.add_argument("--read-only", action=argparse.BooleanOptionalAction, default=None,
                   help="sessions write no files here (s/e refused); the default unless --host is loopback")
    p.add_argument("--certfile", metavar="PEM", help="serve https with this certificate chain (with --keyfile)")
    p.add_argument("--keyfile", metavar="PEM", help="the certificate's private key")
    p.add_argument("args", nargs="*", metavar="ARGS", help="pinscope's own arguments: demo, --inventory F, TARGET...")


def _replay_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--speed", type=_positive(), default=1.0)
    p.add_argument("--at", metavar="TIME", help="start at this time (ISO, HH:MM[:SS], epoch, -5m)")
    _theme(p)


def _live_options(p: argparse.ArgumentParser) -> None:
    """The live view's (`pinscope TARGET...`, no command word)."""
    _common(p, "none: refused (a live view of this machine is 'pinscope local'; try 'pinscope demo')")
    _theme(p)
    p.add_argument("--record", metavar="FILE", help="append every frame of every node to FILE, compressed")
    p.add_argument("--prometheus", metavar="URL", help="the fleet overview from this Prometheus (pinscope exporter's metrics); "
                   "--selector then takes label matchers, --host-template/--kube-user say how Enter reaches a node")


# each command's options (build_parser); the live view's where no command word is given
_OPTIONS = {"snapshot": _snapshot_options, "check": _check_options, "fit": _fit_options, "exporter": _exporter_options,
            "gc": _gc_options, "demo": _demo_options, "serve": _serve_options, "replay": _replay_options}


def _opts(a) -> Options:
    return Options(root=a.root, sudo=a.sudo, identity=a.identity, ssh_config=a.ssh_config,
                   known_hosts=a.known_hosts, accept_new_host_key=a.accept_new_host_key,
                   connect_timeout=a.connect_timeout, kube_context=a.context, kubeconfig=a.kubeconfig,
                   kube_namespace=a.namespace, kube_image=a.image, kube_pod_lifetime=a.pod_lifetime, kube_pod_idle=a.pod_idle,
                   kube_pod_heartbeat=a.pod_heartbeat)


def _command_first(argv: list[str]) -> list[str]:
    """`pinscope --root /host snapshot local`: the options shared by every command may come before the
    command word too; it is moved to the front. Only when no target precedes it (`pinscope local check`
    stays a refusal), and never an option's value (`--inventory check`)."""
    if not argv or argv[0] in COMMANDS:
        return argv
    takes_value = {s for act in build_parser("")._actions for s in act.option_strings if act.nargs != 0}
    i = 0
    while i < len(argv):
        w = argv[i]
        if w in COMMANDS:
            return [w, *argv[:i], *argv[i + 1:]]
        if w == "--" or not w.startswith("-"):
            break
        i += 2 if w in takes_value else 1
    return argv


def main(argv: list[str] | None = None) -> int:
    """The program (`argv` None: sys.argv) or a caller's command line (a test's: run in its process)."""
    if argv is not None:
        return _main(argv)
    code = 1
    try:
        code = _main(None)
        return code
    finally:
        # the interpreter's end may wait forever on a thread Textual restarted on a closed terminal: ended
        # after the grace (exitsignals.after_main); an end that ends is not held up
        from pinscope.collectors.exitsignals import after_main

        after_main(code)


def _main(argv: list[str] | None = None) -> int:
    cmd, a, served = _parse(list(sys.argv[1:] if argv is None else argv))
    # before anything connects: words that are no target, a theme that does not exist, a TUI without a terminal
    if why := _refusal(cmd, a):
        _err(why)  # one plain line, as every refusal
        return 2
    if cmd == "serve" and (served or a.args):  # the served command line is refused here, before serving
        if why := _served_refusal(served or a.args):
            _err(f"pinscope serve: {why.removeprefix('pinscope: ')}")
            return 2
    try:
        return _run(cmd, a, served)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`pinscope check | head`): end quietly, as a tool killed by SIGPIPE does
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except PinscopeError as err:
        _err(f"pinscope: {err}")
        return 3 if cmd in ("check", "fit") else 1  # check's 1 means "warnings found": no target could be read is 3
    except Exception as err:  # the last line of defence: a plain line, never a traceback
        if os.environ.get("PINSCOPE_DEBUG"):
            raise
        _err(f"pinscope: internal error: {type(err).__name__}: {err}")
        return 3


def _parse(argv: list[str]) -> tuple[str, argparse.Namespace, list[str]]:
    """(the command word or "", its parsed options, serve's own command line after `--`); the thresholds and
    the fit size the options give are set."""
    argv = _command_first(argv)
    cmd = argv[0] if argv and argv[0] in COMMANDS else ""
    if cmd:
        argv = argv[1:]
    served: list[str] = []
    if cmd == "serve" and "--" in argv:  # everything after -- is pinscope's own command line, untouched
        i = argv.index("--")
        argv, served = argv[:i], argv[i + 1:]
    parser = build_parser(cmd)
    a = parser.parse_args(argv)
    if getattr(a, "runq_wait_ms", None) is not None:
        set_thresholds(Thresholds(a.runq_wait_ms, a.noise_pct, a.intruder_pct))
    if getattr(a, "fit_cpus", None) is not None:
        from pinscope.collectors.findings.fit import set_fit_cpus

        set_fit_cpus(a.fit_cpus)
    return cmd, a, served


def _run(cmd: str, a, served: list[str]) -> int:
    """The command, its command line accepted: its exit status."""
    if cmd == "serve":
        from pinscope.tui.serve import ServeOptions, serve

        return serve(served or a.args, ServeOptions(
            a.host, a.port, a.public_url, a.token, tuple(a.allow_host), tuple(a.allow_origin), a.read_only,
            a.certfile, a.keyfile))
    if cmd in ("snapshot", "check"):
        return _until_signal(_snapshot_cmd(a, check=cmd == "check"))
    if cmd == "fit":
        from pinscope.cli.fit import fit_cmd

        return _until_signal(fit_cmd(a))
    if cmd == "exporter":
        from pinscope.collectors.exporter.serve import run as run_exporter

        return run_exporter(_targets(a), _opts(a), a.listen, a.interval, a.node_name)
    if cmd == "gc":
        from pinscope.collectors.transport.kube import gc

        return gc(a.context, a.kubeconfig, a.namespace, dry_run=a.dry_run)
    if cmd == "demo":
        from pinscope.tui.app import run_demo

        return run_demo(theme=a.theme, interval=a.interval, record=a.record)
    if cmd == "replay":
        return _replay(a)
    return _live(a)


def _until_signal(work) -> int:
    """A headless command's coroutine, run to its end or to a signal: SIGTERM/SIGHUP/SIGINT cancel the work, and
    each node closes (a node/NAME debug pod is deleted); 128 + the signal, else the command's status."""
    from pinscope.collectors.exitsignals import until_exit_signal

    rc, sig = asyncio.run(until_exit_signal(work))
    sys.stdout.flush()  # here, where a reader gone (`| head`) is caught (_main), not at exit (status 120)
    return 128 + sig if sig else rc or 0


def _replay(a) -> int:
    from pinscope.collectors.record import at_time, open_recording
    from pinscope.tui.replay import ReplayApp

    rec = open_recording(a.file)
    if not rec.index:
        _err(f"pinscope: {a.file}: no whole record" + (f" ({rec.problem})" if rec.problem else ""))
        return 1
    app = ReplayApp(rec, theme=a.theme, speed=a.speed, at=at_time(rec, a.at) if a.at else None)
    app.run()
    return app.return_code or 0


def _live(a) -> int:
    """The live view (`pinscope TARGET...`), or with --prometheus the fleet overview from Prometheus."""
    if getattr(a, "prometheus", None):
        from pinscope.tui.promapp import run_prometheus

        return run_prometheus(a.prometheus, a.selector, _opts(a), a.interval, max(5.0, a.interval), a.theme,
                              a.host_template, a.kube_user)
    targets = _targets(a)
    if not targets:
        build_parser("").print_usage(sys.stderr)
        _err("pinscope: give a TARGET ('local', [user@]host[:port] or node/NAME), --inventory or --kube, or try 'pinscope demo'")
        return 2
    if targets == ["local"]:  # the probe reads the node while Textual loads (issue 25: first grid)
        from pinscope.collectors.collect import prestart_local

        prestart_local(_opts(a))
    from pinscope.tui.app import run_live

    return run_live(targets, _opts(a), interval=a.interval, theme=a.theme, record=a.record, kube=_kube(a))


def _refusal(cmd: str, a, terminal: bool = True) -> str | None:
    """Why this command line is refused before anything connects (one line), or None."""
    tui = cmd in ("demo", "replay", "")
    for word in getattr(a, "targets", None) or []:
        # the exporter serves the simulated cluster as a target; snapshot and check read its trees
        demo = cmd in ("exporter", "snapshot", "check", "fit") and word == "demo"
        why = None if getattr(a, "replay", None) or demo else target_problem(word, COMMANDS)
        if why and not _inventory_has(a, word):
            return f"pinscope: {why}"
    if tui and getattr(a, "theme", None) is not None:
        from pinscope.themes.themes import THEMES

        if a.theme not in THEMES:
            return f"pinscope: no theme {a.theme!r}; the themes are {', '.join(sorted(THEMES))}"
    if getattr(a, "prometheus", None):  # a URL or selector that cannot work, said before anything starts
        from pinscope.collectors.promql import PromError, PromSource

        try:
            PromSource(a.prometheus, a.selector)
        except PromError as err:
            return f"pinscope: {err}"
    if cmd == "exporter":  # a malformed --listen is a usage error (a port in use is found when it binds: 1)
        from pinscope.collectors.exporter.serve import ListenError, parse_listen

        try:
            parse_listen(a.listen)
        except ListenError as err:
            return f"pinscope: {err}"
    if terminal and tui and not _has_terminal():
        return ("pinscope: the live view needs a terminal (stdin and stdout are not both one); "
                "for text use 'pinscope snapshot' or 'pinscope check', or 'pinscope serve' for a browser")
    return None


def _served_refusal(args: list[str]) -> str | None:
    """`pinscope serve -- ARGS`: ARGS checked as `pinscope ARGS` would check them (each browser tab runs it),
    said once here rather than in every tab after the server started. The tabs have a terminal."""
    args = _command_first(list(args))
    cmd = args[0] if args and args[0] in COMMANDS else ""
    if cmd not in ("", "demo", "replay"):
        return f"'{cmd}' does not run in a browser; give the live view's arguments: demo, --inventory F, TARGET..."
    a = build_parser(cmd).parse_args(args[1:] if cmd else args)  # a bad option: one line, exit 2
    if not cmd and not (a.targets or a.inventory or a.kube or a.prometheus):
        return "give a TARGET ('local', [user@]host[:port] or node/NAME), --inventory or --kube after --, or demo"
    return _refusal(cmd, a, terminal=False)


def _has_terminal() -> bool:
    """A terminal on stdin and stdout, or Textual's web driver (`pinscope serve` runs us under it)."""
    if os.environ.get("TEXTUAL_DRIVER"):
        return True
    return sys.stdin.isatty() and sys.stdout.isatty()


def _inventory_has(a, word: str) -> bool:
    """Is `word` the name of a node of --inventory? (then it names that node, whatever its spelling)"""
    if not getattr(a, "inventory", None):
        return False
    try:
        from pinscope.collectors.inventory import load_inventory

        inv, _ = load_inventory(Path(a.inventory).read_text(encoding="utf-8"), a.inventory)
    except Exception:  # noqa: BLE001 -- a broken inventory is reported where it is read (_targets)
        return False
    return any(t.name == word for t in inv)


def _targets(a) -> list:
    """Command-line targets (strings), then the inventory's (Targets, with their own root/sudo)."""
    out: list = list(a.targets or [])
    if getattr(a, "inventory", None):
        from pinscope.collectors.inventory import InventoryError, load_inventory

        try:
            text = Path(a.inventory).read_text(encoding="utf-8")
        except OSError as err:
            raise InventoryError(f"--inventory {a.inventory}: {err.strerror}") from err
        inv, probs = load_inventory(text, a.inventory)
        for p in probs:
            _err(f"pinscope: {p.source}: {p.message}")
        out += inv
    if getattr(a, "kube", False):
        from pinscope.collectors.kube import discover

        found = discover(a.context, a.selector, a.host_template, a.kube_user, a.kubeconfig)
        if a.via == "api":
            found = [dataclasses.replace(t, address=f"node/{t.name}") for t in found]
        if not found:
            _err("pinscope: --kube: the API lists no node" + (f" matching {a.selector!r}" if a.selector else ""))
        out += found
    return out


def _kube(a):
    """(context, kubeconfig) when pods are enriched from the API: with --kube, or any node/NAME target."""
    api = getattr(a, "kube", False) or any(str(t).startswith(("node/", "nodes/")) for t in a.targets or [])
    return (a.context, a.kubeconfig) if api else None


def _name(t) -> str:
    return t if isinstance(t, str) else t.name


async def _one(target, a) -> tuple[dict | None, str | None]:
    opts = _opts(a)
    address = target
    if not isinstance(target, str):
        address = target.address
        opts = dataclasses.replace(opts, root=target.root or opts.root, sudo=target.sudo or opts.sudo)
    api_name = _api_name(target) if _kube(a) else None  # the node's name in the API, when known beforehand
    # with --samples 2+, kubelet's counters are read at both ends of the window too
    first = await _api_round(api_name, a) if api_name and a.samples >= 2 else None
    try:
        report = await snapshot(address, opts, samples=max(1, a.samples), interval=a.interval,
                                timeout=a.timeout, progress=_Waiting(_name(target)) if _stderr_tty() else None,
                                transport=transport_of(target))
    except PinscopeError as err:
        if isinstance(target, str) or str(err).startswith(f"{target.name}:"):
            return None, str(err)
        return None, f"{target.name}: {err}"  # an inventory's node is said by its name, as in the JSON
    why = unread_reason(report)
    if why is not None:  # nothing of the node was read (its /proc and /sys are not there): not a reading
        return None, f"{_name(target)}: {why}"
    if _kube(a):
        from pinscope.collectors.kube import ApiWindow

        now = await _api_round(api_name or local_api_name(report.snapshot), a)
        report = report.with_api(ApiWindow(now, first if first is not None and first.answered else None))
    o = report.to_json()
    # the inventory's (or --kube's) name over the node's hostname: one name everywhere (collectors/naming.py)
    o["node"] = node_name(None if isinstance(target, str) else target.name, report.snapshot.node, address)
    return o, None


class _Waiting:
    """What a slow connect waits for (a debug pod not running yet: Pending, an image pull), said on stderr
    when it is a terminal: nothing in the first QUIET seconds (a pod that starts at once says nothing), then
    a line when the state changes, and every 10 s while it does not. A script's stderr (a pipe, a file) gets
    none of it: only errors, as before. A terminal gone meanwhile (EIO) ends the saying, not the run."""

    QUIET = 2.0
    EVERY = 10.0

    def __init__(self, target: str) -> None:
        self.target = target
        self.last: str | None = None
        self.at = 0.0
        self.t0: float | None = None
        self.gone = False

    def __call__(self, what: str) -> None:
        now = time.monotonic()
        if self.t0 is None:
            self.t0 = now
        state = _SECONDS.sub("", what)
        if self.gone or now - self.t0 < self.QUIET or (state == self.last and now - self.at < self.EVERY):
            return
        self.last, self.at = state, now
        try:
            _err(f"pinscope: {self.target}: {what}")
        except (OSError, ValueError):
            self.gone = True


def _stderr_tty() -> bool:
    """stderr is a terminal (None when it was closed: `2>&-`)."""
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (OSError, ValueError):
        return False


_SECONDS = re.compile(r", \d+ s of at most [\d.]+ s$")


def local_api_name(snap) -> str:
    """The node's name in the API as its kubelet registered it: --hostname-override when given, else the hostname,
    lowercased both (kubelet's nodeutil.GetHostname). The real node (tests/cluster) runs its kubelet with
    --hostname-override: `--kube local` asked the API for the hostname ("nodes vm not found")."""
    return snap.kubelet.node_name or snap.node.strip().lower()


def _api_name(target) -> str | None:
    """The node's name in the API: the inventory's (--kube's), node/NAME's; None for an address."""
    from pinscope.collectors.transport.kube import node_name

    return _name(target) if not isinstance(target, str) else node_name(target)


async def _api_round(name: str, a):
    from pinscope.collectors.kube import api_node

    return await asyncio.to_thread(api_node, name, a.context, a.kubeconfig)


def _from_recording(a) -> tuple[list, list]:
    from pinscope.collectors.record import at_time, open_recording, state_at

    rec = open_recording(a.replay)
    t = at_time(rec, a.at)
    if rec.problem:
        _err(f"pinscope: {a.replay}: {rec.problem}")
    names = [_name(x) for x in _targets(a)] or rec.nodes
    results: list[tuple[dict | None, str | None]] = []  # (the report's JSON, or why there is none)
    for n in names:
        report = state_at(rec, n, t)
        if report is None:
            results.append((None, f"{n}: not in {a.replay} before that time"))
        else:
            o = report.to_json()
            o["recorded_at"] = t
            results.append((o, None))
    return names, results


@dataclasses.dataclass(frozen=True)
class _DemoNode:
    """A demo node as the command line reads it: named by its hostname, read through the transport the TUI's
    demo reads it through (DemoCluster.targets(): the simulation advances, and the node's kubelet answers
    PodResources from it, the planted disagreement included), over its tree (`root`)."""

    name: str
    root: str
    transport: object
    address: str = "local"
    sudo: bool = False


def demo_nodes(demo) -> list[_DemoNode]:
    """The simulated cluster's nodes, each with the transport of DemoCluster.targets() (one path with the TUI)."""
    return [_DemoNode(s.spec.hostname, str(s.root), t.transport) for s, t in zip(demo.sims, demo.targets())]


def transport_of(target):
    """The ready transport a target carries (a demo node's), or None: one is made from its address."""
    return getattr(target, "transport", None)


async def each_target(targets: list, one, a) -> tuple[list, list]:
    """(the targets, `one(target, a)` of each, run together). The word demo stands for the simulated cluster's
    nodes: their trees are written once, each read as the TUI's demo reads it (demo_nodes), removed at the end."""
    demo = None
    if "demo" in targets:
        from pinscope.collectors.sim.demo import DemoCluster

        demo = DemoCluster()
        i = targets.index("demo")
        targets[i:i + 1] = demo_nodes(demo)
    try:
        return targets, await asyncio.gather(*(one(t, a) for t in targets))
    finally:
        if demo is not None:
            demo.close()


async def _snapshot_cmd(a, check: bool) -> int:
    if a.replay:
        targets, results = _from_recording(a)
    else:
        targets, results = await each_target(_targets(a) or ["local"], _one, a)
    targets = [_name(t) for t in targets]
    failed = [(t, e) for t, (_, e) in zip(targets, results) if e]
    if a.json:
        objs = [o if o is not None else {"node": t, "error": e} for t, (o, e) in zip(targets, results)]
        print(json.dumps(objs[0] if len(objs) == 1 else objs, indent=1))
    else:
        for t, (o, e) in zip(targets, results):
            if o is not None:
                print(render_check(o) if check else render_table(o))
    for t, e in failed:
        _err(f"pinscope: {e}")
    if failed and len(failed) == len(targets):
        return 1 if not check else 3
    if check:
        worst = 0
        partial = False
        for o, _ in results:
            for f in (o or {}).get("findings", []):
                worst = max(worst, {"critical": 2, "warning": 1}.get(f["severity"], 0))
                partial = partial or f["code"] in ("READ_PARTIAL", "STATE_NOT_READ_WHOLE", "CHECK_FAILED")
        # a critical fault found is 2 whatever else; a node that could not be read (its line on stderr) makes
        # the check incomplete: 3, not "warnings" nor "read in part"; then warnings 1; a node read only in
        # part is not "ok": 4, and READ_PARTIAL says what could not be read and how (--sudo, root, a group);
        # so is a node one of whose checks failed (CHECK_FAILED: what it judges is unknown)
        if worst == 2:
            return 2
        if failed:
            return 3
        return worst or (4 if partial else 0)
    return 0




def _glyph(role: str) -> str:
    try:
        return Role(role).glyph
    except ValueError:
        return "?"


def _v(x) -> str:
    return "-" if x is None else str(x)


def render_table(o: dict) -> str:
    k = o["kubelet"]
    cg = o["cgroup"]  # version null: /sys/fs/cgroup not readable by this user (said among the problems)
    out = [f"node {o['node']}  cgroup {'v' + str(cg['version']) if cg['version'] else 'version unknown'} "
           f"({cg['driver'] or 'driver unknown'})  "
           f"policy {k['cpu_manager_policy'] or 'unknown'}  topology {k['topology_manager_policy']}  "
           f"reserved {format_cpuset(k['reserved_cpus']) or '-'}  roles from {o['roles_from']}"]
    cpus = {c["id"]: c for c in o["cpus"]}
    groups = list(o["numa_nodes"] or [{"id": None, "cpus": sorted(cpus)}])
    placed = {cid for n in groups for cid in n["cpus"]}
    if set(cpus) - placed:  # offline CPUs: sysfs lists no NUMA node for them, yet they are the node's
        groups.append({"id": "", "cpus": sorted(set(cpus) - placed)})
    for n in groups:
        out.append(f"  NUMA {n['id']}:" if n["id"] != "" else "  no NUMA node (offline):")
        for cid in n["cpus"]:
            c = cpus.get(cid)
            if not c:
                continue
            own = ", ".join(f"{w['namespace'] or '?'}/{w['pod'] or w['pod_uid'][:8]}/"
                            + ("(whole pod)" if w.get("pod_level") else w["container"] or "?") for w in c["owners"])
            util = f"{c['util'] * 100:5.1f}%" if c["util"] is not None else "     -"
            out.append(f"    cpu{cid:<4} {_glyph(c['role'])} {c['role']:<10} s{_v(c['socket'])} core {_v(c['core'])} "
                       f"sib {format_cpuset(c['siblings']):<8} {util}  {own}")
    out.append("  pods:")
    for p in o["pods"]:
        for c in p["containers"]:
            eff = format_cpuset(c["cpus_effective"]) if c["cpus_effective"] is not None else "-"
            # exclusive null: kubelet's state file was not read, so its assignment is unknown, not "shared"
            asg = format_cpuset(c["cpuset"]) if c["cpuset"] is not None else (
                f"pod {format_cpuset(p['pod_cpus'])}" if p.get("pod_cpus") else
                "unknown" if c.get("exclusive", False) is None else "shared")
            out.append(f"    {p['namespace'] or '?'}/{p['name'] or p['uid']} {c['name'] or '?'} [{p['qos'] or 'QoS unknown'}] "
                       f"kubelet {asg} kernel {eff} tasks {len(c['tasks'])}")
    if o["errors"]:
        out.append("  problems:")
        out.extend(f"    {e['source']}: {e['message']}" for e in o["errors"])
    return display_lines(out)


def render_check(o: dict) -> str:
    """One line per finding, then its evidence (file and value, the first few) and fix; each line escaped."""
    out = []
    order = {"critical": 0, "warning": 1, "info": 2}
    fs = sorted(o["findings"], key=lambda f: (order.get(f["severity"], 3), f["code"]))
    for f in fs:
        where = []
        if f.get("cpus"):
            where.append("cpus " + format_cpuset(f["cpus"]))
        if f.get("pod"):
            where.append(f"{f.get('namespace') or '?'}/{f['pod']}" + (f"/{f['container']}" if f.get("container") else ""))
        out.append(f"{o['node']}: {f['severity']:<8} {f['code']:<24} {f['message']}"
                   + (f"  [{'; '.join(where)}]" if where else ""))
        out.extend(f"    {line}" for line in detail_lines(f.get("evidence") or (), f.get("hint")))
    for e in o.get("errors") or []:  # what the API did not say (nodes/proxy not allowed): once, beside the findings
        if e.get("source") == "kubernetes":
            out.append(f"{o['node']}: kubernetes: {e['message']}")
    n = {s: sum(1 for f in fs if f["severity"] == s) for s in order}
    out.append(f"{o['node']}: {n['critical']} critical, {n['warning']} warning, {n['info']} info")
    return display_lines(out)


if __name__ == "__main__":
    sys.exit(main())
