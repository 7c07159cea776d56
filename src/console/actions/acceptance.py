"""Workload acceptance per pool: the state machine, accepting a run, and recording a rerun's outcome.

The states of a workload on a pool, from its records (``console.store.acceptance``) and the pool's
current stack (each node's newest recorded stack):

- ``not-accepted``: no run of it was ever accepted on this pool;
- ``accepted`` / ``accepted-again``: the pool runs the stack of its last accepting record;
- ``due``: the pool's stack differs from the accepted one and no rerun judged it yet;
- ``regressed``: a rerun on the current stack failed; its figures sit beside the accepted ones;
- ``running``: a run of it on the pool's nodes is in progress (``console.sweep.workload_runs``): the
  state it will settle from is kept beside (``settled``), and gates judge that one.

Each state carries the pool's trend: the figures of the last ``TREND_RUNS`` runs of the workload on
the pool, every run the history kept (judged or not), oldest first.

A sweep that runs workloads (``sweep --probes workload``, or ``framework`` for the built-in workload
of that name) records, for each workload already accepted on a pool whose stack changed, ``accepted
again`` (every node's run passed: the new stack becomes the accepted one) or ``regressed`` (a run
FAILed). A run that could not be judged (UNKNOWN) records nothing: the workload stays due. The first
acceptance is always an operator's (``accept --workload``), with a reason, audited as ``accept``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from console.actions.model import ActionKind, ActionResult
from console.inventory.model import Inventory
from console.model.findings import Status
from console.probes.ids import ProbeId
from console.store import Store, current_user
from console.store.acceptance import ACCEPTED, ACCEPTED_AGAIN, ACCEPTING, REGRESSED, AcceptanceRecord
from console.store.audit import AuditLog
from console.sweep.workload_runs import ACTION as RUN_ACTION

FRAMEWORK = "framework"  # the framework probe, accepted like a site workload
NOT_ACCEPTED = "not-accepted"
DUE = "due"
RUNNING = "running"
STATES = (NOT_ACCEPTED, ACCEPTED, ACCEPTED_AGAIN, DUE, REGRESSED, RUNNING)
# Runs a trend shows: enough to see a drift over a few stack changes, short enough to read on one line.
TREND_RUNS = 8
# A newest figure this far from the mean of the runs before it reads as a move, not noise (an estimate:
# docs/sources/estimates.md#workload-trend-step).
TREND_STEP = 0.02
# What a workload is accepted on: what a stack change re-judges (issue 22: driver, ROCm, framework,
# container image, firmware). Tools such as rvs or amd-smi do not change what a workload does.
STACK_KEYS = ("rocm", "amdgpu_driver", "torch", "image", "image_ref")
# The framework's image when its probe ran on the node's own python3 (no ``[pools.framework] container``).
BARE = "node python3"
FIRMWARE = "firmware."
# Findings of a workload run that are not figures.
_NOT_FIGURES = frozenset({"exit", "output", "run"})


def workload_names(inventory: Inventory) -> list[str]:
    """The site's workloads, then the built-in framework workload."""
    return [*inventory.workloads, FRAMEWORK]


def workload_pools(inventory: Inventory, workload: str) -> list[str]:
    """The pools ``workload`` applies to (every pool for the framework and for a workload naming none)."""
    spec = inventory.workloads.get(workload)
    if spec is not None and spec.pools:
        return [p for p in inventory.pools if p in spec.pools]
    return list(inventory.pools)


def _members(inventory: Inventory, pool: str) -> list[str]:
    return [n.name for n in inventory.nodes if n.pool == pool]


def current_image(store: Store, inventory: Inventory, workload: str, pool: str) -> str | None:
    """The image ``workload`` runs in on ``pool``: the one ``rollback`` set, else the cluster file's (None: bare)."""
    spec = inventory.workloads.get(workload)
    if spec is None or spec.container is None:
        return None
    return store.image_override(workload, pool) or spec.container.image


