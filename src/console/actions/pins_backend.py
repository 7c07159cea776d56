"""The pins backend: a pool's stored pin, the package holds on its nodes, and the way back to its last
accepted stack (``pin``, ``enforce-pin``, ``rollback``). ``ActionService`` is its facade: it routes these
kinds here and keeps the audit's one write-ahead path, the lease and read-only mode.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from console.actions.acceptance import (
    DUE,
    NOT_ACCEPTABLE,
    acceptance_states,
    images_to_restore,
    last_accepted,
    pin_fields_of,
    with_images,
)
from console.actions.holds import OS_RELEASE_ARGV, hold_argv, manager_for
from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult
from console.actions.pin import fingerprint, pin_changes
from console.actions.planning import explain, outcome, plan_enforce, plan_pin, reason_missing, recheck, refused
from console.actions.rollback import plan_rollback
from console.actions.runner import RunOutput
from console.inventory.hostlist import fold
from console.inventory.model import StackPin
from console.probes.base import ParseError
from console.probes.host import parse_os_release
from console.store.pins import pin_from_fields

if TYPE_CHECKING:
    from console.actions.service import ActionService

PIN_KINDS = frozenset({ActionKind.PIN, ActionKind.ENFORCE_PIN, ActionKind.ROLLBACK})


class PinsBackend:
    """Plans and carries out pins, holds and rollbacks for ``service`` (its store, runner and audit).

    ``unreadable`` is the service's node -> why its OS could not be read, shared with the plans.
    """

    def __init__(self, service: ActionService, unreadable: dict[str, str]) -> None:
        self.service = service
        self.os_ids: dict[str, str] = {}  # node -> os-release ID, as last read
        self.unreadable = unreadable

    async def refresh(self, targets: tuple[str, ...]) -> None:
        """Read the targets' OS (which package manager holds their packages)."""
        for node, os_id, out in await asyncio.gather(*(self.os_id(t) for t in targets)):
            if os_id:
                self.os_ids[node] = os_id
                self.unreadable.pop(node, None)
            else:
                self.unreadable[node] = f"cannot read /etc/os-release: {out.message()}"

    async def os_id(self, node: str) -> tuple[str, str | None, RunOutput]:
        """The node's os-release ``ID`` (None when unreadable) and the command's output."""
        out = await self.service.runner.run(node, OS_RELEASE_ARGV, timeout_s=30)
        try:
            os_id = parse_os_release(out.stdout).id if out.ok else None
        except ParseError:
            os_id = None
        return node, os_id, out

    def stack_of(self, node: str) -> tuple[dict[str, str], str]:
        """The node's stack from the live sweep facts, else from its newest stored verdict."""
        facts = self.service.facts.get(node)
        if facts is not None and facts.stack:
            return dict(facts.stack), "the current sweep"
        rows = self.service.store.node_history(node, 1)
        if rows:
            return json.loads(rows[0]["stack"] or "{}"), f"sweep {rows[0]['sweep_id']}"
        return {}, "nowhere"

    # planning -------------------------------------------------------------------------------------

    def plan(self, request: ActionRequest) -> ActionPlan:
        """The dry run of a pin, an enforce (its targets already resolved) or a rollback."""
        if request.kind is ActionKind.PIN:
            return self.plan_pin(request)
        if request.kind is ActionKind.ROLLBACK:
            return self.plan_rollback(request)[0]
        pins = self.service.pins()
        pool_of = {n.name: n.pool for n in self.service.inventory.nodes}
        return self.plan_holds(request, {t: pins.get(pool_of.get(t, ""), StackPin()) for t in request.targets})

    def plan_holds(self, request: ActionRequest, node_pins: Mapping[str, StackPin]) -> ActionPlan:
        """The package holds of ``request.targets``, each on its pin, skipping nodes off it."""
        stacks = {t: self.stack_of(t)[0] for t in request.targets}
        os_ids = {t: self.os_ids.get(t) or stacks[t].get("os") for t in request.targets}
        return plan_enforce(request, node_pins, os_ids, self.unreadable, stacks)

    def plan_rollback(self, request: ActionRequest) -> tuple[ActionPlan, dict[str, str], dict[str, str]]:
        """The rollback plan, the pin fields it stores and the images it sets back (``console.actions.rollback``)."""
        missing = reason_missing(request)
        if missing is not None:
            return missing, {}, {}
        store, inventory, pool = self.service.store, self.service.inventory, request.pool
        if not pool or pool not in inventory.pools:
            return refused(request, f"no such pool: {pool or '(none given)'}"), {}, {}
        record = last_accepted(store, pool, request.workload, inventory)
        if record is None:
            what = request.workload or "no workload"
            return refused(request, f"{what} was never accepted on pool {pool}: nothing to roll back to"), {}, {}
        current = self.service.pins()[pool]
        new = pin_from_fields({**current.pinned_fields(), **pin_fields_of(record.stack)})
        images = images_to_restore(store, inventory, pool)
        members = tuple(n.name for n in inventory.nodes if n.pool == pool)
        holds = self.plan_holds(replace(request, targets=members), dict.fromkeys(members, new))
        due = [
            s.workload
            for s in acceptance_states(store, inventory)
            if s.pool == pool and s.settled in (DUE, *NOT_ACCEPTABLE)
        ]
        plan = plan_rollback(
            holds, pool=pool, record=record, pin_changes=pin_changes(current, new), images=images, due=due
        )
        return plan, new.pinned_fields(), {name: accepted for name, (_, accepted) in images.items()}

    def plan_pin(self, request: ActionRequest) -> ActionPlan:
        """Make ``request.from_node``'s stack the pin of its pool."""
        node = request.from_node
        if not node:
            return refused(request, "pin needs --from-node: the known-good node whose stack becomes the pin")
        pool_of = {n.name: n.pool for n in self.service.inventory.nodes}
        pool = request.pool or pool_of.get(node)
        if pool is None or pool not in self.service.inventory.pools:
            return refused(request, f"no such pool: {pool or '(none given)'}")
        if pool_of.get(node) != pool:
            return refused(request, f"{node} is not a node of pool {pool}")
        stack, source = self.stack_of(node)
        new = fingerprint(stack, request.image_digest)
        peers = [self.stack_of(n)[0] for n, p in pool_of.items() if p == pool and n != node]
        return plan_pin(request, pool=pool, new=new, current=self.service.pins()[pool], source=source, peers=peers)

    # executing ------------------------------------------------------------------------------------

    async def execute(self, plan: ActionPlan) -> ActionResult:
        """Carry out a confirmed pin, enforce or rollback plan (under the service's lease), audited."""
        if plan.request.kind is ActionKind.PIN:
            return self._execute_pin(plan)
        if plan.request.kind is ActionKind.ROLLBACK:
            return await self._execute_rollback(plan)
        return await self._execute_enforce(plan)

    def _execute_pin(self, plan: ActionPlan) -> ActionResult:
        service = self.service
        fresh = self.plan_pin(plan.request)
        if fresh.refused:
            return service.refuse(fresh, fresh.refused)
        pool, node = fresh.request.pool or "", fresh.request.from_node or ""
        fields = fingerprint(self.stack_of(node)[0], plan.request.image_digest).pinned_fields()
        with service.audited(fresh, [], pinned=fields) as entry:
            service.store.set_pin(pool, fields, node, service.user)
            done = f"pinned pool {pool} to the stack of {node} ({len(fields)} fields)"
            return service.record(entry, [], ActionResult(True, done, {node: done}))

    async def _execute_rollback(self, plan: ActionPlan) -> ActionResult:
        service, store = self.service, self.service.store
        fresh, fields, images = self.plan_rollback(plan.request)
        why = recheck(plan, fresh)
        if why is not None:
            return service.refuse(fresh, why)
        pool = fresh.request.pool or ""
        per_target = dict(fresh.decisions)
        outputs: list[RunOutput] = []
        with service.audited(fresh, fresh.steps, pinned=fields, images=images) as entry:
            # The pin and images first: what every later sweep judges and runs against.
            store.set_pin(pool, fields, None, service.user)
            for name, image in images.items():
                store.set_image_override(name, pool, image, user=service.user, audit_id=entry.id)
            if images and service.engine is not None:
                # This console's engine was built before: its next framework run is in the accepted image too (its
                # worker processes get each node's pool from it with the node: ``console.service.worker``).
                service.engine.inventory = with_images(service.engine.inventory, store.image_overrides())
            await self._hold(fresh, per_target, outputs)
            failed = [o for o in outputs if not o.ok and o.argv != OS_RELEASE_ARGV]
            done = f"pool {pool} pinned back to its accepted stack ({len(fields)} fields)"
            if images:
                done += f", images of {', '.join(sorted(images))} set back"
            held = fold(fresh.acting_on)
            # The pin and images are set whatever the holds do: the outcome says both.
            text = done + (f"; holds failed: {explain(failed[0])}" if failed else f"; held {held}" if held else "")
            return service.record(entry, outputs, ActionResult(not failed, text, per_target))

    async def _execute_enforce(self, plan: ActionPlan) -> ActionResult:
        per_target = dict(plan.decisions)
        outputs: list[RunOutput] = []
        with self.service.audited(plan, plan.steps) as entry:
            await self._hold(plan, per_target, outputs)
            failed = [o for o in outputs if not o.ok and o.argv != OS_RELEASE_ARGV]
            # Targets the cap left out were asked for and not done: the result says so (the CLI exits 1).
            result = ActionResult(not failed and not plan.capped, outcome(plan.request.kind, plan, failed), per_target)
            return self.service.record(entry, outputs, result)

    async def _hold(self, plan: ActionPlan, per_target: dict[str, str], outputs: list[RunOutput]) -> None:
        """Run the plan's hold commands, each after confirming the node's OS still takes it."""
        for step in plan.steps:
            target = step.targets[0]
            # The hold command was chosen for the OS seen when planning: confirm it before running it.
            _, os_id, probe = await self.os_id(target)
            outputs.append(probe)
            manager = manager_for(os_id)
            if manager is None or hold_argv(manager, [])[0] != step.argv[0]:
                why = (
                    f"cannot read /etc/os-release: {probe.message()}"
                    if not probe.ok
                    else f"{target} now runs {os_id or 'an unknown OS'}, not one for {step.argv[0]}"
                )
                outputs.append(RunOutput(target, step.argv, None, "", "", why))
                per_target[target] = f"failed: {why}"
                continue
            out = await self.service.runner.run(step.where, step.argv)
            outputs.append(out)
            per_target[target] = f"held: {' '.join(step.argv[2:])}" if out.ok else f"failed: {explain(out)}"
