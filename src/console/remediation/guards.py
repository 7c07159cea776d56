"""What each case transition requires: the guards of ``console.remediation.cases``, and of a return to service.

Each guard answers why a step may not be taken now (one line an operator can act on), or None/"" when
it may. The transitions raise ``CaseError`` with that line; planners show it as the skip or refusal.
"""

from __future__ import annotations

import time

from console.inventory.model import LifecyclePolicy
from console.remediation.strikes import last_strike, strikes
from console.store import Store
from console.store.lifecycle import Case, Stage


class CaseError(Exception):
    """A step the case's stage does not allow; the message says what would."""


def repair_refusal(node: str, case: Case | None) -> str | None:
    """Why ``repaired`` cannot be acknowledged on ``node``'s case now."""
    if case is None:
        return f"{node} has no open case: the console opens one when it drains a node"
    if case.stage not in (Stage.DRAINED, Stage.AWAITING_REPAIR):
        return f"case #{case.id} of {node} is {case.stage.value}: nothing to acknowledge"
    return None


def revalidation_refusal(node: str, case: Case | None) -> str | None:
    """Why a revalidation's outcome cannot be recorded on ``node``'s case now."""
    if case is None:
        return f"{node} has no open case: the console opens one when it drains a node"
    if case.stage is not Stage.REVALIDATING:
        return f"case #{case.id} of {node} is {case.stage.value}: acknowledge the repair ('repaired') first"
    return None


def pass_uncounted(store: Store, case: Case, sweep_id: int, policy: LifecyclePolicy) -> str:
    """Why a passing sweep is no pass of ``case`` ("" when it counts).

    A pass comes from a sweep that started after the repair was acknowledged, after the previous
    counted pass's sweep had finished (two sweeps at once are one look at the node), and at least
    ``pass_spacing_min`` after that sweep started.
    """
    this = store.conn.execute("SELECT started_at FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
    if this is None:
        return ""  # a sweep recorded elsewhere: nothing here to time it by
    steps = store.case_steps(case.id)
    repaired = max((s.at for s in steps if s.step == "repaired"), default=case.opened_at)
    if this["started_at"] < repaired:
        return f"sweep {sweep_id} started before the repair was acknowledged"
    counted = [s for s in steps if s.step == "pass" and s.at >= repaired and s.sweep_id is not None]
    if not counted:
        return ""
    last = store.conn.execute(
        "SELECT id, started_at, finished_at FROM sweeps WHERE id = ?", (counted[-1].sweep_id,)
    ).fetchone()
    if last is None:
        return ""
    if last["id"] == sweep_id or last["finished_at"] is None or this["started_at"] < last["finished_at"]:
        return f"sweep {sweep_id} overlaps sweep {last['id']}, the last pass: two passes need two sweeps in turn"
    gap = this["started_at"] - last["started_at"]
    if gap < policy.pass_spacing_min * 60:
        return (
            f"sweep {sweep_id} started {gap / 60:.1f} min after sweep {last['id']}, the last pass;"
            f" passes are at least {policy.pass_spacing_min:g} min apart ([lifecycle] pass_spacing_min)"
        )
    return ""


def _passes_after(store: Store, case: Case, since: float) -> int:
    """The case's counted passes whose sweep started after ``since`` (a pass of a sweep not stored counts)."""
    count = 0
    for step in store.case_steps(case.id):
        if step.step != "pass":
            continue
        row = store.conn.execute("SELECT started_at FROM sweeps WHERE id = ?", (step.sweep_id,)).fetchone()
        started = row["started_at"] if row is not None else step.at
        count += started > since
    return count


def return_refusal(store: Store, node: str, policy: LifecyclePolicy) -> str | None:
    """Why the console may not return ``node`` to service now (a resume, an uncordon) unless forced.

    Its open case must have passed its revalidation as often as its pool's policy asks, every one of
    those passes after the node's latest strike (a sweep outside the case may strike it meanwhile);
    a node whose newest case escalated to the vendor (within the window) is held until an operator forces
    it back.
    """
    case = store.case(node)
    if case is None:
        newest = next(iter(store.cases(node)[::-1]), None)
        recent = newest is not None and (newest.closed_at or 0) >= time.time() - policy.window_s
        if newest is not None and recent and newest.stage is Stage.ESCALATED:
            return f"case #{newest.id} escalated (rma): a pass does not return it; --force with the vendor's word"
        return None
    if not case.ready(policy):
        return f"case #{case.id} is {case.stage.value}, next: {case.next_step(policy)}"
    count = strikes(store, node, policy.window_s)
    if count >= policy.max_strikes:
        return (
            f"case #{case.id}: {count} strikes within {policy.window_h:g} h (limit {policy.max_strikes}): escalate it"
        )
    struck = last_strike(store, node, policy.window_s)
    if struck is not None and _passes_after(store, case, struck.at) < policy.passes_required:
        return (
            f"case #{case.id}: struck by {struck.line()} after its passes began;"
            f" {policy.passes_required} passes after it are needed"
        )
    return None
