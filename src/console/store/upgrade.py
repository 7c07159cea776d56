"""Schema versions 2 to 9, and the clean-up every opening of the history database does.

Version 2 records who owns a sweep or an audited action (``owner``: see ``console.store.owner``),
when an audited action finished (``audit.finished_at``: NULL while only its intent is written) and
the drains the console made (``drains``). Version 3 adds the remediation lifecycle's cases and their
steps (``console.store.lifecycle``) and ``node_verdicts.passed``: the PASS findings of a node judged on
the node (``sweep --via-slurm``), counted per check (JSON ``{check id: count}``) instead of kept one row
each. Version 4 adds ``watch``'s proposals (``console.store.watch``) and the workloads' acceptance records
and image overrides (``console.store.acceptance``). Version 5 adds ``sweeps.origin``: which command ran
the sweep (``sweep``, ``watch``, ``revalidate``, ``console``...), so a console following the history
database says where a verdict it did not make came from (``console.store.follow``), and an index of
each node's verdicts by sweep. Version 6 adds ``acceptances.nodes``: the nodes each run was on, with
each one's stack (JSON ``{node: stack}``; ``{}`` in the records written before). Version 7 adds
``node_verdicts.cut``: what cut the node's check short ("deadline exceeded", "sweep cancelled"; empty when
it ran to its end), so that a cut check is never a node's last active check (``console.sweep.freshness``);
the verdicts an older console wrote for a node its sweep's deadline or cancel left unchecked get theirs
from their reason. Version 8 adds ``leases``: which process may act on the nodes of this database
(``console.remediation.lease``: one actor at a time). Version 9 gives the database to one cluster:
``meta.cluster``, written by ``console.store.cluster.claim`` when the cluster that wrote the database's
sweeps first opens it (a database of version 7 or older is upgraded in place, and given to its cluster
then, not here: the upgrade does not know which cluster file is asking). An older database is
upgraded in place the first time a newer console opens it; audit rows of version 1 were all written
after the fact, so each is finished when it was written. Fresh databases take the same path.

A sweep left "running" by a process that is gone (SIGKILL, a crash, power loss) is marked
"interrupted" whenever the database is opened; a sweep whose process still runs, or whose process
cannot be checked from this host, is left alone.
"""

from __future__ import annotations

import json
import sqlite3

from console.store.owner import ProcessOwner

SCHEMA_VERSION = 9
INTERRUPTED = "interrupted"

_DRAINS = """
CREATE TABLE IF NOT EXISTS drains (
    id INTEGER PRIMARY KEY,
    node TEXT NOT NULL,
    reason TEXT NOT NULL,
    user TEXT NOT NULL,
    at REAL NOT NULL,
    sweep_id INTEGER,
    findings TEXT NOT NULL DEFAULT '[]',
    audit_id INTEGER REFERENCES audit(id),
    ended_at REAL,
    ended_by TEXT
)"""
# Version 3: the remediation lifecycle (``console.store.lifecycle``).
_CASES = (
    """CREATE TABLE IF NOT EXISTS cases (
    id INTEGER PRIMARY KEY,
    node TEXT NOT NULL,
    stage TEXT NOT NULL,
    action TEXT,
    opened_at REAL NOT NULL,
    opened_by TEXT NOT NULL,
    sweep_id INTEGER,
    findings TEXT NOT NULL DEFAULT '[]',
    passes INTEGER NOT NULL DEFAULT 0,
    strikes INTEGER NOT NULL DEFAULT 0,
    closed_at REAL
)""",
    """CREATE TABLE IF NOT EXISTS case_steps (
    id INTEGER PRIMARY KEY,
    case_id INTEGER NOT NULL REFERENCES cases(id),
    at REAL NOT NULL,
    user TEXT NOT NULL,
    step TEXT NOT NULL,
    stage TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    sweep_id INTEGER,
    audit_id INTEGER REFERENCES audit(id)
)""",
    "CREATE INDEX IF NOT EXISTS cases_open ON cases(node) WHERE closed_at IS NULL",
    "CREATE INDEX IF NOT EXISTS case_steps_case ON case_steps(case_id)",
)
# Version 4: what ``watch`` proposed for an operator to approve (``console.store.watch``).
_WATCH = """CREATE TABLE IF NOT EXISTS watch_proposals (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    kind TEXT NOT NULL,
    node TEXT NOT NULL,
    sweep_id INTEGER,
    reason TEXT NOT NULL DEFAULT '',
    decided_at REAL,
    decided_by TEXT,
    outcome TEXT
)"""


