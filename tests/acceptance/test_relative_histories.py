"""Random run histories of one workload on one pool (issue 37): a regressed or unstable record never leaves the
workload ``accepted``, no record accepts a run beyond tolerance of the reference, and the reference figures
change only by an operator's acceptance, audited with its reason (a re-baseline, asked for when beyond)."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from console.actions.acceptance import (
    ACCEPTING,
    NOT_ACCEPTABLE,
    accept_workload,
    acceptance_state,
    held_to_reference,
    record_outcomes,
    reference_record,
)
from console.inventory import load_inventory
from console.inventory.model import Inventory
from console.model.findings import Status
from console.store import Store
from console.store.acceptance import ACCEPTED, ACCEPTED_AGAIN
from tests.acceptance.test_relative import CLUSTER, STACK, _sweep

STACKS = [STACK, {**STACK, "rocm": "6.4.2"}, {**STACK, "amdgpu_driver": "6.14.4"}]
RUN = st.tuples(
    st.just("run"),
    st.integers(0, len(STACKS) - 1),
    st.sampled_from([9.0, 11.0, 11.5, 12.0, 12.3, 13.0, math.nan]),
    st.sampled_from([0.0, 0.01, 0.12]),  # how far n2 is from n1
    st.sampled_from([Status.PASS, Status.PASS, Status.WARN, Status.FAIL, Status.UNKNOWN]),
)
ACCEPT = st.tuples(st.just("accept"), st.booleans())
REASON = "operator's reason"


def _step(store: Store, inventory: Inventory, event: tuple[Any, ...], last: int | None) -> int | None:
    """Play one event: a run (recorded as a sweep records it, then its outcome) or an operator's acceptance
    of the newest run (maybe refused)."""
    if event[0] == "run":
        _, stack, value, apart, status = event
        sweep = _sweep(store, {"n1": value, "n2": value * (1 + apart)}, STACKS[stack], status)
        record_outcomes(store, inventory, sweep, user="ci")
        return sweep
    if last is not None:
        accept_workload(store, inventory, "smoke", ["a"], last, reason=REASON, rebaseline=event[1])
    return last


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(RUN, RUN, ACCEPT), min_size=1, max_size=10))
def test_regressed_or_unstable_is_never_accepted_and_the_reference_moves_only_by_an_audited_acceptance(
    events: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.toml"
        path.write_text(CLUSTER)
        inventory = load_inventory(path)
        store = Store(Path(tmp) / "h.db")
        try:
            last: int | None = None
            for event in events:
                before = reference_record(store.acceptance_history("smoke", "a"))
                last = _step(store, inventory, event, last)
                history = store.acceptance_history("smoke", "a")
                after = reference_record(history)
                if after != before:
                    # Moved: only by an operator's acceptance, audited with its reason.
                    assert event[0] == "accept" and after is not None and after.outcome == ACCEPTED
                    [entry] = [e for e in store.audit_log() if e["id"] == after.audit_id]
                    inputs = json.loads(entry["inputs"])
                    assert entry["action"] == "accept" and inputs["reason"] == REASON
                    if before is not None and any(
                        c.beyond for c in held_to_reference(inventory, "smoke", [before], after.figures)
                    ):
                        assert inputs["rebaseline"] is True, "beyond tolerance: only on purpose"
                for index, record in enumerate(history):
                    if record.outcome == ACCEPTED_AGAIN:
                        held = held_to_reference(inventory, "smoke", history[:index], record.figures)
                        assert not any(c.beyond for c in held), f"accepted again beyond tolerance: {record}"
                state = acceptance_state(store, inventory, "smoke", "a")
                accepting = [r for r in history if r.outcome in ACCEPTING]
                trailing = [r for r in history if accepting and r.id > accepting[-1].id]
                if trailing and trailing[-1].outcome in NOT_ACCEPTABLE and trailing[-1].stack == state.current_stack:
                    assert state.state not in ACCEPTING, f"{trailing[-1].outcome} record, state {state.state}"
                if state.state in ACCEPTING:
                    assert state.failing_since is None
        finally:
            store.close()
