"""The commands the console sends the engine, and what the engine side does for each.

The same ``perform`` runs on the engine thread (tests, embedders) and in the engine process: the
console sends data, never code, so both ends agree on what a command can do.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from dataclasses import dataclass, field
from typing import Any

from console.actions import ActionKind, ActionRequest
from console.actions.catalogue import entry
from console.inventory.hostlist import fold
from console.model.findings import NodeVerdict, Status
from console.model.multinode import MultinodeResult
from console.service.context import EngineContext
from console.service.workload_run import (
    PHASE_NAME,
    PlanWorkloadRun,
    StartWorkloadRun,
    plan_workload_run,
    start_workload_run,
)
from console.sweep.catalog import ProbeSet
from console.sweep.cluster_sweep import sweep_cluster
from console.sweep.collective import launch_argv
from console.sweep.multinode import MultinodeOptions, borrowable
from console.sweep.pairing import MODE_LABEL, MODE_PURPOSE, Pairing, opening_pair


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
    # The multinode level: nodes the operator did not select whose GPUs a second pass may take (known-good
    # in their pool's accepted baseline), and whether this plan lets it (the dialog's choice).
    borrowable: tuple[str, ...] = ()
    borrow: bool = True
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


@dataclass(frozen=True)
class PlanMultinode:
    """The dry run of the multinode level on ``nodes``: what it would launch, or why it is refused."""

    nodes: tuple[str, ...]
    reason: str = ""
    pairing: str = Pairing.REFERENCE.value
    seed: int = 0
    baseline_partners: bool = True  # False: no node outside ``nodes`` is borrowed (--no-baseline-partners)


@dataclass(frozen=True)
class StartMultinode:
    """The multinode level on ``nodes``: their standard probes, then rccl-tests over node pairs per pool
    (``console.sweep.cluster_sweep``, as ``sweep --probes multinode``), the first pass paired as
    ``pairing`` says (``console.sweep.pairing``); answers the ``MultinodeResult``, None when it was
    cancelled or no pair could run."""

    nodes: tuple[str, ...]
    pairing: str = Pairing.REFERENCE.value
    seed: int = 0
    reason: str = ""  # the operator's, kept with the run in the audit log
    baseline_partners: bool = True  # as the confirmed plan said


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
    engine = context.engine
    if isinstance(command, StartSweep | Rerun) and context.multinode is not None:
        # (``multinode`` holds any heavy phase: the multi-node pairs, or a workload run from the console.)
        # Probes on nodes whose GPUs the pairs hold would judge the pairs' load, and slow them down.
        running = context.multinode
        what = "a workload run" if isinstance(running, asyncio.Task) and running.get_name() == PHASE_NAME else None
        raise RuntimeError(f"{what or 'the multi-node phase'} is running (K cancels it)")
    if isinstance(command, StartSweep):
        await engine.run(level=command.level, families=set(command.families) if command.families else None)
        return None
    if isinstance(command, CancelSweep):
        engine.cancel()
        if context.multinode is not None:
            context.multinode.cancel()
        return None
    if isinstance(command, PlanMultinode):
        return plan_multinode(context, command)
    if isinstance(command, StartMultinode):
        return await start_multinode(context, command)
    if isinstance(command, PlanWorkloadRun):
        return await plan_workload_run(context, command)
    if isinstance(command, StartWorkloadRun):
        return await start_workload_run(context, command)
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


MULTINODE_TITLE = "Multi-node RCCL"


def _multinode_refusal(context: EngineContext, nodes: tuple[str, ...]) -> str | None:
    if context.read_only:
        return "read-only mode: multi-node RCCL occupies every GPU of the nodes it runs on"
    if context.engine.running or context.multinode is not None:
        return "a sweep is running (K cancels it)"
    pools: dict[str, int] = {}
    for name in nodes:
        pool = context.engine.inventory.node(name).pool
        pools[pool] = pools.get(pool, 0) + 1
    if not any(count >= 2 for count in pools.values()):
        return "a multi-node run needs two nodes of one pool among the targets"
    return None


def plan_multinode(context: EngineContext, command: PlanMultinode) -> PlanPreview:
    """What the multinode level would do on ``command.nodes``: the per-node probes, then the pair runs.

    The pairs themselves depend on which nodes pass their own probes, so the plan shows the form of the
    first run of each pool (its first two targets) and says how the rest are chosen.
    """
    nodes = command.nodes
    refused = _multinode_refusal(context, nodes)
    inventory = context.engine.inventory
    options = MultinodeOptions()
    pairing = Pairing(command.pairing)
    # Pool members in the inventory's order, as the run lists them (``console.sweep.multinode._select``).
    chosen = set(nodes)
    by_pool: dict[str, list[str]] = {}
    for node in inventory.nodes:
        if node.name in chosen:
            by_pool.setdefault(node.pool, []).append(node.name)
    openings = {pool: _opening(context, members, pairing, command.seed) for pool, members in by_pool.items()}
    runs = [(pool, pair) for pool, pair in openings.items() if pair is not None]
    commands = tuple(tuple(launch_argv([inventory.node(n) for n in pair], options.launch)) for _, pair in runs)
    minutes = options.launch.timeout_s / 60
    if pairing is Pairing.REFERENCE:
        first = "each pool's first node to pass its own probes is the reference; every other node runs with it"
        where = "on each pool's reference node (the shown pair is the form of the first run)"
        shown: tuple[str, ...] = ()
    else:
        first = (
            f"first pass: the nodes in {pairing.value} pairs (seed {command.seed}), side by side "
            f"({MODE_PURPOSE[pairing]}); the first run of each pool: "
            + "; ".join(f"{pool}: {a} with {b}" for pool, (a, b) in runs)
        )
        where = (
            f"on the first node of each pool's first {pairing.value} pair (the pairs are drawn from the nodes "
            "the probes reach: an unreachable node changes them)"
        )
        shown = tuple(f"{pair[0]}$ {shlex.join(argv)}" for (_, pair), argv in zip(runs, commands, strict=True))
    borrowable = borrowable_nodes(context, nodes)
    notes = (
        f"first the standard probes on {fold(nodes)}, then all_reduce_perf over node pairs, per pool",
        first,
        "a node of a failed pair runs again with a second known-good node before it is named",
        *_borrow_notes(borrowable, command.baseline_partners),
        f"each run occupies every GPU of its nodes, up to {minutes:.0f} min; K cancels",
    )
    return PlanPreview(
        "multinode",
        MULTINODE_TITLE,
        nodes,
        command.reason,
        commands=commands,
        where=where,
        notes=notes,
        shown=shown,
        refused=refused,
        borrowable=tuple(node for names in borrowable.values() for node in names),
        borrow=command.baseline_partners,
    )


def _opening(context: EngineContext, members: list[str], pairing: Pairing, seed: int) -> tuple[str, str] | None:
    """The first run of a pool in ``pairing``: in reference mode the form only (its first two targets; the
    reference is whichever passes first), else the first pair the run's own plan starts."""
    if len(members) < 2:
        return None
    if pairing is Pairing.REFERENCE:
        return members[0], members[1]
    label = MODE_LABEL.get(pairing)
    groups = {n: context.engine.inventory.node(n).labels.get(label) if label else None for n in members}
    return opening_pair(members, groups, pairing, seed)


