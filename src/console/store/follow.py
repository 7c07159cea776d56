"""What a console following the history database reads: node verdicts stored since it last looked.

Other processes (``watch`` rounds, ``revalidate``, a headless ``sweep``, another console) write verdicts
into the same database while a console is open. The console keeps a watermark: the highest
``node_verdicts`` rowid it has read. Rowids only grow here (verdicts are never deleted, and the
``INSERT OR REPLACE`` that re-judges a node in the same sweep gives the row a new, higher rowid), so
``rowid > watermark`` is every verdict stored or re-stored since, read by a seek on the rowid: a poll
that finds nothing new costs one B-tree descent, whatever the size of the history (bench/follow.py:
under 20 us at 200 sweeps of 1,000 nodes).

Verdicts of partial sweeps (``drift``'s stack and firmware subset: a level with ``:``) are left out, as
the console's opening sweep leaves them out: they judged a few families, not the node.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from console.store.db import Store


@dataclass(frozen=True)
class StoredVerdict:
    """Where one stored verdict of a node came from: its sweep, the command that ran it, when it was stored."""

    rowid: int
    sweep_id: int
    node: str
    status: str
    level: str
    origin: str  # "" for sweeps stored before origins were recorded
    stored_at: float

    def newer_than(self, other: StoredVerdict | None) -> bool:
        """The newer of two verdicts of a node is the one of the later sweep (sweep ids grow), as in the
        node's history and its last active check; within a sweep, the one stored last (a re-judgement)."""
        return other is None or (self.sweep_id, self.rowid) > (other.sweep_id, other.rowid)

    def where(self) -> str:
        """``sweep 14 by watch``: which sweep, and which command ran it when that is known."""
        return f"sweep {self.sweep_id} by {self.origin}" if self.origin else f"sweep {self.sweep_id}"


_COLUMNS = "SELECT v.rowid AS rowid, v.sweep_id, v.node, v.status, v.updated_at, s.level, s.origin"
_WHOLE = " FROM node_verdicts v JOIN sweeps s ON s.id = v.sweep_id WHERE instr(s.level, ':') = 0"


def _stored(row: sqlite3.Row) -> StoredVerdict:
    return StoredVerdict(
        rowid=int(row["rowid"]),
        sweep_id=int(row["sweep_id"]),
        node=str(row["node"]),
        status=str(row["status"]),
        level=str(row["level"]),
        origin=str(row["origin"] or ""),
        stored_at=float(row["updated_at"]),
    )


def watermark(store: Store) -> int:
    """The highest verdict rowid stored now (0 for an empty history)."""
    row = store.conn.execute("SELECT max(rowid) FROM node_verdicts").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def newest_verdicts(store: Store, nodes: list[str]) -> dict[str, StoredVerdict]:
    """Each of ``nodes``' newest stored verdict (the console's first look; later looks read ``verdicts_since``).

    One indexed descent per node (``node_verdicts_node``): 1,000 nodes take 20-45 ms whatever the length
    of the history, where one grouped scan of every verdict took 350 ms at 200 sweeps (bench/follow.py).
    """
    newest: dict[str, StoredVerdict] = {}
    query = f"{_COLUMNS}{_WHOLE} AND v.node = ? ORDER BY v.sweep_id DESC LIMIT 1"
    for node in nodes:
        row = store.conn.execute(query, (node,)).fetchone()
        if row is not None:
            newest[node] = _stored(row)
    return newest


def verdicts_since(store: Store, after: int) -> list[StoredVerdict]:
    """Every verdict stored (or re-stored) with a rowid above ``after``, oldest first."""
    rows = store.conn.execute(f"{_COLUMNS}{_WHOLE} AND v.rowid > ? ORDER BY v.rowid", (after,))
    return [_stored(r) for r in rows]


def node_totals(store: Store, sweep_id: int, node: str) -> tuple[int, dict[str, int]]:
    """How many findings the node's verdict in ``sweep_id`` had (PASS counts included), and the ids of
    its stored probe outputs (probe -> the newest run's id)."""
    counted = store.conn.execute(
        "SELECT count(*) FROM findings WHERE sweep_id = ? AND node = ?", (sweep_id, node)
    ).fetchone()[0]
    total = int(counted) + sum(store.passed_counts(sweep_id, node).values())
    runs = {
        str(r["probe"]): int(r["id"])
        for r in store.conn.execute(
            "SELECT id, probe FROM probe_runs WHERE sweep_id = ? AND node = ? ORDER BY id", (sweep_id, node)
        )
    }
    return total, runs


def stored_row(store: Store, stored: StoredVerdict) -> sqlite3.Row | None:
    """The ``node_verdicts`` row ``stored`` points at (None if it is gone)."""
    row: sqlite3.Row | None = store.conn.execute(
        "SELECT * FROM node_verdicts WHERE sweep_id = ? AND node = ?", (stored.sweep_id, stored.node)
    ).fetchone()
    return row
