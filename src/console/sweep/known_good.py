"""Whether a node may vouch for another as a known-good partner of a multi-node run.

A node's PASS in an old sweep says little once something newer is known about it: a later verdict that
was not healthy, a remediation case still open on it, or a drain the console still holds. Any of these
rules it out as a partner, whatever the older sweep said; the borrowed partners of a second pass and the
partner of a multi-node revalidation are both chosen through here, so the two never disagree.
"""

from __future__ import annotations

from console.model.findings import Status
from console.store import Store
from console.store.follow import newest_verdicts

# A later WARN still says the node ran and was judged healthy enough to keep in service; FAIL and
# UNKNOWN say it is bad or that nobody knows.
_DISQUALIFYING = {Status.FAIL.value, Status.UNKNOWN.value}


def disqualified(store: Store, nodes: list[str], *, after: int) -> dict[str, str]:
    """Node -> why it cannot vouch for another, for those of ``nodes`` ruled out by what the store knows
    since sweep ``after`` (the sweep that judged them good)."""
    why: dict[str, str] = {}
    open_cases = {case.node for case in store.cases(open_only=True)}
    open_drains = {record.node for record in store.drains(open_only=True)}
    newest = newest_verdicts(store, nodes)
    for node in nodes:
        verdict = newest.get(node)
        if node in open_cases:
            why[node] = "has an open remediation case"
        elif node in open_drains:
            why[node] = "is drained by the console"
        elif verdict is not None and verdict.sweep_id > after and verdict.status in _DISQUALIFYING:
            why[node] = f"was {verdict.status} in {verdict.where()}"
    return why
