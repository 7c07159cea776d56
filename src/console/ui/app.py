"""The Textual app: wires the live state, the engine (its process, or a thread), the screens and the themes.

It keeps Textual's lifecycle; the engine's is ``console.ui.engine_link`` (``app.link``), the catalogued
actions' ``console.ui.acting`` (``app.actions``), what screens read of the history database
``console.ui.queries`` (``app.queries``), and the operator's keys ``console.ui.keymap``.

Live updates are batched: the engine's event callback (the bridge's reader thread, or the engine
thread) only folds events into ``LiveState`` and posts one
``FleetChanged`` when the first change after a repaint arrives; the app repaints at most every
``refresh_interval_s`` inside ``batch_update()``, and holds repaints while a modal dialog is open or
the operator paused them, catching up from the latest state afterwards.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.theme import Theme
from textual.timer import Timer

from console.checks import CheckPack
from console.exitcodes import ExitCode
from console.inventory.model import Inventory
from console.runtime import leave_dead_terminal
from console.service.assembly import EngineSpec
from console.service.client import ProcessBridge
from console.store import Store
from console.sweep.events import Event
from console.ui.acting import ActionFlow
from console.ui.bridge import EngineBridge
from console.ui.engine_link import EngineLink
from console.ui.follow import FOLLOW_INTERVAL_S, StoreFollower
from console.ui.messages import EngineProblem, FleetChanged
from console.ui.palette import ConsoleCommands
from console.ui.queries import HistoryQueries
from console.ui.screens.acceptance import AcceptanceScreen
from console.ui.screens.detail import DetailScreen
from console.ui.screens.main import DETAIL_SCREEN, MainScreen
from console.ui.state import WAITING_SHOWN_AFTER_S, LiveState
from console.ui.text import safe
from console.ui.theme import DEFAULT_THEME, load_themes, resolve_theme_name, stylesheet_path

CATCH_UP_INTERVAL_S = 0.25
# When the detail screen is built unseen, after start (see _prebuild_detail).
PREBUILD_DETAIL_AFTER_S = 0.5
GIL_SWITCH_S = 0.001
# After the terminal hung up, how long the console may take to end as q does (the engine stops its sweep,
# killing probes on the nodes, within its own bounds) before it is ended outright.
HANGUP_EXIT_S = 45.0
# Longest a streak of repaints keeps its cyclic garbage frozen before the heap is settled anyway.
SETTLE_AFTER_S = 300.0
# Young collections while the TUI runs: a young collection pauses every thread for ~1 ms per thousand
# objects (measured here: 85,000 objects, mostly Textual's short-lived cyclic garbage, took 100 ms in
# the middle of a keystroke at the console script's threshold of 100,000). The fleet's long-lived
# records are frozen at each repaint, so collecting the young generation more often stays cheap.
UI_YOUNG_THRESHOLD = 10_000


def settle_heap() -> None:
    """Collect once and freeze what survives, so later collections skip the long-lived fleet state.

    Called when a sweep has finished (one pause then, instead of one in every full collection while
    the operator works). Unfreezing first lets garbage frozen earlier be collected: nothing leaks.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


@lru_cache(maxsize=1)
def _default_variables() -> dict[str, str]:
    return dict(load_themes()[DEFAULT_THEME].variables)


