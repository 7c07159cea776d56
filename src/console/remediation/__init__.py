"""The remediation case machine: every transition of a node's case, its guards and its audit, in one place.

``cases`` holds the transitions (open, repaired, a revalidation's pass or strike, escalate, return,
end), ``guards`` what each requires (and what a return to service requires: ``return_refusal``),
``strikes`` what counts as a strike (any new FAIL within the pool's window, whoever found it). The
history database keeps the records (``console.store.lifecycle``); nothing else writes them.

A scheduler transition (drain or cordon, resume or uncordon) is three writes, in this order:

1. the intent: one SQLite transaction holds the audit row (who, targets, the exact commands), the
   drain record and the case it opens (``transitions.out_intent``). Killed before this commits, the
   console did nothing; after, everything it may have done is claimed.
2. the scheduler effect (``scontrol update``, the Kubernetes PATCH), outside the database.
3. the outcome: the audit row's outcome, and the case stepped on (a failed drain ends the case it
   opened; a resume closes the case as returned, or ended when forced).

A console killed between 1 and 3 leaves an intent without an outcome (``audit.finished_at`` NULL).
The next console that reads the scheduler, before it plans or does anything else, reconciles each
such intent whose process is gone with what the scheduler really shows (``reconcile``): the case is
kept (the drain took effect), opened (an older console's drain), or ended (it never took effect, or
someone else holds the node), and the real state is recorded and audited as ``reconcile``.

``lease`` keeps one actor at a time on a history database: ``watch``, ``revalidate``, ``resume``,
``drain`` and the console's actions take it before they act.
"""

from console.remediation.cases import (
    acknowledge_repair,
    close_case,
    drain_failed,
    open_case,
    record_revalidation,
    returned,
)
from console.remediation.guards import CaseError, return_refusal
from console.remediation.lease import Lease, LeaseHeld, lease_holder, taken_lease
from console.remediation.reconcile import RECONCILE, reconcile_intents
from console.remediation.strikes import Strike, strike_history, strikes

__all__ = [
    "RECONCILE",
    "CaseError",
    "Lease",
    "LeaseHeld",
    "Strike",
    "acknowledge_repair",
    "close_case",
    "drain_failed",
    "lease_holder",
    "open_case",
    "reconcile_intents",
    "record_revalidation",
    "return_refusal",
    "returned",
    "strike_history",
    "strikes",
    "taken_lease",
]
