"""Acceptance records: which stack each workload was accepted on, per pool, and each rerun's outcome.

A record is one row per event and none is ever rewritten, so the history of a workload on a pool reads
in order: ``accepted`` (an operator accepted a passing run, with a reason), then after a stack change
``accepted-again`` (a rerun on the new stack passed: the new stack is accepted) or ``regressed`` (it
failed: its figures and stack are kept beside the accepted ones) or ``blocked`` (a node it ran on was
not judged healthy in that sweep: its reason names the node and why) or ``unstable`` (its runs on the new
stack passed, but their figures spread wider than the tolerance). A ``regressed`` record is also written
for a run on the accepted stack that FAILed or fell beyond tolerance of the reference figures: the figures
of the newest ``accepted`` record (an operator's, audited with a reason; ``accepted-again`` records keep
the reference they were judged against). Each record names the nodes the run
was on, with each one's stack (schema version 6). The framework probe is the built-in
workload ``framework``. An image override is the image a containerised workload runs in on one pool
instead of the cluster file's: ``rollback`` sets it back to the accepted one. Schema version 4
(``console.store.upgrade``).
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from console.store.transaction import immediate

ACCEPTED = "accepted"
ACCEPTED_AGAIN = "accepted-again"
REGRESSED = "regressed"
# A rerun on a new stack that ran on a node the same sweep judged FAIL or UNKNOWN: it says nothing about the
# stack (a fatal CPER record, not the upgrade, may be why), so it is neither accepted again nor regressed.
BLOCKED = "blocked"
# Repeat runs on a new stack that all passed, with figures spread wider than the tolerance: not accepted.
UNSTABLE = "unstable"
OUTCOMES = (ACCEPTED, ACCEPTED_AGAIN, REGRESSED, BLOCKED, UNSTABLE)
# The outcomes that make their stack the accepted one.
ACCEPTING = (ACCEPTED, ACCEPTED_AGAIN)


def json_figure(value: float) -> float | str:
    """A figure for strict JSON: a NaN or an infinity as the text Python prints for it (``"nan"``, ``"inf"``),
    never a bare ``NaN`` token, which a strict JSON reader refuses. A regressed run's NaN is what an operator
    must see, so it is written as text rather than dropped."""
    return value if math.isfinite(value) else str(value)


def json_figures(figures: Mapping[str, float]) -> dict[str, float | str]:
    """``json_figure`` of each figure."""
    return {name: json_figure(value) for name, value in figures.items()}


def read_figures(text: str) -> dict[str, float]:
    """Figures as ``json_figures`` wrote them, each a float again (``"nan"`` a NaN)."""
    return {str(name): float(value) for name, value in json.loads(text).items()}


@dataclass(frozen=True)
class AcceptanceRecord:
    """One event of a workload on a pool: the stack it ran on, its figures, the sweep, who and why."""

    id: int
    workload: str
    pool: str
    outcome: str
    stack: dict[str, str]
    figures: dict[str, float]
    sweep_id: int | None
    at: float
    user: str
    reason: str
    audit_id: int | None
    # The nodes the run was on, each with its stack as the workload saw it: which stacks the run covers
    # (``console.actions.acceptance.uncovered``). Empty in a record of schema version 5 or older.
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        """The record as a JSON-ready dict (a non-finite figure as text: ``json_figure``)."""
        return {**self.__dict__, "figures": json_figures(self.figures)}


def _record(row: sqlite3.Row) -> AcceptanceRecord:
    return AcceptanceRecord(
        id=row["id"],
        workload=row["workload"],
        pool=row["pool"],
        outcome=row["outcome"],
        stack=json.loads(row["stack"]),
        figures=read_figures(row["figures"]),
        sweep_id=row["sweep_id"],
        at=row["at"],
        user=row["user"],
        reason=row["reason"],
        audit_id=row["audit_id"],
        nodes=json.loads(row["nodes"]),
    )


class AcceptanceLedger:
    """The acceptance part of ``Store`` (it needs only the connection)."""

    conn: sqlite3.Connection

    def record_acceptance(
        self,
        workload: str,
        pool: str,
        outcome: str,
        *,
        stack: dict[str, str],
        figures: dict[str, float],
        sweep_id: int | None,
        user: str,
        reason: str = "",
        audit_id: int | None = None,
        nodes: dict[str, dict[str, str]] | None = None,
    ) -> int:
        """Add one event; returns its id. ``nodes``: the nodes the run was on, each with its stack."""
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown acceptance outcome {outcome!r}")
        with immediate(self.conn) as conn:
            cur = conn.execute(
                "INSERT INTO acceptances (workload, pool, outcome, stack, figures, sweep_id, at, user, reason,"
                " audit_id, nodes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    workload,
                    pool,
                    outcome,
                    json.dumps(stack, sort_keys=True),
                    json.dumps(json_figures(figures), sort_keys=True),
                    sweep_id,
                    time.time(),
                    user,
                    reason,
                    audit_id,
                    json.dumps(nodes or {}, sort_keys=True),
                ),
            )
            return int(cur.lastrowid or 0)

    def acceptance_history(self, workload: str | None = None, pool: str | None = None) -> list[AcceptanceRecord]:
        """Every event, oldest first, of one workload and/or pool (all when None)."""
        rows = self.conn.execute(
            "SELECT * FROM acceptances WHERE (? IS NULL OR workload = ?) AND (? IS NULL OR pool = ?) ORDER BY id",
            (workload, workload, pool, pool),
        ).fetchall()
        return [_record(r) for r in rows]

    def pool_stacks(self, nodes: list[str]) -> dict[str, dict[str, str]]:
        """Each node's newest recorded stack (from any sweep or drift check that read it)."""
        if not nodes:
            return {}
        marks = ",".join("?" * len(nodes))
        rows = self.conn.execute(
            f"SELECT node, stack FROM node_verdicts WHERE node IN ({marks}) AND stack != '{{}}' ORDER BY sweep_id DESC",
            nodes,
        ).fetchall()
        stacks: dict[str, dict[str, str]] = {}
        for row in rows:
            stacks.setdefault(row["node"], json.loads(row["stack"]))
        return stacks

    def set_image_override(self, workload: str, pool: str, image: str, *, user: str, audit_id: int | None) -> None:
        """Run ``workload`` on ``pool`` in ``image`` from now on (replacing an earlier override)."""
        with immediate(self.conn) as conn:
            conn.execute(
                "INSERT OR REPLACE INTO image_overrides (workload, pool, image, set_at, set_by, audit_id)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (workload, pool, image, time.time(), user, audit_id),
            )

    def image_overrides(self) -> dict[tuple[str, str], str]:
        """Every image ``rollback`` set: (workload, pool) -> image."""
        rows = self.conn.execute("SELECT workload, pool, image FROM image_overrides").fetchall()
        return {(str(r["workload"]), str(r["pool"])): str(r["image"]) for r in rows}

    def image_override(self, workload: str, pool: str) -> str | None:
        """The image ``workload`` runs in on ``pool`` when ``rollback`` set one; None: the cluster file's."""
        row = self.conn.execute(
            "SELECT image FROM image_overrides WHERE workload = ? AND pool = ?", (workload, pool)
        ).fetchone()
        return str(row["image"]) if row else None

    def open_audit_entries(self, action: str) -> list[sqlite3.Row]:
        """Audit entries of ``action`` whose outcome is not written yet, oldest first (``AuditLog.shown_outcome``
        tells a run still going from one whose process stopped)."""
        return list(
            self.conn.execute("SELECT * FROM audit WHERE action = ? AND finished_at IS NULL ORDER BY id", (action,))
        )

    def runs_of(self, probes: list[str], nodes: list[str], limit: int) -> list[tuple[int, float, list[str]]]:
        """The newest ``limit`` finished sweeps that ran one of ``probes`` on one of ``nodes``, newest first:
        (sweep id, when the sweep finished, the nodes it ran on). Every run is kept (trends read them)."""
        if not probes or not nodes:
            return []
        probe_marks, node_marks = ",".join("?" * len(probes)), ",".join("?" * len(nodes))
        rows = self.conn.execute(
            f"SELECT r.sweep_id AS sweep_id, s.finished_at AS finished_at, group_concat(DISTINCT r.node) AS nodes"
            f" FROM probe_runs r JOIN sweeps s ON s.id = r.sweep_id"
            f" WHERE r.probe IN ({probe_marks}) AND r.node IN ({node_marks}) AND s.finished_at IS NOT NULL"
            f" GROUP BY r.sweep_id ORDER BY r.sweep_id DESC LIMIT ?",
            (*probes, *nodes, limit),
        ).fetchall()
        return [(int(r["sweep_id"]), float(r["finished_at"]), str(r["nodes"]).split(",")) for r in rows]

    def workload_sweeps(self, nodes: list[str], prefix: str, upto: int, limit: int) -> list[int]:
        """The newest ``limit`` finished sweeps up to ``upto`` with a finding whose check id starts with ``prefix``
        on one of ``nodes``, newest first (read from the findings: a run leaves them whatever its probe kept)."""
        if not nodes:
            return []
        marks = ",".join("?" * len(nodes))
        # A range on check_id rather than substr(): the (node, check_id, sweep_id) index then reads only the
        # workload's findings, not every finding the pool's nodes ever had.
        after = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self.conn.execute(
            f"SELECT DISTINCT f.sweep_id AS sweep_id FROM findings f JOIN sweeps s ON s.id = f.sweep_id"
            f" WHERE f.sweep_id <= ? AND f.node IN ({marks}) AND f.check_id >= ? AND f.check_id < ?"
            " AND s.finished_at IS NOT NULL ORDER BY f.sweep_id DESC LIMIT ?",
            (upto, *nodes, prefix, after, limit),
        ).fetchall()
        return [int(r["sweep_id"]) for r in rows]

    def check_readings(self, sweep_id: int, nodes: list[str], prefix: str) -> list[tuple[str, str, str, object]]:
        """(node, check id, status, observed) of the findings of ``sweep_id`` on ``nodes`` whose check id starts
        with ``prefix`` (one query, read without building whole findings: trends read many sweeps)."""
        if not nodes:
            return []
        marks = ",".join("?" * len(nodes))
        rows = self.conn.execute(
            f"SELECT node, check_id, status, evidence FROM findings WHERE sweep_id = ? AND node IN ({marks})"
            " AND substr(check_id, 1, ?) = ? ORDER BY id",
            (sweep_id, *nodes, len(prefix), prefix),
        ).fetchall()
        return [(r["node"], r["check_id"], r["status"], json.loads(r["evidence"]).get("observed")) for r in rows]
