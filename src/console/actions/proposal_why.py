"""Why ``watch`` proposes to drain a node, and whether an operator's rejection holds that proposal back.

A proposal's reason is what an operator approves or rejects on, so it says what the sweep found:
``watch: FAIL: gpu3 Fatal CPER records: 1 (+2 more FAIL); calls for rma`` (the node's headline finding,
how many other findings FAILed, and the gravest action they call for). The same text becomes the
drain's Slurm reason when the proposal is approved, so it is kept on one line and without double
quotes (``scontrol`` reads the reason as ``Reason="<text>"``).

An operator who rejects a drain means "not for this fault": the next rounds do not propose the same
action on the same node while its failing findings (check id and subject, e.g. ``ras.cper_fatal`` on
``sim003 gpu3``) are the set they were in the rejected proposal's sweep. A new or different failure
proposes again. Only the node's newest rejection of that action counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.model.findings import Finding, NodeVerdict, Remedy, Status, roll_up
from console.store import Store
from console.store.watch import Proposal

REJECTED = "rejected: "  # how ``console.actions.watch.reject`` closes a proposal
# How much of the headline finding a reason quotes: it is read in one table cell and in Slurm's reason.
_HEADLINE_CHARS = 100


def failing_set(findings: list[Finding]) -> frozenset[tuple[str, str]]:
    """The FAIL findings as (check id, subject): what a rejection is about."""
    return frozenset((f.check_id, f.subject.label()) for f in findings if f.status is Status.FAIL)


def drain_reason(verdict: NodeVerdict) -> str:
    """The reason of a drain proposal: the verdict's headline, how many more FAILed, the action called for."""
    headline = " ".join(verdict.reason.split()).replace('"', "'")
    if len(headline) > _HEADLINE_CHARS:
        headline = headline[: _HEADLINE_CHARS - 1] + "…"
    failed = len(failing_set(verdict.findings))
    more = f" (+{failed - 1} more FAIL)" if failed > 1 else ""
    action = verdict.action.value if verdict.action is not None else "no action named"
    # The finding by its check id (what `history` and the bundle look up) and the action it calls for.
    worst = next((f.check_id for f in verdict.findings if f.status is verdict.status), None)
    named = f" {worst}" if worst else ""
    return f"watch: {verdict.status.value}{named}: {headline}{more}; calls for {action}"


def sweep_verdict(store: Store, sweep_id: int, node: str) -> NodeVerdict:
    """``node``'s verdict in ``sweep_id`` rebuilt from its stored problem findings (reason and action)."""
    return roll_up(node, store.findings(sweep_id, node, problems_only=True))


def proposed_action(store: Store, proposals: tuple[Proposal, ...]) -> Remedy | None:
    """The action the findings behind a node's drain proposal call for (None without a sweep to read)."""
    for proposal in proposals:
        if proposal.kind == "drain" and proposal.sweep_id is not None:
            return sweep_verdict(store, proposal.sweep_id, proposal.node).action
    return None


@dataclass(frozen=True)
class HeldBack:
    """A proposal not made again: the rejection it repeats, and the operator's reason."""

    rejection: Proposal

    @property
    def why(self) -> str:
        """``rejected #3 (known: ticket 42), same failures``."""
        said = (self.rejection.outcome or "").removeprefix(REJECTED)
        return f"rejected #{self.rejection.id} ({said}), same failures"


def held_back(store: Store, kind: str, node: str, failing: frozenset[tuple[str, str]]) -> HeldBack | None:
    """The rejection that holds back proposing ``kind`` on ``node`` for these failing findings, or None."""
    rejected = [
        p
        for p in store.proposals(open_only=False)
        if p.kind == kind and p.node == node and (p.outcome or "").startswith(REJECTED)
    ]
    if not rejected or rejected[-1].sweep_id is None:
        return None
    newest = rejected[-1]
    assert newest.sweep_id is not None
    then = failing_set(store.findings(newest.sweep_id, node, problems_only=True))
    return HeldBack(newest) if then == failing else None
