"""ActionService: the one door through which the CLI and the TUI act on nodes.

``plan`` is a dry run from what the service last read (``refresh``/``node_states``): exact commands,
ownership, caps and idempotence, with no side effect. ``execute`` reads the scheduler again and
re-plans before running anything: it never acts on a node the shown plan did not act on, it refuses
when the fresh state would break a cap or ownership rule, and it skips nodes that meanwhile reached
the wanted state. Every execution, refused or not, is appended to the audit log.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from console.actions import kube, slurm
from console.actions.caps import CapPolicy, cap_violations
from console.actions.holds import OS_RELEASE_ARGV, hold_argv, manager_for, packages_to_hold
from console.actions.model import (
    KUBE_KINDS,
    SLURM_KINDS,
    ActionKind,
    ActionPlan,
    ActionRequest,
    ActionResult,
    Step,
)
from console.actions.pin import DriftRow, drift_report, effective_pins, fingerprint, pin_changes
from console.actions.runner import LOCAL, CommandRunner, RunOutput, runner_for
from console.actions.slurm_state import SlurmNode
from console.checks import CheckPack, NodeFacts
from console.inventory.hostlist import fold
from console.inventory.model import Inventory, SlurmConfig, SshConfig, StackPin
from console.probes.base import ParseError
from console.probes.host import parse_os_release
from console.store import Store, current_user

KUBERNETES = "kubernetes"
STORE = "store"
_NO_POOL = "cluster"  # the one pool of a Slurm cluster used without an inventory
_PAST = {
    ActionKind.DRAIN: "drained",
    ActionKind.RESUME: "resumed",
    ActionKind.UNDRAIN: "undrained",
    ActionKind.CORDON: "cordoned",
    ActionKind.UNCORDON: "uncordoned",
    ActionKind.ENFORCE_PIN: "held",
}
_NOT_READ = "scheduler state not read yet: ownership, caps and no-ops are checked again when executing"
_PERMISSION_WORDS = ("Invalid user id", "Access/permission denied", "Permission denied")


class ActionService:
    """Plans and executes operator actions for one inventory, recording each in the store's audit log."""

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
    ) -> None:
        self.inventory = inventory
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
        self._os_ids: dict[str, str] = {}

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
        names = wanted or list(states)
        return {n: slurm.describe(states[n]) if n in states else "not a Slurm node" for n in names}

    async def refresh(self, request: ActionRequest) -> None:
        """Read what planning ``request`` needs: Slurm states, Kubernetes nodes or the targets' OS."""
        if request.kind in SLURM_KINDS:
            await self._read_slurm()
        elif request.kind in KUBE_KINDS:
            self._kube_nodes = await self._read_kube()
        elif request.kind is ActionKind.ENFORCE_PIN:
            outputs = await asyncio.gather(*(self._os_id(t) for t in self._enforce_targets(request)))
            self._os_ids.update({t: os_id for t, (os_id, _) in outputs if os_id})

    async def _read_slurm(self) -> dict[str, SlurmNode]:
        self._slurm, self._slurm_reader = await slurm.read_states(self.runner, self.slurm_where, self._slurm_reader)
        return self._slurm

    def _kube(self) -> kube.KubeNodeApi:
        if self._kube_api is None:
            self._kube_api = kube.KubernetesClientApi(self._kubeconfig)
        return self._kube_api

    async def _read_kube(self) -> dict[str, dict[str, Any]]:
        items = await asyncio.to_thread(self._kube().list_nodes)
        return {str(item.get("metadata", {}).get("name")): item for item in items}

    async def _os_id(self, node: str) -> tuple[str, tuple[str | None, RunOutput]]:
        out = await self.runner.run(node, OS_RELEASE_ARGV, timeout_s=30)
        try:
            os_id = parse_os_release(out.stdout).id if out.ok else None
        except ParseError:
            os_id = None
        return node, (os_id, out)

    # planning -------------------------------------------------------------------------------------

    def plan(self, request: ActionRequest) -> ActionPlan:
        """The dry run of ``request``: exact commands, where they run, caps, ownership, no side effect."""
        if self.read_only:
            return _refused(request, "read-only: actions are disabled (--read-only)")
        if request.kind is ActionKind.PIN:
            return self._plan_pin(request)
        targets = self._enforce_targets(request) if request.kind is ActionKind.ENFORCE_PIN else request.targets
        if not targets:
            return _refused(request, "no target nodes")
        known = {n.name for n in self.inventory.nodes}
        unknown = [t for t in targets if t not in known]
        if self.inventory.nodes and unknown:
            return _refused(request, f"not in the inventory: {fold(unknown)}")
        if request.kind in SLURM_KINDS:
            return self._plan_slurm(request, self._slurm)
        if request.kind in KUBE_KINDS:
            return self._plan_kube(request, self._kube_nodes)
        return self._plan_enforce(replace(request, targets=tuple(targets)))

    def _pools(self, names: Iterable[str]) -> dict[str, list[str]]:
        """Pool -> members for the cap; without an inventory, every node the scheduler knows is one pool."""
        if not self.inventory.pools:
            return {_NO_POOL: list(names)}
        pools: dict[str, list[str]] = {}
        for node in self.inventory.nodes:
            pools.setdefault(node.pool, []).append(node.name)
        return pools

    def _finish_plan(
        self,
        request: ActionRequest,
        decisions: dict[str, slurm.Decision],
        *,
        steps: tuple[Step, ...],
        where: str,
        held: set[str] | None,
        pool_names: Iterable[str],
        notes: list[str],
    ) -> ActionPlan:
        """Apply the cap (for removing actions) and the nothing-to-do rules shared by Slurm and Kubernetes."""
        acting = [t for t, d in decisions.items() if d.act]
        refused = None
        if held is not None and acting:
            violations = cap_violations(self.caps, self._pools(pool_names), held, acting)
            if violations and request.force:
                notes.append("cap overridden (--force): " + "; ".join(violations))
            elif violations:
                refused = "; ".join(violations) + "; use --force to override"
        skipped = [f"{t}: {d.note}" for t, d in decisions.items() if not d.act and not d.no_op]
        if not acting and skipped and refused is None:
            refused = f"nothing to {request.kind.value}: " + "; ".join(skipped)
        return ActionPlan(
            request=request,
            commands=tuple(step.argv for step in steps) if refused is None else (),
            where=where,
            notes=tuple(notes),
            refused=refused,
            steps=steps if refused is None else (),
            decisions={t: d.note for t, d in decisions.items()},
        )

    def _plan_slurm(self, request: ActionRequest, states: dict[str, SlurmNode] | None) -> ActionPlan:
        if request.kind is ActionKind.DRAIN and not slurm.clean_reason(request.reason):
            return _refused(request, "a reason is required to drain (Slurm refuses DRAIN without one)")
        decisions = {t: slurm.decide(request.kind, t, states, request.force) for t in request.targets}
        acting = tuple(t for t, d in decisions.items() if d.act)
        reason = slurm.tag_reason(request.reason, request.sweep_id) if request.kind is ActionKind.DRAIN else None
        steps = (
            (Step(self.slurm_where, slurm.update_argv(fold(acting), request.kind, reason), acting),) if acting else ()
        )
        held = None
        if request.kind is ActionKind.DRAIN:
            held = {n for n, s in (states or {}).items() if s.draining_flag and slurm.is_ours(s.reason)}
        notes = [] if states is not None else [_NOT_READ]
        return self._finish_plan(
            request, decisions, steps=steps, where=self.slurm_where, held=held, pool_names=states or acting, notes=notes
        )

    def _plan_kube(self, request: ActionRequest, nodes: dict[str, dict[str, Any]] | None) -> ActionPlan:
        cordon = request.kind is ActionKind.CORDON
        if cordon and not slurm.clean_reason(request.reason):
            return _refused(request, "a reason is required to cordon (it is kept in the node's annotations)")
        decisions = {}
        for target in request.targets:
            if nodes is not None and target not in nodes:
                decisions[target] = slurm.Decision(False, "skip: not a node of this Kubernetes cluster")
            else:
                decisions[target] = kube.decide(cordon, nodes.get(target) if nodes is not None else None, request.force)
        body = (
            kube.cordon_patch(request.reason, self.user, self._clock(), request.sweep_id)
            if cordon
            else kube.uncordon_patch()
        )
        steps = tuple(Step(KUBERNETES, kube.request_argv(t, body), (t,)) for t, d in decisions.items() if d.act)
        held = None
        if cordon:
            held = {n for n, obj in (nodes or {}).items() if kube.ours(obj) and kube.cordoned(obj)}
        notes = [
            "each PATCH carries the resourceVersion read just before it: a node changed meanwhile is refused (409)"
        ]
        return self._finish_plan(
            request,
            decisions,
            steps=steps,
            where=KUBERNETES,
            held=held,
            pool_names=nodes or request.targets,
            notes=notes,
        )

    def _stack_of(self, node: str) -> tuple[dict[str, str], str]:
        """The node's stack from the live sweep facts, else from its newest stored verdict."""
        facts = self.facts.get(node)
        if facts is not None and facts.stack:
            return dict(facts.stack), "the current sweep"
        for row in self.store.node_history(node, 1):
            return json.loads(row["stack"] or "{}"), f"sweep {row['sweep_id']}"
        return {}, "nowhere"

    def pins(self) -> dict[str, StackPin]:
        """Every pool's effective pin (stored pins win over the inventory's)."""
        return effective_pins(self.inventory, self.store)

    def _plan_pin(self, request: ActionRequest) -> ActionPlan:
        node = request.from_node
        if not node:
            return _refused(request, "pin needs --from-node: the known-good node whose stack becomes the pin")
        members = {n.name: n.pool for n in self.inventory.nodes}
        pool = request.pool or members.get(node)
        if pool is None or pool not in self.inventory.pools:
            return _refused(request, f"no such pool: {pool or '(none given)'}")
        if members.get(node) != pool:
            return _refused(request, f"{node} is not a node of pool {pool}")
        stack, source = self._stack_of(node)
        new = fingerprint(stack, request.image_digest)
        if not new.pinned_fields():
            return _refused(request, f"no stack known for {node}: sweep it first")
        changes = pin_changes(self.pins()[pool], new)
        notes = [f"stack of {node} from {source}", *(changes or ["same as the current pin: nothing changes"])]
        return ActionPlan(
            request=replace(request, pool=pool),
            commands=(),
            where=STORE,
            notes=tuple(notes),
            decisions={node: f"pin pool {pool} to this node's stack ({len(new.pinned_fields())} fields)"},
        )

    def _enforce_targets(self, request: ActionRequest) -> tuple[str, ...]:
        if request.targets or not request.pool:
            return request.targets
        return tuple(n.name for n in self.inventory.nodes if n.pool == request.pool)

    def _plan_enforce(self, request: ActionRequest) -> ActionPlan:
        pins = self.pins()
        decisions: dict[str, slurm.Decision] = {}
        steps = []
        for target in request.targets:
            pin = pins.get(self.inventory.node(target).pool, StackPin()) if self.inventory.nodes else StackPin()
            os_id = self._os_ids.get(target) or self._stack_of(target)[0].get("os")
            manager = manager_for(os_id)
            packages = packages_to_hold(pin, manager) if manager else []
            if manager is None:
                note = f"skip: OS {os_id!r} has no known package manager" if os_id else "skip: OS not detected yet"
                decisions[target] = slurm.Decision(False, note)
            elif not packages:
                decisions[target] = slurm.Decision(False, "no-op: the pool pin names no packaged field", no_op=True)
            else:
                decisions[target] = slurm.Decision(True, f"hold {len(packages)} packages with {manager.value}")
                steps.append(Step(target, hold_argv(manager, packages), (target,)))
        notes = ["a hold freezes the installed versions: apply it to nodes that match their pin (see drift)"]
        acting = [s.targets[0] for s in steps]
        where = fold(acting) or "nodes"
        return self._finish_plan(
            request, decisions, steps=tuple(steps), where=where, held=None, pool_names=(), notes=notes
        )

    # executing ------------------------------------------------------------------------------------

    async def execute(self, plan: ActionPlan) -> ActionResult:
        """Run ``plan`` after checking it against the state read now; audit what happened."""
        request = plan.request
        if self.read_only:
            plan = _refused(request, "read-only: actions are disabled (--read-only)")
        if plan.refused:
            return self._audit(plan, [], [], ActionResult(False, f"refused: {plan.refused}", dict(plan.decisions)))
        if request.kind in SLURM_KINDS:
            return await self._execute_slurm(plan)
        if request.kind in KUBE_KINDS:
            return await self._execute_kube(plan)
        if request.kind is ActionKind.PIN:
            return self._execute_pin(plan)
        return await self._execute_enforce(plan)

    def _recheck(self, plan: ActionPlan, fresh: ActionPlan) -> ActionPlan | None:
        """``fresh`` reduced to what ``plan`` showed; None when it would do more, or is now refused."""
        if fresh.refused:
            return None
        if set(fresh.acting_on) - set(plan.acting_on):
            return None
        return fresh

    async def _execute_slurm(self, plan: ActionPlan) -> ActionResult:
        try:
            states = await self._read_slurm()
        except slurm.SlurmError as exc:
            return self._audit(plan, [], [], ActionResult(False, f"failed: {exc}", dict(plan.decisions)))
        fresh = self._plan_slurm(plan.request, states)
        checked = self._recheck(plan, fresh)
        if checked is None:
            why = fresh.refused or f"state changed since the plan: it would now act on {fold(fresh.acting_on)}"
            return self._audit(fresh, [], [], ActionResult(False, f"refused: {why}", dict(fresh.decisions)))
        outputs = [await self.runner.run(s.where, s.argv) for s in checked.steps]
        per_target = dict(checked.decisions)
        try:
            after = await self._read_slurm()
        except slurm.SlurmError:
            after = {}
        failed = [o for o in outputs if not o.ok]
        for step, out in zip(checked.steps, outputs, strict=True):
            for target in step.targets:
                if out.ok:
                    now = slurm.describe(after[target]) if target in after else "state not read"
                    per_target[target] = f"{_PAST[plan.request.kind]}: now {now}"
                else:
                    per_target[target] = f"failed: {_explain(out)}"
        outcome = _outcome(plan.request.kind, checked, failed)
        return self._audit(checked, list(checked.steps), outputs, ActionResult(not failed, outcome, per_target))

    async def _execute_kube(self, plan: ActionPlan) -> ActionResult:
        try:
            nodes = await self._read_kube()
        except Exception as exc:  # the client raises ApiException, urllib3 and config errors alike
            return self._audit(plan, [], [], ActionResult(False, f"failed: {_one_line(exc)}", dict(plan.decisions)))
        self._kube_nodes = nodes
        fresh = self._plan_kube(plan.request, nodes)
        if self._recheck(plan, fresh) is None:
            why = fresh.refused or f"state changed since the plan: it would now act on {fold(fresh.acting_on)}"
            return self._audit(fresh, [], [], ActionResult(False, f"refused: {why}", dict(fresh.decisions)))
        per_target = dict(fresh.decisions)
        steps = [s for s in plan.steps if s.targets[0] in fresh.acting_on]
        outputs: list[RunOutput] = []
        for step in steps:
            target = step.targets[0]
            # The body shown in the plan, pinned to the version just read: a node changed since is a 409.
            body = kube.with_resource_version(_json_body(step.argv), nodes[target])
            try:
                answer = await asyncio.to_thread(self._kube().patch_node, target, body, kube.PATCH_CONTENT_TYPE)
            except Exception as exc:
                outputs.append(RunOutput(KUBERNETES, step.argv, None, "", "", _one_line(exc)))
                per_target[target] = f"failed: {_one_line(exc)}"
                continue
            outputs.append(RunOutput(KUBERNETES, step.argv, 0, json.dumps(answer, sort_keys=True), ""))
            per_target[target] = f"{_PAST[plan.request.kind]}: now {kube.describe_node(answer)}"
        failed = [o for o in outputs if not o.ok]
        outcome = _outcome(plan.request.kind, fresh, failed)
        return self._audit(fresh, steps, outputs, ActionResult(not failed, outcome, per_target))

    def _execute_pin(self, plan: ActionPlan) -> ActionResult:
        fresh = self._plan_pin(plan.request)
        if fresh.refused:
            return self._audit(fresh, [], [], ActionResult(False, f"refused: {fresh.refused}", {}))
        pool, node = fresh.request.pool or "", fresh.request.from_node or ""
        stack, _ = self._stack_of(node)
        fields = fingerprint(stack, plan.request.image_digest).pinned_fields()
        self.store.set_pin(pool, fields, node, self.user)
        outcome = f"pinned pool {pool} to the stack of {node} ({len(fields)} fields)"
        return self._audit(fresh, [], [], ActionResult(True, outcome, {node: outcome}), pinned=fields)

    async def _execute_enforce(self, plan: ActionPlan) -> ActionResult:
        per_target = dict(plan.decisions)
        transcripts: list[RunOutput] = []
        failed: list[RunOutput] = []
        for step in plan.steps:
            target = step.targets[0]
            # The hold command was chosen for the OS seen when planning: confirm it before running it.
            _, (os_id, probe) = await self._os_id(target)
            transcripts.append(probe)
            current = manager_for(os_id)
            if current is None or hold_argv(current, [])[0] != step.argv[0]:
                per_target[target] = f"skip: OS is now {os_id or probe.message()!r}, not the one planned for"
                failed.append(probe)
                continue
            out = await self.runner.run(step.where, step.argv)
            transcripts.append(out)
            if out.ok:
                per_target[target] = f"held: {' '.join(step.argv[2:])}"
            else:
                failed.append(out)
                per_target[target] = f"failed: {_explain(out)}"
        outcome = _outcome(plan.request.kind, plan, failed)
        return self._audit(plan, list(plan.steps), transcripts, ActionResult(not failed, outcome, per_target))

    # audit ----------------------------------------------------------------------------------------

    def _audit(
        self,
        plan: ActionPlan,
        steps: list[Step],
        outputs: list[RunOutput],
        result: ActionResult,
        **extra: Any,
    ) -> ActionResult:
        request = plan.request
        inputs = {
            "reason": request.reason,
            "sweep_id": request.sweep_id,
            "force": request.force,
            "pool": request.pool,
            "from_node": request.from_node,
            "where": plan.where,
            "notes": list(plan.notes),
            "decisions": plan.decisions,
            **extra,
        }
        if request.image_digest:
            inputs["image_digest"] = request.image_digest
        audit_id = self.store.audit(
            request.kind.value,
            list(request.targets) or [t for t in (request.from_node,) if t],
            inputs=inputs,
            commands=[step.shown() for step in steps],
            output="\n".join(out.transcript() for out in outputs),
            outcome=result.outcome,
            user=self.user,
        )
        return replace(result, audit_id=audit_id)

    async def drift(self, nodes: Iterable[str] | None = None) -> list[DriftRow]:
        """Drift rows of ``nodes`` (default: every node with facts) against the effective pins."""
        wanted = set(nodes) if nodes is not None else set(self.facts)
        return drift_report([f for n, f in self.facts.items() if n in wanted], self.pins(), self.packs)

    async def close(self) -> None:
        """Close the runner's connections."""
        await self.runner.close()


def bare_inventory() -> Inventory:
    """No cluster file: Slurm commands run on this host with its SLURM_CONF, every Slurm node is one pool."""
    return Inventory(name="local", ssh=SshConfig(), slurm=SlurmConfig(), pools={}, nodes=[])


def _refused(request: ActionRequest, why: str) -> ActionPlan:
    return ActionPlan(request=request, commands=(), where="", refused=why)


def _json_body(argv: tuple[str, ...]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(argv[-1])
    return body


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _explain(out: RunOutput) -> str:
    message = out.message()
    if any(word in message for word in _PERMISSION_WORDS):
        return f"{message} (scontrol update needs root or a Slurm operator on {out.where})"
    return message


def _outcome(kind: ActionKind, plan: ActionPlan, failed: list[RunOutput]) -> str:
    acting = plan.acting_on
    skipped = [t for t, note in plan.decisions.items() if note.startswith("skip")]
    if failed:
        return f"failed: {_explain(failed[0])}"
    if not acting:
        return f"nothing to {kind.value}: " + "; ".join(f"{t}: {n}" for t, n in plan.decisions.items())
    text = f"{_PAST[kind]} {fold(acting)}"
    return text + (f"; skipped {fold(skipped)}" if skipped else "")
