"""Workload acceptance per pool: the state machine, accepting a run, and recording a rerun's outcome.

The states of a workload on a pool, from its records (``console.store.acceptance``) and the pool's
current stack (each node's newest recorded stack):

- ``not-accepted``: no run of it was ever accepted on this pool;
- ``accepted`` / ``accepted-again``: the pool runs the stack of its last accepting record;
- ``due``: the pool's stack differs from the accepted one and no rerun judged it yet; or a node of the pool
  is on a stack that none of the nodes that ran the accepted runs had (``uncovered``: the runs since the
  last regression, each record naming its nodes and their stacks), though the pool's merged stack reads
  the same;
- ``regressed``: a rerun on the current stack failed, or moved a figure the worse way beyond its tolerance
  of the reference figures (``console.actions.tolerance``); its figures sit beside the accepted ones. A run
  on the accepted stack itself that FAILed or fell beyond tolerance is recorded ``regressed`` too, so the
  gate fails on the newest run (``failing since run N``) until a run within tolerance comes back;
- ``unstable``: the runs on a new stack passed, but their figures spread wider than the tolerance;
- ``blocked``: a rerun on the current stack ran on a node that same sweep judged FAIL or UNKNOWN (its
  own checks, not the workload's): the run says nothing about the stack, so it is not acceptable; the
  record names the node and why. A gate fails on it like on ``regressed``;
- ``running``: a run of it on the pool's nodes is in progress (``console.sweep.workload_runs``): the
  state it will settle from is kept beside (``settled``), and gates judge that one.

Each state carries the pool's trend: the figures of the last ``TREND_RUNS`` runs of the workload on
the pool, every run the history kept (judged or not), oldest first.

The reference figures are those of the newest ``accepted`` record: an operator's acceptance, audited with
a reason; one whose run is beyond tolerance of the reference before it is a re-baseline, refused unless
asked for (``rebaseline``). ``accepted-again`` records never move the reference.

A sweep that runs workloads (``sweep --probes workload``, or ``framework`` for the built-in workload
of that name) records, for each workload already accepted on a pool whose stack changed, ``accepted
again`` (every node's run passed, every node it ran on was judged healthy in that sweep, the figures
are within tolerance of the reference and the workload's repeat runs on that stack are there and close:
the new stack becomes the accepted one), ``blocked`` (a node it ran on was not), ``regressed`` (a run
FAILed on healthy nodes, or a figure fell beyond tolerance) or ``unstable`` (the repeat runs spread wider
than the tolerance); with fewer passing runs on the new stack than the workload needs, nothing (due). A
run that could not be judged (UNKNOWN) records nothing: the workload stays due. A run on the accepted
stack records ``regressed`` when it FAILed or fell beyond tolerance on healthy nodes, else nothing,
except the first pass within tolerance after a ``regressed``, ``unstable`` or ``blocked`` record (the
pool came back, by ``rollback``): ``accepted again``, so the audit log says so. The first acceptance is
always an operator's (``accept --workload``), with a reason, audited as ``accept``, and refused on a run
that is not PASS/WARN, ran on a node not judged healthy, lacks its repeat runs or is unstable.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from console.actions.model import ActionKind, ActionResult
from console.actions.tolerance import Comparison, Spread, compare, runs_needed, spreads
from console.inventory.model import Inventory
from console.model.findings import Finding, Status, worst
from console.probes.ids import ProbeId
from console.store import Store, current_user
from console.store.acceptance import (
    ACCEPTED,
    ACCEPTED_AGAIN,
    ACCEPTING,
    BLOCKED,
    REGRESSED,
    UNSTABLE,
    AcceptanceRecord,
    json_figure,
    json_figures,
)
from console.store.audit import AuditLog
from console.sweep.workload_runs import ACTION as RUN_ACTION

FRAMEWORK = "framework"  # the framework probe, accepted like a site workload
NOT_ACCEPTED = "not-accepted"
DUE = "due"
RUNNING = "running"
STATES = (NOT_ACCEPTED, ACCEPTED, ACCEPTED_AGAIN, DUE, REGRESSED, BLOCKED, UNSTABLE, RUNNING)
# States a gate fails on whatever it requires: the stack is not accepted and a rerun said so.
NOT_ACCEPTABLE = (REGRESSED, BLOCKED, UNSTABLE)
# How much of a finding's message a reason quotes (a reason is one line in a table).
_REASON_CHARS = 120
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
_NOT_FIGURES = frozenset({"exit", "output", "run", "steps"})
_PASSED = (Status.PASS, Status.WARN)


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
    """The image ``workload`` runs in on ``pool``: the one ``rollback`` set, else the cluster file's (None: bare).
    The framework's is its pool's ``[pools.framework] container``."""
    if workload == FRAMEWORK:
        framework = inventory.pools[pool].framework.container if pool in inventory.pools else None
        return (store.image_override(FRAMEWORK, pool) or framework.image) if framework is not None else None
    spec = inventory.workloads.get(workload)
    if spec is None or spec.container is None:
        return None
    return store.image_override(workload, pool) or spec.container.image


def with_images(inventory: Inventory, images: Mapping[tuple[str, str], str]) -> Inventory:
    """``inventory`` with each pool's framework container in the image ``rollback`` set back, where it set one.

    ``images``: (workload, pool) -> image, the store's overrides (``Store.image_overrides``) or those a
    console told ``check-local`` (``--images``). The engine is built from this (``console.service.assembly``),
    so the engine, its worker processes and the nodes of a Slurm job, which have no store, run the framework
    probe in the rolled-back image. A site workload's image is per workload and pool, not a pool's: the
    workload runner reads its override when it runs (``sweep.workloads``).
    """
    pools = dict(inventory.pools)
    for (workload, pool), image in images.items():
        found = pools.get(pool)
        container = found.framework.container if found is not None else None
        if workload != FRAMEWORK or found is None or container is None or container.image == image:
            continue
        framework = found.framework.model_copy(update={"container": container.model_copy(update={"image": image})})
        pools[pool] = found.model_copy(update={"framework": framework})
    return inventory if pools == inventory.pools else inventory.model_copy(update={"pools": pools})


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
    """A workload's run on a pool's nodes in one sweep: the worst status and the figures (mean of the nodes:
    a NaN on one makes the figure NaN, written ``"nan"`` in JSON, ``json_figure``);
    ``unjudged``: per node whose run is UNKNOWN, its message (a node left out of an N-node group, a timeout)."""

    status: Status
    figures: dict[str, float]
    nodes: list[str]
    unjudged: dict[str, str] = field(default_factory=dict)


def _prefix(workload: str) -> str:
    return f"{FRAMEWORK}." if workload == FRAMEWORK else f"workload.{workload}."


def pool_run(store: Store, sweep_id: int, workload: str, nodes: Sequence[str]) -> PoolRun | None:
    """The run of ``workload`` on ``nodes`` in ``sweep_id``; None when that sweep did not run it there."""
    statuses: list[Status] = []
    readings: dict[str, list[float]] = {}
    ran: list[str] = []
    unjudged: dict[str, str] = {}
    prefix = _prefix(workload)
    for node, check_id, status, observed in store.check_readings(sweep_id, list(nodes), prefix):
        if node not in ran:
            ran.append(node)
        statuses.append(Status(status))
        if status == Status.UNKNOWN and node not in unjudged:
            unjudged[node] = _message(store, sweep_id, node, check_id)
        name = check_id.removeprefix(prefix)
        reading = _reading(observed)
        if name not in _NOT_FIGURES and reading is not None:
            readings.setdefault(name, []).append(reading)
    if not ran:
        return None
    worst = max(statuses, key=lambda s: s.severity)
    return PoolRun(worst, {k: sum(v) / len(v) for k, v in sorted(readings.items())}, ran, unjudged)


def _reading(observed: object) -> float | None:
    """A finding's observed value as a figure: a number, or the ``"nan"``/``"inf"`` a non-finite figure's
    finding holds (a NaN in a node's run makes the pool's figure NaN: it is what a regressed run shows)."""
    if isinstance(observed, bool):
        return None
    if isinstance(observed, int | float):
        return float(observed)
    if isinstance(observed, str):
        try:
            value = float(observed)
        except ValueError:
            return None
        return None if math.isfinite(value) else value
    return None


@dataclass(frozen=True)
class RepeatRun:
    """One passing run of a workload: its sweep, the node(s) it ran on, and its figures (their mean per node)."""

    sweep_id: int
    nodes: tuple[str, ...]
    figures: dict[str, float]

    def as_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {"sweep_id": self.sweep_id, "nodes": list(self.nodes), "figures": json_figures(self.figures)}


def _node_readings(
    store: Store, sweep_id: int, nodes: Sequence[str], workload: str
) -> dict[str, tuple[Status, dict[str, float]]]:
    """Each node's run of ``workload`` in ``sweep_id``: its worst status and its figures (the mean of its
    readings: the framework's are per GPU)."""
    prefix = _prefix(workload)
    statuses: dict[str, list[Status]] = {}
    readings: dict[str, dict[str, list[float]]] = {}
    for node, check_id, status, observed in store.check_readings(sweep_id, list(nodes), prefix):
        statuses.setdefault(node, []).append(Status(status))
        name, reading = check_id.removeprefix(prefix), _reading(observed)
        if name not in _NOT_FIGURES and reading is not None:
            readings.setdefault(node, {}).setdefault(name, []).append(reading)
    return {
        node: (worst(seen), {k: sum(v) / len(v) for k, v in sorted(readings.get(node, {}).items())})
        for node, seen in statuses.items()
    }


