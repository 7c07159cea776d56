"""Revalidating repaired nodes: one audited sweep of the nodes whose case is ``revalidating``, and each
node's outcome recorded on its case. The ``revalidate`` command and ``watch`` both come here, so a
pass or a strike means the same whoever asked for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from console.inventory.model import LifecyclePolicy, Node
from console.model.findings import NodeVerdict, Status
from console.store import Store, current_user
from console.store.lifecycle import Case
from console.sweep.engine import SweepEngine


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
    inputs = {"level": level, "policy": policy.model_dump()}
    with store.audited("revalidate", names, inputs=inputs, commands=[f"sweep --probes {level}"], user=user) as entry:
        result = await engine.run(list(nodes), level=level)
        verdicts = dict(result.verdicts)
        results = record_outcomes(store, verdicts, result.sweep_id, policy, names, user=user or current_user())
        entry.finish(result.outcome, "\n".join(f"{n}: {line}" for n, (line, _) in results.items()))
    return Revalidation(verdicts, result.sweep_id, result.outcome, results)


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
        case = store.record_revalidation(
            name, passed=passed, sweep_id=sweep_id, action=action, user=user, policy=policy, note=note
        )
        word = {True: "pass", False: "strike", None: "not judged"}[passed]
        results[name] = (f"{word} ({note})", case)
    return results
