"""What the console's actions do, apart from drawing: baselines and diffs in the history database,
reports and hostlists. No Textual here.

Cluster actions (through ``console.actions``) run on the engine side: ``console.service.commands``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from console.exitcodes import ExitCode
from console.inventory.hostlist import fold
from console.inventory.model import Inventory
from console.model.findings import NodeVerdict, Status
from console.report import build_report, write_json
from console.service.commands import ActionOutcome, PlanPreview
from console.store import Store, current_user
from console.store.diff import NodeDiff, diff_sweeps
from console.ui.state import NodeRow, SweepProgress

BASELINE_ACTION_ID = "accept-baseline"
# The audit log's name for accepting a baseline: the CLI's ``accept`` writes the same.
BASELINE_AUDIT_ACTION = "accept"


def baseline_preview(store: Store | None, progress: SweepProgress, pools: list[str]) -> PlanPreview:
    """The 'accept as baseline' dry run: which sweep becomes the baseline of which pools.

    Refused as the CLI's ``accept`` refuses: a sweep that did not finish its work (cancelled,
    interrupted, cut by its deadline, still running) is no baseline.
    """
    sweep_id = progress.last_full_sweep_id
    title = "Accept baseline"
    if store is None:
        return PlanPreview(BASELINE_ACTION_ID, title, tuple(pools), refused="no history database is open")
    if sweep_id is None or progress.running:
        return PlanPreview(BASELINE_ACTION_ID, title, tuple(pools), refused="wait for a full sweep to finish")
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return PlanPreview(BASELINE_ACTION_ID, title, tuple(sorted(pools)), refused=refusal)
    notes = tuple(
        f"pool {pool}: baseline sweep #{store.baseline(pool) or 'none'} -> #{sweep_id}" for pool in sorted(pools)
    )
    return PlanPreview(BASELINE_ACTION_ID, title, tuple(sorted(pools)), where=f"history {store.path}", notes=notes)


def accept_baseline(store: Store, preview: PlanPreview, sweep_id: int, reason: str) -> ActionOutcome:
    """Make ``sweep_id`` the baseline of the preview's pools, audited as the CLI's ``accept`` is.

    The sweep is checked again (it may have been marked interrupted since the dialog opened); a refusal
    changes nothing and, as in the CLI, writes no audit entry. The intent is committed before the
    baselines change, the outcome after. The operator's reason, when given, is kept with the inputs.
    """
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return ActionOutcome(False, refusal)
    user = current_user()
    pools = list(preview.targets)
    inputs: dict[str, object] = {"sweep": sweep_id}
    if reason:
        inputs["reason"] = reason
    with store.audited(BASELINE_AUDIT_ACTION, pools, inputs=inputs, user=user) as entry:
        for pool in pools:
            store.accept(pool, sweep_id, user)
        entry.finish(f"sweep {sweep_id} is the baseline of {', '.join(pools)}")
    return ActionOutcome(True, f"sweep #{sweep_id} is the baseline of {', '.join(pools)}")


@dataclass(frozen=True)
class PoolDiff:
    """One pool's changes against its baseline (``baseline`` None: nothing accepted yet)."""

    pool: str
    baseline: int | None
    current: int
    nodes: list[NodeDiff]


def baseline_diffs(store: Store, inventory: Inventory, current: int, pools: Iterable[str]) -> list[PoolDiff]:
    """Per pool, what changed between its accepted baseline and sweep ``current``."""
    diffs = []
    for pool in sorted(set(pools)):
        base = store.baseline(pool)
        members = [n.name for n in inventory.nodes if n.pool == pool]
        nodes = diff_sweeps(store, base, current, members) if base is not None else []
        diffs.append(PoolDiff(pool, base, current, nodes))
    return diffs


def hostlist(names: Iterable[str]) -> str:
    """The shortest Slurm hostlist of ``names``."""
    return fold(names)


def report_exit_code(verdicts: Iterable[NodeVerdict]) -> ExitCode:
    """The headless exit code the same verdicts would give (no UNKNOWN allowance)."""
    statuses = {v.status for v in verdicts}
    if Status.FAIL in statuses:
        return ExitCode.FAILED
    if Status.UNKNOWN in statuses:
        return ExitCode.UNKNOWN_EXCEEDED
    return ExitCode.OK


def export_report(inventory: Inventory, rows: list[NodeRow], progress: SweepProgress, directory: Path) -> Path:
    """Write the JSON report of what the console shows now; returns the file written.

    Like the headless report it lists the findings that are not PASS, which the rows keep.
    """
    verdicts = {r.name: r.verdict for r in rows if r.verdict is not None}
    stacks = {r.name: r.view.stack for r in rows if r.view is not None}
    started = progress.started_at or time.time()
    finished = progress.finished_at or time.time()
    outcome = progress.outcome if progress.outcome in ("done", "cancelled", "deadline") else "cancelled"
    report = build_report(
        inventory,
        verdicts,
        stacks,
        sweep_id=progress.sweep_id,
        level=progress.level or "none",
        started_at=started,
        duration_s=max(0.0, finished - started),
        outcome=outcome,  # type: ignore[arg-type]
        exit_code=int(report_exit_code(verdicts.values())),
    )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"instinct-console-sweep{progress.sweep_id}.json"
    write_json(report, str(path))
    return path
