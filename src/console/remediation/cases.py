"""The case state machine: every transition of a node's remediation case, in one place.

    proposed -> drained -> awaiting-repair -> revalidating -> returned
                                 ^                  |
                                 +---- a strike ----+--> escalated (strikes within the window: the vendor's RMA)

- ``open_case``: the console drains (or cordons) a node for what a sweep found: its open case goes on,
  else a new one opens, ``drained`` (``awaiting-repair`` for a physical action: the technician acts
  first). A drain ``watch`` did not carry out (the cap) opens it ``proposed``: the node stays in
  service. A node whose strikes within its pool's window reach ``max_strikes``
  (``console.remediation.strikes``) opens escalated: it goes to the vendor, not back to a repair.
- ``acknowledge_repair``: someone says what was done; the case is ``revalidating``, its passes start again.
- ``record_revalidation``: a revalidation sweep's verdict: a pass (counted only as
  ``guards.pass_uncounted`` allows), a strike (back to the repair, or escalated), or neither (UNKNOWN).
- ``drain_failed``, ``returned``, ``close_case``: the scheduler's effect's outcome: a failed drain ends
  the case its intent opened; a resume returns the node (``returned`` once its passes are in,
  ``ended`` when forced); a resume or re-drain outside the console, a withdrawn or rejected proposal,
  or an escalation by an operator closes it.

Each transition is one SQLite transaction: the case row and its step (citing the audit row of the
action behind it) commit together. When the caller's action has a scheduler effect, the caller writes
the transition inside the transaction of the action's intent (``Store.audited(with_intent=...)``), so
intent and case are written together before the effect, and the outcome after it.
"""

from __future__ import annotations

import json
import time

from console.inventory.model import LifecyclePolicy
from console.model.findings import Remedy
from console.remediation.guards import CaseError, pass_uncounted, repair_refusal, revalidation_refusal
from console.remediation.strikes import strikes
from console.store import Store
from console.store.lifecycle import PHYSICAL, Case, Stage
from console.store.transaction import immediate

__all__ = [
    "CaseError",
    "acknowledge_repair",
    "close_case",
    "drain_failed",
    "open_case",
    "record_revalidation",
    "returned",
]


def _escalation(store: Store, node: str, policy: LifecyclePolicy | None, *, also: int | None = None) -> str:
    """``strike N of M within W h: escalated`` when the node's strikes reach the policy's limit, else ""."""
    if policy is None:
        return ""
    count = strikes(store, node, policy.window_s, also=also)
    if count < policy.max_strikes:
        return ""
    return f"strike {count} of {policy.max_strikes} within {policy.window_s / 3600:g} h: escalated"


def open_case(
    store: Store,
    node: str,
    *,
    user: str,
    action: Remedy | None,
    sweep_id: int | None,
    findings: list[str],
    audit_id: int | None,
    proposed: bool = False,
    policy: LifecyclePolicy | None = None,
) -> Case:
    """The node's case for a drain the console is making: its open case goes on, else a new one.

    ``proposed``: the drain was not carried out (``Stage.PROPOSED``); an open case stays as it is.
    ``policy``: the node's pool's; with it, a node whose strikes reach its limit opens escalated.
    """
    stage = Stage.AWAITING_REPAIR if action in PHYSICAL else Stage.DRAINED
    stage = Stage.PROPOSED if proposed else stage
    with immediate(store.conn):
        escalated = "" if proposed else _escalation(store, node, policy)
        current = store.case(node)
        if current is not None and proposed:
            return current
        if current is None:
            cur = store.conn.execute(
                "INSERT INTO cases (node, stage, action, opened_at, opened_by, sweep_id, findings)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    node,
                    stage.value,
                    action.value if action else None,
                    time.time(),
                    user,
                    sweep_id,
                    json.dumps(findings),
                ),
            )
            case_id = int(cur.lastrowid or 0)
            _log(
                store,
                case_id,
                "drain",
                stage,
                user=user,
                note=", ".join(findings[:5]),
                sweep_id=sweep_id,
                audit_id=audit_id,
            )
            current = store.case_by_id(case_id)
            assert current is not None
        else:
            note = f"drained again ({action.value if action else 'no action'})"
            current = _step(
                store,
                current,
                "drain",
                stage,
                user=user,
                note=note,
                sweep_id=sweep_id,
                audit_id=audit_id,
                action=action,
            )
        if escalated:
            current = _step(
                store,
                current,
                "escalate",
                Stage.ESCALATED,
                user=user,
                note=escalated,
                sweep_id=sweep_id,
                audit_id=audit_id,
                action=Remedy.RMA,
                close=True,
            )
    return current


def acknowledge_repair(store: Store, node: str, *, user: str, note: str, audit_id: int | None) -> Case:
    """Someone did what the case called for: it is revalidated next (its passes start again)."""
    with immediate(store.conn):
        case = store.case(node)
        why = repair_refusal(node, case)
        if why is not None or case is None:
            raise CaseError(why)
        return _step(store, case, "repaired", Stage.REVALIDATING, user=user, note=note, audit_id=audit_id, passes=0)


