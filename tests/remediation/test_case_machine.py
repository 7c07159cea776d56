"""The remediation case machine under random interleavings (hypothesis ``RuleBasedStateMachine``).

Sweeps that find a node FAIL or PASS, drains and resumes through the action service, repairs,
revalidations, forced resumes, a console killed (SIGKILL) between its intent and its outcome, a
restart that reconciles, and a second actor (another process) that holds the lease. After every step:

- no node returns to service without the passes its policy needs after its latest strike (unless an
  operator forced it, with a reason), nor with its strikes at the limit (escalated);
- every scheduler effect had its intent row written before it, by the process that made the effect,
  which held the lease at that moment (at most one actor holds the lease);
- nothing of this cluster is visible from another cluster: its database is refused to the other
  cluster's console, whose own database holds none of this one's cases.

The scheduler is the simulator's Slurm 22.05 (``console.sim.render.slurm``: the text of a real
slurmctld, its states on disk), run in process: hypothesis needs hundreds of steps, which the real
lab's scontrol round trips cannot give in time. The kill -9 between intent and effect on the real
slurmctld is tests/remediation/test_crash_reconcile.py and test_watch_crash.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from console.actions import ActionKind, ActionRequest, ActionService
from console.actions.caps import CapPolicy
from console.inventory import from_mapping
from console.inventory.model import Inventory
from console.model.findings import roll_up
from console.remediation import LeaseHeld, lease_holder
from console.remediation.guards import CaseError
from console.sim.render.slurm import load_state
from console.store import Store
from console.store.db import StoreError
from console.store.owner import ProcessOwner
from console.sweep.revalidation import record_outcomes
from tests.remediation.sim_slurm import CHECK, NODES, SimSlurm, failing, sim_cluster

pytestmark = pytest.mark.xdist_group("case-machine")

ACTED_ON = NODES[:2]  # two nodes: a case gets through its stages in a few dozen steps

PASSES, STRIKES = 2, 3


def _cluster(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "lifecycle": {"passes_required": PASSES, "max_strikes": STRIKES},
        "pools": [{"name": "gpu", "gpu_model": "MI300X", "nodes": "gpu[001-003]"}],
    }


OTHER_ACTOR = """
import sys
from console.store import Store
from console.remediation.lease import release, try_take
store = Store(sys.argv[1])
taken, other = try_take(store, "watch", "other-operator", 3600.0)
print("held" if other is None else "refused", flush=True)
sys.stdin.read()
release(store)
"""


class CaseMachine(RuleBasedStateMachine):
    """One cluster's console (and its crashes, restarts and a rival actor) against the simulated Slurm."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="case-machine-"))
        self.db = self.dir / "a.sqlite"
        self.witness = self.dir / "witness.jsonl"
        self.inventory: Inventory = from_mapping(_cluster("lab-a"), str(self.dir / "a.toml"))
        self.spec = sim_cluster("lab-a")
        self.store = Store(self.db, self.inventory)
        self.service = self._service(self.store)
        # Cluster B: same pool and node names, its own database; its gpu001 failed once.
        self.inventory_b = from_mapping(_cluster("lab-b"), str(self.dir / "b.toml"))
        self.store_b = Store(self.dir / "b.sqlite", self.inventory_b)
        self._record(self.store_b, "gpu001", fail=True)
        self.other: subprocess.Popen[str] | None = None
        # The model: what the test did, in its own words.
        self.seq = 0
        self.last_fail: dict[str, int] = {}
        self.strikes: dict[str, int] = dict.fromkeys(NODES, 0)
        self.failing: dict[str, bool] = dict.fromkeys(NODES, False)
        self.passes: dict[str, list[int]] = {n: [] for n in NODES}
        self.held_for_fail: dict[str, bool] = dict.fromkeys(NODES, False)
        self.seen_effects = 0

    def _service(self, store: Store, crash: str | None = None) -> ActionService:
        runner = SimSlurm(self.spec, self.dir / "slurm", self.db, self.witness, crash)
        caps = CapPolicy(fixed=len(NODES) - 1)
        return ActionService(self.inventory, store, runner, caps=caps, user="ops", holder="console")

    def _record(self, store: Store, node: str, *, fail: bool, origin: str = "sweep") -> int:
        sweep = store.start_sweep("standard", str(store.path.with_suffix(".toml")), node, origin=origin)
        verdict = roll_up(node, [failing(node)]) if fail else roll_up(node, [], passed={CHECK: 1})
        store.record_node(sweep, "gpu", verdict, {})
        store.finish_sweep(sweep, "done", {})
        return sweep

    def _note_sweep(self, node: str, fail: bool) -> None:
        self.seq += 1
        if fail:
            if not self.failing[node]:
                self.strikes[node] += 1
            self.last_fail[node] = self.seq
        self.failing[node] = fail

    def _other_alive(self) -> bool:
        return self.other is not None and self.other.poll() is None

    def _act(self, request: ActionRequest) -> str:
        async def go() -> str:
            await self.service.refresh(request)
            plan = self.service.plan(request)
            if plan.refused:
                return f"refused: {plan.refused}"
            return (await self.service.execute(plan)).outcome

        try:
            said = asyncio.run(go())
        except LeaseHeld as exc:
            assert self._other_alive(), f"LeaseHeld without a live rival: {exc}"
            event("lease held by the rival: nothing done")
            return "lease held"
        assert not self._other_alive() or said.startswith("refused"), f"acted while another held the lease: {said}"
        event(f"{request.kind.value}: {'refused' if said.startswith('refused') else 'carried out'}")
        return said

    # rules ----------------------------------------------------------------------------------------

    @rule(node=st.sampled_from(ACTED_ON), fail=st.booleans())
    def sweep(self, node: str, fail: bool) -> None:
        """A sweep (or watch's) judges the node: FAIL (the link is down again) or PASS."""
        self._record(self.store, node, fail=fail)
        self._note_sweep(node, fail)

    @rule(node=st.sampled_from(ACTED_ON))
    def drain(self, node: str) -> None:
        """Drain the node for its newest sweep when that one failed it (else for maintenance)."""
        newest = self.store.node_history(node, 1)
        sweep = newest[0]["sweep_id"] if newest and newest[0]["status"] == "FAIL" else None
        self._act(ActionRequest(ActionKind.DRAIN, (node,), reason="link down", sweep_id=sweep))

    @rule(node=st.sampled_from(ACTED_ON))
    def fault_found_and_drained(self, node: str) -> None:
        """What ``watch --auto`` does: a sweep finds the link down, and the node is drained for it."""
        failed = self._record(self.store, node, fail=True, origin="watch")
        self._note_sweep(node, True)
        self._act(ActionRequest(ActionKind.DRAIN, (node,), reason="watch: FAIL xgmi", sweep_id=failed))

    @rule(node=st.sampled_from(ACTED_ON))
    def repaired(self, node: str) -> None:
        self._act(ActionRequest(ActionKind.REPAIRED, (node,), reason="reseated the bridge"))

    @rule(node=st.sampled_from(ACTED_ON), fail=st.booleans())
    def revalidate(self, node: str, fail: bool) -> None:
        """A revalidation sweep of the node and its outcome on the case (the path ``revalidate`` takes)."""
        sweep = self._record(self.store, node, fail=fail, origin="revalidate")
        verdict = roll_up(node, [failing(node)]) if fail else roll_up(node, [], passed={CHECK: 1})
        case = self.store.case(node)
        struck_before = self.failing[node]
        self._note_sweep(node, fail)
        try:
            ((line, _),) = record_outcomes(
                self.store, {node: verdict}, sweep, self.inventory.policy_of(node), [node], user="ops"
            ).values()
        except CaseError:
            assert case is None or case.stage.value != "revalidating"
            return
        if line.startswith("strike") and struck_before:
            self.strikes[node] += 1  # a failed revalidation is a strike even when the link never came back
        if line.startswith("pass ("):
            self.passes[node].append(self.seq)

    @rule(node=st.sampled_from(ACTED_ON), force=st.booleans())
    def resume(self, node: str, force: bool) -> None:
        reason = "vendor replaced the board" if force else ""
        self._act(ActionRequest(ActionKind.RESUME, (node,), force=force, reason=reason))

    @rule(
        node=st.sampled_from(ACTED_ON),
        kind=st.sampled_from(("drain", "resume")),
        when=st.sampled_from(("before", "after")),
    )
    def killed_mid_action(self, node: str, kind: str, when: str) -> None:
        """A console process SIGKILLed at the scontrol update of its drain or resume, before or after it acts."""
        newest = self.store.node_history(node, 1)
        sweep = newest[0]["sweep_id"] if newest and newest[0]["status"] == "FAIL" else None
        request = (
            ActionRequest(ActionKind.DRAIN, (node,), reason="link down", sweep_id=sweep)
            if kind == "drain"
            else ActionRequest(ActionKind.RESUME, (node,))
        )
        # SQLite's connections must not cross a fork: the parent's are closed first, and opened again after.
        self.store.close()
        self.store_b.close()
        pid = os.fork()
        if pid == 0:  # the child: a console of its own, killed in the middle
            try:
                store = Store(self.db, self.inventory)
                service = self._service(store, crash=when)

                async def go() -> None:
                    await service.refresh(request)
                    plan = service.plan(request)
                    if not plan.refused:
                        await service.execute(plan)

                asyncio.run(go())
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        self.store = Store(self.db, self.inventory)
        self.store_b = Store(self.dir / "b.sqlite", self.inventory_b)
        self.service = self._service(self.store)

    @rule()
    def restart(self) -> None:
        """The next console starts: it reads Slurm, which reconciles every orphaned intent first."""
        self.store.close()
        self.store = Store(self.db, self.inventory)
        self.service = self._service(self.store)
        asyncio.run(self.service.node_states())
        orphans = [
            r["id"]
            for r in self.store.conn.execute("SELECT id, owner FROM audit WHERE finished_at IS NULL")
            if (o := ProcessOwner.from_text(r["owner"])) is not None and o.alive() is False
        ]
        assert not orphans, f"intents left unreconciled after a start: {orphans}"

    @precondition(lambda self: not self._other_alive())
    @rule()
    def rival_takes_the_lease(self) -> None:
        """Another operator's watch (a process of its own) takes the lease."""
        self.other = subprocess.Popen(
            [sys.executable, "-c", OTHER_ACTOR, str(self.db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.other.stdout is not None
        said = self.other.stdout.readline().strip()
        assert said == "held", f"nobody alive held the lease, yet the rival was refused: {said}"

    @precondition(lambda self: self._other_alive())
    @rule(how=st.sampled_from(("kill", "release")))
    def rival_goes(self, how: str) -> None:
        assert self.other is not None
        if how == "kill":
            self.other.kill()
        else:
            assert self.other.stdin is not None
            self.other.stdin.close()
        self.other.wait(timeout=30)
        self.other = None

    # invariants -----------------------------------------------------------------------------------

    @invariant()
    def every_effect_was_intended_by_the_lease_holder_and_allowed(self) -> None:
        if not self.witness.exists():
            return
        lines = self.witness.read_text().splitlines()
        for line in lines[self.seen_effects :]:
            effect = json.loads(line)
            node, state = effect["node"], effect["state"]
            event(f"scheduler effect: {state}")  # --hypothesis-show-statistics: how much each run did
            assert effect["intents"], f"{state} of {node} without an intent row written before it: {effect}"
            assert effect["lease"] == [effect["pid"]], f"{state} of {node} by pid {effect['pid']}, lease: {effect}"
            if state == "DRAIN":
                cited = effect["intents"][-1]["inputs"].get("sweep_id")
                if cited is not None and self._drained(node):
                    self.held_for_fail[node] = True
            elif state == "RESUME":
                inputs = effect["intents"][-1]["inputs"]
                forced = bool(inputs.get("force")) and bool(inputs.get("reason"))
                event(f"resume of a node held for a failure: {'forced' if forced else 'after its passes'}")
                if self.held_for_fail[node] and not forced:  # every attempt counts, whether it took effect or not
                    struck = self.last_fail.get(node, 0)
                    after = [p for p in self.passes[node] if p > struck]
                    assert len(after) >= PASSES, f"{node} returned with {len(after)} passes after its latest strike"
                    assert self.strikes[node] < STRIKES, f"{node} returned with {self.strikes[node]} strikes"
                self.held_for_fail[node] = self.held_for_fail[node] and self._drained(node)
        self.seen_effects = len(lines)

    def _drained(self, node: str) -> bool:
        state = load_state(self.dir / "slurm").nodes.get(node)
        return state is not None and state.drain

    @invariant()
    def one_lease_holder_at_most(self) -> None:
        holder = lease_holder(self.store)
        if holder is None:
            return
        alive = holder.owner.alive()
        rival = self.other.pid if self._other_alive() and self.other is not None else None
        # Held by the rival, or left by a process that is gone (taken over by the next actor): never two.
        assert alive is False or holder.owner.pid in (rival, os.getpid()), holder.describe()

    @invariant()
    def another_cluster_sees_nothing_of_this_one(self) -> None:
        with pytest.raises(StoreError, match="lab-a"):
            Store(self.db, self.inventory_b, check=False)
        assert self.store_b.cases() == [] and self.store_b.proposals() == []
        assert self.store_b.audit_log(5) == []

    def teardown(self) -> None:
        if self.other is not None:
            self.other.kill()
            self.other.wait(timeout=30)
        self.store.close()
        self.store_b.close()
        shutil.rmtree(self.dir, ignore_errors=True)


CaseMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("CASE_MACHINE_EXAMPLES", "20")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_case_machine = CaseMachine.TestCase