def framework_view(stack: dict[str, str]) -> dict[str, str]:
    """A node's stack as the framework workload sees it: the image its probe ran in (``framework_image``,
    with ``image_ref`` digest, tag or file) as ``image``; ``node python3`` when the probe ran bare (torch
    read, no image). A stack without torch (no framework probe) says nothing of the image."""
    seen = {k: v for k, v in stack.items() if k not in ("framework_image", "framework_image_ref", "image", "image_ref")}
    if "framework_image" in stack:
        seen["image"] = stack["framework_image"]
        seen["image_ref"] = stack.get("framework_image_ref", "")
    elif "torch" in stack:
        seen["image"] = BARE
    return seen


def merge_stacks(
    stacks: Iterable[dict[str, str]], image: str | None = None, *, framework: bool = False
) -> dict[str, str]:
    """One pool's stack as a workload sees it (with its ``image``; the framework's from its probe's runs,
    ``framework_view``); a field its nodes disagree on reads ``mixed: a | b``."""
    values: dict[str, set[str]] = {}
    for node_stack in stacks:
        for key, value in (framework_view(node_stack) if framework else node_stack).items():
            if key in STACK_KEYS or key.startswith(FIRMWARE):
                values.setdefault(key, set()).add(value)
    merged = {k: next(iter(v)) if len(v) == 1 else "mixed: " + " | ".join(sorted(v)) for k, v in values.items()}
    if image is not None:
        merged["image"] = image
    return dict(sorted(merged.items()))


