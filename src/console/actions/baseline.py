"""A pool's accepted baseline: accepting a sweep as it, and what changed since. The CLI's ``accept`` and
``diff`` and the console's ``A`` and ``D`` are these functions, so they refuse, audit and compare alike.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult
from console.actions.planning import refused
from console.inventory.model import Inventory
from console.model.findings import Status
from console.store import Store, current_user
from console.store.diff import NodeDiff, diff_sweeps


def pools_of_sweep(store: Store, sweep_id: int) -> list[str]:
    """The pools sweep ``sweep_id`` judged nodes of, sorted."""
    return sorted({r["pool"] for r in store.node_verdicts(sweep_id) if r["pool"]})


def failing_nodes(store: Store, sweep_id: int, pools: Iterable[str]) -> dict[str, str]:
    """The nodes of ``pools`` that sweep ``sweep_id`` judged FAIL or UNKNOWN: {node: verdict}, by name."""
    wanted = set(pools)
    return {
        r["node"]: r["status"]
        for r in store.node_verdicts(sweep_id)
        if r["pool"] in wanted and r["status"] in (Status.FAIL.value, Status.UNKNOWN.value)
    }


def failing_refusal(sweep_id: int, failing: dict[str, str]) -> str:
    """Why a sweep with failing or unknown nodes is no baseline without the operator saying so."""
    counts = ", ".join(
        f"{sum(1 for v in failing.values() if v == s)} {s}" for s in ("FAIL", "UNKNOWN") if s in failing.values()
    )
    shown = ", ".join(sorted(failing)[:10]) + (f" and {len(failing) - 10} more" if len(failing) > 10 else "")
    return (
        f"sweep {sweep_id} has {counts} node(s) ({shown}): a baseline is what later sweeps are judged against, "
        "so it should be healthy; --allow-failing accepts it anyway (the audit log keeps the list)"
    )


def accept_baseline(
    store: Store,
    sweep_id: int,
    pools: Iterable[str],
    *,
    reason: str = "",
    user: str | None = None,
    allow_failing: bool = False,
) -> ActionResult:
    """Make ``sweep_id`` the baseline of ``pools``, audited as ``accept``.

    A sweep that did not finish its work (cancelled, interrupted, cut by its deadline, still running) is
    no baseline: the refusal changes nothing and writes no audit entry. Nor is a sweep with FAIL or
    UNKNOWN nodes in those pools, unless ``allow_failing``: then the audit's inputs list them. The intent
    is committed before the baselines change, the outcome after. The operator's reason, when given, is
    kept with the inputs.
    """
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return ActionResult(False, refusal, {})
    pools = sorted(pools)
    failing = failing_nodes(store, sweep_id, pools)
    if failing and not allow_failing:
        return ActionResult(False, failing_refusal(sweep_id, failing), {})
    user = user or current_user()
    inputs: dict[str, object] = {"sweep": sweep_id}
    if reason:
        inputs["reason"] = reason
    if failing:
        inputs["failing"] = dict(sorted(failing.items()))
    with store.audited(ActionKind.ACCEPT.value, pools, inputs=inputs, user=user) as entry:
        for pool in pools:
            store.accept(pool, sweep_id, user)
        entry.finish(
            f"sweep {sweep_id} is the baseline of {', '.join(pools)}"
            + (f", with {len(failing)} FAIL or UNKNOWN node(s) accepted" if failing else "")
        )
    return ActionResult(
        True, f"sweep #{sweep_id} is the baseline of {', '.join(pools)}", dict.fromkeys(pools, "accepted"), entry.id
    )


def plan_accept(request: ActionRequest, store: Store, *, running: bool) -> ActionPlan:
    """The 'accept as baseline' dry run: sweep ``request.sweep_id`` becomes the baseline of the pools
    ``request.targets``. Refused as the CLI's ``accept`` refuses: a sweep that did not finish its work
    (cancelled, interrupted, cut by its deadline, still running: ``running``, or no sweep at all) is no
    baseline, nor is one with FAIL or UNKNOWN nodes in those pools (the command line's deliberate
    ``accept --allow-failing`` is the only way to accept that; the audit log keeps the list)."""
    request = replace(request, targets=tuple(sorted(request.targets)))
    sweep_id = request.sweep_id
    if sweep_id is None or running:
        return refused(request, "wait for a full sweep to finish")
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return refused(request, refusal)
    failing = failing_nodes(store, sweep_id, request.targets)
    if failing:
        return refused(request, failing_refusal(sweep_id, failing))
    notes = tuple(
        f"pool {pool}: baseline sweep #{store.baseline(pool) or 'none'} -> #{sweep_id}" for pool in request.targets
    )
    return ActionPlan(request=request, commands=(), where=f"history {store.path}", notes=notes)


def execute_accept(store: Store, plan: ActionPlan, user: str) -> ActionResult:
    """Carry out a confirmed accept plan: ``accept_baseline`` checks the sweep again (it may have been found
    interrupted since the plan) and audits what it does."""
    sweep_id = plan.request.sweep_id
    if sweep_id is None:
        return ActionResult(False, "wait for a full sweep to finish", {})
    try:
        return accept_baseline(store, sweep_id, plan.targets, reason=plan.reason, user=user)
    except sqlite3.Error as exc:  # a read-only opening, or a database failed since the plan
        return ActionResult(False, f"not accepted: history database: {exc}", {})


@dataclass(frozen=True)
class PoolDiff:
    """One pool's changes between its baseline and a sweep.

    ``baseline`` None: nothing accepted yet; ``current`` None: no full sweep of the pool to compare.
    ``not_swept`` lists the pool's nodes the compared sweep did not judge.
    """

    pool: str
    baseline: int | None
    current: int | None
    nodes: list[NodeDiff] = field(default_factory=list)
    not_swept: list[str] = field(default_factory=list)


def baseline_diffs(
    store: Store, inventory: Inventory, pools: Iterable[str], sweep: int | None = None
) -> list[PoolDiff]:
    """Per pool, what changed between its accepted baseline and ``sweep``.

    Without ``sweep``, each pool is compared with its own newest full sweep: not a drift check (which
    runs a subset of the families), not a sweep of other pools only.
    """
    diffs = []
    for pool in sorted(set(pools)):
        base = store.baseline(pool)
        members = [n.name for n in inventory.nodes if n.pool == pool]
        current = sweep if sweep is not None else store.latest_full_sweep(members)
        if base is None or current is None:
            diffs.append(PoolDiff(pool, base, current))
            continue
        swept = {r["node"] for r in store.node_verdicts(current)}
        missing = [name for name in members if name not in swept]
        diffs.append(PoolDiff(pool, base, current, diff_sweeps(store, base, current, members), missing))
    return diffs
