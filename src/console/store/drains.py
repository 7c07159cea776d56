"""The drains the console made: node, reason, who, when, and the sweep and findings behind each.

What the console may resume without ``--force`` is what this ledger holds open, not whatever Slurm
reason happens to start with the console's tag (anyone can type that). A record is opened with the
drain's intent, before ``scontrol`` runs, so a console killed mid-drain still knows the drain may be
its own; it ends when the console resumes or undrains the node, when the drain fails, or when the
console next reads Slurm and the node is no longer drained with that reason (resumed or re-drained
by someone else). A record whose action is still in progress is not judged by what Slurm says yet.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from console.store.owner import ProcessOwner
from console.store.transaction import immediate

_BLAMED = {"FAIL": 0, "UNKNOWN": 1, "WARN": 2}  # findings that can be behind a drain, most serious first


@dataclass(frozen=True)
class DrainRecord:
    """One drain by the console; ``ended_at`` None while the console holds the node drained."""

    id: int
    node: str
    reason: str
    user: str
    at: float
    sweep_id: int | None
    findings: list[str]
    audit_id: int | None
    ended_at: float | None
    ended_by: str | None


def _record(row: sqlite3.Row) -> DrainRecord:
    return DrainRecord(
        id=row["id"],
        node=row["node"],
        reason=row["reason"],
        user=row["user"],
        at=row["at"],
        sweep_id=row["sweep_id"],
        findings=json.loads(row["findings"]),
        audit_id=row["audit_id"],
        ended_at=row["ended_at"],
        ended_by=row["ended_by"],
    )


class DrainLedger:
    """The drains part of ``Store`` (it needs only the connection)."""

    conn: sqlite3.Connection

    def record_drains(
        self, nodes: Iterable[str], reason: str, *, user: str, sweep_id: int | None, audit_id: int | None
    ) -> list[int]:
        """Open a record per node for a drain about to run with ``reason`` (as Slurm will show it).

        The findings are the node's FAIL, UNKNOWN and WARN check ids in ``sweep_id``, when this store
        has that sweep. An older open record of the same node is ended: this drain replaces it.
        """
        ids = []
        with immediate(self.conn) as conn:
            for node in nodes:
                rows = conn.execute(
                    "SELECT check_id, status FROM findings WHERE sweep_id = ? AND node = ? ORDER BY id",
                    (sweep_id, node),
                ).fetchall()
                blamed = sorted((r for r in rows if r["status"] in _BLAMED), key=lambda r: _BLAMED[r["status"]])
                findings = list(dict.fromkeys(r["check_id"] for r in blamed))
                cur = conn.execute(
                    "INSERT INTO drains (node, reason, user, at, sweep_id, findings, audit_id)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (node, reason, user, time.time(), sweep_id, json.dumps(findings), audit_id),
                )
                new = int(cur.lastrowid or 0)
                conn.execute(
                    "UPDATE drains SET ended_at = ?, ended_by = ? WHERE node = ? AND ended_at IS NULL AND id != ?",
                    (time.time(), f"replaced by the console's drain #{new}", node, new),
                )
                ids.append(new)
        return ids

    def end_drains(self, nodes: Iterable[str], why: str) -> None:
        """End the open records of ``nodes``, saying ``why``."""
        with immediate(self.conn) as conn:
            conn.executemany(
                "UPDATE drains SET ended_at = ?, ended_by = ? WHERE node = ? AND ended_at IS NULL",
                [(time.time(), why, node) for node in nodes],
            )

    def drains(self, node: str | None = None, *, open_only: bool = False) -> list[DrainRecord]:
        """Drain records, oldest first (of ``node``; only those the console still holds with ``open_only``)."""
        query = "SELECT * FROM drains WHERE 1"
        args: list[object] = []
        if node is not None:
            query += " AND node = ?"
            args.append(node)
        if open_only:
            query += " AND ended_at IS NULL"
        return [_record(row) for row in self.conn.execute(query + " ORDER BY id", args)]

    def reconcile_drains(
        self,
        seen: Mapping[str, tuple[str | None, str]],
        *,
        released: str = "no longer drained in Slurm (resumed outside the console)",
        again: str = "drained again outside the console with another reason",
    ) -> list[DrainRecord]:
        """End the open records that the scheduler, as just read, no longer bears out; returns them as ended.

        ``seen``: node -> (the reason it is held out with, else None; its state as shown). Nodes the
        scheduler did not list are left alone, and so are nodes an audited action is still acting on
        (the console's own drain being made, or its resume, whose record it ends itself). ``released``
        and ``again`` say, in the scheduler's words, why a record ended.
        """
        ended = []
        busy: set[str] | None = None
        for record in self.drains(open_only=True):
            if record.node not in seen or seen[record.node][0] == record.reason:
                continue
            busy = self._busy_nodes() if busy is None else busy
            if record.node in busy:
                continue
            drained_with, state = seen[record.node]
            why = f"{released}, seen {state}" if drained_with is None else f"{again}: {drained_with}"
            now = time.time()
            self.conn.execute(
                "UPDATE drains SET ended_at = ?, ended_by = ? WHERE id = ? AND ended_at IS NULL", (now, why, record.id)
            )
            ended.append(replace(record, ended_at=now, ended_by=why))
        return ended

    def _busy_nodes(self) -> set[str]:
        """Targets of audited actions with only their intent written whose process still runs (or cannot be
        checked from here)."""
        busy: set[str] = set()
        for row in self.conn.execute("SELECT targets, owner FROM audit WHERE finished_at IS NULL"):
            owner = ProcessOwner.from_text(row["owner"])
            if owner is not None and owner.alive() is not False:
                busy.update(json.loads(row["targets"]))
        return busy