def stack_runs(
    store: Store, inventory: Inventory, workload: str, pool: str, stack: dict[str, str], *, upto: int
) -> list[RepeatRun]:
    """The passing runs of ``workload`` on ``pool`` on ``stack``, newest first, from sweep ``upto`` back to the
    last run on that stack that FAILed (repeat runs are runs in a row): one per node that ran it, judged
    healthy in its sweep. The nodes of an N-node workload's group carry the group's findings, so for it
    nodes of one sweep with the same figures are one run (counting one run twice would fake repeatability)."""
    members = _members(inventory, pool)
    spec = inventory.workloads.get(workload)
    group = spec is not None and spec.nodes > 1
    found: list[RepeatRun] = []
    for sweep_id in store.workload_sweeps(members, _prefix(workload), upto, TREND_RUNS):
        per_node = _node_readings(store, sweep_id, members, workload)
        ran, _ = _sweep_stacks(store, inventory, sweep_id, workload=workload, pool=pool, nodes=list(per_node))
        if stack_changes(stack, ran) or stack_changes(ran, stack):
            continue  # another stack: says nothing of this one's repeatability
        unhealthy = unhealthy_nodes(store, sweep_id, list(per_node), workload)
        healthy = {n: run for n, run in per_node.items() if n not in unhealthy}
        if any(status is Status.FAIL for status, _ in healthy.values()):
            break
        passed = [(n, figures) for n, (status, figures) in sorted(healthy.items()) if status in _PASSED and figures]
        if group:
            runs: dict[tuple[tuple[str, float], ...], list[str]] = {}
            for node, figures in passed:
                runs.setdefault(tuple(figures.items()), []).append(node)
            found += [RepeatRun(sweep_id, tuple(nodes), dict(key)) for key, nodes in runs.items()]
        else:
            found += [RepeatRun(sweep_id, (node,), figures) for node, figures in passed]
    return found


