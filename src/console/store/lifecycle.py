"""The remediation lifecycle: one case per node, from the console's drain to its return to service.

A case opens when the console drains a node (``drains``), with the action the node's findings call
for. Then, each step audited and kept in ``case_steps``:

    drained -> awaiting-repair -> revalidating -> returned
                     ^                  |
                     +---- a strike ----+--> escalated (strikes within the window: the vendor's RMA)

- ``drained``: the console holds the node; a physical action (inspect, rma) makes it
  ``awaiting-repair`` at once, as the technician has to act before anything else helps.
- ``repaired``: someone says what was done (who and what are kept); the case is ``revalidating``.
- each revalidation sweep of the node is a pass or a strike. A strike sends the case back to
  ``awaiting-repair`` with the new finding's action; ``max_strikes`` strikes of the node within
  ``window``, across its cases, escalate it (a node that keeps coming back is a lemon). A sweep that
  judged nothing (UNKNOWN) is neither.
- the node returns (the console's resume) only after ``passes_required`` passes in a row: twice by
  default, the "accepted twice" rule. A forced resume ends the case as ``ended``, saying so.
- a resume or re-drain outside the console ends the case too (``ended``): the console's record stops
  cleanly, it never fights an operator.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from enum import StrEnum

from console.inventory.model import LifecyclePolicy as Policy
from console.model.findings import Remedy
from console.store.transaction import immediate


class Stage(StrEnum):
    """Where a case stands."""

    # watch found the node FAIL and could not drain it (the cap, a refusal): it stays in service, its
    # drain proposed for an operator. Approved, the drain moves the case on; withdrawn or rejected, it ends.
    PROPOSED = "proposed"
    DRAINED = "drained"
    AWAITING_REPAIR = "awaiting-repair"
    REVALIDATING = "revalidating"
    RETURNED = "returned"
    ESCALATED = "escalated"
    ENDED = "ended"

    @property
    def closed(self) -> bool:
        """True once the case is over."""
        return self in (Stage.RETURNED, Stage.ESCALATED, Stage.ENDED)


PHYSICAL = frozenset({Remedy.INSPECT, Remedy.RMA})


@dataclass(frozen=True)
class Case:
    """One node's way from a drain back to service (or to an RMA)."""

    id: int
    node: str
    stage: Stage
    action: Remedy | None
    opened_at: float
    opened_by: str
    sweep_id: int | None
    findings: list[str]
    passes: int
    strikes: int
    closed_at: float | None

    def ready(self, policy: Policy) -> bool:
        """True when the revalidations passed as often as the policy asks: the node may return."""
        return self.stage is Stage.REVALIDATING and self.passes >= policy.passes_required

    def next_step(self, policy: Policy) -> str:
        """What the operator does next, in one line."""
        if self.stage.closed:
            return "nothing: the case is closed"
        if self.stage is Stage.PROPOSED:
            return "approve the proposed drain (watch --approve), or reject it"
        if self.stage is Stage.DRAINED:
            return f"{self.action.value if self.action else 'look at the findings'}, then: repaired"
        if self.stage is Stage.AWAITING_REPAIR:
            return f"{self.action.value if self.action else 'repair'} (physical), then: repaired"
        if self.ready(policy):
            return "resume: the revalidation passed"
        left = policy.passes_required - self.passes
        return f"revalidate ({left} more pass{'es' if left > 1 else ''} at {policy.level})"


@dataclass(frozen=True)
class CaseStep:
    """One step of a case: who did what, and where it left the case."""

    case_id: int
    at: float
    user: str
    step: str
    stage: Stage
    note: str
    sweep_id: int | None
    audit_id: int | None


def _case(row: sqlite3.Row) -> Case:
    return Case(
        id=row["id"],
        node=row["node"],
        stage=Stage(row["stage"]),
        action=Remedy(row["action"]) if row["action"] else None,
        opened_at=row["opened_at"],
        opened_by=row["opened_by"],
        sweep_id=row["sweep_id"],
        findings=json.loads(row["findings"]),
        passes=row["passes"],
        strikes=row["strikes"],
        closed_at=row["closed_at"],
    )


