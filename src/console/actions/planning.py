"""From a request and the state last read to an ``ActionPlan``, and from what ran to an outcome line.

Pure functions: the service reads Slurm, Kubernetes or the nodes, then hands the result here. A
plan acts on the targets whose ``Decision`` says so; removing actions (drain, cordon) also pass the
blast-radius cap; a plan whose every target was skipped (not merely already done) is refused.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Any

from console.actions import kube, slurm
from console.actions.caps import CapPolicy, cap_violations, within_cap
from console.actions.catalogue import Reason, entry
from console.actions.holds import HELD_FIELDS, hold_argv, manager_for, packages_to_hold
from console.actions.model import ActionKind, ActionPlan, ActionRequest, Decision, Step
from console.actions.pin import pin_changes
from console.actions.runner import RunOutput
from console.actions.slurm_state import SlurmNode
from console.inventory.hostlist import fold
from console.inventory.model import StackPin
from console.store.lifecycle import Case, Stage

KUBERNETES = "kubernetes"
STORE = "store"
READ_ONLY = "read-only: actions are disabled (--read-only)"
NOT_READ = "scheduler state not read yet: ownership, caps and no-ops are checked again when executing"
PAST = {
    ActionKind.DRAIN: "drained",
    ActionKind.RESUME: "resumed",
    ActionKind.UNDRAIN: "undrained",
    ActionKind.CORDON: "cordoned",
    ActionKind.UNCORDON: "uncordoned",
    ActionKind.ENFORCE_PIN: "held",
    ActionKind.ROLLBACK: "held",
}
_SLURM_REFUSALS = ("Invalid user id", "Access/permission denied")  # slurmctld: not root, not an operator


CAPPED = "skip: cap: "  # how a target left out by its pool's cap is noted


@dataclass(frozen=True)
class CapCheck:
    """What the cap needs: the policy, pool members, the nodes already out and which of them are the console's."""

    policy: CapPolicy
    pools: Mapping[str, Sequence[str]]
    held: frozenset[str]
    by_console: frozenset[str] = frozenset()


def refused(request: ActionRequest, why: str) -> ActionPlan:
    """A plan that may not run, and why."""
    return ActionPlan(request=request, commands=(), where="", refused=why)


def finish(
    request: ActionRequest,
    decisions: dict[str, Decision],
    *,
    steps: Callable[[tuple[str, ...]], tuple[Step, ...]],
    where: str,
    notes: list[str],
    cap: CapCheck | None = None,
) -> ActionPlan:
    """The plan for ``decisions``, its ``steps`` made for the targets it acts on.

    With a ``cap``: the targets past their pool's cap are left out, each saying why, and the first note
    counts them; when none fits, the request is refused with the pools' counts. Forced, the cap is
    overridden and the note says so. Refused when every target was skipped.
    """
    acting = [t for t, d in decisions.items() if d.act]
    capped: tuple[str, ...] = ()
    why = None
    if cap is not None and acting:
        violations = cap_violations(cap.policy, cap.pools, cap.held, acting, by_console=cap.by_console)
        if violations and request.force:
            notes.append("cap overridden (--force): " + "; ".join(violations))
        elif violations:
            fit, left = within_cap(cap.policy, cap.pools, cap.held, acting, by_console=cap.by_console)
            capped = tuple(left) if fit else tuple(acting)
            if fit:
                counted = f"{len(left)} of {len(acting)} nodes left out by the cap: {fold(left)} (--force overrides)"
                notes.insert(0, counted)
                decisions = {t: Decision(False, f"{CAPPED}{left[t]}") if t in left else d for t, d in decisions.items()}
                acting = fit
            else:  # none fits: every one of them is held back
                why = "; ".join(violations) + "; --force overrides it"
    skipped = [f"{t}: {d.note}" for t, d in decisions.items() if not d.act and not d.no_op]
    if not acting and skipped and why is None:
        why = f"nothing to {request.kind.value}: " + "; ".join(skipped)
    made = steps(tuple(acting)) if why is None and acting else ()
    return ActionPlan(
        request=request,
        commands=tuple(step.argv for step in made),
        where=where,
        notes=tuple(notes),
        refused=why,
        steps=made,
        decisions={t: d.note for t, d in decisions.items()},
        capped=capped,
    )


