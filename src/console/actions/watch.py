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
The circuit breaker (``console.actions.breaker``) trips when the nodes the console holds out would
pass a pool's or the fleet's limit; while it is tripped no round drains, revalidates or resumes
anything (it still sweeps idle nodes: looking changes nothing) until an operator clears it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from console.actions.breaker import breach
from console.actions.freshness import age_text
from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult
from console.actions.service import ActionService
from console.actions.slurm import describe
from console.actions.slurm_state import SlurmNode
from console.inventory import fold
from console.inventory.model import LifecyclePolicy
from console.model.findings import Status
from console.store import Store
from console.store.lifecycle import Stage
from console.store.watch import Breaker
from console.sweep.engine import SweepEngine
from console.sweep.revalidation import revalidate

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


def last_checked(store: Store, node: str) -> float | None:
    """When the node's newest stored verdict was taken (its sweep's start), or None if never."""
    rows = store.node_history(node, limit=1)
    return float(rows[0]["started_at"]) if rows else None


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
    policy: LifecyclePolicy,
    *,
    every_s: float,
    now: float,
) -> RoundPlan:
    """Sort ``nodes`` into this round's sweep, revalidation and resume, and the ones left alone."""
    sweep, revalidating, resume, skipped = [], [], [], {}
    for name in nodes:
        case = store.case(name)
        if case is not None:
            if case.ready(policy):
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
        elif (checked := last_checked(store, name)) is not None and now - checked < every_s:
            skipped[name] = f"fresh: checked {age_text(now - checked)} ago"
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

    def line(self) -> str:
        """The round in one line, for the log."""
        fresh = sum(1 for why in self.plan.skipped.values() if why.startswith("fresh"))
        parts = [f"round {self.number}:"]
        if self.plan.sweep and self.dry_run:  # a dry run sweeps nothing: it says what it would
            parts.append(f"would sweep {fold(self.plan.sweep)}")
        elif self.plan.sweep:
            judged = ", ".join(f"{n} {s.value}" for n, s in self.statuses.items())
            parts.append(f"swept {fold(self.plan.sweep)}" + (f" (sweep {self.sweep_id}: {judged})" if judged else ""))
        else:
            parts.append("swept nothing")
        parts.append(f"{fresh} fresh, {len(self.plan.skipped) - fresh} left alone")
        if self.outcome != "done":
            parts.append(f"[{self.outcome}]")
        if self.breaker:
            parts.append(f"BREAKER TRIPPED ({self.breaker}): automation paused until 'watch --clear-breaker'")
        if self.done:
            parts.append("done: " + "; ".join(self.done))
        if self.proposed:
            parts.append("proposed: " + "; ".join(self.proposed))
        return " ".join(parts)


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
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.service = service
        self.every_s = every_s
        self.level = level
        self.auto = auto and not dry_run
        self.dry_run = dry_run
        self._clock = clock
        self.rounds = 0

    @property
    def store(self) -> Store:
        """The history database the engine and the actions share."""
        return self.service.store

    async def round(self) -> RoundReport:
        """One round: read Slurm, sweep the idle stale nodes, then drain, revalidate and resume."""
        self.rounds += 1
        inventory = self.service.inventory
        policy = inventory.lifecycle
        await self.service.node_states()  # reads Slurm now (and ends the cases of nodes resumed by hand)
        plan = plan_round(
            [n.name for n in inventory.nodes],
            self.service.slurm_nodes,
            self.store,
            policy,
            every_s=self.every_s,
            now=self._clock(),
        )
        report = RoundReport(self.rounds, plan, dry_run=self.dry_run)
        if self.dry_run:
            report.proposed += [f"sweep {fold(plan.sweep)}"] if plan.sweep else []
            report.proposed += [f"revalidate {fold(plan.revalidate)}"] if plan.revalidate else []
            report.proposed += [f"resume {fold(plan.resume)}"] if plan.resume else []
            return report
        breaker = self.store.breaker()
        report.breaker = breaker.why if breaker.tripped else ""
        resume = list(plan.resume)
        if plan.sweep:
            result = await self.engine.run([inventory.node(n) for n in plan.sweep], level=self.level)
            report.sweep_id, report.outcome = result.sweep_id, result.outcome
            report.statuses = {n: v.status for n, v in result.verdicts.items()}
            if result.outcome == "cancelled":
                return report
            failing = tuple(n for n, s in report.statuses.items() if s is Status.FAIL)
            if failing and not report.breaker:
                report.breaker = self._trip_if_over(failing)
            if failing and not report.breaker:
                await self._act(report, ActionKind.DRAIN, failing, "watch: FAIL", result.sweep_id)
        if report.breaker:
            return report
        if plan.revalidate:
            # Revalidating only sweeps a drained node and records a pass or a strike: no approval needed.
            nodes = [inventory.node(n) for n in plan.revalidate]
            done = await revalidate(self.engine, self.store, nodes, policy.level, policy)
            report.outcome = done.outcome
            report.done += [f"revalidate {n}: {line}" for n, (line, _) in done.results.items()]
            if done.outcome == "cancelled":
                return report
            resume += [n for n, (_, case) in done.results.items() if case.ready(policy)]
        if resume:
            await self._act(report, ActionKind.RESUME, tuple(resume), "watch: revalidated", None)
        return report

    def held_out(self) -> set[str]:
        """Nodes the console holds out of service: its open drains, and the drains it proposed."""
        drained = {d.node for d in self.store.drains(open_only=True)}
        return drained | {p.node for p in self.store.proposals() if p.kind == ActionKind.DRAIN.value}

    def _trip_if_over(self, adding: tuple[str, ...]) -> str:
        """Trip the breaker (audited) when holding ``adding`` out too would pass a limit; why, or ""."""
        pools: dict[str, list[str]] = {}
        for node in self.service.inventory.nodes:
            pools.setdefault(node.pool, []).append(node.name)
        why = breach(self.service.inventory.lifecycle, pools, self.held_out() | set(adding))
        if why is None:
            return ""
        inputs = {"adding": list(adding), "held_out": sorted(self.held_out())}
        with self.store.audited("breaker-trip", adding, inputs=inputs, user=self.service.user) as entry:
            self.store.set_breaker(Breaker(self._clock(), why))
            entry.finish("tripped: automation paused", why)
        return why

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


def clear_breaker(store: Store, user: str) -> str:
    """Clear a tripped breaker (audited); what it had tripped on, or "" when it was clear."""
    breaker = store.breaker()
    if not breaker.tripped:
        return ""
    with store.audited("clear-breaker", [], inputs={"tripped_on": breaker.why}, user=user) as entry:
        store.set_breaker(Breaker())
        entry.finish("cleared: automation resumes", breaker.why)
    return breaker.why
