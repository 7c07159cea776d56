"""PASS findings kept as counts (a node judged on the node): stored, counted, and upgraded into old files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from console.model.findings import Evidence, Finding, Scope, Status, Subject, roll_up
from console.store import Store


def _finding(node: str, check: str, status: Status, observed: float) -> Finding:
    subject = Subject(node=node, scope=Scope.GPU, gpu=0, gpu_bdf="0000:05:00.0")
    return Finding(
        check_id=check, family="ecc", status=status, subject=subject, message=f"{check}: {observed:g}",
        evidence=Evidence(observed=observed),
    )  # fmt: skip


def test_counted_passes_are_totals_and_checks_like_kept_ones(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.db")
    sweep = store.start_sweep("quick", "inv.toml", "n[1-2]")
    kept = roll_up("n1", [_finding("n1", "ecc.correctable", Status.PASS, 3)] * 2)
    counted = roll_up(
        "n2", [_finding("n2", "ecc.correctable", Status.PASS, 3)], {"gpu.count": 1, "ecc.uncorrectable": 8}, ["ecc"]
    )
    assert (counted.status, counted.families, counted.reason) == (Status.PASS, {"ecc": Status.PASS}, "")
    store.record_node(sweep, "p", kept, {})
    store.record_node(sweep, "p", counted, {})
    assert store.finding_totals(sweep) == {"n1": 2, "n2": 10}
    assert store.check_ids(sweep) == {"ecc.correctable", "gpu.count", "ecc.uncorrectable"}
    assert store.passed_counts(sweep, "n2") == {"gpu.count": 1, "ecc.uncorrectable": 8}
    assert store.passed_counts(sweep, "n1") == {}
    # The history's earlier figures still read the kept figure of a node that counted the rest.
    assert store.previous_readings("n2", "ecc.correctable", before_sweep=sweep + 1) is not None
    store.close()


def test_a_verdict_of_counts_alone_is_pass_and_of_nothing_unknown() -> None:
    assert roll_up("n", [], {"gpu.count": 1}, ["inventory"]).status is Status.PASS
    nothing = roll_up("n", [])
    assert (nothing.status, nothing.reason) == (Status.UNKNOWN, "no checks ran")


def test_a_version_2_history_gains_the_counts_column(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # as a console of schema version 2 left it
        conn.execute("ALTER TABLE node_verdicts DROP COLUMN passed")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    store = Store(path)
    sweep = store.start_sweep("quick", "inv.toml", "n1")
    store.record_node(sweep, "p", roll_up("n1", [], {"gpu.count": 1}, ["inventory"]), {})
    assert store.finding_totals(sweep) == {"n1": 1}
    version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == "4"
    store.close()
