"""ActionService: the one door through which the CLI and the TUI act on nodes.

``plan`` is a dry run from what the service last read (``refresh``/``node_states``): exact commands,
ownership, caps and idempotence, with no side effect. ``execute`` reads the scheduler again and
re-plans before running anything: it never acts on a node the shown plan did not act on, it refuses
when the fresh state would break a cap or ownership rule, and it skips nodes that meanwhile reached
the wanted state. Every execution, refused or not, is in the audit log, written ahead: the intent
(who, targets, inputs, the exact commands) is committed before the first command runs, and the
outcome with the commands' output updates that row after the last.

The service is the facade of its backends: pins, holds and rollbacks are ``PinsBackend``'s
(``console.actions.pins_backend``), a baseline ``console.actions.baseline``'s, the remediation loop's
steps ``console.actions.casework``'s; Slurm and Kubernetes are still planned and run here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from console.actions import kube, slurm
from console.actions.baseline import execute_accept, plan_accept
from console.actions.caps import CapPolicy
from console.actions.casework import (
    engine_problem,
    execute_approve,
    plan_approve,
    plan_revalidate,
    refresh_approve,
    revalidation_result,
)
from console.actions.catalogue import DANGEROUS
from console.actions.holds import OS_RELEASE_ARGV
from console.actions.model import (
    CASE_KINDS,
    HOLD_KINDS,
    KUBE_KINDS,
    SLURM_KINDS,
    ActionKind,
    ActionPlan,
    ActionRequest,
    ActionResult,
    Step,
)
from console.actions.pin import DriftRow, drift_report
from console.actions.pins_backend import PIN_KINDS, PinsBackend
from console.actions.planning import (
    KUBERNETES,
    PAST,
    READ_ONLY,
    explain,
    outcome,
    plan_case,
    plan_kube,
    plan_slurm,
    recheck,
    refused,
)
from console.actions.runner import LOCAL, CommandRunner, RunOutput, runner_for
from console.actions.slurm_state import SlurmNode
from console.checks import CheckPack, NodeFacts
from console.inventory.hostlist import fold
from console.inventory.model import Inventory, SlurmConfig, SshConfig, StackPin
from console.model.findings import Remedy, Status, worst_action
from console.remediation.cases import acknowledge_repair, close_case, drain_failed, open_case, returned
from console.remediation.guards import return_refusal
from console.remediation.lease import DEFAULT_TTL_S, taken_lease
from console.remediation.reconcile import BACK, OUT, reconcile_intents, record_node_drains
from console.store import AuditEntry, Store, current_user
from console.store.lifecycle import PHYSICAL, Case, Stage
from console.store.pins import effective_pins
from console.sweep.engine import SweepEngine
from console.sweep.partner import choose_partner
from console.sweep.revalidation import Revalidation, revalidate_by_policy

_SLURM = "slurm"
# Taking nodes out of service, per backend: they open (or go on with) a remediation case.
OUT_KINDS = frozenset({ActionKind.DRAIN, ActionKind.CORDON})
# A Slurm action on nodes of Kubernetes pools (the cluster file's ``scheduler``) is carried out as this.
ON_KUBERNETES = {
    ActionKind.DRAIN: ActionKind.CORDON,
    ActionKind.RESUME: ActionKind.UNCORDON,
    ActionKind.UNDRAIN: ActionKind.UNCORDON,
}
_BLAMED = frozenset({Status.FAIL, Status.UNKNOWN, Status.WARN})  # as the drain ledger blames a node
NO_INVENTORY_POOL = "cluster"  # the one pool of a Slurm cluster used without an inventory


# What this service plans and carries out; the catalogue's other actions only write the history database.
SERVICE_KINDS = SLURM_KINDS | KUBE_KINDS | CASE_KINDS | {ActionKind.PIN, ActionKind.ENFORCE_PIN, ActionKind.ROLLBACK}
# The remediation loop's steps that sweep (revalidate) or stand for another action (approve): console.actions.casework.
SERVICE_KINDS |= {ActionKind.REVALIDATE, ActionKind.APPROVE}
# Accepting a sweep as its pools' baseline (console.actions.baseline), engine-side like every other action.
SERVICE_KINDS |= {ActionKind.ACCEPT}
NOT_HERE = {ActionKind.UNPIN: "pin --clear"}


def bare_inventory() -> Inventory:
    """No cluster file: Slurm commands run on this host with its SLURM_CONF, every Slurm node is one pool."""
    return Inventory(name="local", ssh=SshConfig(), slurm=SlurmConfig(), pools={}, nodes=[])


class ActionService:
    """Plans and executes operator actions for one inventory, recording each in the store's audit log.

    ``facts`` (node -> ``NodeFacts``, e.g. ``SweepEngine.facts``) gives live stacks for pins and
    drift; without them the newest stored stack of a node is used. ``kube_api`` replaces the
    ``kubernetes`` client made from ``kubeconfig`` on first use. ``engine`` sweeps the nodes a
    revalidation asks for; without one, ``revalidate`` is refused.
    """

    def __init__(
        self,
        inventory: Inventory,
        store: Store,
        runner: CommandRunner | None = None,
        *,
        caps: CapPolicy | None = None,
        kube_api: kube.KubeNodeApi | None = None,
        kubeconfig: str | None = None,
        facts: Mapping[str, NodeFacts] | None = None,
        packs: Mapping[str, CheckPack] | None = None,
        read_only: bool = False,
        user: str | None = None,
        clock: Callable[[], float] = time.time,
        engine: SweepEngine | None = None,
        holder: str = "console",
        lease_wait_s: float = 0.0,
    ) -> None:
        self.inventory = inventory
        self.holder = holder  # who takes the lease to act: the command, or the console
        self.lease_wait_s = lease_wait_s
        self.engine = engine
        self.store = store
        self.runner = runner or runner_for(inventory if inventory.nodes or inventory.slurm.controller else None)
        self.caps = caps or CapPolicy()
        self.facts = facts if facts is not None else {}
        self.packs = packs or {}
        self.read_only = read_only
        self.user = user or current_user()
        self._clock = clock
        self._kube_api = kube_api
        self._kubeconfig = kubeconfig
        self._slurm: dict[str, SlurmNode] | None = None
        self._slurm_reader = 0
        self._kube_nodes: dict[str, dict[str, Any]] | None = None
        self._unreadable: dict[str, str] = {}  # "slurm"/"kubernetes"/node -> why the last read failed
        self.pins_backend = PinsBackend(self, self._unreadable)  # pins, holds and rollbacks

    # reading state --------------------------------------------------------------------------------

    @property
    def slurm_where(self) -> str:
        """Where Slurm commands run: the inventory's controller over SSH, else this host."""
        return self.inventory.slurm.controller or LOCAL

    @property
    def slurm_nodes(self) -> dict[str, SlurmNode] | None:
        """The scheduler's nodes as last read (None before the first read)."""
        return self._slurm

    async def node_states(self, nodes: Iterable[str] | None = None) -> dict[str, str]:
        """Scheduler state per node (``DRAINED by root: <reason>``, ``IDLE``...), read now.

        Without ``nodes``: the inventory's nodes, or every Slurm node when there is no inventory. When
        Slurm cannot be read, each asked node maps to ``UNKNOWN: <why>``.
        """
        wanted = list(nodes) if nodes is not None else [n.name for n in self.inventory.nodes]
        try:
            states = await self._read_slurm()
        except slurm.SlurmError as exc:
            return dict.fromkeys(wanted, f"UNKNOWN: {exc}")
        return {n: slurm.describe(states[n]) if n in states else "not a Slurm node" for n in wanted or states}

    async def refresh(self, request: ActionRequest) -> None:
        """Read what planning ``request`` needs: Slurm states, Kubernetes nodes or the targets' OS.

        Never raises for an unreachable scheduler or node: the next ``plan`` is refused (or skips the
        node) with the reason.
        """
        routed = self._route(request)
        if isinstance(routed, str):
            return
        request = routed
        if request.kind in KUBE_KINDS or (request.kind in CASE_KINDS and self._kube_targets(request.targets)):
            await self._refresh_kube()
        elif request.kind in SLURM_KINDS:
            try:
                await self._read_slurm()
            except slurm.SlurmError as exc:
                self._unreadable[_SLURM] = str(exc)
        elif request.kind is ActionKind.APPROVE:
            await refresh_approve(self, request)
        elif request.kind in HOLD_KINDS:
            await self.pins_backend.refresh(self._enforce_targets(request))

    async def _refresh_kube(self) -> None:
        try:
            self._kube_nodes = await self._read_kube()
            self._unreadable.pop(KUBERNETES, None)
        except Exception as exc:  # the client raises ApiException, urllib3 and config errors alike
            self._unreadable[KUBERNETES] = f"cannot read Kubernetes nodes: {_one_line(exc)}"

    def _route(self, request: ActionRequest) -> ActionRequest | str:
        """``request`` for the backend its targets' pools name; why not, when they span both."""
        if request.kind not in ON_KUBERNETES or not request.targets:
            return request
        on_kube = self._kube_targets(request.targets)
        if not on_kube:
            return request
        if len(on_kube) < len(request.targets):
            others = fold(t for t in request.targets if t not in on_kube)
            return f"{fold(on_kube)} are in Kubernetes pools and {others} are not: act on each backend's nodes apart"
        return replace(request, kind=ON_KUBERNETES[request.kind])

    def _kube_targets(self, targets: Iterable[str]) -> list[str]:
        """The targets whose pool the cluster file runs under Kubernetes."""
        scheduler = {n.name: self.inventory.pools[n.pool].scheduler for n in self.inventory.nodes}
        return [t for t in targets if scheduler.get(t) == KUBERNETES]

    def _records_of(self, *, kube_made: bool) -> set[str]:
        """Nodes with an open drain record made through Kubernetes (or through Slurm, whose reasons carry its tag)."""
        return {r.node for r in self.store.drains(open_only=True) if slurm.is_ours(r.reason) is not kube_made}

    def _end_cases(self, ended: Iterable[Any]) -> None:
        for record in ended:  # the case ends with the drain: the console never fights an operator
            close_case(self.store, record.node, Stage.ENDED, user=self.user, note=record.ended_by or "", audit_id=None)

    async def _read_slurm(self) -> dict[str, SlurmNode]:
        self._slurm, self._slurm_reader = await slurm.read_states(self.runner, self.slurm_where, self._slurm_reader)
        self._unreadable.pop(_SLURM, None)
        # Before anything is judged or planned on this state: what a killed console left half done.
        reconcile_intents(
            self.store,
            {n: (node.reason if node.draining_flag else None, slurm.describe(node)) for n, node in self._slurm.items()},
            actions=(OUT | BACK) - {"cordon", "uncordon"},
            backend="Slurm",
            user=self.user,
            policy_of=self.inventory.policy_of,
        )
        # What the node-side health check drained (it cannot write this database): audited once, when seen.
        record_node_drains(
            self.store,
            {
                n: (node.reason, node.reason_user, node.reason_time, slurm.describe(node))
                for n, node in self._slurm.items()
                if node.draining_flag
            },
            user=self.user,
        )
        # A node resumed (or drained again) outside the console since its drain: the console's record ends.
        # Records of cordons are Kubernetes' to judge, even where Slurm lists a node of the same name.
        cordoned = self._records_of(kube_made=True)
        ended = self.store.reconcile_drains(
            {
                name: (node.reason if node.draining_flag else None, node.state)
                for name, node in self._slurm.items()
                if name not in cordoned
            }
        )
        self._end_cases(ended)
        return self._slurm

    def _owned(self, states: Mapping[str, SlurmNode] | None) -> frozenset[str]:
        """Nodes the console drained (its open drain records) that Slurm shows drained with the reason it set."""
        if states is None:
            return frozenset()
        return frozenset(
            record.node
            for record in self.store.drains(open_only=True)
            if record.node in states
            and states[record.node].draining_flag
            and states[record.node].reason == record.reason
        )

    def _kube(self) -> kube.KubeNodeApi:
        if self._kube_api is None:
            self._kube_api = kube.KubernetesClientApi(self._kubeconfig)
        return self._kube_api

    async def _read_kube(self) -> dict[str, dict[str, Any]]:
        items = await asyncio.to_thread(self._kube().list_nodes)
        nodes = {str(item.get("metadata", {}).get("name")): item for item in items}
        # An operator's uncordon (or removal of the console's taint) ends the console's record and case,
        # as a resume outside the console does on Slurm; what the console set and is left stays its own.
        reconcile_intents(
            self.store,
            {n: (kube.held_reason(obj), kube.describe_node(obj)) for n, obj in nodes.items()},
            actions=frozenset({"cordon", "uncordon"}),
            backend="Kubernetes",
            user=self.user,
            policy_of=self.inventory.policy_of,
        )
        made = self._records_of(kube_made=True)
        ended = self.store.reconcile_drains(
            {n: (kube.held_reason(obj), kube.describe_node(obj)) for n, obj in nodes.items() if n in made},
            released="no longer held out in Kubernetes (uncordoned or untainted outside the console)",
            again="cordoned again outside the console with another reason",
        )
        self._end_cases(ended)
        return nodes

    def pins(self) -> dict[str, StackPin]:
        """Every pool's effective pin (stored pins win over the inventory's)."""
        return effective_pins(self.inventory, self.store)

    def drift(self, nodes: Iterable[str] | None = None) -> list[DriftRow]:
        """Drift rows of ``nodes`` (default: every node with facts) against the effective pins."""
        wanted = set(nodes) if nodes is not None else set(self.facts)
        return drift_report([f for n, f in self.facts.items() if n in wanted], self.pins(), self.packs)

    # planning -------------------------------------------------------------------------------------

    def plan(self, request: ActionRequest) -> ActionPlan:
        """The dry run of ``request``: exact commands, where they run, caps, ownership, no side effect."""
        if self.read_only and request.kind in DANGEROUS:
            return refused(request, READ_ONLY)
        if request.kind not in SERVICE_KINDS:
            return refused(request, f"{request.kind.value} is not carried out here: {NOT_HERE[request.kind]}")
        if request.kind is ActionKind.ACCEPT:
            return plan_accept(request, self.store, running=self.engine is not None and self.engine.running)
        if request.kind in (ActionKind.PIN, ActionKind.ROLLBACK):
            return self.pins_backend.plan(request)
        if request.kind is ActionKind.APPROVE:
            return plan_approve(self, request)
        routed = self._route(request)
        if isinstance(routed, str):
            return refused(request, routed)
        if routed.kind is not request.kind:
            plan = self.plan(routed)
            said = f"{request.kind.value} on a Kubernetes pool is carried out as {routed.kind.value}"
            return replace(plan, notes=(said, *plan.notes))
        targets = self._enforce_targets(request)
        if not targets:
            return refused(request, "no target nodes")
        unknown = [t for t in targets if t not in {n.name for n in self.inventory.nodes}]
        if self.inventory.nodes and unknown:
            return refused(request, f"not in the inventory: {fold(unknown)}")
        request = replace(request, targets=targets)
        if request.kind in CASE_KINDS:
            return self._plan_case(request)
        if request.kind is ActionKind.REVALIDATE:
            cases = {t: self.store.case(t) for t in targets}
            return plan_revalidate(
                request, cases, self.inventory.policy_of, engine_problem(self.engine), self._partner_line
            )
        if request.kind in SLURM_KINDS:
            problem = self._unreadable.get(_SLURM)
            return refused(request, problem) if problem else self._plan_slurm(request, self._slurm)
        if request.kind in KUBE_KINDS:
            problem = self._unreadable.get(KUBERNETES)
            return refused(request, problem) if problem else self._plan_kube(request, self._kube_nodes)
        return self.pins_backend.plan(request)  # enforce-pin, on the targets resolved above

    def _pools(self, names: Iterable[str]) -> dict[str, list[str]]:
        """Pool -> members for the cap; without an inventory, every node the scheduler knows is one pool."""
        if not self.inventory.pools:
            return {NO_INVENTORY_POOL: list(names)}
        pools: dict[str, list[str]] = {}
        for node in self.inventory.nodes:
            pools.setdefault(node.pool, []).append(node.name)
        return pools

    def _plan_slurm(self, request: ActionRequest, states: dict[str, SlurmNode] | None) -> ActionPlan:
        pools = self._pools(states or request.targets)
        owned = self._owned(states)
        cases = self._cases_holding(request.targets) if request.kind is not ActionKind.DRAIN else {}
        return plan_slurm(
            request, states, where=self.slurm_where, caps=self.caps, pools=pools, owned=owned, cases=cases
        )

    def _cases_holding(self, nodes: Iterable[str]) -> dict[str, str]:
        """Nodes the remediation case machine does not let back yet (``guards.return_refusal``), and why."""
        held = {}
        for node in nodes:
            # Its pool's policy: the passes required may differ per pool.
            why = return_refusal(self.store, node, self.inventory.policy_of(node))
            if why is not None:
                held[node] = why
        return held

    def _plan_kube(self, request: ActionRequest, nodes: dict[str, dict[str, Any]] | None) -> ActionPlan:
        when, user = self._clock(), self.user
        if request.kind is ActionKind.CORDON:

            def requests(target: str, node: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
                stage, case_id = self._stage_after_cordon(target, request.sweep_id)
                return kube.cordon_patches(
                    node,
                    reason=request.reason,
                    user=user,
                    when=when,
                    sweep_id=request.sweep_id,
                    stage=stage,
                    case_id=case_id,
                )

            cases = {}
        else:

            def requests(target: str, node: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
                return kube.uncordon_patches(node, force=request.force)

            cases = self._cases_holding(request.targets)
        pools = self._pools(nodes or request.targets)
        return plan_kube(request, nodes, requests=requests, caps=self.caps, pools=pools, cases=cases)

    def _stage_after_cordon(self, node: str, sweep_id: int | None) -> tuple[str, int | None]:
        """The case stage a cordon leaves ``node`` in (as ``_step_cases`` will), and its open case's number."""
        case = self.store.case(node)
        blamed = [f for f in self.store.findings(sweep_id, node) if f.status in _BLAMED] if sweep_id else []
        if blamed:
            action = self._action_of(node, sweep_id)
            stage = Stage.AWAITING_REPAIR if action in PHYSICAL else Stage.DRAINED
            return stage.value, case.id if case else None
        if case is not None:
            return case.stage.value, case.id
        return kube.MAINTENANCE, None

    def _plan_case(self, request: ActionRequest) -> ActionPlan:
        """A case step; on Kubernetes nodes the console holds, also the patches that show the new stage."""
        plan = plan_case(request, {t: self.store.case(t) for t in request.targets})
        on_kube = self._kube_targets(plan.acting_on)
        if plan.refused or not on_kube:
            return plan
        problem = self._unreadable.get(KUBERNETES)
        if problem or self._kube_nodes is None:
            return refused(request, problem or "Kubernetes nodes not read yet")
        stage = Stage.REVALIDATING if request.kind is ActionKind.REPAIRED else Stage.ESCALATED
        steps, notes = list(plan.steps), list(plan.notes)
        for target in on_kube:
            node = self._kube_nodes.get(target)
            case = self.store.case(target)
            made = kube.stage_patches(
                node or {}, stage=stage.value, case_id=case.id if case else None, user=self.user, when=self._clock()
            )
            if node is None or not made:
                notes.append(f"{target}: the console holds no taint or condition there: only its case changes")
            steps += [Step(KUBERNETES, kube.request_argv(path, body), (target,)) for path, body in made]
        return replace(plan, steps=tuple(steps), commands=tuple(s.argv for s in steps), notes=tuple(notes))

    def _enforce_targets(self, request: ActionRequest) -> tuple[str, ...]:
        if request.kind not in HOLD_KINDS or request.targets or not request.pool:
            return request.targets
        return tuple(n.name for n in self.inventory.nodes if n.pool == request.pool)

    # executing ------------------------------------------------------------------------------------

    async def execute(self, plan: ActionPlan) -> ActionResult:
        """Run ``plan`` after checking it against the state read now; audit what happened.

        Under the history database's lease (``console.remediation.lease``): another live actor holding
        it raises ``LeaseHeld`` once ``lease_wait_s`` is over, and nothing runs.
        """
        if self.read_only and plan.request.kind in DANGEROUS:
            plan = refused(plan.request, READ_ONLY)
        if plan.refused:
            return self._audit(plan, ActionResult(False, f"refused: {plan.refused}", dict(plan.decisions)))
        async with self.lease():
            return await self._execute(plan)

    def lease(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The lease to act, taken as this service's holder (re-entrant within this process)."""
        return taken_lease(self.store, self.holder, self.user, ttl_s=DEFAULT_TTL_S, wait_s=self.lease_wait_s)

    async def _execute(self, plan: ActionPlan) -> ActionResult:
        kind = plan.request.kind
        if kind in SLURM_KINDS:
            return await self._execute_slurm(plan)
        if kind in KUBE_KINDS:
            return await self._execute_kube(plan)
        if kind in PIN_KINDS:
            return await self.pins_backend.execute(plan)
        if kind is ActionKind.ACCEPT:
            return execute_accept(self.store, plan, self.user)
        if kind in CASE_KINDS:
            return await self._execute_case(plan)
        if kind is ActionKind.REVALIDATE:
            return (await self.revalidate(plan))[0]
        if kind is ActionKind.APPROVE:
            return await execute_approve(self, plan)
        return self._stale(plan, f"{kind.value} is not carried out here")

    def _stale(self, fresh: ActionPlan, why: str) -> ActionResult:
        return self._audit(fresh, ActionResult(False, f"refused: {why}", dict(fresh.decisions)))

    def refuse(self, fresh: ActionPlan, why: str) -> ActionResult:
        """Refuse ``fresh`` at execution, audited (the state read now no longer allows the shown plan)."""
        return self._stale(fresh, why)

    def _partner_line(self, node: str) -> str:
        """The known-good partner a multinode revalidation of ``node`` would take, as the plan says it."""
        return choose_partner(self.store, self.inventory, node).plan_line()

    async def revalidate(self, plan: ActionPlan) -> tuple[ActionResult, Revalidation | None]:
        """Carry out a revalidation plan: the sweep and each case's pass or strike (``revalidate`` audits it).

        Also answers the sweep itself (None when refused): the CLI's exit code follows its verdicts.
        """
        if self.read_only:
            plan = refused(plan.request, READ_ONLY)
        if plan.refused:
            return self._audit(plan, ActionResult(False, f"refused: {plan.refused}", dict(plan.decisions))), None
        async with self.lease():
            return await self._revalidate(plan)

    async def _revalidate(self, plan: ActionPlan) -> tuple[ActionResult, Revalidation | None]:
        request, policy_of = plan.request, self.inventory.policy_of
        fresh = plan_revalidate(
            request,
            {t: self.store.case(t) for t in request.targets},
            policy_of,
            engine_problem(self.engine),
            self._partner_line,
        )
        why = recheck(plan, fresh)
        if why is not None or self.engine is None:
            return self._stale(fresh, why or "no sweep engine"), None
        nodes = [self.inventory.node(n) for n in fresh.acting_on]
        done = await revalidate_by_policy(self.engine, self.store, nodes, policy_of, request.level, user=self.user)
        result = revalidation_result(done.results, done.outcome, policy_of)
        # A strike moved a case back (or escalated it): on a Kubernetes pool the node's taint and
        # condition say so too. The sweep reaches no scheduler, so the service writes it here.
        shown = await self.show_stages(fresh.acting_on)
        if shown is not None:
            result = replace(
                result, ok=result.ok and shown.ok, outcome=f"{result.outcome}; kubernetes: {shown.outcome}"
            )
        return result, done

    async def _execute_slurm(self, plan: ActionPlan) -> ActionResult:
        try:
            fresh = self._plan_slurm(plan.request, await self._read_slurm())
        except slurm.SlurmError as exc:
            return self._audit(plan, ActionResult(False, f"failed: {exc}", dict(plan.decisions)))
        why = recheck(plan, fresh)
        if why is not None:
            return self._stale(fresh, why)
        kind = plan.request.kind
        claim = None
        if kind is ActionKind.DRAIN:  # claimed with the intent: a drain that happens is never unclaimed
            claim = self._out_intent(fresh, slurm.tag_reason(fresh.request.reason, fresh.request.sweep_id))
        with self._audited(fresh, fresh.steps, with_intent=claim) as entry:
            outputs = [await self.runner.run(s.where, s.argv) for s in fresh.steps]
            self._end_drains(kind, entry.id, fresh.steps, outputs)
            self._step_cases(fresh, entry.id, outputs)
            try:
                after = await self._read_slurm()
            except slurm.SlurmError:
                after = {}
            per_target = dict(fresh.decisions)
            for step, out in zip(fresh.steps, outputs, strict=True):
                for target in step.targets:
                    now = slurm.describe(after[target]) if target in after else "state not read"
                    done = f"{PAST[kind]}: now {now}"
                    per_target[target] = done if out.ok else f"failed: {explain(out)}"
            return self._finished(entry, fresh, outputs, per_target)

    def _end_drains(self, kind: ActionKind, audit_id: int, steps: Iterable[Step], outputs: list[RunOutput]) -> None:
        """End the drain records a failed drain or a done resume/undrain leaves without a drain behind them."""
        for step, out in zip(steps, outputs, strict=True):
            if kind in OUT_KINDS and not out.ok:
                self.store.end_drains(step.targets, f"the {kind.value} failed (audit #{audit_id}): {explain(out)}")
            elif kind not in OUT_KINDS and out.ok:
                self.store.end_drains(step.targets, f"{PAST[kind]} by the console (audit #{audit_id})")

    def _out_intent(self, plan: ActionPlan, reason: str) -> Callable[[int], None]:
        """What a drain or cordon writes with its intent, in the intent's transaction: a drain record per
        node and, for a drain for what a sweep found, the node's case (opened, or gone on with). A
        maintenance drain (no sweep, or none of the node's findings in it failed) opens no case."""
        sweep_id = plan.request.sweep_id

        def claim(audit_id: int) -> None:
            self.store.record_drains(plan.acting_on, reason, user=self.user, sweep_id=sweep_id, audit_id=audit_id)
            for node in plan.acting_on:
                records = self.store.drains(node, open_only=True)
                findings = records[-1].findings if records else []
                if findings:
                    action = self._action_of(node, sweep_id)
                    open_case(
                        self.store,
                        node,
                        user=self.user,
                        action=action,
                        sweep_id=sweep_id,
                        findings=findings,
                        audit_id=audit_id,
                        policy=self.inventory.policy_of(node),
                    )

        return claim

    def _step_cases(self, plan: ActionPlan, audit_id: int, outputs: list[RunOutput]) -> None:
        """The scheduler effect's outcome on each node's case (``console.remediation.cases``): a failed drain
        ends the case its intent opened; a resume or undrain closes the node's case."""
        kind = plan.request.kind
        for step, out in zip(plan.steps, outputs, strict=True):
            for node in step.targets:
                if kind in OUT_KINDS and not out.ok:
                    note = f"the {kind.value} failed: {explain(out)}"
                    drain_failed(self.store, node, audit_id=audit_id, user=self.user, note=note)
                elif kind not in OUT_KINDS and out.ok:
                    policy = self.inventory.policy_of(node)
                    done, forced = PAST[kind], plan.request.reason
                    returned(
                        self.store, node, audit_id=audit_id, user=self.user, policy=policy, done=done, forced=forced
                    )

    def _action_of(self, node: str, sweep_id: int | None) -> Remedy | None:
        """What the node's worst findings in ``sweep_id`` call for (None without that sweep)."""
        if sweep_id is None:
            return None
        return worst_action(self.store.findings(sweep_id, node, problems_only=True))

    async def _execute_case(self, plan: ActionPlan) -> ActionResult:
        fresh = plan_case(plan.request, {t: self.store.case(t) for t in plan.request.targets})
        why = recheck(plan, fresh)
        if why is not None:
            return self._stale(fresh, why)
        per_target = dict(fresh.decisions)
        reason = fresh.request.reason

        def transition(audit_id: int) -> None:
            # The case steps in the intent's transaction: the audit row and the step commit together, before
            # any patch that shows the new stage on a Kubernetes node.
            for node in fresh.acting_on:
                case: Case | None
                if fresh.request.kind is ActionKind.REPAIRED:
                    case = acknowledge_repair(self.store, node, user=self.user, note=reason, audit_id=audit_id)
                else:
                    case = close_case(self.store, node, Stage.ESCALATED, user=self.user, note=reason, audit_id=audit_id)
                per_target[node] = f"case #{case.id}: {case.stage.value}" if case else "no open case"

        with self._audited(fresh, fresh.steps, with_intent=transition) as entry:
            # The patches shown, pinned to the nodes as read for the plan (a node changed since: 409).
            patches = [step for step in plan.steps if step.where == KUBERNETES and step.targets[0] in fresh.acting_on]
            if not patches:
                done = ActionResult(True, f"{fresh.request.kind.value}: {fold(fresh.acting_on)}", per_target)
                return self._record(entry, [], done)
            # The case moved in the store (its record of truth); the nodes show the new stage next.
            shown = dict(per_target)
            outputs = await self._send_kube(patches, self._kube_nodes or {}, per_target, fresh.request.kind.value)
            for node, line in shown.items():
                if per_target[node] != line:
                    per_target[node] = f"{line}; {per_target[node]}"
            failed = [o for o in outputs if not o.ok]
            text = f"{fresh.request.kind.value}: {fold(fresh.acting_on)}"
            text += f"; the nodes still show the old stage: {explain(failed[0])}" if failed else ""
            return self._record(entry, outputs, ActionResult(not failed, text, per_target))

    async def _execute_kube(self, plan: ActionPlan) -> ActionResult:
        try:
            nodes = await self._read_kube()
        except Exception as exc:  # the client raises ApiException, urllib3 and config errors alike
            return self._audit(plan, ActionResult(False, f"failed: {_one_line(exc)}", dict(plan.decisions)))
        self._kube_nodes = nodes
        fresh = self._plan_kube(plan.request, nodes)
        why = recheck(plan, fresh)
        if why is not None:
            return self._stale(fresh, why)
        per_target = dict(fresh.decisions)
        kind = plan.request.kind
        # Send the bodies the operator saw (not the fresh plan's, whose timestamp differs).
        steps = [s for s in plan.steps if s.targets[0] in fresh.acting_on]
        claim = None
        if kind is ActionKind.CORDON:  # claimed with the intent: a cordon that happens is never unclaimed
            claim = self._out_intent(fresh, slurm.clean_reason(fresh.request.reason))
        with self._audited(fresh, steps, with_intent=claim) as entry:
            outputs = await self._send_kube(steps, nodes, per_target, PAST[kind])
            # One line per node for the ledger and the cases: a node is done when all its requests were.
            node_steps = tuple(Step(KUBERNETES, (), (t,)) for t in fresh.acting_on)
            node_outputs = [self._node_outcome(t, steps, outputs) for t in fresh.acting_on]
            self._end_drains(kind, entry.id, node_steps, node_outputs)
            self._step_cases(replace(fresh, steps=node_steps), entry.id, node_outputs)
            return self._finished(entry, fresh, outputs, per_target)

    async def _send_kube(
        self,
        steps: Iterable[Step],
        nodes: Mapping[str, Mapping[str, Any]],
        per_target: dict[str, str],
        done: str,
    ) -> list[RunOutput]:
        """Send each PATCH, each pinned to the version of the node it was computed on (or the last answer).

        After a node's failed request its later ones are not sent: a status written without the taint
        would tell the cluster something that is not so.
        """
        outputs: list[RunOutput] = []
        seen: dict[str, Mapping[str, Any]] = dict(nodes)
        failed: set[str] = set()
        for step in steps:
            target = step.targets[0]
            if target in failed:
                outputs.append(RunOutput(KUBERNETES, step.argv, None, "", "", "not sent: an earlier request failed"))
                continue
            path, body = step.argv[1], json.loads(step.argv[-1])
            body = kube.with_resource_version(body, seen.get(target, {}))
            call = self._kube().patch_node_status if path == kube.status_path(target) else self._kube().patch_node
            try:
                answer = await asyncio.to_thread(call, target, body, kube.PATCH_CONTENT_TYPE)
            except Exception as exc:
                outputs.append(RunOutput(KUBERNETES, step.argv, None, "", "", _one_line(exc)))
                per_target[target] = f"failed: {_one_line(exc)}"
                failed.add(target)
                continue
            seen[target] = answer
            outputs.append(RunOutput(KUBERNETES, step.argv, 0, json.dumps(answer, sort_keys=True), ""))
            per_target[target] = f"{done}: now {kube.describe_node(answer)}"
        return outputs

    async def show_stages(self, nodes: Iterable[str]) -> ActionResult | None:
        """Move the console's taint and condition on Kubernetes nodes to the stage their case is at now.

        A revalidation's strike (or its escalation) changes the case in the store only: the sweep that
        judged the node reaches no scheduler. This writes the new stage where the cluster sees it, audited
        as ``stage``. None when no node of a Kubernetes pool needs it.
        """
        on_kube = self._kube_targets(nodes)
        if not on_kube:
            return None
        await self._refresh_kube()
        problem = self._unreadable.get(KUBERNETES)
        if problem or self._kube_nodes is None:
            result = ActionResult(False, f"failed: {problem or 'Kubernetes nodes not read'}", {})
            with self.store.audited("stage", on_kube, inputs={}, commands=[], user=self.user) as entry:
                return self._record(entry, [], result)
        steps: list[Step] = []
        for target in on_kube:
            node = self._kube_nodes.get(target)
            if node is None or kube.held_reason(node) is None:
                continue
            case = self.store.case(target) or next(iter(self.store.cases(target)[::-1]), None)
            stage = case.stage if case is not None else None
            if stage is None or stage in (Stage.RETURNED, Stage.ENDED) or kube.shown_stage(node) == stage.value:
                continue
            made = kube.stage_patches(
                node, stage=stage.value, case_id=case.id if case else None, user=self.user, when=self._clock()
            )
            steps += [Step(KUBERNETES, kube.request_argv(path, body), (target,)) for path, body in made]
        if not steps:
            return None
        acting = tuple(dict.fromkeys(step.targets[0] for step in steps))
        with self.store.audited(
            "stage", list(acting), inputs={"where": KUBERNETES}, commands=[s.shown() for s in steps], user=self.user
        ) as entry:
            per_target: dict[str, str] = {}
            outputs = await self._send_kube(steps, self._kube_nodes, per_target, "stage shown")
            failed = [o for o in outputs if not o.ok]
            text = f"failed: {explain(failed[0])}" if failed else f"stage shown on {fold(acting)}"
            return self._record(entry, outputs, ActionResult(not failed, text, per_target))

    @staticmethod
    def _node_outcome(target: str, steps: list[Step], outputs: list[RunOutput]) -> RunOutput:
        """The outcome of the PATCH of ``target``'s Node: the cordon and taint hold it out or let it back,
        whatever became of its condition (a failed one fails the result all the same)."""
        path = kube.node_path(target)
        return next(out for step, out in zip(steps, outputs, strict=True) if step.argv[1] == path)

    def _finished(
        self, entry: AuditEntry, plan: ActionPlan, outputs: list[RunOutput], per_target: dict[str, str]
    ) -> ActionResult:
        failed = [o for o in outputs if not o.ok and o.argv != OS_RELEASE_ARGV]
        # Targets the cap left out were asked for and not done: the result says so (the CLI exits 1).
        result = ActionResult(not failed and not plan.capped, outcome(plan.request.kind, plan, failed), per_target)
        return self._record(entry, outputs, result)

    # audit ----------------------------------------------------------------------------------------

    def audited(
        self, plan: ActionPlan, steps: Iterable[Step], **extra: Any
    ) -> contextlib.AbstractContextManager[AuditEntry]:
        """The write-ahead audit of ``plan`` for a step carried out outside this module (casework)."""
        return self._audited(plan, steps, **extra)

    def record(self, entry: AuditEntry, outputs: list[RunOutput], result: ActionResult) -> ActionResult:
        """Finish ``entry`` with ``result`` (for a step carried out outside this module)."""
        return self._record(entry, outputs, result)

    @contextmanager
    def _audited(
        self,
        plan: ActionPlan,
        steps: Iterable[Step],
        with_intent: Callable[[int], None] | None = None,
        **extra: Any,
    ) -> Iterator[AuditEntry]:
        """The store's one write-ahead path: who, targets, inputs and the exact commands before they run
        (and ``with_intent``'s records, in the same transaction)."""
        request = plan.request
        inputs = {
            "reason": request.reason,
            "sweep_id": request.sweep_id,
            "force": request.force,
            "pool": request.pool,
            "from_node": request.from_node,
            "image_digest": request.image_digest,
            "where": plan.where,
            "notes": list(plan.notes),
            "decisions": plan.decisions,
            **extra,
        }
        with self.store.audited(
            request.kind.value,
            list(request.targets) or [t for t in (request.from_node,) if t],
            inputs=inputs,
            commands=[step.shown() for step in steps],
            user=self.user,
            with_intent=with_intent,
        ) as entry:
            yield entry

    @staticmethod
    def _record(entry: AuditEntry, outputs: list[RunOutput], result: ActionResult) -> ActionResult:
        """The outcome and everything the commands printed, for the audit row written when the action ends."""
        entry.finish(result.outcome, "\n".join(out.transcript() for out in outputs))
        return replace(result, audit_id=entry.id)

    def _audit(self, plan: ActionPlan, result: ActionResult) -> ActionResult:
        """An execution that ran nothing (refused, the scheduler unreadable): intent and outcome at once."""
        with self._audited(plan, []) as entry:
            return self._record(entry, [], result)

    async def close(self) -> None:
        """Close the runner's connections."""
        await self.runner.close()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = f"{type(exc).__name__}: {text[0] if text else ''}"
    # The kubernetes client's ApiException keeps the API server's Status in ``body``: its message says
    # who may not do what ("... cannot patch resource \"nodes/status\" ..."), which the first line lacks.
    body = getattr(exc, "body", None)
    try:
        message = json.loads(body).get("message") if isinstance(body, str | bytes) else None
    except (ValueError, AttributeError):
        message = None
    return f"{line} {message}" if isinstance(message, str) and message else line
