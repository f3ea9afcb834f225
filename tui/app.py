"""The pinscope Textual app: thin. It owns the node views, starts one long-lived task per node, and
routes messages to the screen on show. Screens are in tui/screens/, widgets in tui/widgets/.

Workers post messages and never touch widgets; messages for the same node replace stale ones
(`can_replace`), and updates are applied inside `batch_update()`.
"""
from __future__ import annotations

import os
import signal
import sys
import termios
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from textual.app import App, ScreenStackError
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input

from pinscope.collectors.collect import Options
from pinscope.collectors.exitsignals import arm_watchdog, on_exit_signals
from pinscope.collectors.fleet import Fleet, NodeTarget
from pinscope.themes import TCSS
from pinscope.themes.themes import ORDER, THEMES, theme_name
from pinscope.collectors.starttrace import mark
from pinscope.collectors.text import display
# the first grid needs the node screen only: the others (the overview with psutil, a CPU, a container, help,
# node info) are imported when one is first shown (issue 25: first grid)
from pinscope.tui.screens.base import FleetBase, ReportScreen
from pinscope.tui.screens.node import NodeScreen
from pinscope.tui.controlfilter import DropControlCharacters
from pinscope.tui.state import NodeView

_DROP_CONTROL = DropControlCharacters()

KEYMAP = Path(os.environ.get("XDG_CONFIG_HOME", Path.home() / ".config")) / "pinscope" / "keymap.toml"


class NodeUpdate(Message):
    """A new NodeReport of one node (from its worker)."""

    def __init__(self, target: str, report) -> None:
        self.target, self.report = target, report
        super().__init__()

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, NodeUpdate) and message.target == self.target


class NodeState(Message):
    def __init__(self, target: str, state: str, message: str | None) -> None:
        self.target, self.state, self.message = target, state, message
        super().__init__()