@dataclass(frozen=True)
class Repeatability:
    """The runs a stack's acceptance rests on: the newest ``needed`` passing runs on it, and their spread."""

    needed: int
    runs: list[RepeatRun]
    spreads: list[Spread]

    @property
    def short(self) -> bool:
        """Fewer passing runs on the stack than the workload needs."""
        return len(self.runs) < self.needed

    @property
    def wider(self) -> list[Spread]:
        """The figures whose spread is wider than their tolerance."""
        return [s for s in self.spreads if s.wider]

    def line(self) -> str:
        """``2 of 2 runs (#3 n1, #3 n2); tokens_per_s spread 1.2 % over 2 runs (tolerance 5 %)``."""
        runs = ", ".join(f"#{r.sweep_id} {','.join(r.nodes)}" for r in self.runs) or "none"
        shown = [s for s in self.spreads if s.wider] or self.spreads
        spread = "; ".join(s.line() for s in shown)
        return f"{min(len(self.runs), self.needed)} of {self.needed} runs ({runs})" + (f"; {spread}" if spread else "")

    def as_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "needed": self.needed,
            "runs": [r.as_json() for r in self.runs],
            "spreads": [s.as_json() for s in self.spreads],
        }


def repeatability(
    store: Store, inventory: Inventory, workload: str, pool: str, stack: dict[str, str], *, upto: int
) -> Repeatability:
    """The newest passing runs ``workload`` needs on ``stack`` (``stack_runs``) and their spread."""
    spec = inventory.workloads.get(workload)
    needed = runs_needed(spec)
    runs = stack_runs(store, inventory, workload, pool, stack, upto=upto)[:needed]
    return Repeatability(needed, runs, spreads(spec, [r.figures for r in runs]))


def reference_record(history: Sequence[AcceptanceRecord]) -> AcceptanceRecord | None:
    """The record whose figures every run is held to: the newest operator's acceptance (``accepted``)."""
    return next((r for r in reversed(history) if r.outcome == ACCEPTED), None)


def held_to_reference(
    inventory: Inventory, workload: str, history: Sequence[AcceptanceRecord], figures: Mapping[str, float]
) -> list[Comparison]:
    """Each figure of a run beside the reference's (none before a first acceptance)."""
    reference = reference_record(history)
    if reference is None:
        return []
    return compare(inventory.workloads.get(workload), reference.figures, figures)


def _message(store: Store, sweep_id: int, node: str, check_id: str) -> str:
    found = [f for f in store.findings(sweep_id, node, problems_only=True) if f.check_id == check_id]
    return _short(found[0].message) if found else check_id


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _REASON_CHARS else line[: _REASON_CHARS - 1] + "…"


def _is_workload_run(check_id: str) -> bool:
    # Any workload's own findings (and the framework probe's when judging the framework) judge a run, not the
    # node: a workload that regressed on a new stack must not block another one as an unhealthy node.
    return check_id.startswith("workload.")