# Version 4: acceptance records per workload x pool (``console.store.acceptance``).
_ACCEPTANCES = (
    """CREATE TABLE IF NOT EXISTS acceptances (
    id INTEGER PRIMARY KEY,
    workload TEXT NOT NULL,
    pool TEXT NOT NULL,
    outcome TEXT NOT NULL,
    stack TEXT NOT NULL DEFAULT '{}',
    figures TEXT NOT NULL DEFAULT '{}',
    sweep_id INTEGER,
    at REAL NOT NULL,
    user TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    audit_id INTEGER REFERENCES audit(id)
)""",
    "CREATE INDEX IF NOT EXISTS acceptances_pair ON acceptances(workload, pool, id)",
    # The image a containerised workload runs in on a pool, set back by ``rollback``; the cluster file's otherwise.
    """CREATE TABLE IF NOT EXISTS image_overrides (
    workload TEXT NOT NULL,
    pool TEXT NOT NULL,
    image TEXT NOT NULL,
    set_at REAL NOT NULL,
    set_by TEXT NOT NULL,
    audit_id INTEGER REFERENCES audit(id),
    PRIMARY KEY (workload, pool)
)""",
)
# Version 8: one actor at a time (``console.remediation.lease``); ``owner`` is a ``ProcessOwner``.
_LEASES = """CREATE TABLE IF NOT EXISTS leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    user TEXT NOT NULL,
    owner TEXT NOT NULL,
    taken_at REAL NOT NULL,
    expires_at REAL NOT NULL
)"""
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS drains_open ON drains(node) WHERE ended_at IS NULL",
    "CREATE INDEX IF NOT EXISTS sweeps_unfinished ON sweeps(id) WHERE finished_at IS NULL",
    "CREATE INDEX IF NOT EXISTS audit_unfinished ON audit(id) WHERE finished_at IS NULL",
    # A node's verdicts newest first (the console's first look at the history, a node's history tab).
    "CREATE INDEX IF NOT EXISTS node_verdicts_node ON node_verdicts(node, sweep_id)",
)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def _version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    try:
        return int(row[0]) if row else 0
    except ValueError:
        return 0


def upgrade(conn: sqlite3.Connection) -> None:
    """Bring the database to version 9: one transaction, safe when several consoles open it at once."""
    if _version(conn) >= SCHEMA_VERSION:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Checked again inside the lock: another console may have upgraded it meanwhile.
        if "owner" not in _columns(conn, "sweeps"):
            conn.execute("ALTER TABLE sweeps ADD COLUMN owner TEXT")
        if "origin" not in _columns(conn, "sweeps"):
            conn.execute("ALTER TABLE sweeps ADD COLUMN origin TEXT NOT NULL DEFAULT ''")
        audit = _columns(conn, "audit")
        if "owner" not in audit:
            conn.execute("ALTER TABLE audit ADD COLUMN owner TEXT")
        if "finished_at" not in audit:
            conn.execute("ALTER TABLE audit ADD COLUMN finished_at REAL")
            conn.execute("UPDATE audit SET finished_at = at")
        if "passed" not in _columns(conn, "node_verdicts"):
            conn.execute("ALTER TABLE node_verdicts ADD COLUMN passed TEXT NOT NULL DEFAULT '{}'")
        conn.execute(_DRAINS)
        conn.execute(_WATCH)
        for statement in (*_INDEXES, *_CASES, *_ACCEPTANCES):
            conn.execute(statement)
        if "nodes" not in _columns(conn, "acceptances"):
            conn.execute("ALTER TABLE acceptances ADD COLUMN nodes TEXT NOT NULL DEFAULT '{}'")
        if "cut" not in _columns(conn, "node_verdicts"):
            conn.execute("ALTER TABLE node_verdicts ADD COLUMN cut TEXT NOT NULL DEFAULT ''")
            # Before version 7 a node its sweep's deadline or cancel left unchecked had this one reason.
            conn.execute(
                "UPDATE node_verdicts SET cut = substr(reason, length('could not check: ') + 1)"
                " WHERE reason IN ('could not check: deadline exceeded', 'could not check: sweep cancelled')"
            )
        conn.execute(_LEASES)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def end_orphaned_sweeps(conn: sqlite3.Connection) -> list[int]:
    """Mark "interrupted" every running sweep whose owning process is gone; returns their ids."""
    running = conn.execute(
        "SELECT id, owner, started_at FROM sweeps WHERE finished_at IS NULL AND status = 'running'"
    ).fetchall()
    ended = []
    for sweep_id, owner_text, started_at in running:
        owner = ProcessOwner.from_text(owner_text)
        if owner is None or owner.alive() is not False:
            continue  # still running, or written by a console that did not record owners: cannot tell
        conn.execute("BEGIN IMMEDIATE")
        try:
            by_status = "SELECT status, count(*) FROM node_verdicts WHERE sweep_id = ? GROUP BY status"
            counts = dict(conn.execute(by_status, (sweep_id,)).fetchall())
            # When it stopped: the last thing it recorded (its verdicts and probe runs are kept).
            last = conn.execute(
                "SELECT max(t) FROM (SELECT max(updated_at) AS t FROM node_verdicts WHERE sweep_id = ?"
                " UNION ALL SELECT max(started_at + duration_s) FROM probe_runs WHERE sweep_id = ?)",
                (sweep_id, sweep_id),
            ).fetchone()[0]
            summary = {
                "counts": counts,
                "interrupted": f"its process ({owner.describe()}) ended before the sweep finished",
            }
            conn.execute(
                "UPDATE sweeps SET status = ?, finished_at = ?, summary = ? WHERE id = ? AND finished_at IS NULL",
                (INTERRUPTED, last or started_at, json.dumps(summary), sweep_id),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        ended.append(sweep_id)
    return ended
