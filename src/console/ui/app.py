"""The Textual app: wires the live state, the engine (its process, or a thread), the screens and the themes.

Live updates are batched: the engine's event callback (the bridge's reader thread, or the engine
thread) only folds events into ``LiveState`` and posts one
``FleetChanged`` when the first change after a repaint arrives; the app repaints at most every
``refresh_interval_s`` inside ``batch_update()``, and holds repaints while a modal dialog is open or
the operator paused them, catching up from the latest state afterwards.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import os
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App
from textual.screen import ModalScreen, Screen
from textual.theme import Theme
from textual.timer import Timer

from console.checks import CheckPack
from console.exitcodes import ExitCode
from console.inventory.hostlist import fold
from console.inventory.model import Inventory
from console.model.findings import Finding, Status
from console.runtime import leave_dead_terminal
from console.service.assembly import EngineSpec
from console.service.client import EngineGone, ProcessBridge, describe_error
from console.service.commands import (
    CancelSweep,
    Command,
    ExecuteAction,
    GiveUp,
    PlanPreview,
    Rerun,
    SchedulerStates,
    StartMultinode,
    StartSweep,
)
from console.service.workload_run import StartWorkloadRun, WorkloadRunOutcome
from console.store import Store
from console.sweep.catalog import ProbeSet
from console.sweep.engine import probes_for_families
from console.sweep.events import Event, SweepDone
from console.ui.bridge import EngineBridge
from console.ui.follow import FOLLOW_INTERVAL_S, StoreFollower
from console.ui.messages import EngineProblem, FleetChanged
from console.ui.operations import history_events
from console.ui.palette import ConsoleCommands
from console.ui.registry import Scope
from console.ui.screens.acceptance import AcceptanceScreen
from console.ui.screens.detail import DetailScreen
from console.ui.screens.main import DETAIL_SCREEN, MainScreen
from console.ui.state import WAITING_SHOWN_AFTER_S, LiveState, NodeRow
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
        self.inventory = inventory
        self.packs = packs
        self.store = store
        self.level = level
        self.families = families
        self.read_only = read_only
        self.clock = clock
        self.export_dir = export_dir or Path.cwd()
        self.confirm_threshold = confirm_threshold
        self.pairing = (pairing, pairing_seed)  # the multinode level's first pass (tui --pairing)
        # The confirm dialog's first answer to borrowing baseline partners (tui --no-baseline-partners).
        self.baseline_partners = baseline_partners
        self.refresh_interval_s = refresh_interval_s
        self.scheduler_poll_s = scheduler_poll_s
        self.waiting_after_s = waiting_after_s
        self.prebuild_detail_after_s = prebuild_detail_after_s  # None: built at its first `enter`
        self.follow_interval_s = follow_interval_s
        self.state = LiveState(inventory, clock)
        # Verdicts other processes store (watch, revalidate, a headless sweep) move the rows too.
        # With --no-sweep the rows start from each node's newest stored verdict, not only the newest sweep's.
        self.follower = StoreFollower(store, self.state, from_history=not start_sweep) if store else None
        self._follow_failed = False
        self.console_themes: dict[str, Theme] = load_themes()
        for console_theme in self.console_themes.values():
            self.register_theme(console_theme)
        self.theme = resolve_theme_name(theme, self.available_themes)
        self._engine_spec = engine_spec
        self._engine_in_thread = engine_in_thread
        self._engine_lost = "nothing was running"  # what the last engine took with it when it died
        self._start_sweep = start_sweep
        self.bridge: EngineBridge | ProcessBridge | None = None
        self.main_screen = MainScreen(read_only)
        self.paused = False
        self.flush_count = 0
        self._deferred = False
        self._flush_timer: Timer | None = None
        self._last_flush = 0.0
        self._settled_sweep = 0
        self._settled_at = time.monotonic()
        self._switch_interval = sys.getswitchinterval()
        self._gc_thresholds = gc.get_threshold()

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
        if self._engine_spec is None:
            return
        self._start_engine()
        if self._start_sweep:
            self.start_sweep()
        self.poll_scheduler()
        self.set_interval(self.scheduler_poll_s, self.poll_scheduler)

    def _start_engine(self) -> None:
        assert self._engine_spec is not None
        if self._engine_in_thread:
            self.bridge = EngineBridge(self._engine_spec, self.ingest)
        else:
            log = self.store.path.with_name("engine.log") if self.store is not None else None
            self.bridge = ProcessBridge(self._engine_spec, self.ingest, self._engine_ended, log_path=log)
        self.bridge.start()

    def restart_engine(self) -> None:
        """Start the engine again after its process died (``_engine_ended`` said what was lost with it)."""
        if self._engine_spec is None or (self.bridge is not None and self.bridge.running):
            self.notify("the sweep engine is running: nothing to restart")
            return
        self._start_engine()
        self.notify(f"engine restarted; lost with the last one: {self._engine_lost}; S sweeps again", markup=False)

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
        self.stop_engine()
        os._exit(int(ExitCode.HANGUP))

    def show_last_sweep(self) -> None:
        """Open on the newest sweep of this inventory in the history, marked with its age (not swept now)."""
        found = history_events(self.store, self.inventory) if self.store is not None else None
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

    # engine commands ----------------------------------------------------------------------------

    def submit(self, label: str, command: Command) -> bool:
        """Send ``command`` to the engine; its failure is reported as a notification."""
        if self.bridge is None or not self.bridge.running:
            self.notify("the sweep engine is not running", severity="warning")
            return False
        future = self.bridge.request(command)
        future.add_done_callback(partial(self._job_done, label))
        return True

    def _job_done(self, label: str, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        # An engine process that died is reported once, by _engine_ended, not by every command it took along.
        if error is not None and not isinstance(error, EngineGone):
            self.post_message(EngineProblem(f"{label} failed: {describe_error(error)}"))

    def _engine_ended(self, text: str) -> None:
        # Called on the engine reader thread when the engine process ends without being asked to: its
        # sweep is over too, or the summary would show it running forever.
        progress = self.state.progress
        self._engine_lost = "nothing was running"
        if progress.running:
            self._engine_lost = (
                f"sweep {progress.sweep_id}, {len(progress.done)} of {len(progress.nodes)} nodes judged"
                " (the others were not)"
            )
            self.ingest(SweepDone(sweep_id=progress.sweep_id, outcome="cancelled", counts={}, duration_s=0.0))
        self.post_message(EngineProblem(text))
        self.post_message(EngineProblem(f"lost with the engine: {self._engine_lost}; e restarts it"))

    def start_sweep(self) -> None:
        """Sweep every node at the console's level."""
        if self.state.progress.running or self.state.pairs.running:
            self.notify("a sweep is already running (K cancels it)")
            return

        families = frozenset(self.families) if self.families else None
        self.submit("sweep", StartSweep(self.level, families))

    def start_multinode(self, targets: tuple[str, ...], reason: str = "", baseline_partners: bool = True) -> None:
        """The multinode level on ``targets`` (confirmed by the operator): probes, then node pairs;
        ``baseline_partners`` as the confirmed plan said."""
        if self.read_only:
            return  # the engine refuses it too; the key is not even bound
        command = StartMultinode(tuple(targets), *self.pairing, reason=reason, baseline_partners=baseline_partners)
        if self.submit("multi-node RCCL", command):
            self.notify(f"multi-node RCCL on {len(targets)} node(s): their own probes first, then the pairs")

    def cancel_sweep(self) -> None:
        """Stop the running sweep; the transport kills probes in flight."""

        if self.submit("cancel", CancelSweep()):
            self.notify("cancelling the sweep…")

    def give_up(self, targets: tuple[str, ...]) -> None:
        """Stop waiting for ``targets`` in the running sweep: their probes are killed on the nodes, each
        reads UNKNOWN ("given up") and the sweep goes on. Only the console's own probes end: no confirmation."""
        if not targets:
            self.notify("no node selected")
            return
        if self.bridge is None or not self.bridge.running:
            self.notify("the sweep engine is not running", severity="warning")
            return
        checked = tuple(name for name in targets if self.state.row(name).running)
        if checked:
            self._give_up(targets, checked)
        else:
            self._nothing_to_give_up(targets)

    @work(exclusive=False, group="give-up")
    async def _give_up(self, targets: tuple[str, ...], checked: tuple[str, ...]) -> None:
        if self.bridge is None:
            return
        try:
            given: tuple[str, ...] = await self.bridge.ask(GiveUp(checked))
        except EngineGone:
            return  # reported once by _engine_ended
        except Exception as exc:  # the engine failed it: say so, keep the console up
            self.notify(safe(describe_error(exc)), title="give up", severity="error", markup=False, timeout=10)
            return
        if given:
            self.notify(
                safe(f"gave up on {fold(given)}: its probes are killed on the node, it will read UNKNOWN"),
                markup=False,
            )
        # Nodes done before the key, or while the command was on its way (the engine is the judge).
        missed = tuple(name for name in targets if name not in given)
        if missed:
            self._nothing_to_give_up(missed)

    def _nothing_to_give_up(self, names: tuple[str, ...]) -> None:
        being = f"{fold(names)} {'is' if len(names) == 1 else 'are'}"
        self.notify(safe(f"nothing to give up on: {being} not being checked now"), severity="warning", markup=False)

    def rerun(self, targets: tuple[str, ...], families: set[str] | None) -> None:
        """Run the probes of ``families`` (all of the level when None) again on ``targets``."""
        if not targets:
            self.notify("no node selected")
            return
        levels = self.levels_judging(families) if families is not None else []
        if families is not None and ProbeSet(self.level) not in levels:
            # "done in 0:00" with nothing run was all the walk-through got for rvs at the standard level.
            ran = " and ".join(level.value for level in levels)
            where = f"its probes run at the {ran} level" if levels else "no probe judges it"
            self.notify(
                f"{', '.join(sorted(families))}: nothing to rerun at the {self.level} level ({where})",
                severity="warning",
            )
            return
        command = Rerun(tuple(targets), frozenset(families) if families is not None else None, self.level)
        what = ", ".join(sorted(families)) if families else f"all {self.level} probes"
        if self.submit("rerun", command):
            self.notify(f"rerunning {what} on {len(targets)} node(s)")

    def levels_judging(self, families: set[str]) -> list[ProbeSet]:
        """The sweep levels with a probe that judges ``families`` (what a rerun of them could run)."""
        levels = (ProbeSet.QUICK, ProbeSet.STANDARD, ProbeSet.FULL)
        return [level for level in levels if probes_for_families(self.packs, level, families)]

    def rerun_family_from_cursor(self, family: str) -> None:
        """Palette entry: rerun one family on the marked (else cursor) nodes."""
        self.rerun(self.main_screen.targets(Scope.MARKED), {family})

    @work(exclusive=False, group="workloads")
    async def run_workload(self, workload: str, pool: str, reason: str, *, force: bool = False) -> None:
        """Run ``workload`` on ``pool`` through the engine (confirmed in the acceptance view) and say how it
        ended; the view reads the recorded outcome when the run's end reaches it."""
        if self.bridge is None or not self.bridge.running:
            self.notify("the sweep engine is not running", severity="warning")
            return
        try:
            outcome: WorkloadRunOutcome = await self.bridge.ask(StartWorkloadRun(workload, pool, reason, force=force))
        except Exception as exc:  # refused, or the engine failed it: say so, keep the console up
            self.notify(safe(describe_error(exc)), title="Run workload", severity="error", markup=False, timeout=10)
            return
        bad = any(word in r for r in outcome.recorded for word in ("regressed", "blocked")) or outcome.status in (
            Status.FAIL,
            Status.UNKNOWN,
        )
        self.notify(
            safe(outcome.summary), title="Run workload", severity="error" if bad else "information", markup=False,
            timeout=10,
        )  # fmt: skip
        for screen in self.screen_stack:
            if isinstance(screen, AcceptanceScreen):
                screen.reload()

    @work(exclusive=False, group="actions")
    async def execute_plan(self, preview: PlanPreview) -> None:
        """Carry out a confirmed cluster action on the engine side and report what happened."""
        if self.bridge is None:
            return
        try:
            outcome = await self.bridge.ask(ExecuteAction(preview))
        except Exception as exc:  # the engine failed it, or is gone: say so, keep the console up
            self.notify(safe(describe_error(exc)), title=preview.title, severity="error", markup=False, timeout=10)
            return
        lines = [outcome.summary, *(f"{node}: {text}" for node, text in outcome.per_target.items())]
        self.notify(
            safe("; ".join(lines)),
            title=preview.title,
            severity="information" if outcome.ok else "error",
            markup=False,
            timeout=10,
        )
        self.poll_scheduler()

    @work(exclusive=True, group="scheduler")
    async def poll_scheduler(self) -> None:
        """Refresh the scheduler column from the action service (blank while there is none)."""
        if self.bridge is None or not self.bridge.running:
            return
        try:
            states = await self.bridge.ask(SchedulerStates())
        except EngineGone:
            return  # reported once by _engine_ended
        except Exception as exc:  # the action service's failure is the operator's to see, not a crash
            self.post_message(EngineProblem(f"reading the scheduler failed: {describe_error(exc)}"))
            return
        if states and self.state.set_scheduler_states(states):
            self.post_message(FleetChanged())

    async def shutdown(self) -> None:
        """Stop the engine (cancelling the sweep and closing connections), then exit."""
        if self.bridge is not None:
            self.notify("stopping the engine…")
            await asyncio.to_thread(self.bridge.stop)
        self.exit(0)

    async def on_unmount(self) -> None:
        """However the app ends, the engine ends with it (no sweep keeps running headless)."""
        sys.setswitchinterval(self._switch_interval)
        gc.set_threshold(*self._gc_thresholds)
        if self.bridge is not None:
            await asyncio.to_thread(self.bridge.stop)

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

    def findings_of(self, row: NodeRow) -> tuple[list[Finding], bool]:
        """Every finding of the row's verdict (from the history database) and whether the list is complete.

        Rows keep only findings that are not PASS; without a database holding the rest, that is what is shown.
        """
        kept = self.kept_findings(row)
        counted = sum(row.verdict.passed.values()) if row.verdict is not None else 0  # PASS kept as counts
        if self.more_findings_stored(row):
            assert self.store is not None and row.sweep_id is not None  # what more_findings_stored checked
            stored = self.store.findings(row.sweep_id, row.name)
            if len(stored) + counted == row.findings_total:
                return stored, True
        return kept, len(kept) + counted == row.findings_total

    @staticmethod
    def kept_findings(row: NodeRow) -> list[Finding]:
        """The findings the row holds in memory: every one that is not PASS."""
        return list(row.verdict.findings) if row.verdict is not None else []

    def more_findings_stored(self, row: NodeRow) -> bool:
        """True when the history database may hold findings of the row's verdict that the row does not."""
        kept = row.verdict.total if row.verdict is not None else 0
        return self.store is not None and row.sweep_id is not None and kept < row.findings_total

    def pool_pin(self, pool: str) -> dict[str, str]:
        """The pin a pool is held to: the one stored by 'pin stack', else the inventory's."""
        stored = self.store.pin(pool) if self.store is not None else {}
        if stored:
            return stored
        spec = self.inventory.pools.get(pool)
        return spec.pin.pinned_fields() if spec is not None else {}

    def stop_engine(self) -> None:
        """Stop the engine if it still runs (after the app has exited)."""
        if self.bridge is not None:
            self.bridge.stop()