def record_revalidation(
    store: Store,
    node: str,
    *,
    passed: bool | None,
    sweep_id: int,
    action: Remedy | None,
    user: str,
    policy: LifecyclePolicy,
    note: str,
) -> Case:
    """A revalidation sweep's outcome: a pass, a strike, or (``passed`` None: nothing judged) neither."""
    with immediate(store.conn):
        case = store.case(node)
        why = revalidation_refusal(node, case)
        if why is not None or case is None:
            raise CaseError(why)
        if passed is None:
            return _step(store, case, "unjudged", case.stage, user=user, note=note, sweep_id=sweep_id)
        if passed and (limit := _escalation(store, node, policy)):
            # Strikes found outside the case (a sweep, watch) reached the limit meanwhile: one pass never
            # returns a node that is to go to the vendor.
            return _escalated(store, case, "escalate", f"{note}; not counted: {limit}", user=user, sweep_id=sweep_id)
        if passed:
            uncounted = pass_uncounted(store, case, sweep_id, policy)
            if uncounted:
                why = f"{note}; not counted: {uncounted}"
                return _step(store, case, "pass-uncounted", case.stage, user=user, note=why, sweep_id=sweep_id)
            return _step(
                store, case, "pass", Stage.REVALIDATING, user=user, note=note, sweep_id=sweep_id, passes=case.passes + 1
            )
        count = strikes(store, node, policy.window_s, also=sweep_id)
        if count >= policy.max_strikes:
            why = f"{note}; strike {count} of {policy.max_strikes} within {policy.window_s / 3600:g} h: escalated"
            return _escalated(store, case, "strike", why, user=user, sweep_id=sweep_id)
        stage = Stage.AWAITING_REPAIR if action in PHYSICAL else Stage.DRAINED
        why = f"{note}; strike {count} of {policy.max_strikes}"
        return _step(store, case, "strike", stage, user=user, note=why, sweep_id=sweep_id, passes=0, action=action)


def close_case(store: Store, node: str, stage: Stage, *, user: str, note: str, audit_id: int | None) -> Case | None:
    """End the node's open case (returned, escalated or ended); None when it had none."""
    with immediate(store.conn):
        case = store.case(node)
        if case is None:
            return None
        step = {Stage.RETURNED: "return", Stage.ESCALATED: "escalate"}.get(stage, "end")
        action = Remedy.RMA if stage is Stage.ESCALATED else case.action
        return _step(store, case, step, stage, user=user, note=note, audit_id=audit_id, action=action, close=True)


def drain_failed(store: Store, node: str, *, audit_id: int, user: str, note: str) -> Case | None:
    """A drain (or cordon) that did not take effect ends the case its intent opened (not an older one)."""
    with immediate(store.conn):
        case = store.case(node)
        if case is None:
            return None
        steps = store.case_steps(case.id)
        if not steps or steps[0].audit_id != audit_id:
            return None
        return close_case(store, node, Stage.ENDED, user=user, note=note, audit_id=audit_id)


def returned(
    store: Store, node: str, *, audit_id: int, user: str, policy: LifecyclePolicy, done: str, forced: str | None
) -> Case | None:
    """The console returned ``node`` to service (``done``: "resumed", "uncordoned"...): its case closes,
    ``returned`` after its passes, else ``ended`` saying it was forced (``forced``: the operator's reason)."""
    with immediate(store.conn):
        case = store.case(node)
        if case is None:
            return None
        if case.ready(policy):
            note = f"{done} by the console after {case.passes} passing revalidations"
            return close_case(store, node, Stage.RETURNED, user=user, note=note, audit_id=audit_id)
        note = f"{done} by the console (--force) before its revalidation passed: {forced}"
        return close_case(store, node, Stage.ENDED, user=user, note=note, audit_id=audit_id)


def _escalated(store: Store, case: Case, kind: str, why: str, *, user: str, sweep_id: int | None) -> Case:
    """The case escalated and closed: the node goes to the vendor (RMA), its passes no longer count."""
    return _step(
        store,
        case,
        kind,
        Stage.ESCALATED,
        user=user,
        note=why,
        sweep_id=sweep_id,
        passes=0,
        action=Remedy.RMA,
        close=True,
    )


def _step(
    store: Store,
    case: Case,
    step: str,
    stage: Stage,
    *,
    user: str,
    note: str,
    sweep_id: int | None = None,
    audit_id: int | None = None,
    passes: int | None = None,
    action: Remedy | None = None,
    close: bool = False,
) -> Case:
    kept = action or case.action
    with immediate(store.conn):
        store.conn.execute(
            "UPDATE cases SET stage = ?, passes = ?, strikes = strikes + ?, action = ?, closed_at = ? WHERE id = ?",
            (
                stage.value,
                case.passes if passes is None else passes,
                1 if step == "strike" else 0,
                kept.value if kept else None,
                time.time() if close else None,
                case.id,
            ),
        )
        _log(store, case.id, step, stage, user=user, note=note, sweep_id=sweep_id, audit_id=audit_id)
    found = store.case_by_id(case.id)
    assert found is not None
    return found


def _log(
    store: Store,
    case_id: int,
    step: str,
    stage: Stage,
    *,
    user: str,
    note: str,
    sweep_id: int | None,
    audit_id: int | None,
) -> None:
    store.conn.execute(
        "INSERT INTO case_steps (case_id, at, user, step, stage, note, sweep_id, audit_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (case_id, time.time(), user, step, stage.value, note, sweep_id, audit_id),
    )
