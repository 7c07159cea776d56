"""The commands the console sends the engine, and one handler for each on the engine side.

The same ``perform`` runs on the engine thread (tests, embedders) and in the engine process: the
console sends data, never code, so both ends agree on what a command can do. ``perform`` picks the
handler by the command's type (``functools.singledispatch``): a new command is a dataclass here and one
``@handle.register`` function.

A cluster action's plan crosses the wire as the action service made it (``console.actions.ActionPlan``,
frozen data): the confirm dialog shows it and ``ExecuteAction`` carries it back, where the service
checks it against the state read then before anything runs (``ActionService.execute``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch
from typing import Any

from console.actions import ActionKind, ActionPlan, ActionRequest, ActionResult
from console.actions.planning import refused
from console.model.findings import NodeVerdict, Status
from console.service.context import EngineContext
from console.service.multinode_run import PlanMultinode, StartMultinode, plan_multinode, start_multinode
from console.service.workload_run import (
    PHASE_NAME,
    PlanWorkloadRun,
    StartWorkloadRun,
    plan_workload_run,
    start_workload_run,
)

__all__ = [
    "CancelSweep",
    "Command",
    "ExecuteAction",
    "GiveUp",
    "PlanAction",
    "PlanMultinode",
    "PlanWorkloadRun",
    "Rerun",
    "SchedulerStates",
    "StartMultinode",
    "StartSweep",
    "StartWorkloadRun",
    "perform",
    "without_passing",
]


def without_passing(verdict: NodeVerdict) -> NodeVerdict:
    """``verdict`` keeping only the findings that are not PASS (the rest stay in the store)."""
    return verdict.model_copy(update={"findings": [f for f in verdict.findings if f.status is not Status.PASS]})


# the commands -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartSweep:
    """Sweep every node at ``level`` (``families`` narrows it)."""

    level: str
    families: frozenset[str] | None = None


@dataclass(frozen=True)
class CancelSweep:
    """Stop the running sweep; the transport kills probes in flight."""


@dataclass(frozen=True)
class GiveUp:
    """Stop waiting for ``nodes`` in the running sweep: their probes are killed on the nodes, each reads
    UNKNOWN ("given up by the operator") and the sweep goes on. Answers the nodes it gave up on."""

    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Rerun:
    """Run the probes of ``families`` (all of ``level`` when None) again on ``nodes``."""

    nodes: tuple[str, ...]
    families: frozenset[str] | None
    level: str


@dataclass(frozen=True)
class PlanAction:
    """Ask the action service for the dry run of a catalogued action; answers its ``ActionPlan``."""

    kind: ActionKind
    targets: tuple[str, ...]
    reason: str = ""
    sweep_id: int | None = None
    pool: str | None = None
    from_node: str | None = None
    force: bool = False  # override the cap: the operator typed it, and the audit log keeps it

    @property
    def request(self) -> ActionRequest:
        """The action service's request for this command."""
        return ActionRequest(
            kind=self.kind,
            targets=self.targets,
            reason=self.reason,
            sweep_id=self.sweep_id,
            pool=self.pool,
            from_node=self.from_node,
            force=self.force,
        )


@dataclass(frozen=True)
class ExecuteAction:
    """Carry out the plan the operator confirmed; answers the service's ``ActionResult``."""

    plan: ActionPlan


@dataclass(frozen=True)
class SchedulerStates:
    """The scheduler's state of every node (empty while there is no action service)."""


Command = (
    StartSweep
    | CancelSweep
    | GiveUp
    | Rerun
    | PlanAction
    | ExecuteAction
    | SchedulerStates
    | PlanMultinode
    | StartMultinode
    | PlanWorkloadRun
    | StartWorkloadRun
)


async def perform(context: EngineContext, command: Command) -> Any:
    """Do ``command`` on the engine side; sweeps and reruns return once they are over (result None)."""
    return await handle(command, context)


# the handlers, one per command --------------------------------------------------------------------


@singledispatch
async def handle(command: object, context: EngineContext) -> Any:
    """The engine side of ``command`` (each command type registers its own)."""
    raise TypeError(f"not an engine command: {command!r}")


def _no_heavy_phase(context: EngineContext) -> None:
    """Refuse a sweep while a heavy phase (the multi-node pairs, or a workload run) holds GPUs: probes on
    those nodes would judge the phase's load, and slow it down."""
    running = context.multinode
    if running is None:
        return
    what = "a workload run" if running.get_name() == PHASE_NAME else None
    raise RuntimeError(f"{what or 'the multi-node phase'} is running (K cancels it)")


@handle.register(StartSweep)
async def _start_sweep(command: StartSweep, context: EngineContext) -> None:
    _no_heavy_phase(context)
    await context.engine.run(level=command.level, families=set(command.families) if command.families else None)


@handle.register(Rerun)
async def _rerun(command: Rerun, context: EngineContext) -> None:
    _no_heavy_phase(context)
    families = set(command.families) if command.families is not None else None
    await context.engine.rerun(list(command.nodes), families, level=command.level)


@handle.register(CancelSweep)
async def _cancel(command: CancelSweep, context: EngineContext) -> None:
    context.engine.cancel()
    if context.multinode is not None:
        context.multinode.cancel()


@handle.register(GiveUp)
async def _give_up(command: GiveUp, context: EngineContext) -> tuple[str, ...]:
    return tuple(name for name in command.nodes if context.engine.give_up(name))


@handle.register(PlanAction)
async def plan_cluster_action(command: PlanAction, context: EngineContext) -> ActionPlan:
    """The action service's dry-run plan (on the engine side: it may read the store and the scheduler)."""
    request = command.request
    if context.actions is None:
        return refused(request, context.actions_problem or "cluster actions are not available")
    # Read the scheduler (or the nodes' OS) now, so the plan reflects the cluster as it is.
    await context.actions.refresh(request)
    return context.actions.plan(request)


@handle.register(ExecuteAction)
async def execute_cluster_action(command: ExecuteAction, context: EngineContext) -> ActionResult:
    """Carry out a confirmed plan on the engine side (it may SSH to the scheduler's controller)."""
    if context.actions is None:
        return ActionResult(False, context.actions_problem or "nothing to run", {})
    return await context.actions.execute(command.plan)


@handle.register(SchedulerStates)
async def scheduler_states(command: SchedulerStates, context: EngineContext) -> dict[str, str]:
    """Scheduler state per node from the action service; empty while there is none."""
    if context.actions is None:
        return {}
    return await context.actions.node_states()


@handle.register(PlanMultinode)
async def _plan_multinode(command: PlanMultinode, context: EngineContext) -> Any:
    return plan_multinode(context, command)


@handle.register(StartMultinode)
async def _start_multinode(command: StartMultinode, context: EngineContext) -> Any:
    return await start_multinode(context, command)


@handle.register(PlanWorkloadRun)
async def _plan_workload_run(command: PlanWorkloadRun, context: EngineContext) -> Any:
    return await plan_workload_run(context, command)


@handle.register(StartWorkloadRun)
async def _start_workload_run(command: StartWorkloadRun, context: EngineContext) -> Any:
    return await start_workload_run(context, command)