class PinscopeApp(App):
    CSS_PATH = str(TCSS)
    TITLE = "pinscope"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        # Textual binds ctrl+c to a "press ctrl+q to quit" notice; in a terminal tool it means quit. A priority
        # binding, so that it also quits from a modal screen (the help); a selection is still copied (below).
        Binding("ctrl+c", "interrupt", "Quit (as q)", id="app.interrupt", priority=True, show=False),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("t", "cycle_theme", "Theme", id="app.theme"),
        Binding("s", "screenshot", "Screenshot", id="app.screenshot"),
        Binding("e", "export", "Export", id="app.export"),
    ]

    def __init__(self, targets: Sequence[NodeTarget], opts: Options = Options(), interval: float = 1.0,
                 theme: str = "dark", cleanup=None, autostart: bool = True, recorder=None,
                 connect_concurrency: int = 16, start: str | None = None, kube=None) -> None:
        super().__init__()
        # the collectors, their pacing and the API polling: a service the app owns (collectors/fleet.py)
        self.fleet = Fleet(targets, opts, interval, recorder, connect_concurrency)
        # a node named apart from its address (an inventory, a bench) keeps that name beside its hostname
        self.views = {t.name: NodeView(t.name, label=t.name if t.address else None) for t in targets}
        self.recorder = recorder
        self.start = start  # with several nodes: open this one's grid over the overview at start
        self.kube = kube  # (context, kubeconfig): enrich pods from the API every fleet.kube_period s, if it answers
        self._kube_failing = False
        self._fleet_dirty = False
        self.interval = interval
        self.theme_key = theme if theme in THEMES else "dark"
        self._set_theme_before_start()
        self.cleanup = cleanup
        self.autostart = autostart
        self.grid_shade = "load"  # or "noise": what the core grid's shade shows (NodeScreen toggles it)
        self.current = self.targets[0] if self.targets else None  # none: an overview from elsewhere (--prometheus)
        self.started_at = time.monotonic()
        self.first_paint_s: float | None = None
        self.first_grid: bool | None = None  # None: no report yet; False: the first one is being painted
        self._keymap_read = False
        # `pinscope serve` beyond localhost: a browser session writes no file on the serving machine
        self.read_only = os.environ.get("PINSCOPE_READ_ONLY") == "1"
        self._unsignal: Callable[[], None] | None = None  # undoes on_load's exit-signal handlers

    def _set_theme_before_start(self) -> None:
        """The theme in force before the stylesheet is first read, so that it is read once: set as usual
        (`self.theme = ...`) in on_mount, Textual read it again and restyled every widget of the first screen
        (issue 25: first grid). What Textual's watcher of `theme` does, but its re-read of the CSS."""
        for t in THEMES.values():
            self.register_theme(t)
        self.set_reactive(App.theme, theme_name(self.theme_key))
        dark = self.current_theme.dark
        self.update_classes({f"-theme-{self.current_theme.name}": True, "-dark-mode": dark, "-light-mode": not dark},
                            update=False)
        self._refresh_truecolor_filter(self.ansi_theme)
        self.stylesheet.set_variables(self.get_css_variables())  # nothing is parsed yet: read once, with these

    @property
    def targets(self) -> list[str]:
        """The watched nodes' names, in the order given."""
        return self.fleet.names

    @property
    def focus_node(self) -> str | None:
        """The node whose full grid (or a pane of it) is on screen: it gets the full depth."""
        return self.fleet.focus_node

    @focus_node.setter
    def focus_node(self, name: str | None) -> None:
        self.fleet.focus_node = name

    def spec(self, name: str) -> NodeTarget | None:
        return self.fleet.targets.get(name)

    # a recording sets these (tui/replay.py): where in it we are, and its clock
    @property
    def replay_status(self) -> str | None:
        """Where in a recording we are (ReplayApp); None: live."""
        return None

    @property
    def replay_clock(self) -> float | None:
        """The recorded time shown (ReplayApp); None: live, the wall clock."""
        return None

    def want_detail(self) -> None:
        """A screen shows other nodes now: fetch their detail (live nodes send everything: nothing to do)."""

    @property
    def keymap_in_force(self) -> dict[str, str]:
        """binding id -> keys, as keymap.toml set them"""
        return dict(self._keymap)

    @property
    def big_glyphs(self) -> bool:
        return self.theme_key == "warroom"

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(THEMES["dark"].variables)

    def get_driver_class(self):
        """Textual's terminal driver, mended for a terminal that goes away (tui/driver.py); any other (a web
        driver textual-serve names) as Textual chose it."""
        from textual.drivers.linux_driver import LinuxDriver

        from pinscope.tui.driver import TerminalDriver

        chosen = super().get_driver_class()
        return TerminalDriver if chosen is LinuxDriver else chosen

    def get_line_filters(self):
        """Textual's filters, then the net for node bytes (tui/controlfilter.py)."""
        return [*super().get_line_filters(), _DROP_CONTROL]

    def on_load(self) -> None:
        # SIGTERM, SIGHUP (terminal closed, SSH dropped), SIGINT: quit as `q` does, so on_unmount closes every
        # node (a node/NAME debug pod is deleted); their default would kill pinscope and leave it running
        try:
            self._unsignal = on_exit_signals(lambda sig: self.exit(return_code=128 + sig))
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: signals are not ours
            self._unsignal = None

    def on_mount(self) -> None:
        # Textual calls every class's on_mount along the MRO: a subclass changes what starts by overriding
        # _start(), never with an on_mount of its own (calling super().on_mount() ran this one twice)
        self._load_keymap()
        self._start()
        self.call_after_refresh(self._painted)
        self._watch_terminal()

    def _watch_terminal(self) -> None:
        """Quit as on SIGHUP when the terminal is gone but no SIGHUP came: the kernel sends it to the session
        leader only, and a leader that outlives the hang-up without passing it on (runuser -u, su -c, a shell
        that ignores HUP) left pinscope running with no terminal, reading its nodes every tick, its input
        thread spinning on the dead tty at half a CPU (Textual reads EOF there and tries again). A hung-up
        terminal answers tcgetattr with EIO: asked once a second (a system call); not for a web or headless
        driver, nor when stdin was no terminal."""
        if self.is_headless or self.is_web or sys.__stdin__ is None:
            return
        try:
            fd = sys.__stdin__.fileno()
            if not os.isatty(fd):
                return
        except (OSError, ValueError):
            return

        def check() -> None:
            try:
                termios.tcgetattr(fd)
            except (termios.error, OSError):
                arm_watchdog(128 + signal.SIGHUP)  # as a SIGHUP does: ended anyway should the orderly end not end
                self.exit(return_code=128 + signal.SIGHUP)

        self.set_interval(1.0, check, name="terminal watch")

    def _start(self) -> None:
        """The first screen and the long-lived tasks: the nodes' (PromApp: the Prometheus overview's)."""
        _raise_nofile(len(self.targets))
        if len(self.targets) > 1:
            from pinscope.tui.screens.fleet import FleetScreen

            self.push_screen(FleetScreen())
            if self.start in self.views:
                self.open_node(self.start)
        elif self.current is not None:
            self.push_screen(NodeScreen(self.views[self.current]))
            self.focus_node = self.current
        self.set_interval(max(0.25, self.interval / 2), self._check_stale)
        self.set_interval(0.5, self._refresh_fleet)
        if self.autostart:
            for target in sorted(self.targets, key=lambda t: t != self.focus_node):  # the node on screen first
                self.run_worker(self._node_task(target), group="nodes", name=f"node {target}", exit_on_error=False)
        if self.kube is not None:
            self.run_worker(self._kube_task(), name="kubernetes", exit_on_error=False)

    def _painted(self) -> None:
        mark("first paint")
        if self.first_paint_s is None:
            self.first_paint_s = time.monotonic() - self.started_at

    def _load_keymap(self) -> None:
        if self._keymap_read:  # once
            return
        self._keymap_read = True
        try:
            text = KEYMAP.read_text() if KEYMAP.exists() else ""
        except OSError as err:
            self.notify(display(f"keymap {KEYMAP} ignored: {err}"), severity="warning", markup=False)
            return
        if not text:  # most: no keymap, and no TOML parser imported before the first grid
            return
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            self.notify(display(f"keymap {KEYMAP} ignored: {err}"), severity="warning", markup=False)
            return
        keymap = {str(k): str(v) for k, v in data.items() if isinstance(v, str)}
        if not keymap:  # nothing to check: knowing every id imports every screen (not before a first grid)
            return
        from pinscope.tui.keymap import unknown_ids_line

        if line := unknown_ids_line(keymap, KEYMAP):  # a misspelt id is said, not silently ignored
            self.notify(display(line), severity="warning", markup=False)
        self.set_keymap(keymap)

    async def _node_task(self, target: str) -> None:
        """The one long-lived task of a node (collectors/fleet.py); its reports and states become messages."""
        await self.fleet.run_node(target, lambda name, report: self.post_message(NodeUpdate(name, report)),
                                  lambda name, st, msg: self.post_message(NodeState(name, st, msg)))

    async def _kube_task(self) -> None:
        """Pod names and intent from the API. A failure is a notice, and node-local names stay."""
        context, kubeconfig = self.kube

        def pods(name: str, api_pods: dict) -> None:
            v = self.views[name]
            v.api_pods, v.api_error = api_pods, None

        def answered(err: str | None) -> None:
            if err is None:
                if self._kube_failing:
                    self.notify("Kubernetes API is back", timeout=4)
            else:
                for v in self.views.values():
                    v.api_error = err
                if not self._kube_failing:
                    self.notify(display(f"{err} — showing node-local names"), severity="warning", timeout=8,
                                markup=False)
            self._kube_failing = err is not None

        await self.fleet.run_kube(context, kubeconfig, pods, answered)

    async def on_unmount(self) -> None:
        await self.fleet.close()  # every task stops, every connection closes at once
        if self.cleanup:
            self.cleanup()
        if self._unsignal is not None:
            self._unsignal()

    # ------------------------------------------------------------------ messages
    def on_node_update(self, msg: NodeUpdate) -> None:
        self.views[msg.target].apply(msg.report)
        self._refresh(msg.target)
        if self.first_grid is None:
            self.first_grid = False
            self.call_after_refresh(self._grid_painted)

    def _grid_painted(self) -> None:
        mark("first grid painted")
        self.first_grid = True

    def on_node_state(self, msg: NodeState) -> None:
        self.views[msg.target].set_state(msg.state, msg.message)
        self._refresh(msg.target)

    def _check_stale(self) -> None:
        for t, v in self.views.items():
            if v.check_stale(self.interval):
                self._refresh(t)

    def shown_screen(self) -> Screen | None:
        """The screen on show, or None once Textual has emptied the stack on the way out: shut down from
        outside (run_test, a closed browser tab) it prunes every screen, then still handles the messages and
        timers queued meanwhile, and `self.screen` raises ScreenStackError there."""
        try:
            return self.screen
        except ScreenStackError:
            return None

    def _refresh(self, target: str) -> None:
        scr = self.shown_screen()
        if isinstance(scr, FleetBase):
            self._fleet_dirty = True  # many nodes: repaint the overview a few times a second, not per node
        elif isinstance(scr, ReportScreen) and scr.target == target and scr.is_mounted:
            # a screen just pushed is composed but not mounted yet: its on_mount paints it (a node going
            # stale in between used to query widgets that were not there: NoMatches, the app died)
            try:
                with self.batch_update():
                    scr.refresh_view()
            except NoMatches:  # the app is closing: the screen's widgets are gone, a late tick has nothing to paint
                pass

    def _refresh_fleet(self) -> None:
        scr = self.shown_screen()
        if self._fleet_dirty and isinstance(scr, FleetBase) and scr.is_mounted:
            self._fleet_dirty = False
            try:
                with self.batch_update():
                    scr.refresh_view()
            except NoMatches:  # the app is closing (its timer fired after the overview's widgets went), as in _refresh
                pass

    # ------------------------------------------------------------------ navigation (called by screens)
    def open_cpu_or_container(self, target: str, cpu: int) -> None:
        snap = self.views[target].snap
        r = snap.role_of(cpu) if snap else None
        if snap and r and r.role == "exclusive" and r.owners:
            live_owner = None
            for p, c in snap.containers():
                if any(o.pod_uid == p.uid and o.container == c.name for o in r.owners) and c.cgroup is not None:
                    live_owner = (p, c)
                    break
            if live_owner:
                p, c = live_owner
                self.open_container(target, p.uid, c.id, c.name)
                return
        self.open_cpu(target, cpu)

    def open_cpu(self, target: str, cpu: int) -> None:
        from pinscope.tui.screens.cpu import CpuScreen

        self.push_screen(CpuScreen(self.views[target], cpu))

    def open_container(self, target: str, uid: str, cid: str | None, name: str | None) -> None:
        from pinscope.tui.screens.container import ContainerScreen

        self.push_screen(ContainerScreen(self.views[target], uid, cid, name))

    def open_node_info(self, target: str) -> None:
        from pinscope.tui.screens.nodeinfo import NodeInfoScreen

        self.push_screen(NodeInfoScreen(self.views[target]))

    def open_fit(self, target: str) -> None:
        from pinscope.tui.screens.fit import FitScreen

        self.push_screen(FitScreen(self.views[target]))

    def open_finding(self, target: str, f) -> None:
        v = self.views[target]
        if f.pod_uid and f.container and v.snap:
            for p, c in v.snap.containers():
                if p.uid == f.pod_uid and c.name == f.container:
                    self.open_container(target, p.uid, c.id, c.name)
                    return
        if f.cpus:
            self.open_cpu(target, f.cpus[0])
        else:
            self.open_node_info(target)

    def set_focus_container(self, target: str, cid: str | None) -> None:
        """The drill-down asks for this container's everything, every tick."""
        self.fleet.focus_container(target, cid)

    def set_focus_cpu(self, target: str, cpu: int | None) -> None:
        """The CPU pane asks for its CPU's tasks with run-queue wait, and its IPIs, every tick."""
        self.fleet.focus_cpu(target, cpu)

    def switch_node(self, step: int) -> None:
        if len(self.targets) < 2 or self.current is None:
            return
        i = (self.targets.index(self.current) + step) % len(self.targets)
        self.current = self.focus_node = self.targets[i]
        self.switch_screen(NodeScreen(self.views[self.current]))

    def open_node(self, target: str) -> None:
        self.current = self.focus_node = target
        self.push_screen(NodeScreen(self.views[target]))

    def back_to_fleet(self) -> bool:
        """Esc on a node screen: back to the overview when there is one."""
        if len(self.screen_stack) > 2 and isinstance(self.screen_stack[-2], FleetBase):
            self.focus_node = None
            self.pop_screen()
            self._fleet_dirty = True
            return True
        return False

    # ------------------------------------------------------------------ actions
    def action_help(self) -> None:
        from pinscope.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    async def action_interrupt(self) -> None:
        """ctrl+c: copy the selected text when there is some (Textual's meaning of the key), else quit like q."""
        focused = self.focused
        selected = focused.selected_text if isinstance(focused, Input) else None
        selected = selected or self.screen.get_selected_text()
        if selected:
            self.copy_to_clipboard(selected)
        else:
            await self.action_quit()

    def action_cycle_theme(self) -> None:
        i = (ORDER.index(self.theme_key) + 1) % len(ORDER)
        self.theme_key = ORDER[i]
        self.theme = theme_name(self.theme_key)
        scr = self.screen
        if isinstance(scr, ReportScreen):
            scr.refresh_view()
        self.notify(f"theme {self.theme_key}", timeout=1.5)

    def _refuse_write(self) -> bool:
        if self.read_only:
            self.notify("read-only session: no files are written on the serving machine "
                        "(pinscope serve --no-read-only allows s and e)", severity="warning", timeout=5)
        return self.read_only

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Textual's action (same signature), saved in $PINSCOPE_SCREENSHOTS unless a path is given; refused
        in a read-only session. A directory that takes no file is said, as `e` says it: the app goes on."""
        from pinscope.tui.export import failed_line, save_svg, saved_line

        if self._refuse_write():
            return
        directory = path or os.environ.get("PINSCOPE_SCREENSHOTS", ".")
        try:
            written = save_svg(self, directory, filename)
        except OSError as err:
            self.notify(failed_line("screenshot", directory, err), severity="error", timeout=8, markup=False)
            return
        self.notify(saved_line([written]), timeout=4, markup=False)

    def action_export(self) -> None:
        from pinscope.tui.export import export_current, failed_line, saved_line

        if self._refuse_write():
            return
        directory = os.environ.get("PINSCOPE_SCREENSHOTS", ".")
        try:
            paths = export_current(self, directory)
        except OSError as err:
            self.notify(failed_line("export", directory, err), severity="error", timeout=8, markup=False)
            return
        self.notify(saved_line(paths), timeout=4, markup=False)


def _raise_nofile(nodes: int) -> None:
    """One SSH connection per node: lift the soft file-descriptor limit to the hard one when needed."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, 64 + 8 * nodes))
    if want > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError):
            pass


def run_live(targets: list, opts: Options, interval: float = 1.0, theme: str = "dark", record: str | None = None,
             kube=None) -> int:
    """targets: strings ('local', [user@]host[:port], node/NAME) or inventory Targets."""
    from pinscope.collectors.record import Recorder

    mark("imports done")
    recorder = Recorder(record) if record else None
    app = PinscopeApp([NodeTarget.of(t, opts) for t in targets], opts, interval, theme, recorder=recorder, kube=kube)
    mark("App constructed")
    try:
        app.run()
    finally:
        if recorder:
            recorder.close()
    return app.return_code or 0


def run_demo(theme: str = "dark", interval: float = 1.0, record: str | None = None) -> int:
    from pinscope.collectors.record import Recorder
    from pinscope.collectors.sim.demo import DemoCluster

    recorder = Recorder(record) if record else None  # refused (RecordingError) before anything starts
    cluster = DemoCluster(write=False)  # each tree written in a thread when its node first connects
    targets = cluster.targets()
    app = PinscopeApp(targets, Options(), interval, theme, cleanup=cluster.close, start=targets[0].name,
                      recorder=recorder)
    try:
        app.run()
    finally:
        cluster.close()
        if recorder:
            recorder.close()
    return app.return_code or 0
