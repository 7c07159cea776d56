"""What the console's screens read of the history database: the sweep it opens on, a node's findings,
a pool's pin, the baseline diffs. No Textual here, and nothing written: the engine side writes.

The app holds one ``HistoryQueries`` over its own connection to the database (``ConsoleApp.queries``);
without a database every query answers from what the rows keep.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from console.actions.baseline import PoolDiff, baseline_diffs
from console.inventory.model import Inventory
from console.model.findings import Finding, NodeVerdict, Status
from console.store import Store
from console.sweep.events import Event, NodeDone, NodeSnapshot, SweepDone, SweepStarted
from console.ui.state import NodeRow


class HistoryQueries:
    """The history queries of one console: ``store`` None answers from the rows alone."""

    def __init__(self, store: Store | None, inventory: Inventory) -> None:
        self.store = store
        self.inventory = inventory

    def opening_sweep(self) -> tuple[list[Event], sqlite3.Row] | None:
        """The newest sweep of the inventory's nodes as events, with its row (``history_events``)."""
        return history_events(self.store, self.inventory) if self.store is not None else None

    def findings_of(self, row: NodeRow) -> tuple[list[Finding], bool]:
        """Every finding of the row's verdict (from the history database) and whether the list is complete.

        Rows keep only findings that are not PASS; without a database holding the rest, that is what is shown.
        """
        kept = self.kept_findings(row)
        counted = sum(row.verdict.passed.values()) if row.verdict is not None else 0  # PASS kept as counts
        if self.store is not None and row.sweep_id is not None and self.more_findings_stored(row):
            stored = self.store.findings(row.sweep_id, row.name)
            if len(stored) + counted == row.findings_total:
                return stored, True
        return kept, len(kept) + counted == row.findings_total

    @staticmethod
    def kept_findings(row: NodeRow) -> list[Finding]:
        """The findings the row holds in memory: every one that is not PASS."""
        return list(row.verdict.findings) if row.verdict is not None else []

    def more_findings_stored(self, row: NodeRow) -> bool:
        """True when the history database may hold findings of the row's verdict that the row does not."""
        kept = row.verdict.total if row.verdict is not None else 0
        return self.store is not None and row.sweep_id is not None and kept < row.findings_total

    def pool_pin(self, pool: str) -> dict[str, str]:
        """The pin a pool is held to: the one stored by 'pin stack', else the inventory's."""
        stored = self.store.pin(pool) if self.store is not None else {}
        if stored:
            return stored
        spec = self.inventory.pools.get(pool)
        return spec.pin.pinned_fields() if spec is not None else {}

    def baseline_diffs(self, pools: Iterable[str], sweep: int) -> list[PoolDiff] | None:
        """What changed since each pool's accepted baseline in ``sweep``; None without a database."""
        if self.store is None:
            return None
        return baseline_diffs(self.store, self.inventory, pools, sweep)


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
