"""``watch``: rounds that keep idle nodes checked and drive their remediation cases.

Each round reads Slurm's node states, then:
- sweeps, at the watch level, the nodes that are idle (IDLE, no DRAIN/DOWN/FAIL, no job, not
  powering or rebooting) and whose last active check (their newest verdict in the history database)
  is at least ``every_s`` old: jobs come first, and a node checked lately is not checked again;
- for each node a sweep finds FAIL, a drain citing that sweep (so its case opens);
- revalidates the nodes whose case is ``revalidating`` (``console.sweep.revalidation``, the
  ``revalidate`` command's path) at the lifecycle policy's level;
- a resume for each node whose case passed as often as the policy asks.
Drains and resumes are only proposed (printed, and stored for ``watch --approve``) unless ``auto``:
approve-to-run is the default. Every action goes through ``ActionService``, so the ownership rules,
the drain cap and the write-ahead audit apply: a drain the console did not make is never touched.
A proposal that no longer applies (the node passed since, someone else took it out, its case moved
on) is withdrawn by the next round, audited; an operator may reject one (``reject``), and the same
action is then not proposed again on that node while its failing findings stay the ones rejected
(``console.actions.proposal_why``, which also writes a proposal's reason). With a
reservation name, each round's sweep runs inside a Slurm maintenance reservation of exactly the
nodes it sweeps (``console.actions.reservation``). Each node's lifecycle policy is its pool's
(``Inventory.policy_of``).
The circuit breaker (``console.actions.breaker``) trips when the nodes the console holds out would
pass a pool's or the fleet's limit; while it is tripped no round drains, revalidates or resumes
anything (it still sweeps idle nodes: looking changes nothing) until an operator clears it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from console.actions.breaker import breach
from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult
from console.actions.proposal_why import drain_reason, failing_set, held_back
from console.actions.reservation import Held, reserved
from console.actions.service import ActionService
from console.actions.slurm import describe
from console.actions.slurm_state import SlurmNode
from console.inventory import fold
from console.inventory.model import LifecyclePolicy
from console.model.findings import Status, worst_action
from console.remediation.cases import close_case, open_case
from console.remediation.guards import return_refusal
from console.store import Store
from console.store.faults import fault_of
from console.store.lifecycle import Stage
from console.store.transaction import immediate
from console.store.watch import Breaker, Proposal
from console.sweep.engine import SweepEngine, SweepResult
from console.sweep.freshness import age_text, last_active_check
from console.sweep.revalidation import by_policy, revalidate

# Flags that make an IDLE node no candidate: being powered, rebooted, reserved for maintenance or not answering.
_NOT_IDLE_FLAGS = frozenset(
    {
        "DRAIN",
        "FAIL",
        "NOT_RESPONDING",
        "POWERED_DOWN",
        "POWERING_UP",
        "POWERING_DOWN",
        "POWER_DOWN",
        "REBOOT_REQUESTED",
        "REBOOT_ISSUED",
        "MAINTENANCE",
        "RESERVED",
        "COMPLETING",
    }
)


def is_idle(node: SlurmNode) -> bool:
    """Slurm has the node IDLE, with nothing that takes it out of service or reserves it."""
    return node.base == "IDLE" and not node.out_of_service and not (_NOT_IDLE_FLAGS & set(node.flags))


@dataclass(frozen=True)
class RoundPlan:
    """What one round does with each node, before it does it."""

    sweep: tuple[str, ...]
    revalidate: tuple[str, ...]
    resume: tuple[str, ...]
    skipped: dict[str, str]  # node -> why it is left alone this round


def plan_round(
    nodes: Sequence[str],
    states: Mapping[str, SlurmNode] | None,
    store: Store,
    policy_of: Callable[[str], LifecyclePolicy],
    *,
    every_s: float,
    now: float,
    level: str | None = None,
) -> RoundPlan:
    """Sort ``nodes`` into this round's sweep, revalidation and resume, and the ones left alone.

    ``policy_of`` gives a node's lifecycle policy (its pool's); a node counts as checked lately when
    its last active check at ``level`` (or deeper; any level when None) is under ``every_s`` old.
    """
    sweep, revalidating, resume, skipped = [], [], [], {}
    for name in nodes:
        case = store.case(name)
        policy = policy_of(name)
        if case is not None and case.stage is not Stage.PROPOSED:  # a proposed drain's node is still in service
            # Ready, and no strike since its passes (a sweep may have struck it meanwhile: revalidated again).
            if case.ready(policy) and return_refusal(store, name, policy) is None:
                resume.append(name)
            elif case.stage is Stage.REVALIDATING:
                revalidating.append(name)
            else:
                skipped[name] = f"case #{case.id} {case.stage.value}, next: {case.next_step(policy)}"
            continue
        if states is None:
            skipped[name] = "Slurm unreadable"
            continue
        slurm_node = states.get(name)
        if slurm_node is None:
            skipped[name] = "not a Slurm node"
        elif not is_idle(slurm_node):
            skipped[name] = f"not idle: {describe(slurm_node)}"
        elif (checked := last_active_check(store, name, level)) is not None and checked.stale(now, every_s) is None:
            skipped[name] = f"fresh: checked {age_text(checked.age_s(now))} ago"
        else:
            sweep.append(name)
    return RoundPlan(tuple(sweep), tuple(revalidating), tuple(resume), skipped)


@dataclass
class RoundReport:
    """What a round did: its plan, its sweep, what it proposed and what it carried out."""

    number: int
    plan: RoundPlan
    outcome: str = "done"  # "cancelled" when SIGTERM/Ctrl-C stopped the round's sweep
    breaker: str = ""  # why the breaker is tripped, when it is
    dry_run: bool = False  # nothing was swept or done: the line says what would be
    sweep_id: int | None = None
    statuses: dict[str, Status] = field(default_factory=dict)
    proposed: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the maintenance reservation's steps, proposals withdrawn
    store_failed: str = ""  # the history database failed: nothing more is done (no action without its audit row)

    @property
    def unswept(self) -> bool:
        """True when the round had nodes to sweep and swept none: its maintenance reservation was refused."""
        return bool(self.plan.sweep) and not self.dry_run and self.sweep_id is None and self.outcome == "done"

    def line(self) -> str:
        """The round in one line, for the log."""
        fresh = sum(1 for why in self.plan.skipped.values() if why.startswith("fresh"))
        if self.plan.sweep and self.dry_run:  # a dry run sweeps nothing: it says what it would
            swept = f"would sweep {fold(self.plan.sweep)}"
        elif self.plan.sweep and self.sweep_id is None:  # the maintenance reservation could not be made
            swept = f"did not sweep {fold(self.plan.sweep)}"
        elif self.plan.sweep:
            judged = ", ".join(f"{n} {s.value}" for n, s in self.statuses.items())
            swept = f"swept {fold(self.plan.sweep)}" + (f" (sweep {self.sweep_id}: {judged})" if judged else "")
        else:
            swept = "swept nothing"
        if self.outcome != "done":
            swept += f" [{self.outcome}]"
        if self.notes:
            swept += " (" + "; ".join(self.notes) + ")"
        # One clause per thing the round did, "; " between them: joined by spaces they ran together
        # ("2 left alone BREAKER TRIPPED").
        clauses = [swept, f"{fresh} fresh, {len(self.plan.skipped) - fresh} left alone"]
        if self.breaker:
            clauses.append(f"BREAKER TRIPPED ({self.breaker}): automation paused until 'watch --clear-breaker'")
        if self.store_failed:
            clauses.append(
                f"HISTORY DATABASE FAILED ({self.store_failed}): no action without its audit row, watch stops"
            )
        if self.done:
            clauses.append("done: " + "; ".join(self.done))
        if self.proposed:
            clauses.append("proposed: " + "; ".join(self.proposed))
        return f"round {self.number}: " + "; ".join(clauses)


class Watch:
    """Runs the rounds over one engine and one action service (both for the same inventory and store)."""

    def __init__(
        self,
        engine: SweepEngine,
        service: ActionService,
        *,
        every_s: float,
        level: str,
        auto: bool = False,
        dry_run: bool = False,
        reservation: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.service = service
        self.every_s = every_s
        self.level = level
        self.auto = auto and not dry_run
        self.dry_run = dry_run
        self.reservation = reservation  # hold each round's swept nodes in this maintenance reservation
        self._clock = clock
        self.rounds = 0

    @property
    def store(self) -> Store:
        """The history database the engine and the actions share."""
        return self.service.store

    async def round(self) -> RoundReport:
        """One round: read Slurm, sweep the idle stale nodes, then drain, revalidate and resume.

        When the history database fails (the engine's sweep found it, or a read or an audit row here), the
        round acts no further: every action writes its audit row first, so none can be carried out.
        """
        self.rounds += 1
        report = RoundReport(self.rounds, RoundPlan((), (), (), {}), dry_run=self.dry_run)
        if self.engine.writes.fault is None:
            try:
                report = await self._round()
            except sqlite3.Error as exc:
                self.engine.writes.failed(fault_of(exc, self.store.path))
        if (fault := self.engine.writes.fault) is not None:
            report.store_failed = fault.describe()
        return report

    async def _round(self) -> RoundReport:
        inventory = self.service.inventory
        await self.service.node_states()  # reads Slurm now (and ends the cases of nodes resumed by hand)
        plan = plan_round(
            [n.name for n in inventory.nodes],
            self.service.slurm_nodes,
            self.store,
            inventory.policy_of,
            every_s=self.every_s,
            now=self._clock(),
            level=self.level,
        )
        report = RoundReport(self.rounds, plan, dry_run=self.dry_run)
        if self.dry_run:
            held = f" in reservation {self.reservation}" if self.reservation else ""
            report.proposed += [f"sweep {fold(plan.sweep)}{held}"] if plan.sweep else []
            report.proposed += [f"revalidate {fold(plan.revalidate)}"] if plan.revalidate else []
            report.proposed += [f"resume {fold(plan.resume)}"] if plan.resume else []
            return report
        self._withdraw_stale(report)  # before the breaker counts the proposed drains
        breaker = self.store.breaker()
        report.breaker = breaker.why if breaker.tripped else ""
        resume = list(plan.resume)
        if plan.sweep and (result := await self._sweep(report, plan.sweep)) is not None:
            report.sweep_id, report.outcome = result.sweep_id, result.outcome
            report.statuses = {n: v.status for n, v in result.verdicts.items()}
            if result.outcome == "cancelled" or self.engine.writes.fault is not None:
                return report
            self._withdraw_stale(report)  # a node that passed this sweep no longer needs its drain
            failing = tuple(n for n, s in report.statuses.items() if s is Status.FAIL)
            if failing and not report.breaker:
                report.breaker = self._trip_if_over(failing)
            if failing and not report.breaker:
                await self._drain(report, result, failing)
        if report.breaker:
            return report
        if plan.revalidate:
            # Revalidating only sweeps a drained node and records a pass or a strike: no approval needed.
            # One sweep per distinct policy: pools may revalidate at their own level, with their own strikes.
            for policy, names in by_policy(plan.revalidate, inventory.policy_of):
                nodes = [inventory.node(n) for n in names]
                done = await revalidate(self.engine, self.store, nodes, policy.level, policy)
                report.outcome = done.outcome
                report.done += [f"revalidate {n}: {line}" for n, (line, _) in done.results.items()]
                if done.outcome == "cancelled":
                    return report
                resume += [
                    n
                    for n, (_, case) in done.results.items()
                    if case.ready(policy) and return_refusal(self.store, n, policy) is None
                ]
            # A strike moved a case back: on a Kubernetes pool the node's taint and condition say so too.
            shown = await self.service.show_stages(plan.revalidate)
            if shown is not None:
                report.done.append(f"kubernetes: {shown.outcome}")
        if resume:
            await self._act(report, ActionKind.RESUME, tuple(resume), "watch: revalidated", None)
        return report

    async def _sweep(self, report: RoundReport, names: Sequence[str]) -> SweepResult | None:
        """Sweep ``names`` at the watch level, inside the maintenance reservation when the site asked for one.

        None when the reservation could not be made: then nothing is swept (the line says why).
        """
        nodes = [self.service.inventory.node(n) for n in names]
        if not self.reservation:
            return await self.engine.run(nodes, level=self.level)
        held: Held | None = None
        try:
            async with reserved(self.service, self.reservation, names, self.level) as held:
                if held.refused:
                    return None
                return await self.engine.run(nodes, level=self.level)
        finally:
            if held is not None:
                report.notes.append(held.refused or held.released)

    def _withdraw_stale(self, report: RoundReport) -> None:
        """Withdraw (audited) each open proposal that no longer applies, with why, before the round acts."""
        for proposal in self.store.proposals():
            why = stale_because(proposal, self.store, self.service.slurm_nodes, self.service.inventory.policy_of)
            if not why:
                continue
            withdraw(self.store, proposal, why, self.service.user)
            report.notes.append(f"withdrew #{proposal.id} {proposal.kind} {proposal.node}: {why}")

    def held_out(self) -> set[str]:
        """Nodes the console holds out of service: its open drains, and the drains it proposed."""
        drained = {d.node for d in self.store.drains(open_only=True)}
        return drained | {p.node for p in self.store.proposals() if p.kind == ActionKind.DRAIN.value}

    def _trip_if_over(self, adding: tuple[str, ...]) -> str:
        """Trip the breaker (audited) when holding ``adding`` out too would pass a limit; why, or ""."""
        pools: dict[str, list[str]] = {}
        for node in self.service.inventory.nodes:
            pools.setdefault(node.pool, []).append(node.name)
        inventory = self.service.inventory
        own = {pool: inventory.policy(pool) for pool in pools}
        drained = {d.node for d in self.store.drains(open_only=True)}
        why = breach(inventory.lifecycle, pools, drained, own, pending=self.held_out() | set(adding))
        if why is None:
            return ""
        inputs = {"adding": list(adding), "held_out": sorted(drained), "proposed": sorted(self.held_out() - drained)}
        with self.store.audited("breaker-trip", adding, inputs=inputs, user=self.service.user) as entry:
            self.store.set_breaker(Breaker(self._clock(), why))
            entry.finish("tripped: automation paused", why)
        return why

    async def _drain(self, report: RoundReport, result: SweepResult, failing: tuple[str, ...]) -> None:
        """Propose (or carry out) the drain of each FAIL node, with its verdict as the reason, except where an
        operator rejected that drain for the same failing findings (``console.actions.proposal_why``)."""
        reasons = {}
        for node in failing:
            verdict = result.verdicts[node]
            held = held_back(self.store, ActionKind.DRAIN.value, node, failing_set(verdict.findings))
            if held is not None:
                report.notes.append(f"held back drain {node}: {held.why}")
                continue
            reasons[node] = drain_reason(verdict)
        if not reasons:
            return
        for node, reason in reasons.items():  # one at a time: each drain's cap sees the ones before it
            if self.auto:
                await self._auto_drain(report, node, reason, result.sweep_id)
            else:
                await self._act(report, ActionKind.DRAIN, (node,), reason, result.sweep_id)

    async def _auto_drain(self, report: RoundReport, node: str, reason: str, sweep_id: int | None) -> None:
        """Drain ``node`` itself; a drain the cap (or a refusal) stops is declined, audited, proposed, a case."""
        request = ActionRequest(ActionKind.DRAIN, (node,), reason=reason, sweep_id=sweep_id)
        await self.service.refresh(request)
        plan = self.service.plan(request)
        cited = f" (sweep {sweep_id})" if sweep_id is not None else ""
        if plan.refused or node in plan.capped:
            why = plan.refused or plan.decisions.get(node, "capped")
            report.done.append(f"drain {node}{cited}: not carried out: {self._decline(node, reason, sweep_id, why)}")
            return
        result = await self.service.execute(plan)
        if not result.ok and result.outcome.startswith("refused: "):  # the state read at execution said no
            why = result.outcome.removeprefix("refused: ")
            report.done.append(f"drain {node}{cited}: not carried out: {self._decline(node, reason, sweep_id, why)}")
            return
        report.done.append(f"drain {node}{cited}: {result.outcome}")

    def _decline(self, node: str, reason: str, sweep_id: int | None, why: str) -> str:
        """A drain ``watch --auto`` chose not to carry out: audited, proposed and opened as a case, at once."""
        user = self.service.user
        inputs = {"action": ActionKind.DRAIN.value, "reason": reason, "sweep_id": sweep_id, "why": why}
        with immediate(self.store.conn), self.store.audited("watch-decline", [node], inputs=inputs, user=user) as entry:
            proposal = self.store.propose(ActionKind.DRAIN.value, node, sweep_id=sweep_id, reason=reason)
            found = self.store.findings(sweep_id, node, problems_only=True) if sweep_id is not None else []
            case = open_case(
                self.store,
                node,
                user=user,
                action=worst_action(found),
                sweep_id=sweep_id,
                findings=sorted({check for check, _ in failing_set(found)}),
                audit_id=entry.id,
                proposed=True,
            )
            said = f"{why}; proposed as #{proposal.id}, case #{case.id} {case.stage.value}; the node stays in service"
            entry.finish(f"drain {node} not carried out: {said}")
        return said

    async def _act(
        self, report: RoundReport, kind: ActionKind, nodes: tuple[str, ...], reason: str, sweep_id: int | None
    ) -> None:
        """Propose the action, or (``auto``) plan and carry it out through the action service."""
        cited = f" (sweep {sweep_id})" if sweep_id is not None else ""
        if not self.auto:
            for node in nodes:
                proposal = self.store.propose(kind.value, node, sweep_id=sweep_id, reason=reason)
                report.proposed.append(f"#{proposal.id} {kind.value} {node}{cited}")
            return
        _, outcome = await carry_out(self.service, ActionRequest(kind, nodes, reason=reason, sweep_id=sweep_id))
        report.done.append(f"{kind.value} {fold(nodes)}{cited}: {outcome}")


async def carry_out(
    service: ActionService, request: ActionRequest, confirm: Callable[[ActionPlan], bool] | None = None
) -> tuple[bool, str]:
    """Plan and execute ``request`` through the action service: whether it went through, and how, in one line.

    ``confirm`` sees the plan (the exact commands) first and may decline it, as an operator at a prompt.
    """
    await service.refresh(request)
    plan = service.plan(request)
    if plan.refused:
        return False, f"refused: {plan.refused}"
    if confirm is not None and not confirm(plan):
        return False, "declined: nothing was changed"
    result: ActionResult = await service.execute(plan)
    return result.ok, result.outcome


async def approve(
    service: ActionService, which: str, confirm: Callable[[ActionPlan], bool] | None = None
) -> tuple[bool, list[str]]:
    """Carry out the open proposal ``which`` (an id) or ``all`` of them through the catalogue's ``approve``:
    whether all went through, and a line per proposal (or the refusal: the breaker tripped, none open).

    ``confirm`` sees the one plan of them all (the exact commands) and may decline it.
    """
    wanted = [p for p in service.store.proposals() if which == "all" or str(p.id) == which]
    ids = tuple(p.id for p in wanted) or ((int(which),) if which.isdigit() else ())
    request = ActionRequest(ActionKind.APPROVE, tuple(dict.fromkeys(p.node for p in wanted)), proposal_ids=ids)
    await service.refresh(request)
    plan = service.plan(request)
    if plan.refused:
        return False, [f"refused: {plan.refused}"]
    if confirm is not None and not confirm(plan):
        return False, [f"declined: nothing was changed; {', '.join(f'#{i}' for i in ids)} still proposed"]
    result: ActionResult = await service.execute(plan)
    return result.ok, list(result.per_target.values()) or [result.outcome]


def stale_because(
    proposal: Proposal,
    store: Store,
    states: Mapping[str, SlurmNode] | None,
    policy_of: Callable[[str], LifecyclePolicy],
) -> str:
    """Why ``proposal`` no longer applies (the node passed since, someone else took it out or put it
    back, its case moved on), or "" while it still does."""
    node, slurm_node = proposal.node, (states or {}).get(proposal.node)
    case = store.case(node)
    if proposal.kind == ActionKind.DRAIN.value:
        if case is not None and case.stage is not Stage.PROPOSED:
            return f"the console drained it already (case #{case.id})"
        if mine := store.drains(node, open_only=True):
            return f"drained already through the console: {mine[-1].reason}"
        if slurm_node is not None and slurm_node.out_of_service:
            return f"out of service by someone else: {describe(slurm_node)}"
        # A pass counts only at the level that found the fault, or deeper: a lighter sweep may not run its probe.
        found_in = store.sweep(proposal.sweep_id) if proposal.sweep_id is not None else None
        check = last_active_check(store, node, str(found_in["level"])) if found_in is not None else None
        if check is not None and check.sweep_id > (proposal.sweep_id or 0) and check.status is Status.PASS:
            return f"passed since ({check.where()})"
        return ""
    if proposal.kind == ActionKind.RESUME.value:
        if case is None:
            return "its case is closed (resumed or ended by someone else)"
        if not case.ready(policy_of(node)):
            return f"its case is {case.stage.value} again, next: {case.next_step(policy_of(node))}"
        if held := return_refusal(store, node, policy_of(node)):
            return held
        if slurm_node is not None and not slurm_node.out_of_service:
            return f"in service already: {describe(slurm_node)}"
    return ""


def withdraw(store: Store, proposal: Proposal, why: str, user: str) -> None:
    """Close ``proposal`` as withdrawn by watch, audited."""
    inputs = {"proposal": proposal.id, "kind": proposal.kind, "why": why}
    # One transaction: the audit row, the proposal's decision and the case it ends (nothing reaches a node).
    with immediate(store.conn), store.audited("withdraw-proposal", [proposal.node], inputs=inputs, user=user) as entry:
        store.decide_proposal(proposal.id, user=user, outcome=f"withdrawn: {why}")
        _end_proposed_case(store, proposal, f"drain withdrawn: {why}", user, entry.id)
        entry.finish(f"withdrew #{proposal.id} {proposal.kind} {proposal.node}", why)


def _end_proposed_case(store: Store, proposal: Proposal, note: str, user: str, audit_id: int) -> None:
    """The case a declined drain opened ends with its proposal (the drain will not happen)."""
    case = store.case(proposal.node)
    if proposal.kind == ActionKind.DRAIN.value and case is not None and case.stage is Stage.PROPOSED:
        close_case(store, proposal.node, Stage.ENDED, user=user, note=note, audit_id=audit_id)


def reject(store: Store, which: str, reason: str, user: str) -> Proposal:
    """An operator rejects the open proposal ``which`` (an id), audited: nothing runs; LookupError if none."""
    wanted = [p for p in store.proposals() if str(p.id) == which]
    if not wanted:
        raise LookupError(f"no open proposal {which}")
    proposal = wanted[0]
    inputs = {"proposal": proposal.id, "kind": proposal.kind, "reason": reason}
    # One transaction: the audit row, the proposal's decision and the case it ends (nothing reaches a node).
    with immediate(store.conn), store.audited("reject-proposal", [proposal.node], inputs=inputs, user=user) as entry:
        store.decide_proposal(proposal.id, user=user, outcome=f"rejected: {reason}")
        _end_proposed_case(store, proposal, f"drain rejected: {reason}", user, entry.id)
        entry.finish(f"rejected #{proposal.id} {proposal.kind} {proposal.node}", reason)
    return proposal


def clear_breaker(store: Store, user: str, reason: str) -> str:
    """Clear a tripped breaker (audited with the operator's ``reason``); what it had tripped on, or ""."""
    breaker = store.breaker()
    if not breaker.tripped:
        return ""
    inputs = {"tripped_on": breaker.why, "reason": reason}
    with store.audited("clear-breaker", [], inputs=inputs, user=user) as entry:
        store.set_breaker(Breaker())
        entry.finish("cleared: automation resumes", breaker.why)
    return breaker.why
