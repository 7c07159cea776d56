"""Flapping is escalated (issue 33, item 5): a strike is any new FAIL of a check on a node within its pool's
window, whoever found it (a sweep, watch, a revalidation); the limit escalates; one pass never returns an
escalated node; the remediation view shows each node's strike history.

The issue measured it: a link that fails one sweep in three was drained and returned 3 times in 2
minutes, "strikes 0/3" each time. Drains and resumes go through the action service to the simulator's
Slurm (in process, ``tests/remediation/sim_slurm.py``); sweeps are recorded as the engine records them.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from console.actions import ActionKind, ActionRequest, ActionService
from console.actions.caps import CapPolicy
from console.actions.remediation import remediation_view
from console.inventory import from_mapping
from console.inventory.model import Inventory
from console.model.findings import roll_up
from console.sim.render.slurm import load_state
from console.store import Store
from console.store.lifecycle import Stage
from console.sweep.revalidation import record_outcomes
from tests.remediation.sim_slurm import CHECK, SimSlurm, failing, sim_cluster

NODE = "gpu002"


class Loop:
    """One cluster's console: the history database, the action service and the simulated Slurm."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        data = {"name": "lab", "pools": [{"name": "gpu", "gpu_model": "MI300X", "nodes": "gpu[001-003]"}]}
        self.inventory: Inventory = from_mapping(data, str(tmp_path / "lab.toml"))
        self.store = Store(tmp_path / "h.sqlite", self.inventory)
        runner = SimSlurm(sim_cluster("lab"), tmp_path / "slurm", tmp_path / "h.sqlite", tmp_path / "witness.jsonl")
        self.service = ActionService(self.inventory, self.store, runner, caps=CapPolicy(fixed=2), user="ops")

    def sweep(self, fail: bool, origin: str = "watch") -> int:
        sweep = self.store.start_sweep("standard", str(self.dir / "lab.toml"), NODE, origin=origin)
        verdict = roll_up(NODE, [failing(NODE)]) if fail else roll_up(NODE, [], passed={CHECK: 1})
        self.store.record_node(sweep, "gpu", verdict, {})
        self.store.finish_sweep(sweep, "done", {})
        return sweep

    def act(self, kind: ActionKind, **fields: object) -> str:
        async def go() -> str:
            request = ActionRequest(kind, (NODE,), **fields)  # type: ignore[arg-type]
            await self.service.refresh(request)
            plan = self.service.plan(request)
            if plan.refused:
                return f"refused: {plan.refused}"
            return (await self.service.execute(plan)).outcome

        return asyncio.run(go())

    def revalidate(self, fail: bool) -> str:
        sweep = self.sweep(fail, origin="revalidate")
        verdict = roll_up(NODE, [failing(NODE)]) if fail else roll_up(NODE, [], passed={CHECK: 1})
        policy = self.inventory.policy_of(NODE)
        [(line, _)] = record_outcomes(self.store, {NODE: verdict}, sweep, policy, [NODE], user="ops").values()
        return line

    def drained(self) -> bool:
        state = load_state(self.dir / "slurm").nodes.get(NODE)
        return state is not None and state.drain

    def round_trip(self) -> str:
        """The link fails a sweep: drained for it, repaired, revalidated twice, resumed. The resume's outcome."""
        failed = self.sweep(fail=True)
        self.act(ActionKind.DRAIN, reason="watch: FAIL xgmi", sweep_id=failed)
        assert self.drained()
        if self.store.case(NODE) is not None:  # none open: it opened escalated, there is nothing to repair
            self.act(ActionKind.REPAIRED, reason="reseated the bridge")
            self.revalidate(fail=False)
            self.revalidate(fail=False)
        return self.act(ActionKind.RESUME)


@pytest.fixture
def loop(tmp_path: Path) -> Loop:
    made = Loop(tmp_path)
    yield made
    made.store.close()


def test_a_link_that_fails_one_sweep_in_three_is_escalated_on_its_third_strike(loop: Loop) -> None:
    loop.sweep(fail=False)
    assert loop.round_trip().startswith("resumed"), "the first failure is repaired and returns"
    loop.sweep(fail=False)
    assert loop.round_trip().startswith("resumed"), "the second too (2 strikes of 3)"
    loop.sweep(fail=False)
    said = loop.round_trip()
    assert said.startswith("refused") and "escalated (rma)" in said, said
    assert loop.drained(), "a node at its strike limit stays out of service"
    [*_, newest] = loop.store.cases(NODE)
    assert newest.stage is Stage.ESCALATED and newest.action is not None and newest.action.value == "rma"
    assert "strike 3 of 3 within 168 h: escalated" in loop.store.case_steps(newest.id)[-1].note

    view = remediation_view(loop.store, loop.inventory, time.time())
    [row] = [r for r in view.rows if r.node == NODE]
    assert row.strikes == 3 and [s.origin for s in row.strike_history] == ["watch"] * 3
    assert all(s.checks == (CHECK,) for s in row.strike_history)
    # Forced back with the vendor's word, audited: the only way out of an escalation.
    said = loop.act(ActionKind.RESUME, force=True, reason="vendor replaced the XGMI bridge")
    assert said.startswith("resumed"), said


def test_a_fail_found_by_a_sweep_meanwhile_puts_the_passes_back(loop: Loop) -> None:
    failed = loop.sweep(fail=True)
    loop.act(ActionKind.DRAIN, reason="watch: FAIL xgmi", sweep_id=failed)
    loop.act(ActionKind.REPAIRED, reason="reseated the bridge")
    assert loop.revalidate(fail=False).startswith("pass")
    loop.sweep(fail=True, origin="sweep")  # an operator's sweep: the link is down again
    assert loop.revalidate(fail=False).startswith("pass")
    case = loop.store.case(NODE)
    assert case is not None and case.passes == 2
    said = loop.act(ActionKind.RESUME)
    assert said.startswith("refused") and "after its passes began" in said, said
    assert loop.drained()
    loop.revalidate(fail=False)
    said = loop.act(ActionKind.RESUME)
    assert said.startswith("resumed"), said


def test_a_fail_that_persists_across_sweeps_is_one_strike_and_a_pass_in_between_makes_two(loop: Loop) -> None:
    from console.remediation import strike_history

    window = loop.inventory.policy_of(NODE).window_s
    first = loop.sweep(fail=True)
    loop.sweep(fail=True)
    loop.sweep(fail=True)
    assert [s.sweep_id for s in strike_history(loop.store, NODE, window)] == [first]
    loop.sweep(fail=False)
    again = loop.sweep(fail=True)
    assert [s.sweep_id for s in strike_history(loop.store, NODE, window)] == [first, again]
    assert strike_history(loop.store, NODE, 0.0) == [], "outside the window nothing counts"
