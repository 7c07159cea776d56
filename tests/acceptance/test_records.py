"""Acceptance records and states without a cluster: the schema upgrade, what counts as a stack change,
and the runs that cannot be accepted."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from console.actions.acceptance import (
    accept_workload,
    acceptance_state,
    merge_stacks,
    record_outcomes,
    stack_changes,
)
from console.inventory import load_inventory
from console.model.findings import Evidence, Finding, Status, Subject, roll_up
from console.store import Store
from console.store.upgrade import SCHEMA_VERSION

CLUSTER = """
[[pools]]
name = "a"
nodes = "n[1-2]"
gpu_model = "MI300X"
[[workloads]]
name = "smoke"
timeout_s = 5
command = ["smoke"]
[workloads.results]
json_prefix = "RESULT"
"""
STACK = {"rocm": "6.4.1", "amdgpu_driver": "6.12.12", "firmware.PM": "85.110.0", "amdsmi": "25.4.2"}


def _sweep(store: Store, status: Status, stack: dict[str, str], figure: float) -> int:
    sweep = store.start_sweep("workload", "c.toml", "n[1-2]")
    for node in ("n1", "n2"):
        found = [
            Finding(
                check_id="workload.smoke.tokens_per_s", family="workload", status=status, subject=Subject(node=node),
                message="smoke", evidence=Evidence(observed=figure),
            )
        ]  # fmt: skip
        store.record_node(sweep, "a", roll_up(node, found), stack)
    store.finish_sweep(sweep, "done", {})
    return sweep


def test_a_version_3_history_gains_the_acceptance_records(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # as a console of schema version 3 left it
        conn.execute("DROP TABLE acceptances")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    store = Store(path)
    try:
        record = store.record_acceptance("smoke", "a", "accepted", stack={}, figures={}, sweep_id=None, user="u")
        assert [r.id for r in store.acceptance_history("smoke", "a")] == [record]
        version = store.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION)  # the current one (later versions add more)
    finally:
        store.close()


def test_only_a_field_read_on_both_sides_and_different_is_a_change() -> None:
    merged = merge_stacks([STACK, {**STACK, "rocm": "6.2.2"}])
    assert merged == {"amdgpu_driver": "6.12.12", "firmware.PM": "85.110.0", "rocm": "mixed: 6.2.2 | 6.4.1"}
    assert stack_changes({"rocm": "6.4.1", "torch": "2.6.0"}, merged) == {"rocm": ("6.4.1", "mixed: 6.2.2 | 6.4.1")}
    assert stack_changes({"torch": "2.6.0"}, {"rocm": "6.4.1"}) == {}, "torch not read now: unknown, not changed"


def test_a_failed_or_unjudged_run_is_not_accepted_and_writes_nothing(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        for status in (Status.FAIL, Status.UNKNOWN):
            sweep = _sweep(store, status, STACK, 10.0)
            result = accept_workload(store, inventory, "smoke", ["a"], sweep, reason="r")
            assert not result.ok and f"smoke is {status.value} on pool a" in result.outcome
        assert store.acceptance_history() == [] and store.audit_log() == []
        good = _sweep(store, Status.PASS, STACK, 12.0)
        assert accept_workload(store, inventory, "smoke", ["a"], good, reason="r").ok
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "accepted" and state.accepted is not None
        assert state.accepted.figures == {"tokens_per_s": 12.0}
        assert state.accepted.stack == {k: v for k, v in STACK.items() if k != "amdsmi"}
    finally:
        store.close()


def test_a_rerun_on_a_new_stack_is_accepted_again_regressed_or_left_due(tmp_path: Path) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text(CLUSTER)
    inventory = load_inventory(cluster)
    store = Store(tmp_path / "h.db")
    try:
        assert accept_workload(store, inventory, "smoke", ["a"], _sweep(store, Status.PASS, STACK, 12.0), reason="A").ok
        stack_b = {**STACK, "rocm": "6.4.2"}
        # Not judged (cut output, a timeout): no outcome, it stays due.
        assert record_outcomes(store, inventory, _sweep(store, Status.UNKNOWN, stack_b, 0.0), user="ci") == []
        assert acceptance_state(store, inventory, "smoke", "a").state == "due"
        [regressed] = record_outcomes(store, inventory, _sweep(store, Status.FAIL, stack_b, 7.0), user="ci")
        assert (regressed.outcome, regressed.figures, regressed.reason) == (
            "regressed",
            {"tokens_per_s": 7.0},
            "rerun after a stack change: rocm 6.4.1 -> 6.4.2",
        )
        state = acceptance_state(store, inventory, "smoke", "a")
        assert state.state == "regressed" and state.accepted is not None
        assert state.accepted.figures["tokens_per_s"] == 12, "the accepted figures beside the regressed ones"
        [again] = record_outcomes(store, inventory, _sweep(store, Status.PASS, stack_b, 12.5), user="ci")
        assert again.outcome == "accepted-again"
        assert acceptance_state(store, inventory, "smoke", "a").state == "accepted-again"
        # On the accepted stack a rerun records nothing new.
        assert record_outcomes(store, inventory, _sweep(store, Status.PASS, stack_b, 12.4), user="ci") == []
    finally:
        store.close()