def unhealthy_nodes(store: Store, sweep_id: int, nodes: Sequence[str], workload: str) -> dict[str, tuple[Status, str]]:
    """Of ``nodes``, those ``sweep_id`` judged FAIL or UNKNOWN on their own checks (not a workload's run):
    node -> (its worst status, why: ``FAIL: <worst finding's message>``, ``(+N more)`` when several are)."""
    wanted = set(nodes)
    own = _prefix(workload)
    bad: dict[str, list[Finding]] = {}
    for finding in store.findings(sweep_id, problems_only=True):
        node = finding.subject.node
        if node not in wanted or _is_workload_run(finding.check_id) or finding.check_id.startswith(own):
            continue
        if finding.status in (Status.FAIL, Status.UNKNOWN):
            bad.setdefault(node, []).append(finding)
    why = {}
    for node in [n for n in nodes if n in bad]:
        found = bad[node]
        status = worst([f.status for f in found])
        gravest = [f for f in found if f.status is status]
        more = f" (+{len(gravest) - 1} more)" if len(gravest) > 1 else ""
        why[node] = (status, f"{status.value}: {_short(gravest[0].message)}{more}")
    return why


def blocked_reason(sweep_id: int, unhealthy: dict[str, tuple[Status, str]]) -> str:
    """One line: the nodes a run was on that ``sweep_id`` did not judge healthy, and why."""
    said = "; ".join(f"{node} {why}" for node, (_, why) in unhealthy.items())
    return f"not judged: a node it ran on was not healthy in sweep {sweep_id}: {said}"


def run_refusal(
    store: Store, inventory: Inventory, workload: str, pool: str, sweep_id: int, *, rebaseline: bool = False
) -> str | None:
    """Why the run of ``workload`` on ``pool`` in ``sweep_id`` cannot be accepted (None: it can). One check
    for ``accept --workload``, the acceptance view's plan (before Yes) and ``accept_workload`` itself: the
    run, the nodes it ran on, the repeat runs on its stack (``repeatability``) and, once a reference exists,
    its figures within tolerance of it unless ``rebaseline``."""
    refusal = _run_refusal(store, inventory, workload, pool, sweep_id)
    if refusal is not None:
        return refusal
    run = pool_run(store, sweep_id, workload, _members(inventory, pool))
    assert run is not None  # _run_refusal refused a sweep that did not run it
    stack, _ = _sweep_stacks(store, inventory, sweep_id, workload=workload, pool=pool, nodes=run.nodes)
    repeat = repeatability(store, inventory, workload, pool, stack, upto=sweep_id)
    if repeat.short:
        return (
            f"{workload} on pool {pool} needs {repeat.needed} passing runs on this stack and has"
            f" {len(repeat.runs)} ({repeat.line()}): run it again (sweep --probes workload) and accept then"
        )
    if repeat.wider:
        return f"{workload} is unstable on pool {pool}: {repeat.line()}; find why its runs differ before accepting"
    history = store.acceptance_history(workload, pool)
    beyond = [c for c in held_to_reference(inventory, workload, history, run.figures) if c.beyond]
    if beyond and not rebaseline:
        return (
            f"{workload} on pool {pool} in sweep {sweep_id} is beyond tolerance of the accepted figures: "
            + "; ".join(c.line() for c in beyond)
            + " (to make these the reference on purpose, re-baseline: accept --rebaseline with a reason)"
        )
    return None


def _run_refusal(store: Store, inventory: Inventory, workload: str, pool: str, sweep_id: int) -> str | None:
    """Why the run itself cannot be accepted: not finished, not run, not PASS/WARN, on an unhealthy node."""
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return refusal
    run = pool_run(store, sweep_id, workload, _members(inventory, pool))
    if run is None:
        return f"sweep {sweep_id} did not run {workload} on pool {pool}"
    if run.status not in (Status.PASS, Status.WARN):
        said = f"{workload} is {run.status.value} on pool {pool} in sweep {sweep_id}"
        if run.unjudged:
            said += ": " + "; ".join(f"{node}: {why}" for node, why in run.unjudged.items())
            spec = inventory.workloads.get(workload)
            if spec is not None and spec.nodes > 1:
                said += (
                    f" ({workload} runs on groups of {spec.nodes} nodes: sweep whole groups of the pool,"
                    " or accept another sweep with --sweep N)"
                )
            else:
                said += " (fix what stopped it and rerun, or accept another sweep with --sweep N)"
        return said
    unhealthy = unhealthy_nodes(store, sweep_id, run.nodes, workload)
    if unhealthy:
        return (
            blocked_reason(sweep_id, unhealthy) + " (repair the node and rerun, or accept another sweep with --sweep N)"
        )
    return None


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
    blocked: AcceptanceRecord | None = None  # the rerun that ran on a node not judged healthy (its reason says which)
    # Nodes of the pool on a stack no node that ran an accepted run had: node -> {field: (accepted, current)}.
    uncovered: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    unstable: AcceptanceRecord | None = None  # the rerun whose repeat runs spread wider than the tolerance
    reference: AcceptanceRecord | None = None  # whose figures every run is held to (``reference_record``)
    # The sweep of the first of the newest regressed records on the current stack, in a row.
    failing_since: int | None = None
    newest: NewestRun | None = None  # the newest run of the workload on the pool, beside the reference
    repeat: Repeatability | None = None  # the runs the accepted stack's acceptance rests on

    def uncovered_lines(self) -> list[str]:
        """One line per node on a stack no accepted run covered: ``sim003: rocm 6.4.1 -> 6.2.2``."""
        return [
            f"{node}: " + ", ".join(f"{k} {a} -> {c}" for k, (a, c) in gap.items())
            for node, gap in self.uncovered.items()
        ]

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
            "blocked": self.blocked.as_json() if self.blocked else None,
            "changes": {k: {"accepted": a, "current": c} for k, (a, c) in self.changes.items()},
            "uncovered": {
                node: {k: {"accepted": a, "current": c} for k, (a, c) in gap.items()}
                for node, gap in self.uncovered.items()
            },
            "running": self.running.as_json() if self.running else None,
            "unstable": self.unstable.as_json() if self.unstable else None,
            "reference": self.reference.as_json() if self.reference else None,
            "failing_since": self.failing_since,
            "newest": self.newest.as_json() if self.newest else None,
            "repeatability": self.repeat.as_json() if self.repeat else None,
            "trend": {
                "runs": [t.as_json() for t in self.trend],
                "figures": {
                    k: {"values": [json_figure(x) for x in v.values], "direction": v.direction}
                    for k, v in self.figure_trends().items()
                },
            },
        }


