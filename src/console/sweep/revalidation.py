"""Revalidating repaired nodes: one audited sweep of the nodes whose case is ``revalidating``, and each
node's outcome recorded on its case. The ``revalidate`` command and ``watch`` both come here, so a
pass or a strike means the same whoever asked for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from console.inventory.model import LifecyclePolicy, Node
from console.model.findings import NodeVerdict, Status
from console.remediation.cases import record_revalidation
from console.store import Store, current_user
from console.store.lifecycle import Case
from console.sweep.catalog import ProbeSet
from console.sweep.engine import SweepEngine
from console.sweep.partner import choose_partner, revalidate_pair


@dataclass(frozen=True)
class Revalidation:
    """What one revalidation sweep gave: the verdicts, the sweep, and each node's line and case."""

    verdicts: dict[str, NodeVerdict]
    sweep_id: int
    outcome: str
    results: dict[str, tuple[str, Case]]


async def revalidate(
    engine: SweepEngine,
    store: Store,
    nodes: Sequence[Node],
    level: str,
    policy: LifecyclePolicy,
    *,
    user: str | None = None,
) -> Revalidation:
    """Sweep ``nodes`` (their cases must be ``revalidating``) at ``level``, audited, and record each outcome."""
    names = [n.name for n in nodes]
    if level == ProbeSet.MULTINODE.value:
        return await _revalidate_pairs(engine, store, names, policy, user=user)
    inputs = {"level": level, "policy": policy.model_dump()}
    with store.audited("revalidate", names, inputs=inputs, commands=[f"sweep --probes {level}"], user=user) as entry:
        result = await engine.run(list(nodes), level=level)
        verdicts = dict(result.verdicts)
        results = record_outcomes(store, verdicts, result.sweep_id, policy, names, user=user or current_user())
        entry.finish(result.outcome, "\n".join(f"{n}: {line}" for n, (line, _) in results.items()))
    return Revalidation(verdicts, result.sweep_id, result.outcome, results)


async def _revalidate_pairs(
    engine: SweepEngine, store: Store, names: list[str], policy: LifecyclePolicy, *, user: str | None
) -> Revalidation:
    """The multinode level: each node on its own sweep with its own known-good partner (console.sweep.partner).

    One node at a time: two repaired nodes in one sweep could be taken as each other's reference.
    """
    partners = {name: choose_partner(store, engine.inventory, name) for name in names}
    inputs = {"level": ProbeSet.MULTINODE.value, "policy": policy.model_dump()}
    inputs["partners"] = {n: p.partner for n, p in partners.items()}
    commands = [f"sweep --probes standard {n}, then {p.plan_line()}" for n, p in partners.items()]
    verdicts: dict[str, NodeVerdict] = {}
    results: dict[str, tuple[str, Case]] = {}
    outcome, sweep_id = "done", 0
    with store.audited("revalidate", names, inputs=inputs, commands=commands, user=user) as entry:
        for name in names:
            verdict, sweep_id, outcome = await revalidate_pair(engine, name, partners[name])
            verdicts[name] = verdict
            results.update(
                record_outcomes(store, {name: verdict}, sweep_id, policy, [name], user=user or current_user())
            )
            if outcome != "done":
                break
        entry.finish(outcome, "\n".join(f"{n}: {line}" for n, (line, _) in results.items()))
    return Revalidation(verdicts, sweep_id, outcome, results)


def by_policy(
    nodes: Sequence[str], policy_of: Callable[[str], LifecyclePolicy]
) -> list[tuple[LifecyclePolicy, list[str]]]:
    """``nodes`` grouped by their lifecycle policy, in the order each policy first appears."""
    groups: list[tuple[LifecyclePolicy, list[str]]] = []
    for name in nodes:
        policy = policy_of(name)
        for known, names in groups:
            if known == policy:
                names.append(name)
                break
        else:
            groups.append((policy, [name]))
    return groups


async def revalidate_by_policy(
    engine: SweepEngine,
    store: Store,
    nodes: Sequence[Node],
    policy_of: Callable[[str], LifecyclePolicy],
    level: str | None = None,
    *,
    user: str | None = None,
) -> Revalidation:
    """One revalidation per group of nodes that share a policy (pools may differ), merged into one outcome.

    Each group sweeps at ``level``, or its policy's level when None; a cancelled sweep stops the rest.
    """
    by_name = {n.name: n for n in nodes}
    verdicts: dict[str, NodeVerdict] = {}
    results: dict[str, tuple[str, Case]] = {}
    outcome, sweep_id = "done", 0
    for policy, names in by_policy(list(by_name), policy_of):
        done = await revalidate(engine, store, [by_name[n] for n in names], level or policy.level, policy, user=user)
        verdicts.update(done.verdicts)
        results.update(done.results)
        outcome, sweep_id = done.outcome, done.sweep_id
        if done.outcome != "done":
            break
    return Revalidation(verdicts, sweep_id, outcome, results)


def record_outcomes(
    store: Store,
    verdicts: dict[str, NodeVerdict],
    sweep_id: int,
    policy: LifecyclePolicy,
    nodes: Sequence[str],
    *,
    user: str,
) -> dict[str, tuple[str, Case]]:
    """Each node's outcome on its case: PASS is a pass, FAIL or WARN a strike, anything else neither."""
    results = {}
    for name in nodes:
        verdict = verdicts.get(name)
        status = verdict.status if verdict is not None else Status.UNKNOWN
        passed = True if status is Status.PASS else False if status in (Status.FAIL, Status.WARN) else None
        action = verdict.action if verdict else None
        reason = verdict.reason if verdict is not None else "not swept"
        note = f"{status.value}" + (f": {reason}" if reason else "")
        case = record_revalidation(
            store, name, passed=passed, sweep_id=sweep_id, action=action, user=user, policy=policy, note=note
        )
        word = {True: "pass", False: "strike", None: "not judged"}[passed]
        results[name] = (f"{word} ({note})", case)
    return results
