"""SQLite history: sweeps, raw probe output, findings, node verdicts, baselines, pins, the audit log and
the console's drains.

Every verdict is committed as it arrives (one transaction per node), in WAL mode, so a console
killed mid-sweep loses nothing that was finished. Each sweep records the process that runs it, and
opening the database marks "interrupted" the sweeps whose process died before finishing them
(``console.store.upgrade``). The audit log is written ahead (``console.store.audit``). The file and
its directory are owner-only.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

from console.inventory import Inventory
from console.model.findings import Finding, NodeVerdict, Status, Subject
from console.store.acceptance import AcceptanceLedger
from console.store.audit import AuditLog
from console.store.cluster import ForeignStoreError, claim, legacy_store_path
from console.store.cluster import default_path as cluster_default_path
from console.store.drains import DrainLedger
from console.store.faults import StoreFault, fault_of, read_only_filesystem, recovery
from console.store.lifecycle import LifecycleLedger
from console.store.owner import ProcessOwner
from console.store.upgrade import INTERRUPTED, end_orphaned_sweeps, upgrade
from console.store.upgrade import SCHEMA_VERSION as CURRENT_SCHEMA
from console.store.watch import WatchLedger

SCHEMA_VERSION = 1  # what _SCHEMA creates; console.store.upgrade brings it to the current version

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY,
    started_at REAL NOT NULL,
    finished_at REAL,
    level TEXT NOT NULL,
    inventory TEXT NOT NULL DEFAULT '',
    nodes TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'running',
    parent_id INTEGER REFERENCES sweeps(id),
    summary TEXT
);
CREATE TABLE IF NOT EXISTS probe_runs (
    id INTEGER PRIMARY KEY,
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
    node TEXT NOT NULL,
    probe TEXT NOT NULL,
    command TEXT NOT NULL,
    exit_status INTEGER,
    started_at REAL NOT NULL,
    duration_s REAL NOT NULL,
    problem TEXT,
    stdout BLOB,
    stderr BLOB
);
CREATE INDEX IF NOT EXISTS probe_runs_node ON probe_runs(node, probe, id);
CREATE TABLE IF NOT EXISTS findings (
    id INTEGER PRIMARY KEY,
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
    node TEXT NOT NULL,
    check_id TEXT NOT NULL,
    family TEXT NOT NULL,
    status TEXT NOT NULL,
    subject TEXT NOT NULL,
    message TEXT NOT NULL,
    evidence TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS findings_node ON findings(node, check_id, sweep_id);
-- A sweep's findings (reports, replacing a re-judged node's) without walking every earlier sweep's.
CREATE INDEX IF NOT EXISTS findings_sweep ON findings(sweep_id, node);
CREATE TABLE IF NOT EXISTS node_verdicts (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
    node TEXT NOT NULL,
    pool TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    families TEXT NOT NULL,
    reason TEXT NOT NULL,
    stack TEXT NOT NULL DEFAULT '{}',
    updated_at REAL NOT NULL,
    PRIMARY KEY (sweep_id, node)
);
CREATE TABLE IF NOT EXISTS baselines (
    pool TEXT PRIMARY KEY,
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id),
    accepted_at REAL NOT NULL,
    accepted_by TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pins (
    pool TEXT NOT NULL,
    field TEXT NOT NULL,
    value TEXT NOT NULL,
    from_node TEXT,
    set_at REAL NOT NULL,
    set_by TEXT NOT NULL,
    PRIMARY KEY (pool, field)
);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    user TEXT NOT NULL,
    action TEXT NOT NULL,
    targets TEXT NOT NULL,
    inputs TEXT NOT NULL,
    commands TEXT NOT NULL,
    output TEXT NOT NULL,
    outcome TEXT NOT NULL
);
"""