def stack_changes(accepted: dict[str, str], current: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Fields whose value differs, as (accepted, current).

    A field only one side read (a quick sweep does not read torch) is not a change: it is not known.
    """
    return {k: (v, current[k]) for k, v in accepted.items() if k in current and current[k] != v}


@dataclass(frozen=True)
class PoolRun:
    """A workload's run on a pool's nodes in one sweep: the worst status and the figures (mean of the nodes)."""

    status: Status
    figures: dict[str, float]
    nodes: list[str]


def _prefix(workload: str) -> str:
    return f"{FRAMEWORK}." if workload == FRAMEWORK else f"workload.{workload}."


def pool_run(store: Store, sweep_id: int, workload: str, nodes: Sequence[str]) -> PoolRun | None:
    """The run of ``workload`` on ``nodes`` in ``sweep_id``; None when that sweep did not run it there."""
    statuses: list[Status] = []
    readings: dict[str, list[float]] = {}
    ran: list[str] = []
    prefix = _prefix(workload)
    for node, check_id, status, observed in store.check_readings(sweep_id, list(nodes), prefix):
        if node not in ran:
            ran.append(node)
        statuses.append(Status(status))
        name = check_id.removeprefix(prefix)
        if name not in _NOT_FIGURES and isinstance(observed, int | float) and not isinstance(observed, bool):
            readings.setdefault(name, []).append(float(observed))
    if not ran:
        return None
    worst = max(statuses, key=lambda s: s.severity)
    return PoolRun(worst, {k: sum(v) / len(v) for k, v in sorted(readings.items())}, ran)


@dataclass(frozen=True)
class AcceptanceState:
    """One workload on one pool: its state, what it was accepted on, what the pool runs now."""

    workload: str
    pool: str
    state: str
    current_stack: dict[str, str]
    accepted: AcceptanceRecord | None = None
    regressed: AcceptanceRecord | None = None
    changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    running: RunInProgress | None = None
    trend: list[TrendRun] = field(default_factory=list)

    @property
    def settled(self) -> str:
        """The state apart from a run in progress (what a gate judges: a rerun not ended changes nothing)."""
        return self.running.settled if self.running is not None else self.state

    def figure_trends(self) -> dict[str, FigureTrend]:
        """Per figure, its values over the trend's runs (oldest first) and which way the newest moved."""
        return figure_trends(self.trend)

    def as_json(self) -> dict[str, object]:
        """JSON-ready: the records whole, the changes as {field: {accepted, current}}, the run in progress
        and the trend (its runs, and per figure the values and direction)."""
        return {
            "workload": self.workload,
            "pool": self.pool,
            "state": self.state,
            "settled_state": self.settled,
            "current_stack": self.current_stack,
            "accepted": self.accepted.as_json() if self.accepted else None,
            "regressed": self.regressed.as_json() if self.regressed else None,
            "changes": {k: {"accepted": a, "current": c} for k, (a, c) in self.changes.items()},
            "running": self.running.as_json() if self.running else None,
            "trend": {
                "runs": [t.as_json() for t in self.trend],
                "figures": {k: {"values": v.values, "direction": v.direction} for k, v in self.figure_trends().items()},
            },
        }


@dataclass(frozen=True)
class RunInProgress:
    """A run of a workload on a pool that has not ended: since when, on which nodes, what it was before."""

    started_at: float
    nodes: list[str]
    sweep_id: int | None
    settled: str
    owner: str = ""  # who runs it, as the audit log says ("in progress (pid 123 on host)")

    def as_json(self) -> dict[str, object]:
        """JSON-ready."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class TrendRun:
    """One run of a workload on a pool: its sweep, when, its worst status and its figures (node mean)."""

    sweep_id: int
    at: float
    status: Status
    figures: dict[str, float]

    def as_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {"sweep_id": self.sweep_id, "at": self.at, "status": self.status.value, "figures": self.figures}


@dataclass(frozen=True)
class FigureTrend:
    """One figure over the runs, oldest first, and how the newest compares with the runs before it."""

    values: list[float]
    direction: str  # "up", "down", "flat", or "" with fewer than two runs

    @property
    def arrow(self) -> str:
        """The direction as one character."""
        return {"up": "↑", "down": "↓", "flat": "→"}.get(self.direction, "")


def figure_trends(runs: Sequence[TrendRun]) -> dict[str, FigureTrend]:
    """Per figure the runs printed, its values oldest first; the direction compares the newest value with
    the mean of the earlier ones (``TREND_STEP`` apart or more is a move; a NaN is no direction)."""
    values: dict[str, list[float]] = {}
    for run in runs:
        for name, value in run.figures.items():
            values.setdefault(name, []).append(value)
    trends = {}
    for name, seen in sorted(values.items()):
        direction = ""
        earlier = seen[:-1]
        if earlier and all(math.isfinite(v) for v in seen):
            mean = sum(earlier) / len(earlier)
            step = (seen[-1] - mean) / abs(mean) if mean else 0.0
            direction = "up" if step >= TREND_STEP else "down" if step <= -TREND_STEP else "flat"
        trends[name] = FigureTrend(seen, direction)
    return trends


def trend_probes(workload: str) -> list[str]:
    """The stored probe names a run of ``workload`` leaves (the framework's are its probes)."""
    if workload == FRAMEWORK:
        return [p.value for p in ProbeId if p.value.startswith(f"{FRAMEWORK}.")]
    return [f"workload.{workload}"]


def trend(store: Store, inventory: Inventory, workload: str, pool: str, runs: int = TREND_RUNS) -> list[TrendRun]:
    """The last ``runs`` runs of ``workload`` on ``pool``, oldest first, from every sweep the history kept."""
    found = []
    for sweep_id, at, nodes in store.runs_of(trend_probes(workload), _members(inventory, pool), runs):
        run = pool_run(store, sweep_id, workload, nodes)
        if run is not None:
            found.append(TrendRun(sweep_id, at, run.status, run.figures))
    return found[::-1]


def runs_in_progress(store: Store) -> dict[tuple[str, str], tuple[RunInProgressEntry, str]]:
    """Workload runs whose audit entry has no outcome and whose process still runs (or cannot be checked
    from here), by (workload, pool): the newest entry of each."""
    running: dict[tuple[str, str], tuple[RunInProgressEntry, str]] = {}
    for row in store.open_audit_entries(RUN_ACTION):
        shown = AuditLog.shown_outcome(row)
        if not (shown.startswith("in progress") or "cannot be checked" in shown):
            continue  # its console stopped before it wrote the outcome: nothing runs
        inputs = json.loads(row["inputs"])
        entry = RunInProgressEntry(
            float(inputs.get("started_at") or row["at"]), json.loads(row["targets"]), inputs.get("sweep")
        )
        running[(str(inputs.get("workload")), str(inputs.get("pool")))] = (entry, shown)
    return running


@dataclass(frozen=True)
class RunInProgressEntry:
    """What the audit entry of a run in progress says: since when, the nodes, the sweep."""

    started_at: float
    nodes: list[str]
    sweep_id: int | None


def acceptance_state(
    store: Store,
    inventory: Inventory,
    workload: str,
    pool: str,
    running: dict[tuple[str, str], tuple[RunInProgressEntry, str]] | None = None,
) -> AcceptanceState:
    """The state of ``workload`` on ``pool`` now (module docstring); ``running`` as ``runs_in_progress``
    gives it (read from the store when None)."""
    settled = _settled_state(store, inventory, workload, pool)
    running = runs_in_progress(store) if running is None else running
    updates: dict[str, object] = {"trend": trend(store, inventory, workload, pool)}
    found = running.get((workload, pool))
    if found is not None:
        entry, owner = found
        updates.update(
            state=RUNNING,
            running=RunInProgress(entry.started_at, entry.nodes, entry.sweep_id, settled.state, owner),
        )
    return replace(settled, **updates)  # type: ignore[arg-type]


def _settled_state(store: Store, inventory: Inventory, workload: str, pool: str) -> AcceptanceState:
    members = _members(inventory, pool)
    current = merge_stacks(
        store.pool_stacks(members).values(),
        current_image(store, inventory, workload, pool),
        framework=workload == FRAMEWORK,
    )
    history = store.acceptance_history(workload, pool)
    accepting = [r for r in history if r.outcome in ACCEPTING]
    if not accepting:
        return AcceptanceState(workload, pool, NOT_ACCEPTED, current)
    accepted = accepting[-1]
    changes = stack_changes(accepted.stack, current)
    if not changes:
        return AcceptanceState(workload, pool, accepted.outcome, current, accepted)
    later = [r for r in history if r.id > accepted.id and r.outcome == REGRESSED]
    if later and not stack_changes(later[-1].stack, current):
        return AcceptanceState(workload, pool, REGRESSED, current, accepted, later[-1], changes)
    return AcceptanceState(workload, pool, DUE, current, accepted, None, changes)


def acceptance_states(store: Store, inventory: Inventory) -> list[AcceptanceState]:
    """Every workload (the framework's last) on every pool it applies to."""
    running = runs_in_progress(store)
    return [
        acceptance_state(store, inventory, workload, pool, running)
        for workload in workload_names(inventory)
        for pool in workload_pools(inventory, workload)
    ]


def _sweep_stack(
    store: Store, inventory: Inventory, sweep_id: int, *, workload: str, pool: str, nodes: list[str]
) -> dict[str, str]:
    stacks = [json.loads(r["stack"]) for r in store.node_verdicts(sweep_id) if r["node"] in nodes]
    return merge_stacks(stacks, current_image(store, inventory, workload, pool), framework=workload == FRAMEWORK)


def accept_workload(
    store: Store,
    inventory: Inventory,
    workload: str,
    pools: Iterable[str],
    sweep_id: int,
    *,
    reason: str,
    user: str | None = None,
) -> ActionResult:
    """Accept the run of ``workload`` in ``sweep_id`` on each of ``pools``, audited as ``accept``.

    Refused (nothing written) when the sweep did not finish, did not run the workload on a pool, or a
    run there is not PASS or WARN: a failed or unjudged run is no acceptance.
    """
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return ActionResult(False, refusal, {})
    user = user or current_user()
    pools = sorted(pools)
    runs: dict[str, tuple[PoolRun, dict[str, str]]] = {}
    for pool in pools:
        members = _members(inventory, pool)
        run = pool_run(store, sweep_id, workload, members)
        if run is None:
            return ActionResult(False, f"sweep {sweep_id} did not run {workload} on pool {pool}", {})
        if run.status not in (Status.PASS, Status.WARN):
            return ActionResult(False, f"{workload} is {run.status.value} on pool {pool} in sweep {sweep_id}", {})
        runs[pool] = (run, _sweep_stack(store, inventory, sweep_id, workload=workload, pool=pool, nodes=run.nodes))
    inputs: dict[str, object] = {"sweep": sweep_id, "workload": workload, "reason": reason}
    with store.audited(ActionKind.ACCEPT.value, pools, inputs=inputs, user=user) as entry:
        for pool, (run, stack) in runs.items():
            store.record_acceptance(
                workload,
                pool,
                ACCEPTED,
                stack=stack,
                figures=run.figures,
                sweep_id=sweep_id,
                user=user,
                reason=reason,
                audit_id=entry.id,
            )
        entry.finish(f"{workload} accepted on {', '.join(pools)} from sweep {sweep_id}")
    return ActionResult(
        True, f"{workload} accepted on {', '.join(pools)} (sweep #{sweep_id})", dict.fromkeys(pools, ACCEPTED), entry.id
    )


def record_outcomes(
    store: Store, inventory: Inventory, sweep_id: int, *, user: str | None = None
) -> list[AcceptanceRecord]:
    """After a sweep that ran workloads: record ``accepted-again`` or ``regressed`` where the stack changed.

    Each record is audited as ``accept`` (with its outcome), so the audit log tells the story in order.
    """
    user = user or current_user()
    made: list[AcceptanceRecord] = []
    for workload in workload_names(inventory):
        for pool in workload_pools(inventory, workload):
            accepting = [r for r in store.acceptance_history(workload, pool) if r.outcome in ACCEPTING]
            run = pool_run(store, sweep_id, workload, _members(inventory, pool))
            if not accepting or run is None:
                continue
            stack = _sweep_stack(store, inventory, sweep_id, workload=workload, pool=pool, nodes=run.nodes)
            changes = stack_changes(accepting[-1].stack, stack)
            if not changes:
                continue  # the accepted stack: nothing to re-judge
            if run.status in (Status.PASS, Status.WARN):
                outcome = ACCEPTED_AGAIN
            elif run.status is Status.FAIL:
                outcome = REGRESSED
            else:
                continue  # not judged: no outcome, it stays due
            changed = ", ".join(f"{k} {a} -> {c}" for k, (a, c) in changes.items())
            reason = f"rerun after a stack change: {changed}"
            inputs = {"sweep": sweep_id, "workload": workload, "outcome": outcome, "reason": reason}
            with store.audited(ActionKind.ACCEPT.value, [pool], inputs=inputs, user=user) as entry:
                record_id = store.record_acceptance(
                    workload,
                    pool,
                    outcome,
                    stack=stack,
                    figures=run.figures,
                    sweep_id=sweep_id,
                    user=user,
                    reason=reason,
                    audit_id=entry.id,
                )
                entry.finish(f"{workload} {outcome} on {pool} (sweep {sweep_id}): {changed}")
            made.extend(r for r in store.acceptance_history(workload, pool) if r.id == record_id)
    return made


def last_accepted(store: Store, pool: str, workload: str | None = None) -> AcceptanceRecord | None:
    """The newest record that made a stack accepted on ``pool`` (of ``workload``, or of any workload)."""
    accepting = [r for r in store.acceptance_history(workload, pool) if r.outcome in ACCEPTING]
    return max(accepting, key=lambda r: r.id, default=None)


def pin_fields_of(stack: dict[str, str]) -> dict[str, str]:
    """An accepted stack as pin fields (``StackPin.pinned_fields`` names): the image is not a package."""
    return {k: v for k, v in stack.items() if k not in ("image", "image_ref") and not v.startswith("mixed: ")}


def images_to_restore(store: Store, inventory: Inventory, pool: str) -> dict[str, tuple[str, str]]:
    """Containerised workloads of ``pool`` whose image is not their last accepted one: name -> (now, accepted)."""
    restore = {}
    for workload in inventory.workloads:
        record = last_accepted(store, pool, workload)
        now = current_image(store, inventory, workload, pool)
        accepted = record.stack.get("image") if record else None
        if now is not None and accepted is not None and accepted != now:
            restore[workload] = (now, accepted)
    return restore
