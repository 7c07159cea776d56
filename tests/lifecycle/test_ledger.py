"""The remediation lifecycle in the history database: a case from the console's drain to its return or RMA."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from console.inventory.model import LifecyclePolicy
from console.model.findings import Remedy
from console.remediation.cases import acknowledge_repair, close_case, open_case, record_revalidation
from console.remediation.guards import CaseError
from console.remediation.strikes import strikes
from console.store import Store
from console.store.lifecycle import Stage

POLICY = LifecyclePolicy()  # two passes in a row, three strikes a week


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "h.sqlite")


def _open(store: Store, node: str = "gpu01", action: Remedy | None = Remedy.REBOOT) -> None:
    open_case(store, node, user="ops", action=action, sweep_id=7, findings=["ecc.uncorrectable"], audit_id=None)


def test_a_case_goes_from_drain_through_repair_and_two_passes_to_ready(store: Store) -> None:
    _open(store)
    case = store.case("gpu01")
    assert case is not None and case.stage is Stage.DRAINED and case.action is Remedy.REBOOT
    assert case.next_step(POLICY) == "reboot, then: repaired"
    case = acknowledge_repair(store, "gpu01", user="tech", note="rebooted", audit_id=None)
    assert case.stage is Stage.REVALIDATING and not case.ready(POLICY)
    case = record_revalidation(
        store, "gpu01", passed=True, sweep_id=8, action=None, user="ops", policy=POLICY, note="PASS"
    )
    assert case.passes == 1 and not case.ready(POLICY) and "1 more pass" in case.next_step(POLICY)
    case = record_revalidation(
        store, "gpu01", passed=True, sweep_id=9, action=None, user="ops", policy=POLICY, note="PASS"
    )
    assert case.ready(POLICY) and case.next_step(POLICY) == "resume: the revalidation passed"
    closed = close_case(store, "gpu01", Stage.RETURNED, user="ops", note="resumed", audit_id=None)
    assert closed is not None and closed.stage is Stage.RETURNED and closed.closed_at is not None
    assert store.case("gpu01") is None
    steps = [(s.step, s.stage, s.user) for s in store.case_steps(closed.id)]
    assert steps == [
        ("drain", Stage.DRAINED, "ops"),
        ("repaired", Stage.REVALIDATING, "tech"),
        ("pass", Stage.REVALIDATING, "ops"),
        ("pass", Stage.REVALIDATING, "ops"),
        ("return", Stage.RETURNED, "ops"),
    ]


def test_a_physical_action_waits_for_the_technician_and_a_strike_starts_the_passes_again(store: Store) -> None:
    _open(store, action=Remedy.INSPECT)
    assert store.case("gpu01").stage is Stage.AWAITING_REPAIR  # type: ignore[union-attr]
    acknowledge_repair(store, "gpu01", user="tech", note="reseated GPU 3", audit_id=None)
    record_revalidation(store, "gpu01", passed=True, sweep_id=8, action=None, user="ops", policy=POLICY, note="")
    case = record_revalidation(
        store, "gpu01", passed=False, sweep_id=9, action=Remedy.RMA, user="ops", policy=POLICY, note="FAIL xgmi"
    )
    assert case.stage is Stage.AWAITING_REPAIR and case.passes == 0 and case.strikes == 1 and case.action is Remedy.RMA
    unjudged = acknowledge_repair(store, "gpu01", user="tech", note="swapped", audit_id=None)
    unjudged = record_revalidation(
        store, "gpu01", passed=None, sweep_id=10, action=None, user="ops", policy=POLICY, note="UNKNOWN"
    )
    assert (unjudged.passes, unjudged.strikes, unjudged.stage) == (0, 1, Stage.REVALIDATING)


def test_strikes_within_the_window_escalate_across_cases_a_lemon_node(store: Store) -> None:
    policy = LifecyclePolicy(max_strikes=2)
    _open(store)
    acknowledge_repair(store, "gpu01", user="t", note="", audit_id=None)
    record_revalidation(
        store, "gpu01", passed=False, sweep_id=1, action=Remedy.REBOOT, user="o", policy=policy, note=""
    )
    acknowledge_repair(store, "gpu01", user="t", note="", audit_id=None)
    record_revalidation(store, "gpu01", passed=True, sweep_id=2, action=None, user="o", policy=policy, note="")
    close_case(store, "gpu01", Stage.ENDED, user="o", note="resumed outside the console", audit_id=None)
    _open(store)  # back again: the earlier strike still counts
    acknowledge_repair(store, "gpu01", user="t", note="", audit_id=None)
    case = record_revalidation(
        store, "gpu01", passed=False, sweep_id=3, action=Remedy.REBOOT, user="o", policy=policy, note="FAIL"
    )
    assert case.stage is Stage.ESCALATED and case.action is Remedy.RMA and case.closed_at is not None
    assert strikes(store, "gpu01", policy.window_s) == 2 and strikes(store, "gpu01", 0) == 0
    assert store.case("gpu01") is None


def test_steps_the_stage_does_not_allow_are_refused_and_say_what_would_do(store: Store) -> None:
    with pytest.raises(CaseError, match="no open case"):
        acknowledge_repair(store, "gpu02", user="t", note="", audit_id=None)
    _open(store)
    with pytest.raises(CaseError, match="acknowledge the repair"):
        record_revalidation(store, "gpu01", passed=True, sweep_id=1, action=None, user="o", policy=POLICY, note="")
    acknowledge_repair(store, "gpu01", user="t", note="", audit_id=None)
    with pytest.raises(CaseError, match="nothing to acknowledge"):
        acknowledge_repair(store, "gpu01", user="t", note="", audit_id=None)
    _open(store, action=Remedy.INSPECT)  # drained again while open: the same case goes on
    assert [c.id for c in store.cases("gpu01")] == [1] and store.case("gpu01").stage is Stage.AWAITING_REPAIR  # type: ignore[union-attr]


def test_a_version_2_database_gains_the_cases_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE case_steps")
        conn.execute("DROP TABLE cases")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    store = Store(path)
    _open(store)
    assert store.case("gpu01") is not None
    store.close()
