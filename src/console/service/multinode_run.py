"""The multinode level from the console: planned, then run on the engine side.

The level is ``sweep --probes multinode`` on the chosen nodes: their standard probes, then rccl-tests
over node pairs per pool (``console.sweep.cluster_sweep``). Its plan is a ``RunPlan``; it occupies every
GPU of its nodes, so read-only mode and a running sweep refuse it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from dataclasses import dataclass

from console.inventory.hostlist import fold
from console.model.multinode import MultinodeResult
from console.service.context import EngineContext
from console.service.run_plan import RunPlan
from console.sweep.catalog import ProbeSet
from console.sweep.cluster_sweep import sweep_cluster
from console.sweep.collective import launch_argv
from console.sweep.multinode import MultinodeOptions, borrowable
from console.sweep.pairing import MODE_LABEL, MODE_PURPOSE, Pairing, opening_pair


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


def plan_multinode(context: EngineContext, command: PlanMultinode) -> RunPlan:
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
    return RunPlan(
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