# Why a required reason (console.actions.catalogue) is required, per action.
_REASON_GOES_TO = {
    ActionKind.DRAIN: "Slurm refuses DRAIN without one",
    ActionKind.CORDON: "it is kept in the node's annotations",
}


def reason_missing(request: ActionRequest) -> ActionPlan | None:
    """The refusal of a request without the reason its catalogue entry requires; None when it has one."""
    if entry(request.kind).reason is not Reason.REQUIRED or slurm.clean_reason(request.reason):
        return None
    why = _REASON_GOES_TO.get(request.kind, "it is kept in the audit log")
    return refused(request, f"a reason is required for {request.kind.value} ({why})")


def plan_slurm(
    request: ActionRequest,
    states: Mapping[str, SlurmNode] | None,
    *,
    where: str,
    caps: CapPolicy,
    pools: Mapping[str, Sequence[str]],
    owned: AbstractSet[str],
    cases: Mapping[str, str] | None = None,
) -> ActionPlan:
    """One ``scontrol update`` for every target that needs it; ``states`` None: not read yet.

    ``owned``: the nodes the console holds drained by its own records (see ``slurm.decide``). ``cases``:
    node -> why its remediation case keeps it out (not revalidated yet); a resume skips it unless forced.
    """
    missing = reason_missing(request)
    if missing is not None:
        return missing
    decisions = {t: slurm.decide(request.kind, t, states, request.force, owned=owned) for t in request.targets}
    held_by_case = _hold_for_cases(request, decisions, cases) if request.kind is not ActionKind.DRAIN else []
    notes = [] if states is not None else [NOT_READ]
    cap = None
    if request.kind is ActionKind.DRAIN and states is not None:  # unread: what is out is unknown, checked later
        # Out of service for any reason, by anyone: what the pool has left is what the cap protects.
        held = frozenset(n for n, s in (states or {}).items() if s.out_of_service)
        cap = CapCheck(caps, pools, held, by_console=held & owned)
    reason = slurm.tag_reason(request.reason, request.sweep_id) if request.kind is ActionKind.DRAIN else None

    def steps(acting: tuple[str, ...]) -> tuple[Step, ...]:  # one scontrol for every node it acts on
        return (Step(where, slurm.update_argv(fold(acting), request.kind, reason), acting),)

    plan = finish(request, decisions, steps=steps, where=where, notes=notes, cap=cap)
    return replace(plan, held=tuple(held_by_case)) if held_by_case else plan


def _hold_for_cases(
    request: ActionRequest, decisions: dict[str, Decision], cases: Mapping[str, str] | None
) -> list[str]:
    """Skip the targets whose remediation case keeps them out (``cases``: node -> why), unless forced.

    Changes ``decisions`` in place; returns the targets held back.
    """
    held: list[str] = []
    for target, why in (cases or {}).items():
        decision = decisions.get(target)
        if decision is None or not decision.act:
            continue
        if request.force and not (request.reason or "").strip():
            # Returning a node its case holds is the console's gravest step: the audit and the case say why.
            decisions[target] = Decision(
                False, f"skip: {why}; --force needs --reason TEXT (audited, and kept in the case)"
            )
            held.append(target)
        elif request.force:
            decisions[target] = Decision(True, f"{decision.note} (forced past {why})")
        else:
            decisions[target] = Decision(False, f"skip: {why}; --force returns it anyway")
            held.append(target)
    return held


def plan_case(request: ActionRequest, cases: Mapping[str, Case | None]) -> ActionPlan:
    """A step of each target's remediation case; only nodes whose case is at a stage that allows it act."""
    missing = reason_missing(request)
    if missing is not None:
        return missing
    decisions = {t: _case_decision(request.kind, cases.get(t)) for t in request.targets}

    def steps(acting: tuple[str, ...]) -> tuple[Step, ...]:
        return (Step(STORE, ("case", request.kind.value, fold(acting)), acting),)

    return finish(request, decisions, steps=steps, where=STORE, notes=[])


