"""The way back: a pool's pin and workload images set back to the stack last accepted on it.

The plan reuses the pin's and the holds' planning: the pin becomes the accepted stack's fields (the
cluster file's other pinned fields kept), each containerised workload's image on the pool goes back
to the one it was last accepted in (a stored override the workload runner uses; the framework's, in
its pool's ``[pools.framework] container``, is the image every engine is built with), and the nodes
already on the accepted stack get the package holds ``pin --enforce`` would give them. A node on
another stack is skipped: a hold would keep its drift, and the console installs no packages; the
plan says which versions to put back. The due workloads to rerun close the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from console.actions.acceptance import FRAMEWORK
from console.actions.model import ActionPlan
from console.inventory.hostlist import fold
from console.store.acceptance import AcceptanceRecord

OFF_STACK = "skip: off its pin"  # plan_enforce's decision for a node on another stack


def plan_rollback(
    enforce: ActionPlan,
    *,
    pool: str,
    record: AcceptanceRecord,
    pin_changes: Sequence[str],
    images: dict[str, tuple[str, str]],
    due: Sequence[str],
) -> ActionPlan:
    """The rollback of ``pool`` to ``record``'s stack, around ``enforce`` (the holds of its nodes)."""
    why = f", why: {record.reason}" if record.reason else ""
    notes = [
        f"back to the stack {record.workload} was {record.outcome} on: record #{record.id}, sweep"
        f" {record.sweep_id}, by {record.user}{why}"
    ]
    notes += [f"pin {line}" for line in pin_changes] or ["pin: already the accepted stack"]
    notes += [f"image of {name}: {now} -> {accepted}" for name, (now, accepted) in sorted(images.items())]
    off = [t for t, d in enforce.decisions.items() if d.startswith(OFF_STACK)]
    if off:
        notes.append(
            f"{fold(off)}: on another stack; the console installs no packages: put the accepted versions back,"
            f" then 'pin --enforce --pool {pool} --apply' holds them"
        )
    notes += list(enforce.notes)
    if due:
        # The framework is not a site workload: its rerun is the framework probe's sweep.
        reruns = [f"--probes {'framework' if name == FRAMEWORK else 'workload'}" for name in due]
        how = " and ".join(f"sweep {r}" for r in dict.fromkeys(reruns))
        notes.append(f"then rerun the workloads due on {pool} ({', '.join(due)}): {how}")
    return replace(enforce, request=replace(enforce.request, pool=pool), notes=tuple(notes), refused=None)
