"""What the console's actions do, apart from drawing: baselines and diffs in the history database,
reports and hostlists. No Textual here.

Cluster actions (through ``console.actions``) run on the engine side: ``console.service.commands``;
accepting a baseline and diffing against it are ``console.actions.baseline``, as for the CLI.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from console.actions.baseline import failing_nodes, failing_refusal
from console.actions.catalogue import entry
from console.actions.model import ActionKind
from console.exitcodes import exit_code_for
from console.inventory.hostlist import fold
from console.inventory.model import Inventory
from console.model.findings import Finding, NodeVerdict, Status
from console.model.multinode import MultinodeResult
from console.report import build_report, write_json
from console.service.commands import PlanPreview
from console.store import Store
from console.sweep.events import Event, NodeDone, NodeSnapshot, SweepDone, SweepStarted
from console.ui.state import NodeRow, SweepProgress


def baseline_preview(store: Store | None, progress: SweepProgress, pools: list[str]) -> PlanPreview:
    """The 'accept as baseline' dry run: which sweep becomes the baseline of which pools.

    Refused as the CLI's ``accept`` refuses: a sweep that did not finish its work (cancelled,
    interrupted, cut by its deadline, still running) is no baseline.
    """
    sweep_id = progress.last_full_sweep_id
    action, title = ActionKind.ACCEPT.value, entry(ActionKind.ACCEPT).title
    if store is None:
        return PlanPreview(action, title, tuple(pools), refused="no history database is open")
    if sweep_id is None or progress.running:
        return PlanPreview(action, title, tuple(pools), refused="wait for a full sweep to finish")
    refusal = store.baseline_refusal(sweep_id)
    if refusal is not None:
        return PlanPreview(action, title, tuple(sorted(pools)), refused=refusal)
    failing = failing_nodes(store, sweep_id, pools)
    if failing:
        # The dialog offers no override here: accepting an unhealthy baseline is the command line's
        # deliberate `accept --allow-failing`, which the audit log keeps with the list.
        return PlanPreview(action, title, tuple(sorted(pools)), refused=failing_refusal(sweep_id, failing))
    notes = tuple(
        f"pool {pool}: baseline sweep #{store.baseline(pool) or 'none'} -> #{sweep_id}" for pool in sorted(pools)
    )
    return PlanPreview(action, title, tuple(sorted(pools)), where=f"history {store.path}", notes=notes)


def history_events(store: Store, inventory: Inventory) -> tuple[list[Event], sqlite3.Row] | None:
    """The newest sweep of ``inventory``'s nodes in the history, as the events that would show it again,
    with its stored row (when it ran, how it ended); None when the history has none.

    The console opened blank even with that sweep minutes old; it now opens on it, marked with its age.
    Rows keep their findings that are not PASS and the stack, as after a live sweep; GPU telemetry is
    not stored, so the GPUs tab waits for the next sweep.
    """
    sweep_id = store.latest_full_sweep([n.name for n in inventory.nodes], reruns=False)
    row = store.sweep(sweep_id) if sweep_id is not None else None
    if sweep_id is None or row is None:
        return None
    verdicts = store.node_verdicts(sweep_id)
    # Only the findings that are not PASS are read (a live row keeps no more); the rest are counted:
    # reading all of a large fleet's findings would hold up the console's start.
    findings: dict[str, list[Finding]] = {}
    for finding in store.findings(sweep_id, problems_only=True):
        findings.setdefault(finding.subject.node, []).append(finding)
    totals = store.finding_totals(sweep_id)
    runs = store.probe_run_ids(sweep_id)
    events: list[Event] = [
        SweepStarted(sweep_id=sweep_id, nodes=[v["node"] for v in verdicts], probes=[], level=row["level"])
    ]
    for v in verdicts:
        node = v["node"]
        events.append(stored_node_done(v, findings.get(node, []), totals.get(node, 0), runs.get(node, {})))
    counts = {Status(status): n for status, n in store.status_counts(sweep_id).items()}
    outcome = row["status"] if row["status"] in ("done", "deadline") else "cancelled"
    ended = row["finished_at"] or row["started_at"]
    events.append(SweepDone(sweep_id=sweep_id, outcome=outcome, counts=counts, duration_s=ended - row["started_at"]))
    return events, row


def stored_node_done(
    v: sqlite3.Row, problems: list[Finding], findings_total: int, probe_runs: dict[str, int]
) -> NodeDone:
    """The event that shows a stored node verdict (``v``, a ``node_verdicts`` row) with its findings that
    are not PASS, as the engine would have sent it: the opening sweep and the store follower both use it."""
    verdict = NodeVerdict(
        node=v["node"],
        status=Status(v["status"]),
        families={k: Status(s) for k, s in json.loads(v["families"] or "{}").items()},
        findings=problems,
        reason=v["reason"],
        passed=json.loads(v["passed"] or "{}"),  # PASS findings a node judged on itself sent as counts
    )
    snapshot = NodeSnapshot(stack=json.loads(v["stack"] or "{}"), probe_runs=probe_runs)
    return NodeDone(
        sweep_id=int(v["sweep_id"]),
        pool=v["pool"] or "",
        verdict=verdict,
        snapshot=snapshot,
        findings_total=findings_total,
    )


def hostlist(names: Iterable[str]) -> str:
    """The shortest Slurm hostlist of ``names``."""
    return fold(names)


def export_report(
    inventory: Inventory,
    rows: list[NodeRow],
    progress: SweepProgress,
    directory: Path,
    multinode: MultinodeResult | None = None,
) -> Path:
    """Write the JSON report of what the console shows now; returns the file written.

    Like the headless report it lists the findings that are not PASS, which the rows keep, and the
    last multi-node phase's runs, named nodes and racks, and straggler ranking.
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
        exit_code=int(exit_code_for(v.status for v in verdicts.values())),
        multinode=multinode,
    )
    directory.mkdir(parents=True, exist_ok=True)
    # A predictable name in a directory others may write: console.files refuses a link planted at it.
    path = directory / f"instinct-console-sweep{progress.sweep_id}.json"
    write_json(report, str(path))
    return path
