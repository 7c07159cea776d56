"""The console's end of its engine: start it (its process, or a thread), send it commands, and tell the
operator how each went. The app keeps Textual's lifecycle; this holds the engine's.

Every command goes through ``bridge`` (``console.service.client.ProcessBridge`` or the thread's
``console.ui.bridge.EngineBridge``); a command that waits for its answer runs as a worker of the app
(handed over as a function, not a coroutine: an exclusive worker cancelled before it starts leaves no
coroutine unawaited), so the operator's keys never wait for the engine.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.worker import Worker

from console.actions.model import ActionPlan, ActionResult
from console.inventory.hostlist import fold
from console.model.findings import Status
from console.service.assembly import EngineSpec
from console.service.client import EngineGone, ProcessBridge, describe_error
from console.service.commands import (
    CancelSweep,
    Command,
    ExecuteAction,
    GiveUp,
    Rerun,
    SchedulerStates,
    StartMultinode,
    StartSweep,
)
from console.service.workload_run import StartWorkloadRun, WorkloadRunOutcome
from console.sweep.catalog import ProbeSet
from console.sweep.engine import probes_for_families
from console.sweep.events import SweepDone
from console.ui.bridge import EngineBridge
from console.ui.messages import EngineProblem, FleetChanged
from console.ui.text import safe

if TYPE_CHECKING:
    from console.ui.app import ConsoleApp

NOT_RUNNING = "the sweep engine is not running"


class EngineLink:
    """The engine ``spec`` describes, for ``app`` (None: no engine, events are replayed in tests)."""

    def __init__(self, app: ConsoleApp, spec: EngineSpec | None, *, in_thread: bool = False) -> None:
        self.app = app
        self.spec = spec
        self.in_thread = in_thread
        self.bridge: EngineBridge | ProcessBridge | None = None
        self.lost = "nothing was running"  # what the last engine took with it when it died

    @property
    def running(self) -> bool:
        """True while an engine runs to take commands."""
        return self.bridge is not None and self.bridge.running

    def start(self) -> None:
        """Start the engine; its events go to the app's state."""
        assert self.spec is not None
        if self.in_thread:
            self.bridge = EngineBridge(self.spec, self.app.ingest)
        else:
            store = self.app.store
            log = store.path.with_name("engine.log") if store is not None else None
            self.bridge = ProcessBridge(self.spec, self.app.ingest, self._ended, log_path=log)
        self.bridge.start()

    def restart(self) -> None:
        """Start the engine again after its process died (``_ended`` said what was lost with it)."""
        if self.spec is None or self.running:
            self.app.notify("the sweep engine is running: nothing to restart")
            return
        self.start()
        self.app.notify(f"engine restarted; lost with the last one: {self.lost}; S sweeps again", markup=False)

    def stop(self) -> None:
        """Stop the engine if it still runs (cancelling its sweep, closing its connections)."""
        if self.bridge is not None:
            self.bridge.stop()

    def _in_worker(self, work: Callable[[], Awaitable[None]], group: str, *, exclusive: bool = False) -> None:
        """Run ``work`` as a worker of the app (what Textual's ``@work`` does for a method of a widget)."""
        # An async def's coroutine type says it takes Any sent in, Textual's signature None: the same thing.
        job = cast("Callable[[], Coroutine[None, None, None]]", work)
        _started: Worker[None] = self.app.run_worker(job, group=group, exclusive=exclusive)  # the app owns it

    def submit(self, label: str, command: Command) -> bool:
        """Send ``command`` to the engine; its failure is reported as a notification."""
        if self.bridge is None or not self.bridge.running:
            self.app.notify(NOT_RUNNING, severity="warning")
            return False
        future = self.bridge.request(command)
        future.add_done_callback(partial(self._job_done, label))
        return True

    def _job_done(self, label: str, future: concurrent.futures.Future[Any]) -> None:
        if future.cancelled():
            return
        error = future.exception()
        # An engine process that died is reported once, by _ended, not by every command it took along.
        if error is not None and not isinstance(error, EngineGone):
            self.app.post_message(EngineProblem(f"{label} failed: {describe_error(error)}"))

    def _ended(self, text: str) -> None:
        # Called on the engine reader thread when the engine process ends without being asked to: its
        # sweep is over too, or the summary would show it running forever.
        progress = self.app.state.progress
        self.lost = "nothing was running"
        if progress.running:
            self.lost = (
                f"sweep {progress.sweep_id}, {len(progress.done)} of {len(progress.nodes)} nodes judged"
                " (the others were not)"
            )
            self.app.ingest(SweepDone(sweep_id=progress.sweep_id, outcome="cancelled", counts={}, duration_s=0.0))
        self.app.post_message(EngineProblem(text))
        self.app.post_message(EngineProblem(f"lost with the engine: {self.lost}; e restarts it"))

    # sweeps -------------------------------------------------------------------------------------

    def start_sweep(self) -> None:
        """Sweep every node at the console's level."""
        app = self.app
        if app.state.progress.running or app.state.pairs.running:
            app.notify("a sweep is already running (K cancels it)")
            return
        families = frozenset(app.families) if app.families else None
        self.submit("sweep", StartSweep(app.level, families))

    def start_multinode(self, targets: tuple[str, ...], reason: str = "", baseline_partners: bool = True) -> None:
        """The multinode level on ``targets`` (confirmed by the operator): probes, then node pairs;
        ``baseline_partners`` as the confirmed plan said."""
        app = self.app
        if app.read_only:
            return  # the engine refuses it too; the key is not even bound
        command = StartMultinode(tuple(targets), *app.pairing, reason=reason, baseline_partners=baseline_partners)
        if self.submit("multi-node RCCL", command):
            app.notify(f"multi-node RCCL on {len(targets)} node(s): their own probes first, then the pairs")

    def cancel_sweep(self) -> None:
        """Stop the running sweep; the transport kills probes in flight."""
        if self.submit("cancel", CancelSweep()):
            self.app.notify("cancelling the sweep…")

    def give_up(self, targets: tuple[str, ...]) -> None:
        """Stop waiting for ``targets`` in the running sweep: their probes are killed on the nodes, each
        reads UNKNOWN ("given up") and the sweep goes on. Only the console's own probes end: no confirmation."""
        app = self.app
        if not targets:
            app.notify("no node selected")
            return
        if not self.running:
            app.notify(NOT_RUNNING, severity="warning")
            return
        checked = tuple(name for name in targets if app.state.row(name).running)
        if checked:
            self._in_worker(partial(self._give_up, targets, checked), "give-up")
        else:
            self._nothing_to_give_up(targets)

    async def _give_up(self, targets: tuple[str, ...], checked: tuple[str, ...]) -> None:
        if self.bridge is None:
            return
        try:
            given: tuple[str, ...] = await self.bridge.ask(GiveUp(checked))
        except EngineGone:
            return  # reported once by _ended
        except Exception as exc:  # the engine failed it: say so, keep the console up
            self.app.notify(safe(describe_error(exc)), title="give up", severity="error", markup=False, timeout=10)
            return
        if given:
            self.app.notify(
                safe(f"gave up on {fold(given)}: its probes are killed on the node, it will read UNKNOWN"),
                markup=False,
            )
        # Nodes done before the key, or while the command was on its way (the engine is the judge).
        missed = tuple(name for name in targets if name not in given)
        if missed:
            self._nothing_to_give_up(missed)

    def _nothing_to_give_up(self, names: tuple[str, ...]) -> None:
        being = f"{fold(names)} {'is' if len(names) == 1 else 'are'}"
        self.app.notify(safe(f"nothing to give up on: {being} not being checked now"), severity="warning", markup=False)

    def rerun(self, targets: tuple[str, ...], families: set[str] | None) -> None:
        """Run the probes of ``families`` (all of the level when None) again on ``targets``."""
        app = self.app
        if not targets:
            app.notify("no node selected")
            return
        levels = self.levels_judging(families) if families is not None else []
        if families is not None and ProbeSet(app.level) not in levels:
            # "done in 0:00" with nothing run was all the walk-through got for rvs at the standard level.
            ran = " and ".join(level.value for level in levels)
            where = f"its probes run at the {ran} level" if levels else "no probe judges it"
            app.notify(
                f"{', '.join(sorted(families))}: nothing to rerun at the {app.level} level ({where})",
                severity="warning",
            )
            return
        command = Rerun(tuple(targets), frozenset(families) if families is not None else None, app.level)
        what = ", ".join(sorted(families)) if families else f"all {app.level} probes"
        if self.submit("rerun", command):
            app.notify(f"rerunning {what} on {len(targets)} node(s)")

    def levels_judging(self, families: set[str]) -> list[ProbeSet]:
        """The sweep levels with a probe that judges ``families`` (what a rerun of them could run)."""
        levels = (ProbeSet.QUICK, ProbeSet.STANDARD, ProbeSet.FULL)
        return [level for level in levels if probes_for_families(self.app.packs, level, families)]

    def families_off_level(self, families: Iterable[str]) -> dict[str, str]:
        """Family -> why a rerun of it at the console's level runs nothing (the levels that judge it)."""
        level, off = ProbeSet(self.app.level), {}
        for family in families:
            levels = self.levels_judging({family})
            if level not in levels:
                off[family] = f"{' and '.join(lv.value for lv in levels)} level only" if levels else "no probe"
        return off

    # workloads and actions ----------------------------------------------------------------------

    def run_workload(self, workload: str, pool: str, reason: str, *, force: bool = False) -> None:
        """Run ``workload`` on ``pool`` through the engine (confirmed in the acceptance view) and say how it
        ended; the view reads the recorded outcome when the run's end reaches it."""
        self._in_worker(partial(self._run_workload, workload, pool, reason, force), "workloads")

    async def _run_workload(self, workload: str, pool: str, reason: str, force: bool) -> None:
        from console.ui.screens.acceptance import AcceptanceScreen  # the view imports the app's modules

        app = self.app
        if self.bridge is None or not self.bridge.running:
            app.notify(NOT_RUNNING, severity="warning")
            return
        try:
            outcome: WorkloadRunOutcome = await self.bridge.ask(StartWorkloadRun(workload, pool, reason, force=force))
        except Exception as exc:  # refused, or the engine failed it: say so, keep the console up
            app.notify(safe(describe_error(exc)), title="Run workload", severity="error", markup=False, timeout=10)
            return
        regressed = any(word in r for r in outcome.recorded for word in ("regressed", "blocked"))
        bad = regressed or outcome.status in (Status.FAIL, Status.UNKNOWN)
        app.notify(
            safe(outcome.summary), title="Run workload", severity="error" if bad else "information", markup=False,
            timeout=10,
        )  # fmt: skip
        for screen in app.screen_stack:
            if isinstance(screen, AcceptanceScreen):
                screen.reload()

    def execute_plan(self, plan: ActionPlan, title: str) -> None:
        """Carry out a confirmed catalogued action on the engine side and report what happened."""
        self._in_worker(partial(self._execute, plan, title), "actions")

    async def _execute(self, plan: ActionPlan, title: str) -> None:
        app = self.app
        if self.bridge is None:
            return
        try:
            outcome: ActionResult = await self.bridge.ask(ExecuteAction(plan))
        except Exception as exc:  # the engine failed it, or is gone: say so, keep the console up
            app.notify(safe(describe_error(exc)), title=title, severity="error", markup=False, timeout=10)
            return
        lines = [outcome.outcome, *(f"{node}: {text}" for node, text in outcome.per_target.items())]
        app.notify(
            safe("; ".join(lines)), title=title, severity="information" if outcome.ok else "error", markup=False,
            timeout=10,
        )  # fmt: skip
        self.poll_scheduler()

    def poll_scheduler(self) -> None:
        """Refresh the scheduler column from the action service (blank while there is none)."""
        self._in_worker(self._poll_scheduler, "scheduler", exclusive=True)

    async def _poll_scheduler(self) -> None:
        if self.bridge is None or not self.bridge.running:
            return
        try:
            states = await self.bridge.ask(SchedulerStates())
        except EngineGone:
            return  # reported once by _ended
        except Exception as exc:  # the action service's failure is the operator's to see, not a crash
            self.app.post_message(EngineProblem(f"reading the scheduler failed: {describe_error(exc)}"))
            return
        if states and self.app.state.set_scheduler_states(states):
            self.app.post_message(FleetChanged())
