"""Which declared workload runs where, while it runs: events for the console, an audit entry for the rest.

A workload run occupies the GPUs of its nodes for minutes, and its outcome re-judges a pool's
acceptance. So the workload phase says when each run starts and ends (``WorkloadStarted`` /
``WorkloadFinished``: the console's acceptance view shows it running, live), and writes one audit
entry per workload and pool, ahead (``workload-run``: who held which nodes' GPUs, since when) with its
outcome when the last run of that workload on that pool ended. Another process (``acceptance``) reads
an entry with no outcome whose process still runs as "running"; a phase that stops early (cancelled,
past the deadline) closes its open entries with what happened, so none reads running forever.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

from console.inventory.model import Node
from console.model.findings import Status
from console.sweep.engine import SweepEngine
from console.sweep.events import WorkloadFinished, WorkloadStarted

ACTION = "workload-run"


class RunLedger:
    """The runs of one workload phase: ``started`` and ``finished`` around each, ``close`` at the end."""

    def __init__(self, engine: SweepEngine, sweep_id: int, runs: Sequence[tuple[str, Sequence[Node]]]) -> None:
        self._engine = engine
        self._sweep_id = sweep_id
        self._left: Counter[tuple[str, str]] = Counter((name, group[0].pool) for name, group in runs)
        self._nodes: dict[tuple[str, str], list[str]] = {}
        for name, group in runs:
            self._nodes.setdefault((name, group[0].pool), []).extend(n.name for n in group)
        self._open: dict[tuple[str, str], int] = {}
        self._in_flight: dict[tuple[str, tuple[str, ...]], tuple[str, Sequence[Node]]] = {}
        self._worst: dict[tuple[str, str], list[tuple[Status, str]]] = {}

    def started(self, workload: str, group: Sequence[Node]) -> None:
        """A run of ``workload`` is being sent to ``group``."""
        key = (workload, group[0].pool)
        now = time.time()
        store = self._engine.store
        if store is not None and key not in self._open:
            inputs = {"workload": workload, "pool": key[1], "sweep": self._sweep_id, "started_at": now}
            self._open[key] = store.audit_intent(ACTION, self._nodes[key], inputs=inputs, commands=[], user=None)
        names = [n.name for n in group]
        self._in_flight[(workload, tuple(names))] = (workload, group)
        self._engine.announce(
            WorkloadStarted(sweep_id=self._sweep_id, workload=workload, pool=key[1], nodes=names, started_at=now)
        )

    def finished(self, workload: str, group: Sequence[Node], status: Status) -> None:
        """The run of ``workload`` on ``group`` ended with ``status`` (its worst finding)."""
        key = (workload, group[0].pool)
        names = [n.name for n in group]
        self._in_flight.pop((workload, tuple(names)), None)
        self._worst.setdefault(key, []).extend((status, name) for name in names)
        self._left[key] -= 1
        if self._left[key] <= 0:
            self._close(key, self._outcome(key))
        self._announce_end(workload, group, status)

    def _announce_end(self, workload: str, group: Sequence[Node], status: Status) -> None:
        names, pool = [n.name for n in group], group[0].pool
        self._engine.announce(
            WorkloadFinished(sweep_id=self._sweep_id, workload=workload, pool=pool, nodes=names, status=status)
        )

    def close(self, why: str) -> None:
        """End every run and entry still open: the phase stopped (``why``) before those runs ended (the
        transport killed them); the console hears that they are over, unjudged."""
        for workload, group in list(self._in_flight.values()):
            self._announce_end(workload, group, Status.UNKNOWN)
        self._in_flight.clear()
        for key in list(self._open):
            self._close(key, f"outcome unknown: {why} while it ran")

    def _outcome(self, key: tuple[str, str]) -> str:
        judged = self._worst.get(key, [])
        by_status: dict[Status, list[str]] = {}
        for status, node in judged:
            by_status.setdefault(status, []).append(node)
        parts = [f"{s.value} on {', '.join(by_status[s])}" for s in sorted(by_status, key=lambda s: -s.severity)]
        return f"{key[0]} on pool {key[1]} (sweep {self._sweep_id}): " + "; ".join(parts)

    def _close(self, key: tuple[str, str], outcome: str) -> None:
        audit_id = self._open.pop(key, None)
        store = self._engine.store
        if audit_id is not None and store is not None:
            store.audit_result(audit_id, outcome)
