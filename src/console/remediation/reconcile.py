"""Intents without an outcome, reconciled with the scheduler's real state (see ``console.remediation``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from console.inventory.model import LifecyclePolicy
from console.model.findings import worst_action
from console.remediation.cases import close_case, open_case
from console.store import Store
from console.store.drains import DrainRecord
from console.store.lifecycle import Stage
from console.store.owner import ProcessOwner
from console.store.transaction import immediate

RECONCILE = "reconcile"
OUT = frozenset({"drain", "cordon"})
BACK = frozenset({"resume", "undrain", "uncordon"})

# node -> (the reason the scheduler holds it out with, else None; its state as shown)
Seen = Mapping[str, tuple[str | None, str]]


@dataclass(frozen=True)
class Orphan:
    """An audited scheduler action whose process died before it recorded its outcome."""

    audit_id: int
    action: str
    targets: tuple[str, ...]
    shown: str  # the outcome the log showed for it: "outcome unknown: the console (pid ...) stopped ..."


def orphans(store: Store, actions: frozenset[str]) -> list[Orphan]:
    """The intents of ``actions`` without an outcome whose process is gone (a live one is still acting)."""
    found = []
    rows = store.conn.execute("SELECT * FROM audit WHERE finished_at IS NULL ORDER BY id").fetchall()
    for row in rows:
        owner = ProcessOwner.from_text(row["owner"])
        if row["action"] not in actions or owner is None or owner.alive() is not False:
            continue
        found.append(Orphan(row["id"], row["action"], tuple(json.loads(row["targets"])), store.shown_outcome(row)))
    return found


def _record_of(store: Store, audit_id: int, node: str) -> DrainRecord | None:
    return next((r for r in store.drains(node) if r.audit_id == audit_id), None)


def _opened_by(store: Store, node: str, audit_id: int) -> int | None:
    """The open case of ``node`` that the intent ``audit_id`` opened, if any."""
    case = store.case(node)
    if case is None:
        return None
    steps = store.case_steps(case.id)
    return case.id if steps and steps[0].audit_id == audit_id else None


@dataclass(frozen=True)
class _Reconciler:
    """What one scheduler's state says of the orphaned intents on its nodes."""

    store: Store
    backend: str  # "Slurm", "Kubernetes": how the audit names what it read
    user: str
    policy_of: Callable[[str], LifecyclePolicy]

    def out(self, orphan: Orphan, node: str, seen: tuple[str | None, str]) -> str:
        """A drain or cordon: kept (and its case opened when missing) if it took effect, else ended."""
        store, (held_with, state) = self.store, seen
        record = _record_of(store, orphan.audit_id, node)
        opened = _opened_by(store, node, orphan.audit_id)
        took = f"{node}: the {orphan.action} took effect ({self.backend} shows {state})"
        if record is not None and held_with == record.reason:
            case = store.case(node)
            if case is not None:
                return f"{took}; case #{case.id} kept"
            if record.ended_at is not None or not record.findings:
                return f"{took}; no case (no finding behind it)"
            findings = store.findings(record.sweep_id, node, problems_only=True) if record.sweep_id else []
            case = open_case(
                store,
                node,
                user=self.user,
                action=worst_action(findings),
                sweep_id=record.sweep_id,
                findings=record.findings,
                audit_id=orphan.audit_id,
                policy=self.policy_of(node),
            )
            return f"{took}; case #{case.id} {'opened' if case.stage is not Stage.ESCALATED else 'opened, escalated'}"
        why = (
            f"the {orphan.action} did not take effect ({self.backend} shows {state})"
            if held_with is None
            else f"{self.backend} holds it out with another reason ({state}): not the console's"
        )
        if record is not None and record.ended_at is None:
            store.end_drains([node], f"{why}: reconciled after its console died (audit #{orphan.audit_id})")
        if opened is not None:
            close_case(store, node, Stage.ENDED, user=self.user, note=why, audit_id=orphan.audit_id)
            return f"{node}: {why}; case #{opened} ended"
        return f"{node}: {why}"

    def back(self, orphan: Orphan, node: str, seen: tuple[str | None, str]) -> str:
        """A resume, undrain or uncordon: the case closes if it took effect, else it is kept."""
        store, (held_with, state) = self.store, seen
        case = store.case(node)
        if held_with is not None:
            kept = f"; case #{case.id} kept" if case is not None else ""
            return f"{node}: the {orphan.action} did not take effect ({self.backend} shows {state}){kept}"
        store.end_drains([node], f"{orphan.action} by the console (audit #{orphan.audit_id}), reconciled after it died")
        took = f"{node}: the {orphan.action} took effect ({self.backend} shows {state})"
        if case is None:
            return took
        stage = Stage.RETURNED if case.ready(self.policy_of(node)) else Stage.ENDED
        note = f"the {orphan.action} took effect; its console died before recording it"
        close_case(store, node, stage, user=self.user, note=note, audit_id=orphan.audit_id)
        return f"{took}; case #{case.id} {stage.value}"


