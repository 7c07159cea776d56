"""What the console's remediation view shows, read from the history database as ``cases`` and ``watch`` read it.

One row per node the loop is busy with, in the order of the loop: a node ``watch`` proposes to drain
(suspect), then each open case by its stage, then the cases closed within the strike window (returned,
escalated, ended), so a node that just came back or went to the vendor is still in sight. Each row
says how long the node has been at that stage, the next step and who must take it, the physical
action its findings call for, its strikes within the window against the policy's limit, its open
proposals and its last active check. The breaker's state and every open proposal come with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.actions.freshness import Freshness, freshness
from console.actions.model import ActionKind
from console.actions.proposal_why import proposed_action
from console.inventory.model import Inventory, LifecyclePolicy
from console.model.findings import Remedy
from console.remediation.strikes import Strike, strike_history
from console.store import Store
from console.store.lifecycle import PHYSICAL, Case, Stage
from console.store.watch import Breaker, Proposal

SUSPECT = "suspect"  # no case yet: watch found it FAIL and proposes its drain
STAGES = (SUSPECT, *(s.value for s in Stage))
CLEAR_BREAKER = "an operator, after finding why: instinct-console watch --clear-breaker (audited)"


@dataclass(frozen=True)
class RemediationRow:
    """One node in the loop."""

    node: str
    pool: str
    stage: str  # a ``Stage`` value, or ``suspect``
    since: float  # when it reached that stage
    next_step: str
    who: str  # who must take the next step
    action: Remedy | None
    case_id: int | None
    passes: int
    strikes: int  # within the policy's window, across the node's cases
    # ... and what each was: the sweep, where it ran, the checks it found failing anew (oldest first)
    strike_history: tuple[Strike, ...]
    proposals: tuple[Proposal, ...]
    checked: Freshness
    policy: LifecyclePolicy  # its pool's (``[pools.lifecycle]`` over ``[lifecycle]``)

    @property
    def physical(self) -> bool:
        """True when the action needs a technician at the node."""
        return self.action in PHYSICAL


@dataclass(frozen=True)
class RemediationView:
    """The loop at one moment: its rows, the breaker and the open proposals, and each pool's policy."""

    rows: tuple[RemediationRow, ...]
    breaker: Breaker
    proposals: tuple[Proposal, ...]
    policies: dict[str, LifecyclePolicy]  # per pool, in the cluster file's order

    def counts(self) -> dict[str, int]:
        """Nodes per stage (only the stages some node is at)."""
        found: dict[str, int] = {}
        for row in self.rows:
            found[row.stage] = found.get(row.stage, 0) + 1
        return found


def _who(case: Case, policy: LifecyclePolicy, proposals: tuple[Proposal, ...]) -> str:
    """Who takes the case's next step (the view's keys in brackets: a repaired, v revalidate, p approve)."""
    if case.stage is Stage.ESCALATED:
        return "vendor (RMA)"
    if case.stage.closed:
        return "-"
    if case.stage is Stage.PROPOSED:
        return "operator: approve (p), or reject"
    if any(p.kind == ActionKind.RESUME.value for p in proposals):
        return "operator: approve (p)"
    if case.stage is Stage.AWAITING_REPAIR or (case.stage is Stage.DRAINED and case.action in PHYSICAL):
        return "technician, then operator (a)"
    if case.stage is Stage.DRAINED:
        return "operator (a once done)"
    if case.ready(policy):
        return "operator (resume), or watch --auto"
    return "operator (v), or watch"


def _stage_since(store: Store, case: Case) -> float:
    """When the case reached its stage: its last step that changed the stage (the opening at least)."""
    since, stage = case.opened_at, None
    for step in store.case_steps(case.id):
        if step.stage is not stage:
            since, stage = step.at, step.stage
    return since


def remediation_view(store: Store, inventory: Inventory, now: float) -> RemediationView:
    """Every node the loop is busy with (see the module's docstring), the breaker and the open proposals."""
    policy_of = inventory.policy_of
    pool_of = {n.name: n.pool for n in inventory.nodes}
    policies = {pool: inventory.policy(pool) for pool in inventory.pools} or {"(fleet)": inventory.lifecycle}
    widest = max((p.window_s for p in policies.values()), default=inventory.lifecycle.window_s)
    proposals = tuple(store.proposals())
    by_node: dict[str, list[Proposal]] = {}
    for p in proposals:
        by_node.setdefault(p.node, []).append(p)
    # A closed case stays in view for its node's strike window (each pool may have its own).
    cases = [c for c in store.cases() if c.closed_at is None or now - c.closed_at <= widest]
    cases = [c for c in cases if c.closed_at is None or now - c.closed_at <= policy_of(c.node).window_s]
    # A node's newest case only: an older one closed within the window is history (``cases --node``).
    newest = {c.node: c for c in cases}
    nodes = list(dict.fromkeys([*newest, *by_node]))
    checked = freshness(store, nodes)
    rows = []
    for node in nodes:
        mine = tuple(by_node.get(node, ()))
        case = newest.get(node)
        policy = policy_of(node)
        history = tuple(strike_history(store, node, policy.window_s, now))
        strikes = len(history)
        if case is None or (case.stage.closed and any(p.kind == ActionKind.DRAIN.value for p in mine)):
            first = min(mine, key=lambda p: p.at)
            kinds = ", ".join(dict.fromkeys(p.kind for p in mine))
            row = RemediationRow(
                node=node,
                pool=pool_of.get(node, "-"),
                stage=SUSPECT,
                since=first.at,
                next_step=f"approve the proposed {kinds}",
                who="operator: approve (p)",
                # What the findings behind the proposed drain call for: the operator approves on it.
                action=proposed_action(store, mine),
                case_id=None,
                passes=0,
                strikes=strikes,
                strike_history=history,
                proposals=mine,
                checked=checked[node],
                policy=policy,
            )
        else:
            row = RemediationRow(
                node=node,
                pool=pool_of.get(node, "-"),
                stage=case.stage.value,
                since=_stage_since(store, case),
                next_step=case.next_step(policy),
                who=_who(case, policy, mine),
                action=case.action,
                case_id=case.id,
                passes=case.passes,
                strikes=strikes,
                strike_history=history,
                proposals=mine,
                checked=checked[node],
                policy=policy,
            )
        rows.append(row)
    rows.sort(key=lambda r: (STAGES.index(r.stage), r.since, r.node))
    return RemediationView(tuple(rows), store.breaker(), proposals, policies)
