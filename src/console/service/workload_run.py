"""One workload on one pool, run from the console's acceptance view: planned, then run on the engine side.

The run is ``sweep --probes workload`` narrowed to that workload and pool (the quick probes first,
then the workload on the reachable nodes, ``console.sweep.cluster_sweep``), or ``sweep --probes
framework`` on the pool for the built-in ``framework`` workload; its outcome is recorded as a sweep's is
(``record_outcomes``: accepted again, or regressed, where the pool's stack changed). It occupies every
GPU of the pool's nodes, so it is refused as the multi-node runs are: in read-only mode, and while
another sweep runs; and it is asked for through the confirm dialog with a reason, kept in the audit log.
While it runs its nodes serve no job, so it holds no more of the pool at once than the drains' cap allows
(``console.actions.workload_caps``): the other nodes wait their turn. Overridden (``force``), every node
runs at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from console.actions.acceptance import FRAMEWORK, pool_run, record_outcomes, workload_names, workload_pools
from console.actions.caps import CapPolicy
from console.actions.workload_caps import WorkloadAllowance, as_mapping, workload_allowance
from console.inventory.hostlist import fold
from console.inventory.model import Node
from console.model.findings import Status
from console.service.context import EngineContext
from console.service.run_plan import RunPlan
from console.sweep.catalog import ProbeSet, in_pool, probes_for
from console.sweep.cluster_sweep import sweep_cluster
from console.sweep.events import Event, SweepStarted
from console.sweep.workload_runs import RunLedger
from console.sweep.workloads import run_argv

TITLE = "Run workload"
AUDIT_ACTION = "workload-rerun"  # the operator's request; each run itself is audited as workload-run
PHASE_NAME = "workload-run"  # the task's name: what a refused sweep says is going on


@dataclass(frozen=True)
class PlanWorkloadRun:
    """The dry run of ``workload`` on ``pool``: what would run where, or why it is refused."""

    workload: str
    pool: str
    reason: str = ""
    force: bool = False  # past the pool's cap: every node at once


@dataclass(frozen=True)
class StartWorkloadRun:
    """Run ``workload`` on ``pool`` now (confirmed by the operator, with ``reason``); answers its outcome."""

    workload: str
    pool: str
    reason: str = ""
    force: bool = False


@dataclass(frozen=True)
class WorkloadRunOutcome:
    """What the run gave: its sweep, its worst status on the pool, and the acceptance records it made."""

    sweep_id: int | None
    status: Status | None
    recorded: tuple[str, ...]
    summary: str


def _nodes(context: EngineContext, pool: str) -> list[Node]:
    return [n for n in context.engine.inventory.nodes if n.pool == pool]


def refusal(context: EngineContext, workload: str, pool: str) -> str | None:
    """Why ``workload`` cannot run on ``pool`` now, or None."""
    inventory = context.engine.inventory
    if context.read_only:
        return "read-only mode: a workload occupies every GPU of the nodes it runs on"
    if workload not in workload_names(inventory):
        return f"no workload {workload!r} in the cluster file"
    if pool not in workload_pools(inventory, workload):
        return f"{workload} does not apply to pool {pool}"
    if not _nodes(context, pool):
        return f"pool {pool} has no node"
    if context.engine.running or context.multinode is not None:
        return "a sweep is running (K cancels it)"
    return None


async def _allowance(context: EngineContext, pool: str, force: bool) -> WorkloadAllowance | None:
    """The pool's allowance under the console's cap policy, read now; None when overridden."""
    if force:
        return None
    actions = context.actions
    caps = actions.caps if actions is not None else CapPolicy()
    return await workload_allowance(caps, context.engine.inventory, [pool], actions, context.store)


async def plan_workload_run(context: EngineContext, command: PlanWorkloadRun) -> RunPlan:
    """What running ``command.workload`` on ``command.pool`` would do (no side effect but reading the
    scheduler's node states, for the cap)."""
    inventory = context.engine.inventory
    nodes = _nodes(context, command.pool)
    names = tuple(n.name for n in nodes)
    refused = refusal(context, command.workload, command.pool)
    spec = inventory.workloads.get(command.workload)
    allowed = await _allowance(context, command.pool, command.force) if refused is None else None
    capped: tuple[str, ...] = ()
    cap_notes: list[str] = []
    if allowed is not None:
        capped = tuple(allowed.capped(nodes))
        cap_notes = allowed.notes([command.pool])
        specs = [spec] if spec is not None else []
        if too_small := allowed.too_small(specs, [command.pool]):
            # No group fits under the cap: nothing would run; the override takes the pool anyway.
            refused, capped = f"over the cap: {too_small[0]}; type override to run past it", names
    elif command.force and refused is None:
        cap_notes = ["cap overridden: every node of the pool runs it at once"]
    commands: tuple[tuple[str, ...], ...] = ()
    notes = [f"first the quick probes on {fold(names)} (a node they cannot reach gets no workload)"]
    if command.workload == FRAMEWORK:
        pool = inventory.pools.get(command.pool)
        framework = [in_pool(p, pool) for p in probes_for(ProbeSet.FRAMEWORK) if p.id.value.startswith(f"{FRAMEWORK}.")]
        commands = tuple((p.shown,) if p.shown else tuple(p.argv) for p in framework)
        notes.append("then the framework probe on every node of the pool")
        timeout = max((p.timeout_s for p in framework), default=0.0)
    elif spec is not None:
        commands = (run_argv(spec, nodes[: spec.nodes]),)
        controller = inventory.slurm.controller
        launcher = f"the Slurm controller {controller}" if controller else "each group's first node"
        notes.append(
            "then the workload on each node"
            if spec.nodes == 1
            else f"then the workload once per {spec.nodes} nodes, through srun from {launcher}"
        )
        timeout = spec.timeout_s
    else:
        timeout = 0.0
    notes += cap_notes
    notes += [
        f"it occupies every GPU of its nodes, up to {timeout / 60:.0f} min per run; K cancels",
        "where the pool's stack changed since it was accepted, the outcome is recorded: accepted again or regressed",
    ]
    if spec is None or spec.nodes == 1:
        where = "on each node of the pool"
    elif inventory.slurm.controller:
        where = f"on the Slurm controller {inventory.slurm.controller}, once per group"
    else:
        where = "from the first node of each group"
    return RunPlan(
        "acceptance-run",
        f"{TITLE} {command.workload} on",
        names,
        command.reason,
        commands=commands,
        where=where,
        notes=tuple(notes),
        refused=refused,
        capped=capped,
        forced=command.force,
    )


async def start_workload_run(context: EngineContext, command: StartWorkloadRun) -> WorkloadRunOutcome:
    """Run it, record its outcome, audit the request; CancelSweep stops it (nothing is recorded then)."""
    refused = refusal(context, command.workload, command.pool)
    if refused is not None:
        raise PermissionError(refused)
    engine = context.engine
    nodes = _nodes(context, command.pool)
    framework = command.workload == FRAMEWORK
    ledger: list[RunLedger] = []

    def on_event(event: Event) -> None:
        # The framework's run is the sweep itself: running from its start, on every node of the pool.
        if framework and isinstance(event, SweepStarted) and not event.rerun and not ledger:
            ledger.append(RunLedger(engine, event.sweep_id, [(FRAMEWORK, nodes)]))
            ledger[0].started(FRAMEWORK, nodes)

    level = ProbeSet.FRAMEWORK if framework else ProbeSet.WORKLOAD
    # The framework probe is a sweep level of its own (every node at once, as any sweep); the cap bounds
    # the workloads the site declares, whose runs may take a pool's nodes for hours.
    at_once = None if framework else as_mapping(await _allowance(context, command.pool, command.force))
    unsubscribe = engine.subscribe(on_event)
    phase = asyncio.ensure_future(sweep_cluster(engine, nodes, level, workloads=[command.workload], at_once=at_once))
    phase.set_name(PHASE_NAME)
    context.multinode = phase  # one heavy phase at a time; CancelSweep cancels it
    inputs = {"workload": command.workload, "pool": command.pool, "reason": command.reason, "force": command.force}
    with contextlib.ExitStack() as stack:
        entry = None
        if context.store is not None:
            entry = stack.enter_context(context.store.audited(AUDIT_ACTION, [n.name for n in nodes], inputs=inputs))
        try:
            result, _ = await phase
        except BaseException as exc:
            cancelled = isinstance(exc, asyncio.CancelledError)
            for open_ledger in ledger:  # else the framework's entry would read running while the console lives
                open_ledger.close("cancelled by the operator" if cancelled else f"it failed ({type(exc).__name__})")
            current = asyncio.current_task()
            if cancelled and phase.cancelled() and (current is None or not current.cancelling()):
                if entry is not None:
                    entry.finish("cancelled by the operator")
                return WorkloadRunOutcome(None, None, (), f"{command.workload} on {command.pool}: cancelled")
            raise
        finally:
            context.multinode = None
            unsubscribe()
        store = context.store
        run = pool_run(store, result.sweep_id, command.workload, [n.name for n in nodes]) if store else None
        status = run.status if run is not None else None
        for open_ledger in ledger:
            open_ledger.finished(FRAMEWORK, nodes, status or Status.UNKNOWN)
        records = record_outcomes(store, engine.inventory, result.sweep_id) if store is not None else []
        recorded = tuple(
            f"{r.workload} {r.outcome} on {r.pool}"
            for r in records
            if r.workload == command.workload and r.pool == command.pool
        )
        said = status.value if status is not None else "not run (no node could run it)"
        summary = f"{command.workload} on {command.pool} (sweep #{result.sweep_id}): {said}"
        summary += (
            f"; {', '.join(recorded)}"
            if recorded
            else "; nothing recorded: the pool runs its accepted stack, or the workload was never accepted"
            " (a accepts a passed run)"
        )
        if entry is not None:
            entry.finish(summary)
    return WorkloadRunOutcome(result.sweep_id, status, recorded, summary)