def _case_decision(kind: ActionKind, case: Case | None) -> Decision:
    if case is None:
        return Decision(False, "skip: no open case (the console opens one when it drains a node)")
    if kind is ActionKind.ESCALATE:
        return Decision(True, f"case #{case.id}: {case.stage.value} -> escalated (rma); the node stays drained")
    if case.stage in (Stage.DRAINED, Stage.AWAITING_REPAIR):
        return Decision(True, f"case #{case.id}: {case.stage.value} -> revalidating")
    return Decision(False, f"no-op: case #{case.id} is {case.stage.value} already", no_op=True)


# The requests one Node needs (path, strategic-merge body), from the Node as last read.
KubeRequests = Callable[[str, Mapping[str, Any]], list[tuple[str, dict[str, Any]]]]


def plan_kube(
    request: ActionRequest,
    nodes: Mapping[str, Mapping[str, Any]] | None,
    *,
    requests: KubeRequests,
    caps: CapPolicy,
    pools: Mapping[str, Sequence[str]],
    cases: Mapping[str, str] | None = None,
) -> ActionPlan:
    """The PATCHes of every Node that needs them (``requests`` makes them); ``nodes`` None: not read yet.

    The bodies are computed from each Node as read (its taint list is sent whole), so nothing is
    planned before the nodes are read. ``cases``: node -> why its remediation case keeps it out; an
    uncordon skips it unless forced.
    """
    cordon = request.kind is ActionKind.CORDON
    missing = reason_missing(request)
    if missing is not None:
        return missing
    if nodes is None:
        return refused(request, "Kubernetes nodes not read yet: the patches are computed from each node as read")
    decisions = {}
    for target in request.targets:
        if target not in nodes:
            decisions[target] = Decision(False, "skip: not a node of this Kubernetes cluster")
        else:
            decisions[target] = kube.decide(cordon, nodes[target], request.force)
    held_by_case = [] if cordon else _hold_for_cases(request, decisions, cases)
    notes = ["each PATCH carries the resourceVersion read just before it: a node changed meanwhile is refused (409)"]
    cap = None
    if cordon:
        held = frozenset(n for n, obj in nodes.items() if kube.held_reason(obj) is not None)
        cap = CapCheck(caps, pools, held, by_console=held)

    def steps(acting: tuple[str, ...]) -> tuple[Step, ...]:  # one PATCH per request, node by node
        made = [(t, path, body) for t in acting for path, body in requests(t, nodes[t])]
        return tuple(Step(KUBERNETES, kube.request_argv(path, body), (t,)) for t, path, body in made)

    plan = finish(request, decisions, steps=steps, where=KUBERNETES, notes=notes, cap=cap)
    return replace(plan, held=tuple(held_by_case)) if held_by_case else plan


def plan_pin(
    request: ActionRequest,
    *,
    pool: str,
    new: StackPin,
    current: StackPin,
    source: str,
    peers: Sequence[Mapping[str, str]] = (),
) -> ActionPlan:
    """Store ``new`` as the pin of ``pool``; the notes list every field it changes, and warn where most of
    the pool's other nodes (``peers``: their last seen stacks) run something else."""
    node = request.from_node or ""
    if not new.pinned_fields():
        return refused(request, f"no stack known for {node}: sweep it first")
    changes = pin_changes(current, new)
    # The warning that this node is the odd one out comes first: below a dozen changed fields it was
    # scrolled out of the dialog.
    notes = _odd_one_out(node, new, peers)
    notes += [f"stack of {node} from {source}", *(changes or ["same as the current pin: nothing changes"])]
    return ActionPlan(
        request=replace(request, pool=pool),
        commands=(),
        where=STORE,
        notes=tuple(notes),
        decisions={node: f"pin pool {pool} to this node's stack ({len(new.pinned_fields())} fields)"},
    )


def _odd_one_out(node: str, new: StackPin, peers: Sequence[Mapping[str, str]]) -> list[str]:
    """Warnings for the fields where most peers that report one run another version than ``node``."""
    warnings = []
    for field, value in new.pinned_fields().items():
        seen = [peer[field] for peer in peers if peer.get(field)]
        others = Counter(v for v in seen if v != value)
        if others and sum(others.values()) * 2 > len(seen):
            common, count = others.most_common(1)[0]
            warnings.append(f"warning: {node} has {field} {value}; {count} of {len(seen)} pool peers run {common}")
    return warnings


