"""Two passes are two sweeps that started after the repair, one after the other, ``pass_spacing_min`` apart
(issue 33: two simultaneous revalidations counted as "2 passes in a row")."""

from __future__ import annotations

from pathlib import Path

from console.inventory.model import LifecyclePolicy
from console.model.findings import Remedy
from console.remediation.cases import acknowledge_repair, open_case, record_revalidation
from console.store import Store


def _sweep(store: Store, *, finish: bool = True) -> int:
    sweep = store.start_sweep("standard", "revalidate", "n1")
    if finish:
        store.finish_sweep(sweep, "done", {})
    return sweep


def test_only_sweeps_after_the_repair_and_in_turn_count_as_passes(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    try:
        policy = LifecyclePolicy()
        open_case(store, "n1", user="ops", action=Remedy.REBOOT, sweep_id=None, findings=["x"], audit_id=None)
        before = _sweep(store)
        acknowledge_repair(store, "n1", user="ops", note="rebooted", audit_id=None)

        def record(sweep: int, spacing: LifecyclePolicy = policy) -> str:
            case = record_revalidation(
                store, "n1", passed=True, sweep_id=sweep, action=None, user="ops", policy=spacing, note="PASS"
            )
            return f"{case.passes} {store.case_steps(case.id)[-1].note}"

        assert record(before) == f"0 PASS; not counted: sweep {before} started before the repair was acknowledged"
        first, overlapping = _sweep(store, finish=False), _sweep(store)
        store.finish_sweep(first, "done", {})
        assert record(first) == "1 PASS"
        assert record(first).startswith(f"1 PASS; not counted: sweep {first} overlaps sweep {first}")
        assert "overlaps sweep" in record(overlapping)  # started while the first pass's sweep ran
        spaced = LifecyclePolicy(pass_spacing_min=30)
        assert "passes are at least 30 min apart" in record(_sweep(store), spaced)
        assert record(_sweep(store)) == "2 PASS"
        case = store.case("n1")
        assert case is not None and case.ready(policy)
    finally:
        store.close()