@dataclass(frozen=True)
class NewestRun:
    """The newest run of a workload on a pool: its sweep, worst status, figures, and each figure beside the
    reference's (ratio, tolerance)."""

    sweep_id: int
    status: Status
    figures: dict[str, float]
    compared: list[Comparison]

    def as_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "sweep_id": self.sweep_id,
            "status": self.status.value,
            "figures": json_figures(self.figures),
            "compared": [c.as_json() for c in self.compared],
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
        figures = json_figures(self.figures)
        return {"sweep_id": self.sweep_id, "at": self.at, "status": self.status.value, "figures": figures}


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
    members = _members(inventory, pool)
    for sweep_id, at, _ in store.runs_of(trend_probes(workload), members, runs):
        # Every member, not only those the probe ran on: a node left out of an N-node group has an UNKNOWN
        # finding and no probe run, and a row reading PASS for that sweep offered a run accept then refused.
        run = pool_run(store, sweep_id, workload, members)
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
    image = current_image(store, inventory, workload, pool)
    node_stacks = store.pool_stacks(members)
    current = merge_stacks(node_stacks.values(), image, framework=workload == FRAMEWORK)
    history = store.acceptance_history(workload, pool)
    accepting = [r for r in history if r.outcome in ACCEPTING]
    newest = newest_run(store, inventory, workload, pool, history)
    if not accepting:
        return AcceptanceState(workload, pool, NOT_ACCEPTED, current, newest=newest)
    accepted = accepting[-1]
    repeat = (
        repeatability(store, inventory, workload, pool, accepted.stack, upto=accepted.sweep_id)
        if accepted.sweep_id is not None
        else None
    )
    state = AcceptanceState(
        workload, pool, accepted.outcome, current, accepted, reference=reference_record(history), newest=newest,
        repeat=repeat,
    )  # fmt: skip
    changes = stack_changes(accepted.stack, current)
    gaps = uncovered(history, node_views(node_stacks, image, workload))
    covered = (not changes and gaps is None) or gaps == {}
    later = [r for r in history if r.id > accepted.id and r.outcome in NOT_ACCEPTABLE]
    if later and not stack_changes(later[-1].stack, current):
        last = later[-1]
        last_gaps = uncovered(history, last.nodes)
        on_accepted = (not stack_changes(accepted.stack, last.stack) and last_gaps is None) or last_gaps == {}
        # A rerun on the stack the pool runs now was not acceptable, unless the pool is covered now and that
        # run was on a node no accepted run covered (which has come back since).
        if on_accepted or not covered:
            return replace(
                state,
                state=last.outcome,
                changes=changes,
                uncovered=gaps or {},
                regressed=last if last.outcome == REGRESSED else None,
                blocked=last if last.outcome == BLOCKED else None,
                unstable=last if last.outcome == UNSTABLE else None,
                failing_since=failing_since(history, current),
            )
    if covered:
        # Every node's stack is one a node that ran an accepted run had (or, for records that do not say
        # which nodes ran, the pool's stack is the accepted one).
        return state
    return replace(state, state=DUE, changes=changes, uncovered=gaps or {})


