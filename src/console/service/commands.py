"""The commands the console sends the engine, and what the engine side does for each.

The same ``perform`` runs on the engine thread (tests, embedders) and in the engine process: the
console sends data, never code, so both ends agree on what a command can do.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from console.actions import ActionKind, ActionRequest
from console.actions.catalogue import entry
from console.model.findings import NodeVerdict, Status
from console.service.context import EngineContext


def without_passing(verdict: NodeVerdict) -> NodeVerdict:
    """``verdict`` keeping only the findings that are not PASS (the rest stay in the store)."""
    return verdict.model_copy(update={"findings": [f for f in verdict.findings if f.status is not Status.PASS]})


@dataclass(frozen=True)
class PlanPreview:
    """The dry run the confirm dialog shows: exactly what will run, where, on which nodes.

    ``plan`` is the action service's own plan object; in the engine process it stays there and the
    console holds a token for it.
    """

    action_id: str
    title: str
    targets: tuple[str, ...]
    reason: str = ""
    commands: tuple[tuple[str, ...], ...] = ()
    where: str = ""
    notes: tuple[str, ...] = ()
    refused: str | None = None
    decisions: tuple[tuple[str, str], ...] = ()
    shown: tuple[str, ...] = ()
    capped: tuple[str, ...] = ()  # targets left out by their pool's cap (the rest would run)
    held: tuple[str, ...] = ()  # targets their remediation case holds out (not revalidated yet)
    forced: bool = False  # planned with the cap overridden
    plan: Any = field(default=None, compare=False)

    def command_lines(self) -> list[str]:
        """Each command as the operator would type it, prefixed with where it runs (``ctl01$ scontrol ...``)."""
        return list(self.shown) or [f"$ {shlex.join(argv)}" for argv in self.commands]


@dataclass(frozen=True)
class ActionOutcome:
    """What a confirmed action did."""

    ok: bool
    summary: str
    per_target: dict[str, str] = field(default_factory=dict)


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
    """Ask the action service for the dry run of a cluster action."""

    kind: ActionKind
    targets: tuple[str, ...]
    reason: str = ""
    sweep_id: int | None = None
    pool: str | None = None
    from_node: str | None = None
    force: bool = False  # override the cap: the operator typed it, and the audit log keeps it


@dataclass(frozen=True)
class ExecuteAction:
    """Carry out a plan the operator confirmed."""

    preview: PlanPreview


@dataclass(frozen=True)
class SchedulerStates:
    """The scheduler's state of every node (empty while there is no action service)."""


Command = StartSweep | CancelSweep | GiveUp | Rerun | PlanAction | ExecuteAction | SchedulerStates


async def perform(context: EngineContext, command: Command) -> Any:
    """Do ``command`` on the engine side; sweeps and reruns return once they are over (result None)."""
    engine = context.engine
    if isinstance(command, StartSweep):
        await engine.run(level=command.level, families=set(command.families) if command.families else None)
        return None
    if isinstance(command, CancelSweep):
        engine.cancel()
        return None
    if isinstance(command, GiveUp):
        return tuple(name for name in command.nodes if engine.give_up(name))
    if isinstance(command, Rerun):
        families = set(command.families) if command.families is not None else None
        await engine.rerun(list(command.nodes), families, level=command.level)
        return None
    if isinstance(command, PlanAction):
        return await plan_cluster_action(context, command)
    if isinstance(command, ExecuteAction):
        return await execute_cluster_action(context, command.preview)
    if isinstance(command, SchedulerStates):
        return await scheduler_states(context)
    raise TypeError(f"not an engine command: {command!r}")


async def plan_cluster_action(context: EngineContext, command: PlanAction) -> PlanPreview:
    """Ask the action service for the dry-run plan (on the engine side: it may read the store)."""
    c = command
    title = entry(c.kind).title
    if context.actions is None:
        return PlanPreview(c.kind.value, title, c.targets, c.reason, refused=context.actions_problem)
    request = ActionRequest(
        kind=c.kind,
        targets=c.targets,
        reason=c.reason,
        sweep_id=c.sweep_id,
        pool=c.pool,
        from_node=c.from_node,
        force=c.force,
    )
    # Read the scheduler (or the nodes' OS) now, so the plan reflects the cluster as it is.
    await context.actions.refresh(request)
    plan = context.actions.plan(request)
    return PlanPreview(
        c.kind.value,
        title,
        c.targets,
        c.reason,
        commands=tuple(tuple(str(a) for a in argv) for argv in plan.commands),
        where=str(plan.where),
        notes=tuple(str(n) for n in plan.notes),
        refused=plan.refused,
        decisions=tuple((str(k), str(v)) for k, v in plan.decisions.items()),
        shown=tuple(step.shown() for step in plan.steps),
        capped=plan.capped,
        held=plan.held,
        forced=c.force,
        plan=plan,
    )


async def execute_cluster_action(context: EngineContext, preview: PlanPreview) -> ActionOutcome:
    """Carry out a confirmed plan on the engine side (it may SSH to the scheduler's controller)."""
    if context.actions is None or preview.plan is None:
        return ActionOutcome(False, context.actions_problem or "nothing to run")
    result = await context.actions.execute(preview.plan)
    per_target = {str(k): str(v) for k, v in dict(result.per_target).items()}
    return ActionOutcome(bool(result.ok), str(result.outcome), per_target)


async def scheduler_states(context: EngineContext) -> dict[str, str]:
    """Scheduler state per node from the action service; empty while there is none."""
    if context.actions is None:
        return {}
    return await context.actions.node_states()
