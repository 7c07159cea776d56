"""Two catalogued steps of the remediation loop that the action service plans and carries out.

- ``revalidate``: sweep the nodes whose case is ``revalidating`` at the policy's level and record a
  pass or a strike on each case (``console.sweep.revalidation``, the path ``watch`` takes too). It
  needs the sweep engine, and refuses while that engine is sweeping: two sweeps at once would judge
  each other's load.
- ``approve``: carry out what ``watch`` proposed (approve-to-run). Its plan is the plans of the
  proposed drains and resumes themselves, so the operator confirms the exact ``scontrol`` commands;
  each one then runs through the service as if asked for directly (its own audit row, ownership and
  cap rules), and the proposal is decided with its outcome. Refused while the breaker is tripped:
  an operator clears it first, knowing why it tripped.

The CLI (``revalidate``, ``watch --approve``) and the console's remediation view both come here, so a
step means the same whoever asked for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult, Decision, Step
from console.actions.planning import finish, recheck, refused
from console.inventory.hostlist import fold
from console.inventory.model import LifecyclePolicy
from console.store.lifecycle import Case, Stage
from console.store.watch import Proposal
from console.timestamps import local

if TYPE_CHECKING:
    from console.actions.service import ActionService
    from console.store import Store
    from console.sweep.engine import SweepEngine

CLEAR_BREAKER = "instinct-console watch --clear-breaker"


# revalidate ---------------------------------------------------------------------------------------


def engine_problem(engine: SweepEngine | None) -> str | None:
    """Why a revalidation cannot sweep now, or None."""
    if engine is None:
        return "revalidation sweeps the nodes: it needs the sweep engine (revalidate NODES, or the console)"
    if engine.running:
        return "a sweep is running: revalidate once it is over (K cancels it)"
    return None


def plan_revalidate(
    request: ActionRequest,
    cases: Mapping[str, Case | None],
    policy_of: Callable[[str], LifecyclePolicy],
    problem: str | None,
    partner_of: Callable[[str], str] | None = None,
) -> ActionPlan:
    """A sweep of the targets whose case is ``revalidating`` (one per pool policy that differs); the
    others are skipped with their next step. At the multinode level ``partner_of`` says each node's
    known-good partner (``console.sweep.partner.Partner.plan_line``), so the plan names it."""
    if problem is not None:
        return refused(request, problem)
    decisions = {}
    levels: dict[str, str] = {}
    for target in request.targets:
        policy = policy_of(target)
        level = levels[target] = request.level or policy.level
        case = cases.get(target)
        if case is None:
            decisions[target] = Decision(False, "skip: no open case (the console opens one when it drains a node)")
        elif case.stage is not Stage.REVALIDATING:
            decisions[target] = Decision(
                False, f"skip: case #{case.id} is {case.stage.value}: next {case.next_step(policy)}"
            )
        else:
            which = f"pass {case.passes + 1} of {policy.passes_required}"
            line = f"case #{case.id}: revalidate at {level} ({which} needed to return)"
            if level == "multinode" and partner_of is not None:
                line += f": standard sweep, then {partner_of(target)}"
            decisions[target] = Decision(True, line)

    def steps(acting: tuple[str, ...]) -> tuple[Step, ...]:
        by_level: dict[str, list[str]] = {}
        for target in acting:
            by_level.setdefault(levels[target], []).append(target)
        return tuple(Step(fold(ns), ("sweep", "--probes", lv), tuple(ns)) for lv, ns in by_level.items())

    limits = {(p.max_strikes, p.window_h) for p in map(policy_of, request.targets)}
    said = ", ".join(f"{m} within {w:g} h" for m, w in sorted(limits))
    notes = [f"PASS is a pass; FAIL or WARN is a strike ({said} escalate to the vendor); UNKNOWN is neither"]
    where = f"the nodes (a {'/'.join(sorted(set(levels.values())))} sweep)"
    return finish(request, decisions, steps=steps, where=where, notes=notes)


def revalidation_result(
    results: Mapping[str, tuple[str, Case]], outcome: str, policy_of: Callable[[str], LifecyclePolicy]
) -> ActionResult:
    """The action's result from what ``revalidate`` recorded: ok only when every node passed."""
    per_target = {
        n: f"{line}; case #{c.id} {c.stage.value}, next: {c.next_step(policy_of(n))}"
        for n, (line, c) in results.items()
    }
    passed = all(line.startswith("pass") for line, _ in results.values())
    summary = f"revalidate {fold(list(results))}: {outcome}"
    return ActionResult(passed and outcome == "done", summary, per_target)


