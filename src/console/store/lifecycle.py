"""The remediation cases as the history database keeps them: one case per node, from the console's drain
to its return to service, and its steps (``cases``, ``case_steps``).

These are the records and their readers only. Every transition (open, repaired, a pass or a strike,
escalate, return, end), its guards and its audit are ``console.remediation``'s (``cases.py``,
``guards.py``, ``strikes.py``): one state machine, in one place. The stages:

    proposed -> drained -> awaiting-repair -> revalidating -> returned
                                 ^                  |
                                 +---- a strike ----+--> escalated (strikes within the window: the vendor's RMA)
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from enum import StrEnum

from console.inventory.model import LifecyclePolicy as Policy
from console.model.findings import Remedy


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


class LifecycleLedger:
    """The cases part of ``Store``, read only: every transition is ``console.remediation.cases``'s."""

    conn: sqlite3.Connection

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