def default_store_path(inventory: Inventory | None = None) -> Path:
    """The cluster's own database in the XDG state directory (``console.store.cluster``); without a cluster
    file, the one database a console knows of there (the shared one of older consoles first)."""
    if inventory is not None:
        return cluster_default_path(inventory)
    legacy = legacy_store_path()
    clusters = sorted(legacy.parent.glob("clusters/*/history.sqlite"))
    if legacy.exists() or not clusters:
        return legacy
    if len(clusters) == 1:
        return clusters[0]
    names = ", ".join(p.parent.name for p in clusters)
    raise StoreError(f"the history databases of several clusters ({names}) are in {legacy.parent}: give -i or --store")


def _pack(data: bytes) -> bytes:
    # Level 1: amd-smi JSON still shrinks ~8x, at a third of level 6's CPU (every probe of every node).
    return zlib.compress(data, 1)


def _unpack(blob: bytes | None) -> bytes:
    return zlib.decompress(blob) if blob else b""


@dataclass(frozen=True)
class ProbeRunRecord:
    """One probe run to keep: what ran, how it ended, and its raw output."""

    probe: str
    command: str
    exit_status: int | None
    started_at: float
    duration_s: float
    stdout: bytes
    problem: str | None
    stderr: bytes = b""
    # ``stdout`` already compressed as the store keeps it (``packed``): an engine worker compresses its
    # nodes' outputs on its own core, and the one store writer only inserts them.
    stdout_packed: bytes | None = None

    def packed(self) -> ProbeRunRecord:
        """This run with its output compressed as the store keeps it (to be stored by another process)."""
        if self.stdout_packed is not None:
            return self
        return replace(self, stdout=b"", stdout_packed=_pack(self.stdout))


# How long a statement waits for another process's write lock before the store counts as failed. A sweep
# stops writing at its first failure (``console.store.faults``), so this is the most a lock costs it.
BUSY_WAIT_S = 30.0


class StoreError(Exception):
    """A history database that cannot be opened or is not one; the message names the file."""

    def __init__(self, message: str, fault: StoreFault | None = None) -> None:
        super().__init__(message)
        self.fault = fault  # what failed, when it was the database (not a usage error)