def failing_since(history: Sequence[AcceptanceRecord], current: dict[str, str]) -> int | None:
    """The sweep of the first of the newest ``regressed`` records on ``current``, in a row (a blocked or unstable
    run is not the workload failing: a node kept it from judging, or its runs disagree)."""
    since = None
    for record in reversed(history):
        if record.outcome != REGRESSED or stack_changes(record.stack, current):
            break
        since = record.sweep_id
    return since


def newest_run(
    store: Store, inventory: Inventory, workload: str, pool: str, history: Sequence[AcceptanceRecord]
) -> NewestRun | None:
    """The newest run of ``workload`` on ``pool`` the history kept, held to the reference (``held_to_reference``)."""
    members = _members(inventory, pool)
    found = store.workload_sweeps(members, _prefix(workload), 2**62, 1)
    run = pool_run(store, found[0], workload, members) if found else None
    if run is None:
        return None
    compared = held_to_reference(inventory, workload, history, run.figures)
    return NewestRun(found[0], run.status, run.figures, compared)


def node_views(stacks: dict[str, dict[str, str]], image: str | None, workload: str) -> dict[str, dict[str, str]]:
    """Each node's stack as ``workload`` sees it (``merge_stacks`` of that node alone, with its image)."""
    return {node: merge_stacks([stack], image, framework=workload == FRAMEWORK) for node, stack in stacks.items()}


def covering(history: Sequence[AcceptanceRecord]) -> dict[str, dict[str, str]] | None:
    """The node stacks an accepted stack covers: those of the nodes that ran the newest accepting record and
    the accepting records before it back to the last regressed or blocked one (a stack accepted then and
    not regressed since is still accepted). None when none of those records says which nodes ran."""
    accepting = [i for i, r in enumerate(history) if r.outcome in ACCEPTING]
    if not accepting:
        return None
    window: list[AcceptanceRecord] = []
    for record in reversed(history[: accepting[-1] + 1]):
        if record.outcome in NOT_ACCEPTABLE:
            break
        window.append(record)
    ran = {f"#{r.id} {node}": stack for r in window for node, stack in r.nodes.items()}
    return ran or None


def uncovered(
    history: Sequence[AcceptanceRecord], nodes: dict[str, dict[str, str]]
) -> dict[str, dict[str, tuple[str, str]]] | None:
    """Of ``nodes`` (node -> its stack as the workload sees it), those on a stack no node that ran an
    accepted run had (``covering``), each with how it differs from the nearest such node's stack. None
    when the records do not say which nodes ran (written before schema version 6)."""
    ran = covering(history)
    if ran is None:
        return None
    gaps = {}
    for node, stack in sorted(nodes.items()):
        nearest = min((stack_changes(seen, stack) for seen in ran.values()), key=len)
        if nearest:
            gaps[node] = nearest
    return gaps


def acceptance_states(store: Store, inventory: Inventory) -> list[AcceptanceState]:
    """Every workload (the framework's last) on every pool it applies to."""
    running = runs_in_progress(store)
    return [
        acceptance_state(store, inventory, workload, pool, running)
        for workload in workload_names(inventory)
        for pool in workload_pools(inventory, workload)
    ]