# approve ------------------------------------------------------------------------------------------


def approvable(store: Store, request: ActionRequest) -> list[Proposal]:
    """The open proposals a request names: by id, else every open one of its targets."""
    open_now = store.proposals()
    if request.proposal_ids:
        return [p for p in open_now if p.id in request.proposal_ids]
    return [p for p in open_now if p.node in request.targets]


def proposed_request(proposal: Proposal) -> ActionRequest:
    """The action a proposal stands for, with the reason and sweep ``watch`` gave it."""
    return ActionRequest(
        ActionKind(proposal.kind), (proposal.node,), reason=proposal.reason, sweep_id=proposal.sweep_id
    )


async def refresh_approve(service: ActionService, request: ActionRequest) -> None:
    """Read what the proposed actions' plans need (Slurm's node states for a drain or a resume)."""
    seen: set[ActionKind] = set()
    for proposal in approvable(service.store, request):
        inner = proposed_request(proposal)
        if inner.kind not in seen:
            seen.add(inner.kind)
            await service.refresh(inner)


def plan_approve(service: ActionService, request: ActionRequest) -> ActionPlan:
    """The proposed actions' own plans, one after the other; refused while the breaker is tripped."""
    breaker = service.store.breaker()
    if breaker.tripped:
        return refused(request, f"the breaker is tripped ({breaker.why}); an operator clears it first: {CLEAR_BREAKER}")
    wanted = approvable(service.store, request)
    if not wanted:
        asked = ", ".join(f"#{i}" for i in request.proposal_ids) or fold(request.targets) or "any node"
        return refused(request, f"no open proposal for {asked}")
    request = replace(
        request, targets=tuple(dict.fromkeys(p.node for p in wanted)), proposal_ids=tuple(p.id for p in wanted)
    )
    plans = [(p, service.plan(proposed_request(p))) for p in wanted]
    decisions: dict[str, str] = {}
    notes = []
    for p, plan in plans:
        when = local(p.at, seconds=False)
        cited = f" (sweep {p.sweep_id})" if p.sweep_id is not None else ""
        notes.append(f"#{p.id} {p.kind} {p.node}{cited}, proposed by watch {when}: {p.reason}")
        notes += [f"#{p.id}: {n}" for n in plan.notes]
        said = f"refused: {plan.refused}" if plan.refused else plan.decisions.get(p.node, p.kind)
        decisions[p.node] = "; ".join(filter(None, [decisions.get(p.node), f"#{p.id} {p.kind}: {said}"]))
    steps = tuple(step for _, plan in plans for step in plan.steps)
    why = None
    if all(plan.refused for _, plan in plans):
        why = "; ".join(f"#{p.id} {p.kind} {p.node}: {plan.refused}" for p, plan in plans)
    return ActionPlan(
        request=request,
        commands=tuple(step.argv for step in steps),
        where=", ".join(dict.fromkeys(plan.where for _, plan in plans if plan.where)),
        notes=tuple(notes),
        refused=why,
        steps=steps,
        decisions=decisions,
    )


async def execute_approve(service: ActionService, plan: ActionPlan) -> ActionResult:
    """Carry out each proposal the plan showed (re-planned on the state read now), then decide it."""
    await refresh_approve(service, plan.request)
    fresh = plan_approve(service, plan.request)
    why = recheck(plan, fresh)
    if why is not None:
        return service.refuse(fresh, why)
    per_target: dict[str, str] = {}
    went = []
    with service.audited(fresh, fresh.steps, proposals=list(fresh.request.proposal_ids)) as entry:
        for proposal in approvable(service.store, fresh.request):
            inner = proposed_request(proposal)
            await service.refresh(inner)
            result = await service.execute(service.plan(inner))
            service.store.decide_proposal(proposal.id, user=service.user, outcome=result.outcome)
            line = f"#{proposal.id} {proposal.kind} {proposal.node}: {result.outcome}"
            per_target[proposal.node] = "; ".join(filter(None, [per_target.get(proposal.node), line]))
            went.append(result.ok)
        ids = ", ".join(f"#{i}" for i in fresh.request.proposal_ids)
        done = ActionResult(bool(went) and all(went), f"approved {ids}", per_target)
        return service.record(entry, [], done)
