"""What a console following the history database reads (``console.store.follow``): each node's newest
verdict, everything stored since a watermark (re-judgements included), drift's subsets left out, and
which command ran each sweep (schema version 5, upgraded into older files)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from console.model.findings import Evidence, Finding, Status, Subject, roll_up
from console.store import Store
from console.store.follow import newest_verdicts, node_totals, verdicts_since, watermark
from console.store.upgrade import SCHEMA_VERSION


def _fail(node: str) -> Finding:
    return Finding(
        check_id="ecc.uncorrectable", family="ecc", status=Status.FAIL, subject=Subject(node=node),
        message="uncorrectable ECC: 2", evidence=Evidence(observed=2),
    )  # fmt: skip


def test_newest_verdicts_and_what_was_stored_since(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.db")
    try:
        first = store.start_sweep("quick", "inv.toml", "n[1-2]", origin="sweep")
        store.record_node(first, "p", roll_up("n1", [_fail("n1")], {"gpu.count": 1}), {})
        store.record_node(first, "p", roll_up("n2", [], {"gpu.count": 1}), {})
        drift = store.start_sweep("quick:stack,firmware", "inv.toml", "n1", origin="drift")
        store.record_node(drift, "p", roll_up("n1", [], {"stack.rocm": 1}), {})
        mark = watermark(store)
        second = store.start_sweep("quick", "inv.toml", "n1", origin="revalidate")
        store.record_node(second, "p", roll_up("n1", [], {"gpu.count": 1}), {})

        newest = newest_verdicts(store, ["n1", "n2", "n3"])
        assert {n: (v.sweep_id, v.status, v.where()) for n, v in newest.items()} == {
            "n1": (second, "PASS", f"sweep {second} by revalidate"),  # not drift's subset, a later sweep
            "n2": (first, "PASS", f"sweep {first} by sweep"),
        }
        assert [(v.node, v.sweep_id) for v in verdicts_since(store, mark)] == [("n1", second)]
        assert node_totals(store, first, "n1") == (2, {})  # the FAIL finding and one PASS counted

        # Its process re-judges n2 in the first sweep: stored again, so read again, and newer than before
        # within that sweep, yet older than n1's later sweep would be.
        mark = watermark(store)
        store.record_node(first, "p", roll_up("n2", [_fail("n2")]), {})
        again = verdicts_since(store, mark)
        assert [(v.node, v.sweep_id, v.status) for v in again] == [("n2", first, "FAIL")]
        assert again[0].newer_than(newest["n2"]) and not again[0].newer_than(newest["n1"])
        assert newest_verdicts(store, ["n2"])["n2"].status == "FAIL"
    finally:
        store.close()


def test_a_version_4_history_gains_the_origin_of_its_sweeps(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # as a console of schema version 4 left it, with one sweep
        conn.execute("ALTER TABLE sweeps DROP COLUMN origin")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("INSERT INTO sweeps (started_at, level) VALUES (1.0, 'quick')")
        conn.execute(
            "INSERT INTO node_verdicts (sweep_id, node, status, families, reason, updated_at)"
            " VALUES (1, 'n1', 'PASS', '{}', '', 1.0)"
        )
    store = Store(path)
    try:
        assert newest_verdicts(store, ["n1"])["n1"].where() == "sweep 1"  # who ran it was not recorded
        later = store.start_sweep("quick", "inv.toml", "n1", origin="watch")
        assert store.sweep(later)["origin"] == "watch"
        version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION)
    finally:
        store.close()
