"""Why ``watch`` proposes to drain a node.

A proposal's reason is what an operator approves or rejects on, so it says what the sweep found:
``watch: FAIL: gpu3 Fatal CPER records: 1 (+2 more FAIL); calls for rma`` (the node's headline finding,
how many other findings FAILed, and the gravest action they call for). The same text becomes the
drain's Slurm reason when the proposal is approved, so it is kept on one line and without double
quotes (``scontrol`` reads the reason as ``Reason="<text>"``).
"""

from __future__ import annotations

from console.model.findings import Finding, NodeVerdict, Remedy, Status, roll_up
from console.store import Store
from console.store.watch import Proposal

# How much of the headline finding a reason quotes: it is read in one table cell and in Slurm's reason.
_HEADLINE_CHARS = 100


def failing_set(findings: list[Finding]) -> frozenset[tuple[str, str]]:
    """The FAIL findings as (check id, subject)."""
    return frozenset((f.check_id, f.subject.label()) for f in findings if f.status is Status.FAIL)


def drain_reason(verdict: NodeVerdict) -> str:
    """The reason of a drain proposal: the verdict's headline, how many more FAILed, the action called for."""
    headline = " ".join(verdict.reason.split()).replace('"', "'")
    if len(headline) > _HEADLINE_CHARS:
        headline = headline[: _HEADLINE_CHARS - 1] + "…"
    failed = len(failing_set(verdict.findings))
    more = f" (+{failed - 1} more FAIL)" if failed > 1 else ""
    action = verdict.action.value if verdict.action is not None else "no action named"
    return f"watch: {verdict.status.value}: {headline}{more}; calls for {action}"


def sweep_verdict(store: Store, sweep_id: int, node: str) -> NodeVerdict:
    """``node``'s verdict in ``sweep_id`` rebuilt from its stored problem findings (reason and action)."""
    return roll_up(node, store.findings(sweep_id, node, problems_only=True))


def proposed_action(store: Store, proposals: tuple[Proposal, ...]) -> Remedy | None:
    """The action the findings behind a node's drain proposal call for (None without a sweep to read)."""
    for proposal in proposals:
        if proposal.kind == "drain" and proposal.sweep_id is not None:
            return sweep_verdict(store, proposal.sweep_id, proposal.node).action
    return None