class Store(AuditLog, DrainLedger, LifecycleLedger, WatchLedger, AcceptanceLedger):
    """One SQLite file of history. Not thread-safe: use it from the thread that opened it."""

    def __init__(
        self,
        path: str | Path,
        cluster: Inventory | None = None,
        *,
        read_only: bool = False,
        busy_wait_s: float = BUSY_WAIT_S,
        check: bool = True,
    ) -> None:
        """Open (or create) the database at ``path``; StoreError says why it cannot be used.

        ``cluster``: the cluster the command acts on; a database of another cluster is refused
        (``console.store.cluster``), one of no cluster yet is given to it (unless ``read_only``).
        ``read_only`` opens an existing database for reading only (``mode=ro``), changing nothing: the
        history commands, and a read-only file or filesystem. ``busy_wait_s`` bounds each statement's wait
        for another process's lock. Every opening runs ``PRAGMA quick_check`` (``check_integrity``) unless
        ``check`` is False: ``bundle`` reads what it can of a corrupt one, after saying so.
        """
        self.path = Path(path)
        self.read_only = read_only
        try:
            if read_only:
                self._open_read_only(busy_wait_s)
            else:
                self._open(busy_wait_s)
            if check:
                self.check_integrity()
            if cluster is not None:
                claim(self.conn, self.path, cluster, record=not read_only)
        except ForeignStoreError as exc:
            self.conn.close()
            raise StoreError(str(exc)) from None
        except sqlite3.DatabaseError as exc:
            read = fault_of(exc, self.path)
            if exc.sqlite_errorname == "SQLITE_NOTADB":
                # A mistyped --store (notes.txt): a usage error, not a history database gone bad.
                raise StoreError(f"{self.path}: not an SQLite database, so not a history database") from None
            if read.kind == "corrupt":
                said = f"{self.path}: the history database is corrupt ({exc}): {recovery(self.path)}"
                raise StoreError(said, read) from None
            raise StoreError(f"{self.path}: cannot use it as the history database: {exc}", read) from None
        except OSError as exc:
            # The file or a directory above it: "File exists: notes.txt" when a plain file is in the way.
            why = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
            opened = fault_of(exc, self.path) if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EACCES) else None
            raise StoreError(f"{self.path}: cannot create or open the history database: {why}", opened) from None

    def _open(self, busy_wait_s: float) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if read_only_filesystem(self.path):
            # SQLite would open it and fail at the first write (CANTOPEN on the WAL): say it at the start.
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self.path))
        fresh = not self.path.exists()
        if fresh:
            # Create the file owner-only before SQLite opens it.
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
            os.close(fd)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=busy_wait_s)
        self.conn.row_factory = sqlite3.Row
        # The first statement that reads the file: a text file passed as --store fails here.
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.executescript(_SCHEMA)
        self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        upgrade(self.conn)
        end_orphaned_sweeps(self.conn)
        for suffix in ("", "-wal", "-shm"):
            side = Path(f"{self.path}{suffix}")
            if side.exists():
                os.chmod(side, 0o600)

    def _open_read_only(self, busy_wait_s: float) -> None:
        if not self.path.is_file():
            raise FileNotFoundError(errno.ENOENT, "no history database", str(self.path))
        where = quote(str(self.path.resolve()))
        # On a read-only filesystem SQLite cannot make the WAL's shared-memory file: nothing can write there
        # either, so the file is read as it stands (immutable).
        still = "&immutable=1" if not os.access(self.path.parent, os.W_OK) else ""
        self.conn = sqlite3.connect(f"file:{where}?mode=ro{still}", uri=True, isolation_level=None, timeout=busy_wait_s)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()

    def outdated(self) -> bool:
        """True when the database's schema is older than this console's (``console.store.upgrade``)."""
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:
            return True  # no meta table yet
        except sqlite3.DatabaseError:
            return False  # corrupt: nothing to upgrade; it was named when it was opened
        return row is None or int(row[0]) < CURRENT_SCHEMA

    def check_integrity(self) -> None:
        """Raise StoreError naming the file and the way to recover it unless ``PRAGMA quick_check`` says ok.

        ``quick_check`` reads every page once but skips the index-content cross-check that makes
        ``integrity_check`` slow on a large history.
        """
        rows = [str(r[0]) for r in self.conn.execute("PRAGMA quick_check(3)")]
        if rows != ["ok"]:
            self.conn.close()
            lines = [line.strip() for row in rows for line in row.splitlines() if line.strip().strip("*").strip()]
            said = "; ".join(line for line in lines if not line.startswith("***"))[:300]
            fault = StoreFault(kind="corrupt", path=str(self.path), detail=f"quick_check: {said}")
            raise StoreError(f"{self.path}: the history database is corrupt ({said}): {recovery(self.path)}", fault)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One committed unit of work."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def integrity_ok(self) -> bool:
        """``PRAGMA integrity_check`` says ok."""
        row = self.conn.execute("PRAGMA integrity_check").fetchone()
        return bool(row) and row[0] == "ok"

    # sweeps -----------------------------------------------------------------------------------

    def start_sweep(
        self, level: str, inventory: str, nodes: str, parent_id: int | None = None, *, origin: str = ""
    ) -> int:
        """Record a new sweep, owned by this process; ``origin`` names the command that runs it. Returns its id."""
        cur = self.conn.execute(
            "INSERT INTO sweeps (started_at, level, inventory, nodes, parent_id, owner, origin)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (time.time(), level, inventory, nodes, parent_id, ProcessOwner.current().to_text(), origin),
        )
        return int(cur.lastrowid or 0)

    def finish_sweep(self, sweep_id: int, status: str, summary: dict[str, Any]) -> None:
        """Mark a sweep done (status: done, cancelled, deadline)."""
        self.conn.execute(
            "UPDATE sweeps SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
            (time.time(), status, json.dumps(summary), sweep_id),
        )

    def baseline_refusal(self, sweep_id: int) -> str | None:
        """Why sweep ``sweep_id`` may not become a baseline (one line), or None: it finished its work."""
        row = self.sweep(sweep_id)
        if row is None:
            return f"no sweep {sweep_id} in {self.path}"
        status = row["status"]
        if status == "done":
            return None
        if status == "running":
            owner = ProcessOwner.from_text(row["owner"])
            if owner is not None and owner.alive():
                return f"sweep {sweep_id} is still running ({owner.describe()}): not a baseline until it finishes"
            return f"sweep {sweep_id} never finished (its process cannot be checked from here): not a baseline"
        why = {
            INTERRUPTED: "was interrupted: its process ended before the sweep finished",
            "cancelled": "was cancelled before it finished",
            "deadline": "ran out of its deadline before it finished",
        }.get(status, f"ended {status}, not done")
        return f"sweep {sweep_id} {why}: not a baseline; sweep again and accept that one"

    def sweeps(self, limit: int = 20) -> list[sqlite3.Row]:
        """Most recent sweeps first."""
        return list(self.conn.execute("SELECT * FROM sweeps ORDER BY id DESC LIMIT ?", (limit,)))

    def sweep(self, sweep_id: int) -> sqlite3.Row | None:
        """One sweep row."""
        row: sqlite3.Row | None = self.conn.execute("SELECT * FROM sweeps WHERE id = ?", (sweep_id,)).fetchone()
        return row

    def latest_full_sweep(self, nodes: list[str], *, reruns: bool = True) -> int | None:
        """Newest sweep that judged any of ``nodes`` with every family of its level (not drift's subset);
        with ``reruns`` False, not a rerun either (a sweep of its own)."""
        if not nodes:
            return None
        marks = ",".join("?" * len(nodes))
        own = "" if reruns else " AND s.parent_id IS NULL"
        row = self.conn.execute(
            "SELECT max(s.id) FROM sweeps s JOIN node_verdicts v ON v.sweep_id = s.id"
            f" WHERE instr(s.level, ':') = 0{own} AND v.node IN ({marks})",
            nodes,
        ).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def probe_run_ids(self, sweep_id: int) -> dict[str, dict[str, int]]:
        """node -> probe -> the id of its stored output in sweep ``sweep_id`` (the newest, when run twice)."""
        ids: dict[str, dict[str, int]] = {}
        for r in self.conn.execute(
            "SELECT id, node, probe FROM probe_runs WHERE sweep_id = ? ORDER BY id", (sweep_id,)
        ):
            ids.setdefault(r["node"], {})[r["probe"]] = int(r["id"])
        return ids

    def latest_sweep_id(self) -> int | None:
        """Id of the newest sweep."""
        row = self.conn.execute("SELECT max(id) FROM sweeps").fetchone()
        return int(row[0]) if row and row[0] is not None else None

    # probe output -----------------------------------------------------------------------------

    def add_probe_run(
        self,
        sweep_id: int,
        node: str,
        probe: str,
        *,
        command: str,
        exit_status: int | None,
        started_at: float,
        duration_s: float,
        stdout: bytes,
        stderr: bytes,
        problem: str | None,
    ) -> int:
        """Keep the raw output of one probe (compressed); returns its id for evidence links."""
        record = ProbeRunRecord(probe, command, exit_status, started_at, duration_s, stdout, problem, stderr)
        return self._insert_run(self.conn, sweep_id, node, record)

    def add_probe_runs(self, sweep_id: int, node: str, runs: list[ProbeRunRecord]) -> list[int]:
        """Several runs of one node in one transaction (one WAL commit, not one each); their ids in order."""
        if not runs:
            return []
        with self.transaction() as conn:
            return [self._insert_run(conn, sweep_id, node, run) for run in runs]

    @staticmethod
    def _insert_run(conn: sqlite3.Connection, sweep_id: int, node: str, run: ProbeRunRecord) -> int:
        cur = conn.execute(
            "INSERT INTO probe_runs (sweep_id, node, probe, command, exit_status, started_at, duration_s, problem,"
            " stdout, stderr) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sweep_id,
                node,
                run.probe,
                run.command,
                run.exit_status,
                run.started_at,
                run.duration_s,
                run.problem,
                run.stdout_packed if run.stdout_packed is not None else _pack(run.stdout),
                _pack(run.stderr),
            ),
        )
        return int(cur.lastrowid or 0)

    def probe_output(self, run_id: int) -> tuple[bytes, bytes] | None:
        """(stdout, stderr) of a stored probe run."""
        row = self.conn.execute("SELECT stdout, stderr FROM probe_runs WHERE id = ?", (run_id,)).fetchone()
        return (_unpack(row["stdout"]), _unpack(row["stderr"])) if row else None

    def previous_good_run(self, node: str, probe: str, *, before_sweep: int) -> sqlite3.Row | None:
        """Newest run of ``probe`` on ``node`` before sweep ``before_sweep`` that exited 0 without a problem."""
        row: sqlite3.Row | None = self.conn.execute(
            "SELECT * FROM probe_runs WHERE node = ? AND probe = ? AND sweep_id < ? AND exit_status = 0"
            " AND problem IS NULL ORDER BY id DESC LIMIT 1",
            (node, probe, before_sweep),
        ).fetchone()
        return row

    def latest_probe_run(self, node: str, probe: str) -> sqlite3.Row | None:
        """Newest stored run of ``probe`` on ``node``."""
        row: sqlite3.Row | None = self.conn.execute(
            "SELECT * FROM probe_runs WHERE node = ? AND probe = ? ORDER BY id DESC LIMIT 1", (node, probe)
        ).fetchone()
        return row

    # verdicts ---------------------------------------------------------------------------------

    def record_node(
        self, sweep_id: int, pool: str, verdict: NodeVerdict, stack: dict[str, str], *, cut: str = ""
    ) -> None:
        """Replace a node's findings and verdict in this sweep, in one transaction; ``cut`` says what cut the
        node's check short (its sweep's deadline, a cancel), empty when it ran to its end."""
        now = time.time()
        # Findings share their subjects (~70 per node for ~285 findings): each is serialised once.
        subjects: dict[int, str] = {}

        def subject_json(subject: Subject) -> str:
            text = subjects.get(id(subject))
            if text is None:
                text = subjects[id(subject)] = subject.model_dump_json()
            return text

        with self.transaction() as conn:
            conn.execute("DELETE FROM findings WHERE sweep_id = ? AND node = ?", (sweep_id, verdict.node))
            conn.executemany(
                "INSERT INTO findings (sweep_id, node, check_id, family, status, subject, message, evidence,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        sweep_id,
                        verdict.node,
                        f.check_id,
                        f.family,
                        f.status.value,
                        subject_json(f.subject),
                        f.message,
                        f.evidence.model_dump_json(),
                        now,
                    )
                    for f in verdict.findings
                ],
            )
            conn.execute(
                "INSERT OR REPLACE INTO node_verdicts (sweep_id, node, pool, status, families, reason, stack,"
                " updated_at, passed, cut) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    sweep_id,
                    verdict.node,
                    pool,
                    verdict.status.value,
                    json.dumps({k: v.value for k, v in verdict.families.items()}),
                    verdict.reason,
                    json.dumps(stack),
                    now,
                    json.dumps(verdict.passed),
                    cut,
                ),
            )

    def node_verdicts(self, sweep_id: int) -> list[sqlite3.Row]:
        """Every node verdict of a sweep."""
        return list(self.conn.execute("SELECT * FROM node_verdicts WHERE sweep_id = ? ORDER BY node", (sweep_id,)))

    def previous_readings(
        self, node: str, check_id: str, *, before_sweep: int
    ) -> tuple[int, dict[str, tuple[float, float]]] | None:
        """The figures of ``check_id`` on ``node`` in its newest sweep before ``before_sweep`` that judged it:
        (that sweep, {GPU key: (observed, when)}), keyed by PCI address (the GPU index where none)."""
        row = self.conn.execute(
            "SELECT MAX(sweep_id) FROM findings WHERE node = ? AND check_id = ? AND sweep_id < ?",
            (node, check_id, before_sweep),
        ).fetchone()
        if row is None or row[0] is None:
            return None
        readings: dict[str, tuple[float, float]] = {}
        for found in self.conn.execute(
            "SELECT subject, evidence, created_at FROM findings WHERE sweep_id = ? AND node = ? AND check_id = ?",
            (row[0], node, check_id),
        ):
            subject, evidence = json.loads(found["subject"]), json.loads(found["evidence"])
            observed = evidence.get("observed")
            key = subject.get("gpu_bdf") or str(subject.get("gpu"))
            if isinstance(observed, int | float) and not isinstance(observed, bool):
                readings[key] = (float(observed), float(found["created_at"]))
        return int(row[0]), readings

    def findings(self, sweep_id: int, node: str | None = None, *, problems_only: bool = False) -> list[Finding]:
        """Findings of a sweep (optionally one node; with ``problems_only``, those not PASS), as models."""
        query = "SELECT * FROM findings WHERE sweep_id = ?"
        args: tuple[Any, ...] = (sweep_id,)
        if node is not None:
            query += " AND node = ?"
            args = (sweep_id, node)
        if problems_only:
            query += " AND status != 'PASS'"
        return [
            Finding.model_validate(
                {
                    "check_id": r["check_id"],
                    "family": r["family"],
                    "status": r["status"],
                    "subject": json.loads(r["subject"]),
                    "message": r["message"],
                    "evidence": json.loads(r["evidence"]),
                }
            )
            for r in self.conn.execute(query + " ORDER BY id", args)
        ]

    def node_history(
        self, node: str, limit: int = 20, *, levels: Sequence[str] | None = None, whole: bool = False
    ) -> list[sqlite3.Row]:
        """A node's verdicts across sweeps, newest first (only of sweeps at one of ``levels`` when given; only
        those of checks that ran to their end, not cut short by a deadline or a cancel, when ``whole``)."""
        only = f" AND s.level IN ({', '.join('?' * len(levels))})" if levels is not None else ""
        only += " AND v.cut = ''" if whole else ""
        return list(
            self.conn.execute(
                "SELECT v.*, s.started_at, s.level FROM node_verdicts v JOIN sweeps s ON s.id = v.sweep_id"
                f" WHERE v.node = ?{only} ORDER BY v.sweep_id DESC LIMIT ?",
                (node, *(levels or ()), limit),
            )
        )

    def check_ids(self, sweep_id: int) -> set[str]:
        """Every check that judged something in sweep ``sweep_id`` (PASS findings kept as counts included)."""
        rows = self.conn.execute(
            "SELECT DISTINCT check_id FROM findings WHERE sweep_id = ?"
            " UNION SELECT DISTINCT c.key FROM node_verdicts v, json_each(v.passed) c WHERE v.sweep_id = ?",
            (sweep_id, sweep_id),
        )
        return {r[0] for r in rows}

    def finding_totals(self, sweep_id: int) -> dict[str, int]:
        """Findings per node in a sweep, whatever their status (counted, not read), PASS counts included."""
        rows = self.conn.execute("SELECT node, count(*) FROM findings WHERE sweep_id = ? GROUP BY node", (sweep_id,))
        totals = {r[0]: int(r[1]) for r in rows}
        counted = self.conn.execute(
            "SELECT v.node, sum(c.value) FROM node_verdicts v, json_each(v.passed) c WHERE v.sweep_id = ?"
            " GROUP BY v.node",
            (sweep_id,),
        )
        for node, n in counted:
            totals[node] = totals.get(node, 0) + int(n)
        return totals

    def passed_counts(self, sweep_id: int, node: str) -> dict[str, int]:
        """PASS findings of ``node`` in sweep ``sweep_id`` kept as counts per check (``console.model.kept``)."""
        row = self.conn.execute(
            "SELECT passed FROM node_verdicts WHERE sweep_id = ? AND node = ?", (sweep_id, node)
        ).fetchone()
        return {str(k): int(v) for k, v in json.loads(row[0] or "{}").items()} if row else {}

    def status_counts(self, sweep_id: int) -> dict[str, int]:
        """Nodes per verdict in a sweep."""
        counts = {s.value: 0 for s in Status}
        for row in self.conn.execute(
            "SELECT status, count(*) AS n FROM node_verdicts WHERE sweep_id = ? GROUP BY status", (sweep_id,)
        ):
            counts[row["status"]] = row["n"]
        return counts

    # baselines and pins -----------------------------------------------------------------------

    def accept(self, pool: str, sweep_id: int, user: str) -> None:
        """Make ``sweep_id`` the accepted baseline of ``pool``."""
        self.conn.execute(
            "INSERT OR REPLACE INTO baselines (pool, sweep_id, accepted_at, accepted_by) VALUES (?, ?, ?, ?)",
            (pool, sweep_id, time.time(), user),
        )

    def baseline(self, pool: str) -> int | None:
        """Accepted sweep id of ``pool``."""
        row = self.conn.execute("SELECT sweep_id FROM baselines WHERE pool = ?", (pool,)).fetchone()
        return int(row[0]) if row else None

    def baselines(self) -> dict[str, int]:
        """Every pool's accepted sweep."""
        return {r["pool"]: int(r["sweep_id"]) for r in self.conn.execute("SELECT * FROM baselines")}

    def set_pin(self, pool: str, fields: dict[str, str], from_node: str | None, user: str) -> None:
        """Replace the stored pin of ``pool`` with ``fields``."""
        now = time.time()
        with self.transaction() as conn:
            conn.execute("DELETE FROM pins WHERE pool = ?", (pool,))
            conn.executemany(
                "INSERT INTO pins (pool, field, value, from_node, set_at, set_by) VALUES (?, ?, ?, ?, ?, ?)",
                [(pool, k, v, from_node, now, user) for k, v in sorted(fields.items())],
            )

    def clear_pin(self, pool: str) -> dict[str, str]:
        """Drop the stored pin of ``pool`` (the inventory's applies again); returns what was stored."""
        with self.transaction() as conn:
            dropped = self.pin(pool)
            conn.execute("DELETE FROM pins WHERE pool = ?", (pool,))
        return dropped

    def pin(self, pool: str) -> dict[str, str]:
        """Stored pin of ``pool`` (field -> value)."""
        return {r["field"]: r["value"] for r in self.conn.execute("SELECT * FROM pins WHERE pool = ?", (pool,))}


def open_for_sweeping(
    path: Path, busy_wait_s: float = BUSY_WAIT_S, cluster: Inventory | None = None
) -> tuple[Store | None, StoreFault | None]:
    """The history database an engine sweeps into, and None; or, when it cannot be written (read-only, its
    disk full), the same database read-only (for its pins and the history checks of change compare with;
    None when it cannot even be read, or is corrupt) and the fault: the engine sweeps on without storing
    (``console.store.faults``). Anything else (a plain file as --store, another ``cluster``'s database) is
    a StoreError, a usage error."""
    try:
        return Store(path, cluster, busy_wait_s=busy_wait_s), None
    except StoreError as exc:
        if exc.fault is None:
            raise
        fault = exc.fault
    if fault.kind == "corrupt":
        return None, fault  # its pins and history cannot be trusted: the inventory's pins apply alone
    try:
        return Store(path, cluster, read_only=True, busy_wait_s=busy_wait_s), fault
    except StoreError:
        return None, fault
