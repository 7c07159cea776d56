"""The workload runs in progress, as the engine's events tell them (``console.sweep.workload_runs``).

Kept by ``LiveState`` under its lock (events arrive on the engine's thread); the acceptance view reads
a copy. A pool's run is the set of its nodes still running the workload, since the first of them began.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.sweep.events import WorkloadFinished, WorkloadStarted


@dataclass(frozen=True)
class LiveRun:
    """A workload running on some nodes of a pool: since when (the earliest start), where, in which sweep."""

    workload: str
    pool: str
    started_at: float
    nodes: tuple[str, ...]
    sweep_id: int


class RunningWorkloads:
    """(workload, pool) -> the run in progress; ``version`` moves with every change."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str], LiveRun] = {}
        self.version = 0

    def apply(self, event: WorkloadStarted | WorkloadFinished) -> None:
        """Fold one event in."""
        key = (event.workload, event.pool)
        run = self._runs.get(key)
        if isinstance(event, WorkloadStarted):
            if run is None or run.sweep_id != event.sweep_id:
                run = LiveRun(event.workload, event.pool, event.started_at, (), event.sweep_id)
            nodes = run.nodes + tuple(n for n in event.nodes if n not in run.nodes)
            since = min(run.started_at, event.started_at)
            self._runs[key] = LiveRun(run.workload, run.pool, since, nodes, run.sweep_id)
        elif run is not None:
            left = tuple(n for n in run.nodes if n not in event.nodes)
            if left:
                self._runs[key] = LiveRun(run.workload, run.pool, run.started_at, left, run.sweep_id)
            else:
                del self._runs[key]
        self.version += 1

    def snapshot(self) -> dict[tuple[str, str], LiveRun]:
        """A copy, for the UI loop."""
        return dict(self._runs)