def _sweep_stacks(
    store: Store, inventory: Inventory, sweep_id: int, *, workload: str, pool: str, nodes: list[str]
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The stack ``workload`` ran on in ``sweep_id`` on ``nodes``: merged, and per node."""
    stacks = {r["node"]: json.loads(r["stack"]) for r in store.node_verdicts(sweep_id) if r["node"] in nodes}
    image = current_image(store, inventory, workload, pool)
    return merge_stacks(stacks.values(), image, framework=workload == FRAMEWORK), node_views(stacks, image, workload)


def accept_workload(
    store: Store,
    inventory: Inventory,
    workload: str,
    pools: Iterable[str],
    sweep_id: int,
    *,
    reason: str,
    user: str | None = None,
    rebaseline: bool = False,
) -> ActionResult:
    """Accept the run of ``workload`` in ``sweep_id`` on each of ``pools``, audited as ``accept``: its figures
    become the reference (the audit entry names the reference they replace).

    Refused (nothing written) when the sweep did not finish, did not run the workload on a pool, a run
    there is not PASS or WARN, a node it ran on was not judged healthy in that sweep, the workload's repeat
    runs on that stack are too few or too far apart, or its figures are beyond tolerance of the reference
    and ``rebaseline`` was not asked for (``run_refusal``).
    """
    user = user or current_user()
    pools = sorted(pools)
    runs: dict[str, tuple[PoolRun, tuple[dict[str, str], dict[str, dict[str, str]]]]] = {}
    for pool in pools:
        refusal = run_refusal(store, inventory, workload, pool, sweep_id, rebaseline=rebaseline)
        if refusal is not None:
            return ActionResult(False, refusal, {})
        run = pool_run(store, sweep_id, workload, _members(inventory, pool))
        assert run is not None  # run_refusal refused a sweep that did not run it
        runs[pool] = (run, _sweep_stacks(store, inventory, sweep_id, workload=workload, pool=pool, nodes=run.nodes))
    replaced = {p: reference_record(store.acceptance_history(workload, p)) for p in pools}
    inputs: dict[str, object] = {
        "sweep": sweep_id,
        "workload": workload,
        "reason": reason,
        "rebaseline": rebaseline,
        "replaces": {p: r.id for p, r in replaced.items() if r is not None},
    }
    with store.audited(ActionKind.ACCEPT.value, pools, inputs=inputs, user=user) as entry:
        for pool, (run, (stack, nodes)) in runs.items():
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
                nodes=nodes,
            )
        entry.finish(f"{workload} accepted on {', '.join(pools)} from sweep {sweep_id}")
    return ActionResult(
        True, f"{workload} accepted on {', '.join(pools)} (sweep #{sweep_id})", dict.fromkeys(pools, ACCEPTED), entry.id
    )


def record_outcomes(
    store: Store, inventory: Inventory, sweep_id: int, *, user: str | None = None
) -> list[AcceptanceRecord]:
    """After a sweep that ran workloads: record each accepted workload's rerun outcome (``judge_rerun``).

    Each record is audited as ``accept`` (with its outcome), so the audit log tells the story in order.
    """
    user = user or current_user()
    made: list[AcceptanceRecord] = []
    for workload in workload_names(inventory):
        for pool in workload_pools(inventory, workload):
            rerun = judge_rerun(store, inventory, workload, pool, sweep_id)
            if rerun is not None:
                made.append(
                    _record_outcome(
                        store, workload, pool, rerun.outcome, rerun.stacks, rerun.run, sweep_id, user, rerun.reason
                    )
                )
    return made


@dataclass(frozen=True)
class Rerun:
    """What a rerun records: its outcome, the stack it ran on (merged, per node), the run, and why."""

    outcome: str
    stacks: tuple[dict[str, str], dict[str, dict[str, str]]]
    run: PoolRun
    reason: str


def judge_rerun(store: Store, inventory: Inventory, workload: str, pool: str, sweep_id: int) -> Rerun | None:
    """The outcome the run of ``workload`` on ``pool`` in ``sweep_id`` records (None: nothing).

    On the accepted stack: ``regressed`` when it FAILed or fell beyond tolerance of the reference on
    healthy nodes; ``accepted-again`` for the first pass within tolerance after a regressed, blocked or
    unstable record (the pool came back: the audit log says the way back worked); else nothing. On a new
    stack: ``blocked`` first (a run on a node not judged healthy judges nothing of the stack), then
    ``regressed``, ``unstable`` or ``accepted-again`` (``_new_stack_outcome``).
    """
    history = store.acceptance_history(workload, pool)
    run = pool_run(store, sweep_id, workload, _members(inventory, pool))
    if run is None or not any(r.outcome in ACCEPTING for r in history):
        return None
    accepting = [r for r in history if r.outcome in ACCEPTING]
    stacks = _sweep_stacks(store, inventory, sweep_id, workload=workload, pool=pool, nodes=run.nodes)
    changes = stack_changes(accepting[-1].stack, stacks[0])
    gaps = uncovered(history, stacks[1])
    unhealthy = unhealthy_nodes(store, sweep_id, run.nodes, workload)
    beyond = [c for c in held_to_reference(inventory, workload, history, run.figures) if c.beyond]
    held = "; beyond tolerance of the accepted figures (record #{}): {}".format(
        getattr(reference_record(history), "id", "?"), "; ".join(c.line() for c in beyond)
    )
    if (not changes and gaps is None) or gaps == {}:
        if unhealthy or run.status not in (Status.PASS, Status.WARN, Status.FAIL):
            return None  # not judged healthy, or not judged: it stays as it was, the run says nothing
        if run.status is Status.FAIL or beyond:
            why = f"run on the accepted stack {'FAILed' if run.status is Status.FAIL else 'passed its floors'}"
            return Rerun(REGRESSED, stacks, run, why + (held if beyond else ""))
        if history[-1].outcome not in NOT_ACCEPTABLE:
            return None
        back = f"rerun on the accepted stack after {history[-1].outcome} (record #{history[-1].id})"
        return Rerun(ACCEPTED_AGAIN, stacks, run, back)
    # What is new: the pool's stack fields, unless the nodes disagree on one ("mixed"): then each node on
    # a stack no accepted run covered, against the nearest one that ran.
    mixed = any(v.startswith("mixed: ") for pair in changes.values() for v in pair)
    detail = ", ".join(f"{k} {a} -> {c}" for k, (a, c) in changes.items())
    if gaps and (mixed or not detail):
        detail = "; ".join(
            f"{node} " + ", ".join(f"{k} {a} -> {c}" for k, (a, c) in gap.items()) for node, gap in gaps.items()
        )
    found = _new_stack_outcome(store, inventory, (workload, pool, sweep_id), run, unhealthy, beyond=bool(beyond))
    if found is None:
        return None
    outcome, why = found
    detail += held if outcome == REGRESSED and beyond else why
    return Rerun(outcome, stacks, run, f"rerun after a stack change: {detail}")


def _new_stack_outcome(
    store: Store,
    inventory: Inventory,
    where: tuple[str, str, int],
    run: PoolRun,
    unhealthy: dict[str, tuple[Status, str]],
    *,
    beyond: bool,
) -> tuple[str, str] | None:
    """The outcome of a rerun on a new stack, and what its reason adds (None: nothing to record)."""
    workload, pool, sweep_id = where
    failed_node = any(status is Status.FAIL for status, _ in unhealthy.values())
    # A node that FAILed its own checks explains whatever the run did: blocked. A run that FAILed on
    # nodes none of which FAILed is a regression (an UNKNOWN node does not explain it away). A pass
    # accepts only when every node it ran on was judged healthy.
    if failed_node or (unhealthy and run.status is not Status.FAIL):
        return BLOCKED, f"; {blocked_reason(sweep_id, unhealthy)}"
    if run.status is Status.FAIL or (beyond and run.status in (Status.PASS, Status.WARN)):
        return REGRESSED, ""
    if run.status not in (Status.PASS, Status.WARN):
        return None  # not judged: no outcome, it stays due
    stack, _ = _sweep_stacks(store, inventory, sweep_id, workload=workload, pool=pool, nodes=run.nodes)
    repeat = repeatability(store, inventory, workload, pool, stack, upto=sweep_id)
    if repeat.short:
        return None  # too few runs on the new stack yet: it stays due until the next one
    if repeat.wider:
        return UNSTABLE, f"; its runs spread wider than the tolerance: {repeat.line()}"
    return ACCEPTED_AGAIN, ""


def _record_outcome(  # noqa: PLR0917
    store: Store,
    workload: str,
    pool: str,
    outcome: str,
    stacks: tuple[dict[str, str], dict[str, dict[str, str]]],
    run: PoolRun,
    sweep_id: int,
    user: str,
    reason: str,
) -> AcceptanceRecord:
    """Record a rerun's ``outcome`` (``stacks``: merged and per node), audited as ``accept`` with it (the
    audit log tells the story in order)."""
    stack, nodes = stacks
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
            nodes=nodes,
        )
        entry.finish(
            f"{workload} {outcome} on {pool} (sweep {sweep_id}): {reason.removeprefix('rerun after a stack change: ')}"
        )
    [record] = [r for r in store.acceptance_history(workload, pool) if r.id == record_id]
    return record


def last_accepted(
    store: Store, pool: str, workload: str | None = None, inventory: Inventory | None = None
) -> AcceptanceRecord | None:
    """The newest record that made a stack accepted on ``pool`` (of ``workload``, or of any workload) and that
    is still good: no later run on its stack regressed (or was unstable), and its figures are within
    tolerance of the reference it was judged against (a record written before tolerances were: given
    ``inventory``). What ``rollback`` goes back to: never a stack that regressed."""
    history = store.acceptance_history(workload, pool)
    good = []
    for index, record in enumerate(history):
        if record.outcome not in ACCEPTING:
            continue
        mine = [r for r in history if r.workload == record.workload]
        later = [r for r in history[index + 1 :] if r.workload == record.workload]
        if any(r.outcome in (REGRESSED, UNSTABLE) and not _differs(r.stack, record.stack) for r in later):
            continue
        before = [r for r in mine if r.id <= record.id]
        if record.outcome == ACCEPTED_AGAIN and inventory is not None:
            compared = held_to_reference(inventory, record.workload, before, record.figures)
            if any(c.beyond for c in compared):
                continue
        good.append(record)
    return max(good, key=lambda r: r.id, default=None)


def _differs(one: dict[str, str], other: dict[str, str]) -> bool:
    return bool(stack_changes(one, other) or stack_changes(other, one))


def pin_fields_of(stack: dict[str, str]) -> dict[str, str]:
    """An accepted stack as pin fields (``StackPin.pinned_fields`` names): the image is not a package."""
    return {k: v for k, v in stack.items() if k not in ("image", "image_ref") and not v.startswith("mixed: ")}


def images_to_restore(store: Store, inventory: Inventory, pool: str) -> dict[str, tuple[str, str]]:
    """Containerised workloads of ``pool`` (the framework in its pool's container among them) whose image is
    not their last accepted one: name -> (now, accepted). A framework accepted on the node's own python3
    has no image to go back to (the pool's ``[pools.framework]`` says where it runs)."""
    restore = {}
    for workload in workload_names(inventory):
        record = last_accepted(store, pool, workload, inventory)
        now = current_image(store, inventory, workload, pool)
        accepted = record.stack.get("image") if record else None
        if now is not None and accepted not in (None, BARE, now) and not str(accepted).startswith("mixed: "):
            restore[workload] = (now, str(accepted))
    return restore