class ConsoleApp(App[int]):
    """The live console over one inventory; the engine is optional (replayed events in tests)."""

    CSS_PATH = str(stylesheet_path())
    TITLE = "instinct-console"
    COMMANDS = App.COMMANDS | {ConsoleCommands}

    def __init__(
        self,
        inventory: Inventory,
        packs: dict[str, CheckPack],
        *,
        store: Store | None = None,
        engine_spec: EngineSpec | None = None,
        engine_in_thread: bool = False,
        level: str = "quick",
        families: set[str] | None = None,
        read_only: bool = False,
        theme: str = "dark",
        start_sweep: bool = True,
        clock: Callable[[], float] = time.time,
        export_dir: Path | None = None,
        confirm_threshold: int = 5,
        refresh_interval_s: float = 0.15,
        scheduler_poll_s: float = 15.0,
        waiting_after_s: float = WAITING_SHOWN_AFTER_S,
        prebuild_detail_after_s: float | None = PREBUILD_DETAIL_AFTER_S,
        pairing: str = "reference",
        pairing_seed: int = 0,
        baseline_partners: bool = True,
        follow_interval_s: float = FOLLOW_INTERVAL_S,
    ) -> None:
        super().__init__()
        if engine_spec is not None and read_only != engine_spec.read_only:
            # The stricter wins, on both sides: the engine refuses what the keys hide, and the reverse.
            read_only = True
            engine_spec = replace(engine_spec, read_only=True)
        self.inventory, self.packs, self.store = inventory, packs, store
        self.level, self.families = level, families  # what a sweep from the console runs
        self.read_only, self.clock = read_only, clock
        self.export_dir = export_dir or Path.cwd()
        self.confirm_threshold = confirm_threshold
        self.pairing = (pairing, pairing_seed)  # the multinode level's first pass (tui --pairing)
        # The confirm dialog's first answer to borrowing baseline partners (tui --no-baseline-partners).
        self.baseline_partners = baseline_partners
        self.refresh_interval_s, self.scheduler_poll_s = refresh_interval_s, scheduler_poll_s
        self.waiting_after_s = waiting_after_s
        self.prebuild_detail_after_s = prebuild_detail_after_s  # None: built at its first `enter`
        self.follow_interval_s = follow_interval_s
        self.state = LiveState(inventory, clock)
        self.queries = HistoryQueries(store, inventory)  # what the screens read of the history database
        self.actions = ActionFlow(self)  # every catalogued action's plan, dialog and execution
        self.keymap: dict[str, str] = {}  # binding id -> the operator's keys (console.ui.keymap)
        self._unbound: set[str] = set()  # binding ids the key file took the key of (said once)
        # Verdicts other processes store (watch, revalidate, a headless sweep) move the rows too.
        # With --no-sweep the rows start from each node's newest stored verdict, not only the newest sweep's.
        self.follower = StoreFollower(store, self.state, from_history=not start_sweep) if store else None
        self._follow_failed = False
        self.console_themes = self._register_themes(theme)
        self.link = EngineLink(self, engine_spec, in_thread=engine_in_thread)  # the engine and its commands
        self._start_sweep = start_sweep
        self.main_screen = MainScreen(read_only)
        self.paused, self.flush_count = False, 0  # repaints held by the operator; repaints done
        self._deferred, self._last_flush = False, 0.0
        self._flush_timer: Timer | None = None
        self._settled_sweep, self._settled_at = 0, time.monotonic()
        self._switch_interval, self._gc_thresholds = sys.getswitchinterval(), gc.get_threshold()

    def _register_themes(self, theme: str) -> dict[str, Theme]:
        """Register the console's themes and switch to ``theme``; returns them by name."""
        themes = load_themes()
        for console_theme in themes.values():
            self.register_theme(console_theme)
        self.theme = resolve_theme_name(theme, self.available_themes)
        return themes

    def use_keymap(self, keymap: Mapping[str, str]) -> None:
        """Rebind keys by binding id (``console.ui.keymap``); the key bar, help and palette show them."""
        self.keymap = dict(keymap)
        self.set_keymap(self.keymap)

    def handle_bindings_clash(self, clashed_bindings: set[Binding], node: DOMNode) -> None:
        """Say once per action which ones lost their key to the key file (Textual gives the key to the file's)."""
        lost = sorted({b.id for b in clashed_bindings if b.id and b.id not in self._unbound})
        if lost:
            self._unbound.update(lost)
            self.notify(f"key file: {', '.join(lost)} left without a key (another action took it)", severity="warning")

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """The console's semantic variables, valued from the default theme (other themes override them)."""
        return _default_variables()

    def get_default_screen(self) -> Screen[Any]:
        """The node list."""
        return self.main_screen

    def on_mount(self) -> None:
        """Start the engine (and the first sweep), the catch-up and clock timers."""
        # Everything alive now (modules, Textual, inventory, packs) lives as long as the app: move it out
        # of the cyclic collector's reach, so a full collection during a sweep pauses the UI far less.
        settle_heap()
        self._settled_at = time.monotonic()
        self._gc_thresholds = gc.get_threshold()
        gc.set_threshold(min(UI_YOUNG_THRESHOLD, self._gc_thresholds[0]), *self._gc_thresholds[1:])
        # Another thread of this process feeds events while the operator types (the engine itself, when it
        # runs on a thread); hand the interpreter over more often than the default 5 ms.
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self._stop_on_signals()
        self.set_interval(CATCH_UP_INTERVAL_S, self._catch_up)
        self.set_interval(1.0, self._tick)
        if self.prebuild_detail_after_s is not None:
            self.set_timer(self.prebuild_detail_after_s, self._prebuild_detail)
        if not self._start_sweep:
            self.show_last_sweep()
        if self.follower is not None:
            self.follow_store()
            self.set_interval(self.follow_interval_s, self.follow_store)
        if self.link.spec is None:
            return
        self.link.start()
        if self._start_sweep:
            self.link.start_sweep()
        self.link.poll_scheduler()
        self.set_interval(self.scheduler_poll_s, self.link.poll_scheduler)

    def _stop_on_signals(self) -> None:
        """A closed terminal (SIGHUP: a tmux session killed, an SSH session dropped) or SIGTERM ends the console
        as ``q`` does, instead of on the spot: the terminal restored, the engine stopped and its sweep recorded
        as cancelled. The exit codes are the sweep's (129, 130)."""
        if self.is_headless:
            return  # Pilot's tests: no terminal, and the signals stay the test runner's
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, self._hang_up)
        loop.add_signal_handler(signal.SIGTERM, partial(self.exit, None, int(ExitCode.INTERRUPTED)))

    def _hang_up(self) -> None:
        leave_dead_terminal()
        # Textual's writer thread may have died on the dead terminal before this ran, and its driver then
        # waits for it for ever: past a bound, the engine is stopped here and the process ends. Armed on
        # every hangup: whether the terminal is gone cannot always be told (consoles were left running for
        # an hour after their tmux session was killed when it was armed only for a terminal seen dead).
        watchdog = threading.Timer(HANGUP_EXIT_S, self._exit_now)
        watchdog.daemon = True  # a console that ends in time is not held back by it
        watchdog.start()
        self.exit(None, int(ExitCode.HANGUP))

    def _exit_now(self) -> None:
        self.link.stop()
        os._exit(int(ExitCode.HANGUP))

    def show_last_sweep(self) -> None:
        """Open on the newest sweep of this inventory in the history, marked with its age (not swept now)."""
        found = self.queries.opening_sweep()
        if found is None:
            return
        events, row = found
        for event in events:
            self.state.apply(event)
        progress = self.state.progress
        progress.started_at, progress.finished_at = row["started_at"], row["finished_at"] or row["started_at"]
        progress.outcome, progress.from_history = row["status"], True
        self.post_message(FleetChanged())

    def follow_store(self) -> None:
        """Fold in the verdicts other processes stored since the last look (``console.ui.follow``)."""
        if self.follower is None:
            return
        try:
            moved = self.follower.poll()
        except sqlite3.Error as exc:
            # Said once, not every poll; the rows keep what they show and the next poll tries again.
            if not self._follow_failed:
                self.post_message(EngineProblem(f"reading the history database failed: {exc}"))
            self._follow_failed = True
            return
        self._follow_failed = False
        if moved:
            self.post_message(FleetChanged())

    # live updates -------------------------------------------------------------------------------

    def ingest(self, event: Event) -> None:
        """Fold an engine event into the state; safe from any thread (the engine calls it on its own)."""
        if self.state.apply(event):
            self.post_message(FleetChanged())

    def on_fleet_changed(self, _message: FleetChanged) -> None:
        """Repaint now, or at the end of the current refresh interval."""
        if self._flush_timer is not None:
            return
        wait = self._last_flush + self.refresh_interval_s - time.monotonic()
        if wait <= 0:
            self.flush()
        else:
            self._flush_timer = self.set_timer(wait, self._timed_flush)

    def _timed_flush(self) -> None:
        self._flush_timer = None
        self.flush()

    @property
    def updates_held(self) -> bool:
        """True while repaints wait: paused by the operator, a modal dialog is open, or no screen is up
        (a timer may still fire while the app shuts down)."""
        stack = self.screen_stack
        return self.paused or not stack or isinstance(stack[-1], ModalScreen)

    def flush(self) -> None:
        """Apply every change since the last repaint in one batch (or defer it while updates are held)."""
        if self.updates_held:
            self._deferred = True
            return
        if not self._screens_live():
            # Not mounted yet (the thread engine's first events can come first), or closing: the
            # catch-up timer paints it once there is a screen to paint.
            self._deferred = True
            return
        self._deferred = False
        dirty, summary = self.state.take_dirty()
        self._last_flush = time.monotonic()
        if not dirty and not summary:
            return
        self.flush_count += 1
        with self.batch_update():
            self.main_screen.apply(dirty, summary)
            for screen in self.screen_stack:
                if isinstance(screen, DetailScreen) and screen.node_name in dirty:
                    screen.refresh_node()
                if isinstance(screen, AcceptanceScreen) and summary:
                    screen.follow_runs()
        if summary and not self.state.progress.running and self.state.progress.sweep_id != self._settled_sweep:
            self._settled_sweep = self.state.progress.sweep_id
            self._settle()
        elif dirty:
            self._freeze_young()

    async def _prebuild_detail(self) -> None:
        # The detail screen's first `enter` composed, mounted and styled it: 60-120 ms for that key. It is
        # built here instead, unseen (no frame is sent inside batch_update), while the operator reads the
        # first screen; this runs on the app's own message pump, so no key is handled in between.
        if self.is_screen_installed(DETAIL_SCREEN) or self.screen_stack != [self.main_screen]:
            return
        names = self.state.names()
        if not names:
            return
        screen = self.main_screen.detail_screen(self.main_screen.grid.cursor_key or names[0])
        with self.batch_update():
            await self.push_screen(DETAIL_SCREEN)
            if self.screen_stack and self.screen_stack[-1] is screen:
                await self.pop_screen()

    def _settle(self) -> None:
        self._settled_at = time.monotonic()
        self.call_after_refresh(settle_heap)

    def _freeze_young(self) -> None:
        # While verdicts stream in, the young generation fills with the new rows and the engine's records,
        # which all live on; CPython then walks hundreds of thousands of them in one young collection
        # (measured: 100-300 ms with the UI frozen, in whichever thread allocated last). Freezing them at
        # each repaint costs nothing and keeps collections small; cyclic garbage among them is reclaimed
        # by the next settle (the end of a sweep, or SETTLE_AFTER_S of streaming at most).
        gc.freeze()
        if time.monotonic() - self._settled_at > SETTLE_AFTER_S:
            self._settle()

    def _catch_up(self) -> None:
        if self._deferred and not self.updates_held:
            self.flush()

    def _screens_live(self) -> bool:
        """False before the main screen is mounted and once the app is closing: Textual removes the
        screens' widgets while a timer (the catch-up, the tick) can still fire, and a repaint then finds
        its boxes gone (NoMatches '#link-matrix', seen on a busy machine). ``display`` is False for a
        node being closed or pruned."""
        return self.main_screen.is_mounted and self.main_screen.display

    def _tick(self) -> None:
        # The ETA and the countdowns of stuck nodes move with the clock even when no node changes.
        if self.state.progress.running and not self.updates_held and self._screens_live():
            self.main_screen.refresh_waiting()
            self.main_screen.refresh_summary()

    def toggle_pause(self) -> None:
        """Hold or release repaints; releasing catches up at once."""
        self.paused = not self.paused
        if not self.paused:
            self.flush()

    def on_engine_problem(self, message: EngineProblem) -> None:
        """Tell the operator what went wrong on the engine side."""
        self.notify(safe(message.text), title="engine", severity="error", markup=False, timeout=10)

    @property
    def bridge(self) -> EngineBridge | ProcessBridge | None:
        """The engine's end the screens ask (None until it was started)."""
        return self.link.bridge

    @bridge.setter
    def bridge(self, bridge: EngineBridge | ProcessBridge | None) -> None:
        self.link.bridge = bridge  # another end speaking the same commands (tests, the UI benchmark)

    async def shutdown(self) -> None:
        """Stop the engine (cancelling the sweep and closing connections), then exit."""
        if self.bridge is not None:
            self.notify("stopping the engine…")
            await asyncio.to_thread(self.link.stop)
        self.exit(0)

    async def on_unmount(self) -> None:
        """However the app ends, the engine ends with it (no sweep keeps running headless)."""
        sys.setswitchinterval(self._switch_interval)
        gc.set_threshold(*self._gc_thresholds)
        await asyncio.to_thread(self.link.stop)

    # themes and pins ----------------------------------------------------------------------------

    def use_theme(self, name: str) -> None:
        """Switch to theme ``name`` (an alias like ``light`` or a full name)."""
        self.theme = resolve_theme_name(name, self.available_themes)

    def cycle_theme(self) -> None:
        """The next console theme."""
        names = list(self.console_themes)
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]
        self.notify(f"theme {self.theme}")

    def _theme_changed(self, _theme: Theme) -> None:
        if self.main_screen.is_mounted:
            self.main_screen.grid.restyle()
            self.main_screen.refresh_links()
            self.main_screen.refresh_summary()