def borrowable_nodes(context: EngineContext, nodes: tuple[str, ...]) -> dict[str, list[str]]:
    """'baseline sweep #N of pool P' -> the nodes a second pass on ``nodes`` may borrow (the run's own list:
    ``console.sweep.multinode.borrowable``), for each pool of ``nodes`` with any."""
    inventory = context.engine.inventory
    out: dict[str, list[str]] = {}
    for pool in sorted({inventory.node(name).pool for name in nodes}):
        base, names = borrowable(context.store, inventory, pool, swept=nodes)
        if names:
            out[f"baseline sweep #{base} of pool {pool}"] = names
    return out


def _borrow_notes(borrowable: dict[str, list[str]], borrow: bool) -> tuple[str, ...]:
    if not borrowable:
        return ("no node outside the selection can be borrowed (no accepted baseline with other PASS nodes)",)
    named = "; ".join(f"{', '.join(names)} (known-good in {where})" for where, names in borrowable.items())
    if not borrow:
        return (f"no baseline partner will be borrowed (opted out): {named} stay untouched",)
    return (
        f"may borrow, when none of these nodes can partner a second pass: {named}; not selected, their GPUs"
        " are taken for that run (untick the choice below, or --no-baseline-partners, to keep them out)",
    )


async def start_multinode(context: EngineContext, command: StartMultinode) -> MultinodeResult | None:
    """Run the multinode level on ``command.nodes``; CancelSweep stops it (what finished is kept)."""
    refused = _multinode_refusal(context, command.nodes)
    if refused is not None:
        raise PermissionError(refused)
    engine = context.engine
    nodes = [engine.inventory.node(name) for name in command.nodes]
    options = MultinodeOptions(
        pairing=Pairing(command.pairing), seed=command.seed, baseline_partners=command.baseline_partners
    )
    phase = asyncio.ensure_future(sweep_cluster(engine, nodes, ProbeSet.MULTINODE, multinode=options))
    context.multinode = phase
    inputs = {
        "reason": command.reason,
        "pairing": command.pairing,
        "seed": command.seed,
        "baseline_partners": command.baseline_partners,
    }
    # Written before the GPUs are taken, like the actions: who held which nodes' GPUs, when and why.
    with contextlib.ExitStack() as stack:
        entry = None
        if context.store is not None:
            entry = stack.enter_context(context.store.audited("multinode", command.nodes, inputs=inputs))
        try:
            _, result = await phase
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if phase.cancelled() and (current is None or not current.cancelling()):
                if entry is not None:
                    entry.finish("cancelled by the operator")
                return None  # the operator's cancel, not the engine stopping
            raise
        finally:
            context.multinode = None
        if entry is not None:
            entry.finish(_phase_outcome(result))
    return result


def _phase_outcome(result: MultinodeResult | None) -> str:
    if result is None:
        return "no pair ran: the per-node sweep did not finish"
    named = [c.node for c in result.culprits] + [f"{r.label} {r.rack} uplink" for r in result.racks]
    return f"{len(result.runs)} runs; named: {', '.join(named) or 'none'}"
