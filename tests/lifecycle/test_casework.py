"""The catalogue's ``revalidate`` and ``approve`` refuse, with the reason, what they may not do: a
revalidation without a sweep engine or of a node whose case is not revalidating, an approval while the
breaker is tripped or of no open proposal. Refusals change nothing (the history database only)."""

from __future__ import annotations

import time
from pathlib import Path

from console.actions import ActionKind, ActionRequest, ActionService
from console.checks import load_packs
from console.inventory import from_mapping
from console.model.findings import Remedy
from console.remediation.cases import acknowledge_repair, open_case
from console.service.assembly import EngineSpec, build_engine
from console.store import Store
from console.store.watch import Breaker

INVENTORY = {"name": "c", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "n[1-4]"}]}


def test_revalidate_needs_the_engine_and_a_revalidating_case(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    try:
        open_case(store, "n1", user="ops", action=Remedy.REBOOT, sweep_id=None, findings=["x"], audit_id=None)
        service = ActionService(from_mapping(INVENTORY), store)
        plan = service.plan(ActionRequest(ActionKind.REVALIDATE, ("n1",)))
        assert plan.refused is not None and "needs the sweep engine" in plan.refused
        # With an engine, the stage decides: a drained case is skipped with its next step.
        inventory = from_mapping(INVENTORY)
        engine = build_engine(EngineSpec(inventory, load_packs(), store.path), store)
        service = ActionService(inventory, store, engine=engine)
        plan = service.plan(ActionRequest(ActionKind.REVALIDATE, ("n1", "n2")))
        assert plan.refused == (
            "nothing to revalidate: n1: skip: case #1 is drained: next reboot, then: repaired; "
            "n2: skip: no open case (the console opens one when it drains a node)"
        )
        acknowledge_repair(store, "n1", user="ops", note="rebooted", audit_id=None)
        plan = service.plan(ActionRequest(ActionKind.REVALIDATE, ("n1",), level="quick"))
        assert plan.refused is None and plan.acting_on == ("n1",)
        assert [s.shown() for s in plan.steps] == ["n1$ sweep --probes quick"]
        assert plan.decisions["n1"] == "case #1: revalidate at quick (pass 1 of 2 needed to return)"
    finally:
        store.close()


async def test_approve_is_refused_while_the_breaker_is_tripped_and_without_a_proposal(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    try:
        service = ActionService(from_mapping(INVENTORY), store)
        request = ActionRequest(ActionKind.APPROVE, ("n2",))
        assert service.plan(request).refused == "no open proposal for n2"
        store.propose("drain", "n2", sweep_id=None, reason="watch: FAIL")
        store.set_breaker(Breaker(time.time(), "pool p: 2 nodes held out, over its limit 1"))
        plan = service.plan(request)
        assert plan.refused == (
            "the breaker is tripped (pool p: 2 nodes held out, over its limit 1); an operator clears it first:"
            " instinct-console watch --clear-breaker"
        )
        result = await service.execute(plan)
        assert not result.ok and result.outcome.startswith("refused: the breaker is tripped")
        # Refused, audited, and the proposal still waits for an operator.
        assert [p.node for p in store.proposals()] == ["n2"]
        [row] = store.audit_log(5)
        assert row["action"] == "approve" and row["outcome"].startswith("refused: the breaker")
    finally:
        store.close()