class CaseError(Exception):
    """A step the case's stage does not allow; the message says what would."""


class LifecycleLedger:
    """The cases part of ``Store`` (it needs only the connection)."""

    conn: sqlite3.Connection

    def open_case(
        self,
        node: str,
        *,
        user: str,
        action: Remedy | None,
        sweep_id: int | None,
        findings: list[str],
        audit_id: int | None,
        proposed: bool = False,
    ) -> Case:
        """The node's case for a drain the console is making: its open case goes on, else a new one.

        ``proposed``: the drain was not carried out (``Stage.PROPOSED``); an open case stays as it is.
        """
        stage = Stage.AWAITING_REPAIR if action in PHYSICAL else Stage.DRAINED
        stage = Stage.PROPOSED if proposed else stage
        current = self.case(node)
        if current is not None and proposed:
            return current
        if current is not None:
            note = f"drained again ({action.value if action else 'no action'})"
            return self._step(
                current, "drain", stage, user=user, note=note, sweep_id=sweep_id, audit_id=audit_id, action=action
            )
        with immediate(self.conn):
            cur = self.conn.execute(
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
            self._log(
                case_id, "drain", stage, user=user, note=", ".join(findings[:5]), sweep_id=sweep_id, audit_id=audit_id
            )
        found = self.case_by_id(case_id)
        assert found is not None
        return found

    def case(self, node: str) -> Case | None:
        """The node's open case, if any."""
        row = self.conn.execute(
            "SELECT * FROM cases WHERE node = ? AND closed_at IS NULL ORDER BY id DESC LIMIT 1", (node,)
        ).fetchone()
        return _case(row) if row else None

    def case_by_id(self, case_id: int) -> Case | None:
        """One case by its number."""
        row = self.conn.execute("SELECT * FROM cases WHERE id = ?", (case_id,)).fetchone()
        return _case(row) if row else None

    def cases(self, node: str | None = None, *, open_only: bool = False) -> list[Case]:
        """Cases, oldest first (of ``node``; the open ones only with ``open_only``)."""
        query, args = "SELECT * FROM cases WHERE 1", []
        if node is not None:
            query += " AND node = ?"
            args.append(node)
        if open_only:
            query += " AND closed_at IS NULL"
        return [_case(row) for row in self.conn.execute(query + " ORDER BY id", args)]

    def case_steps(self, case_id: int) -> list[CaseStep]:
        """A case's steps, oldest first."""
        rows = self.conn.execute("SELECT * FROM case_steps WHERE case_id = ? ORDER BY id", (case_id,))
        return [
            CaseStep(
                r["case_id"], r["at"], r["user"], r["step"], Stage(r["stage"]), r["note"], r["sweep_id"], r["audit_id"]
            )
            for r in rows
        ]

    def acknowledge_repair(self, node: str, *, user: str, note: str, audit_id: int | None) -> Case:
        """Someone did what the case called for: it is revalidated next (its passes start again)."""
        case = self._open_case(node)
        if case.stage not in (Stage.DRAINED, Stage.AWAITING_REPAIR):
            raise CaseError(f"case #{case.id} of {node} is {case.stage.value}: nothing to acknowledge")
        return self._step(case, "repaired", Stage.REVALIDATING, user=user, note=note, audit_id=audit_id, passes=0)

    def record_revalidation(
        self,
        node: str,
        *,
        passed: bool | None,
        sweep_id: int,
        action: Remedy | None,
        user: str,
        policy: Policy,
        note: str,
    ) -> Case:
        """A revalidation sweep's outcome: a pass, a strike, or (``passed`` None: nothing judged) neither."""
        case = self._open_case(node)
        if case.stage is not Stage.REVALIDATING:
            raise CaseError(
                f"case #{case.id} of {node} is {case.stage.value}: acknowledge the repair ('repaired') first"
            )
        if passed is None:
            return self._step(case, "unjudged", case.stage, user=user, note=note, sweep_id=sweep_id)
        if passed:
            uncounted = self._pass_uncounted(case, sweep_id, policy)
            if uncounted:
                why = f"{note}; not counted: {uncounted}"
                return self._step(case, "pass-uncounted", case.stage, user=user, note=why, sweep_id=sweep_id)
            return self._step(
                case, "pass", Stage.REVALIDATING, user=user, note=note, sweep_id=sweep_id, passes=case.passes + 1
            )
        strikes = self.strikes(node, policy.window_s) + 1
        if strikes >= policy.max_strikes:
            why = f"{note}; strike {strikes} of {policy.max_strikes} within {policy.window_s / 3600:g} h: escalated"
            return self._step(
                case,
                "strike",
                Stage.ESCALATED,
                user=user,
                note=why,
                sweep_id=sweep_id,
                passes=0,
                action=Remedy.RMA,
                close=True,
            )
        stage = Stage.AWAITING_REPAIR if action in PHYSICAL else Stage.DRAINED
        why = f"{note}; strike {strikes} of {policy.max_strikes}"
        return self._step(case, "strike", stage, user=user, note=why, sweep_id=sweep_id, passes=0, action=action)

    def _pass_uncounted(self, case: Case, sweep_id: int, policy: Policy) -> str:
        """Why a passing sweep is no pass of ``case`` ("" when it counts).

        A pass comes from a sweep that started after the repair was acknowledged, after the previous
        counted pass's sweep had finished (two sweeps at once are one look at the node), and at least
        ``pass_spacing_min`` after that sweep started.
        """
        this = self.conn.execute("SELECT started_at FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
        if this is None:
            return ""  # a sweep recorded elsewhere: nothing here to time it by
        steps = self.case_steps(case.id)
        repaired = max((s.at for s in steps if s.step == "repaired"), default=case.opened_at)
        if this["started_at"] < repaired:
            return f"sweep {sweep_id} started before the repair was acknowledged"
        counted = [s for s in steps if s.step == "pass" and s.at >= repaired and s.sweep_id is not None]
        if not counted:
            return ""
        last = self.conn.execute(
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

    def strikes(self, node: str, window_s: float, now: float | None = None) -> int:
        """The node's strikes within the window before ``now`` (default: the time now), whichever case."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM case_steps s JOIN cases c ON c.id = s.case_id"
            " WHERE c.node = ? AND s.step = 'strike' AND s.at >= ?",
            (node, (time.time() if now is None else now) - window_s),
        ).fetchone()
        return int(row[0])

    def close_case(self, node: str, stage: Stage, *, user: str, note: str, audit_id: int | None) -> Case | None:
        """End the node's open case (returned, escalated or ended); None when it had none."""
        case = self.case(node)
        if case is None:
            return None
        step = {Stage.RETURNED: "return", Stage.ESCALATED: "escalate"}.get(stage, "end")
        action = Remedy.RMA if stage is Stage.ESCALATED else case.action
        return self._step(case, step, stage, user=user, note=note, audit_id=audit_id, action=action, close=True)

    def _open_case(self, node: str) -> Case:
        case = self.case(node)
        if case is None:
            raise CaseError(f"{node} has no open case: the console opens one when it drains a node")
        return case

    def _step(
        self,
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
        with immediate(self.conn):
            self.conn.execute(
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
            self._log(case.id, step, stage, user=user, note=note, sweep_id=sweep_id, audit_id=audit_id)
        found = self.case_by_id(case.id)
        assert found is not None
        return found

    def _log(
        self, case_id: int, step: str, stage: Stage, *, user: str, note: str, sweep_id: int | None, audit_id: int | None
    ) -> None:
        self.conn.execute(
            "INSERT INTO case_steps (case_id, at, user, step, stage, note, sweep_id, audit_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (case_id, time.time(), user, step, stage.value, note, sweep_id, audit_id),
        )