def reconcile_intents(
    store: Store,
    seen: Seen,
    *,
    actions: frozenset[str],
    backend: str,
    user: str,
    policy_of: Callable[[str], LifecyclePolicy],
) -> list[int]:
    """Reconcile every orphaned intent of ``actions`` with ``seen``, as read now; the ``reconcile`` audit ids.

    Each intent is one transaction: its cases and drain records as the scheduler bears them out, a
    ``reconcile`` audit row saying what was seen and done, and the intent's row finished with its
    unknown outcome and a pointer to that row (so it is reconciled once).
    """
    done = []
    machine = _Reconciler(store, backend, user, policy_of)
    for orphan in orphans(store, actions):
        mine = [t for t in orphan.targets if t in seen]
        if not mine:
            continue  # the scheduler did not list its nodes: nothing to go by yet
        with immediate(store.conn):
            still = store.conn.execute("SELECT finished_at FROM audit WHERE id = ?", (orphan.audit_id,)).fetchone()
            if still is None or still[0] is not None:
                continue  # another console reconciled it meanwhile
            lines = [(machine.out if orphan.action in OUT else machine.back)(orphan, node, seen[node]) for node in mine]
            inputs = {"intent": orphan.audit_id, "action": orphan.action, "seen": {n: seen[n][1] for n in mine}}
            said = "; ".join(lines)
            audit_id = store.audit(
                RECONCILE, mine, inputs=inputs, commands=[], output=orphan.shown, outcome=said, user=user
            )
            store.audit_result(orphan.audit_id, f"{orphan.shown}; reconciled by audit #{audit_id}: {said}")
        done.append(audit_id)
    return done


NODE_DRAIN = "node-drain"
# The reason docs/slurm/check-local-health.sh drains with, on the node itself (it cannot reach this database).
NODE_TAG = "instinct-console: check-local:"

# node -> (its reason, who set it, when, its state as shown), as the scheduler was just read
Reasons = Mapping[str, tuple[str | None, str | None, str | None, str]]


def record_node_drains(store: Store, seen: Reasons, *, user: str) -> list[int]:
    """Audit, once each, the drains the node-side health check made (``NODE_TAG``); the new rows' ids.

    The health check runs on the node and cannot write this database (operator guide, section 7): the
    drain's intent is its reason, which Slurm keeps with who set it and when. The console records what it
    finds the first time it reads it, so the audit log names every drain of the console's making, made
    on the console host or on the node. Nothing else changes: no drain record, no case (a resume of it
    stays forced, with a reason).
    """
    done: list[int] = []
    if store.read_only:
        return done  # a database opened for reading: the next console that may write records it
    for node, (reason, who, when, state) in seen.items():
        if not reason or not reason.startswith(NODE_TAG):
            continue
        inputs = {"reason": reason, "set_by": who, "set_at": when}
        found = store.conn.execute(
            "SELECT 1 FROM audit WHERE action = ? AND targets = ? AND inputs = ?",
            (NODE_DRAIN, json.dumps([node]), json.dumps(inputs)),
        ).fetchone()
        if found is not None:
            continue
        said = (
            f"drained on the node by its health check (check-local-health.sh), {state}: seen by the console"
            " at its first read after (the node cannot write this database); no case, a resume needs --force"
        )
        done.append(store.audit(NODE_DRAIN, [node], inputs=inputs, commands=[], output="", outcome=said, user=user))
    return done
