"""What ``watch`` keeps between rounds: the actions it proposed (approve-to-run) and its circuit breaker.

A proposal is a drain or a resume that ``watch`` would have carried out with ``--auto``: it stays open
until an operator approves it (``watch --approve``) or a round finds it no longer applies. The breaker
is one row of state: tripped (when, why) or clear; while tripped every automated action waits, and only
an operator clears it. Both changes are audited by the callers (``console.actions.watch``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass

from console.store.transaction import immediate

_BREAKER_KEY = "watch.breaker"


@dataclass(frozen=True)
class Proposal:
    """One action ``watch`` proposed; ``decided_at`` None while it waits for an operator."""

    id: int
    at: float
    kind: str
    node: str
    sweep_id: int | None
    reason: str
    decided_at: float | None
    decided_by: str | None
    outcome: str | None


@dataclass(frozen=True)
class Breaker:
    """The breaker's state: tripped with why, or clear (``tripped_at`` None)."""

    tripped_at: float | None = None
    why: str = ""

    @property
    def tripped(self) -> bool:
        """True while automation is paused."""
        return self.tripped_at is not None


def _proposal(row: sqlite3.Row) -> Proposal:
    return Proposal(
        row["id"],
        row["at"],
        row["kind"],
        row["node"],
        row["sweep_id"],
        row["reason"],
        row["decided_at"],
        row["decided_by"],
        row["outcome"],
    )


class WatchLedger:
    """Mixed into ``Store``: the ``watch_proposals`` table and the breaker's row in ``meta``."""

    conn: sqlite3.Connection

    def propose(self, kind: str, node: str, *, sweep_id: int | None, reason: str) -> Proposal:
        """Record a proposal, or return the open one of the same kind for the node (one at a time)."""
        with immediate(self.conn):
            row = self.conn.execute(
                "SELECT * FROM watch_proposals WHERE kind = ? AND node = ? AND decided_at IS NULL", (kind, node)
            ).fetchone()
            if row is None:
                cur = self.conn.execute(
                    "INSERT INTO watch_proposals (at, kind, node, sweep_id, reason) VALUES (?, ?, ?, ?, ?)",
                    (time.time(), kind, node, sweep_id, reason),
                )
                row = self.conn.execute("SELECT * FROM watch_proposals WHERE id = ?", (cur.lastrowid,)).fetchone()
        return _proposal(row)

    def proposals(self, *, open_only: bool = True) -> list[Proposal]:
        """Proposals, oldest first (only those waiting for an operator by default)."""
        where = " WHERE decided_at IS NULL" if open_only else ""
        return [_proposal(r) for r in self.conn.execute(f"SELECT * FROM watch_proposals{where} ORDER BY id")]

    def decide_proposal(self, proposal_id: int, *, user: str, outcome: str) -> None:
        """Close a proposal: approved and carried out (``outcome`` says how it went) or withdrawn."""
        with immediate(self.conn):
            self.conn.execute(
                "UPDATE watch_proposals SET decided_at = ?, decided_by = ?, outcome = ?"
                " WHERE id = ? AND decided_at IS NULL",
                (time.time(), user, outcome, proposal_id),
            )

    def breaker(self) -> Breaker:
        """The breaker's state now."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (_BREAKER_KEY,)).fetchone()
        if row is None:
            return Breaker()
        data = json.loads(row[0])
        return Breaker(data.get("tripped_at"), data.get("why", ""))

    def set_breaker(self, breaker: Breaker) -> None:
        """Trip (``breaker.tripped``) or clear the breaker."""
        with immediate(self.conn):
            self.conn.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                (_BREAKER_KEY, json.dumps({"tripped_at": breaker.tripped_at, "why": breaker.why})),
            )