def plan_enforce(
    request: ActionRequest,
    pins: Mapping[str, StackPin],
    os_ids: Mapping[str, str | None],
    unreadable: Mapping[str, str] | None = None,
    stacks: Mapping[str, Mapping[str, str]] | None = None,
) -> ActionPlan:
    """One hold command per target, chosen by its OS (``os_ids``) for the packages its pin (``pins``) names.

    ``unreadable`` says why a node's OS could not be read, for the nodes whose OS is not known otherwise.
    A hold freezes what is installed, so a node whose last observed stack (``stacks``) is off its pin in
    a field the hold would freeze is skipped: holding it would keep the drift. A node never swept is held,
    and the plan says it was not checked.
    """
    decisions: dict[str, Decision] = {}
    holds: list[Step] = []
    for target in request.targets:
        os_id = os_ids.get(target)
        manager = manager_for(os_id)
        pin = pins.get(target, StackPin())
        packages = packages_to_hold(pin, manager) if manager else []
        stack = (stacks or {}).get(target, {})
        drifted = _held_drift(pin, stack)
        if manager is None:
            note = f"skip: OS {os_id!r} has no known package manager" if os_id else "skip: OS not detected yet"
            if not os_id and unreadable and target in unreadable:
                note = f"skip: {unreadable[target]}"
            decisions[target] = Decision(False, note)
        elif not packages:
            decisions[target] = Decision(False, "no-op: the pool pin names no packaged field", no_op=True)
        elif drifted:
            decisions[target] = Decision(False, f"skip: off its pin ({drifted}): a hold would keep the drift")
        else:
            decisions[target] = Decision(True, f"hold {len(packages)} packages with {manager.value}")
            holds.append(Step(target, hold_argv(manager, packages), (target,)))
    notes = ["a hold freezes the installed versions: nodes last seen off their pin are skipped"]
    unseen = [t for t in request.targets if decisions[t].act and not (stacks or {}).get(t)]
    if unseen:
        notes.append(f"never swept, not checked against the pin: {fold(unseen)} (run drift first)")
    where = fold(s.targets[0] for s in holds) or "nodes"
    return finish(request, decisions, steps=lambda acting: tuple(holds), where=where, notes=notes)


def _held_drift(pin: StackPin, stack: Mapping[str, str]) -> str:
    """The fields a hold would freeze that ``stack`` has at another version than ``pin`` ('' when none)."""
    pinned = pin.pinned_fields()
    held = [field for field in (*HELD_FIELDS, "kernel") if field in pinned]
    off = [field for field in held if stack.get(field) not in (None, pinned[field])]
    return ", ".join(f"{field} {stack[field]}, pin {pinned[field]}" for field in off)


def recheck(shown: ActionPlan, fresh: ActionPlan) -> str | None:
    """Why ``fresh`` (planned on the state read at execution) may not run in place of ``shown``, or None."""
    if fresh.refused:
        return fresh.refused
    extra = set(fresh.acting_on) - set(shown.acting_on)
    if extra:
        return f"state changed since the plan: it would now also act on {fold(extra)}; plan again"
    return None


def explain(out: RunOutput) -> str:
    """The command's message, with who may run it when it was refused for lack of rights."""
    message = out.message()
    if any(word in message for word in _SLURM_REFUSALS):
        return f"{message} (scontrol update needs root or a Slurm operator on {out.where})"
    if "Permission denied" in message or "are you root?" in message:
        return f"{message} ({out.argv[0] if out.argv else 'the command'} needs root on {out.where})"
    return message


def outcome(kind: ActionKind, plan: ActionPlan, failed: Sequence[RunOutput]) -> str:
    """One line: what was done to which nodes, what was skipped, or the first failure."""
    if failed:
        return f"failed: {explain(failed[0])}"
    if not plan.acting_on:
        return f"nothing to {kind.value}: " + "; ".join(f"{t}: {n}" for t, n in plan.decisions.items())
    skipped = [t for t, note in plan.decisions.items() if note.startswith("skip")]
    text = f"{PAST[kind]} {fold(plan.acting_on)}"
    return text + (f"; skipped {fold(skipped)}" if skipped else "")
