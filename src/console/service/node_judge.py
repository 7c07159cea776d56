"""Checking a node as an engine worker does, in whichever process: ``NodeJudge``.

Kept apart from ``console.service.worker`` (which imports the engine host and, through it, the actions):
the console's engine process imports this one for the first wave it checks itself while its workers
start, and importing the worker module there cost 0.14 s before the first verdict.
"""

from __future__ import annotations

from typing import Any

from console.inventory.model import Node, Pool, StackPin
from console.store import ProbeRunRecord
from console.sweep.bundle import Section
from console.sweep.catalog import ProbeSpec
from console.sweep.engine import SweepEngine
from console.sweep.node_report import WorkerJudged, build_report
from console.sweep.packed import PackedFacts, pack_screen
from console.sweep.vanished import PROBE as LISTED


class NodeJudge:
    """Checks a node with an engine that has no store and makes what a worker answers of it: the compact
    report, what the screens show, the probe runs. A worker process serves its pool with one; the pool
    uses one in the console's own engine process for the first wave while its workers start."""

    def __init__(self, engine: SweepEngine) -> None:
        self.engine = engine
        self.engine.runs_kept = {}
        # node -> probe -> its latest run here: a probe reused while the stack stamp is unchanged is
        # reported with the output it was judged on.
        self._last: dict[str, dict[str, ProbeRunRecord]] = {}

    async def judged(  # noqa: PLR0917
        self,
        node: Node,
        specs: list[ProbeSpec],
        refresh: bool,
        pin: StackPin,
        deadline: float | None,
        pool: Pool | None = None,
    ) -> WorkerJudged:
        """Check and judge ``node`` by ``deadline`` (``time.monotonic``) against ``pin`` and the console's
        ``pool`` now."""
        self.engine.pins[node.pool] = pin  # the console's pin now (an operator may have set it since)
        if pool is not None:  # and its pool: ``rollback`` may have set the framework's image back since
            self.engine.inventory.pools[node.pool] = pool
        self.engine.runs_kept = self.engine.runs_kept or {}
        self.engine.runs_kept.pop(node.name, None)
        verdict = await self.engine.check(node, specs, refresh, deadline)
        return self._judged(node, verdict)

    def cut(self, node: Node, reason: str) -> WorkerJudged | None:
        """What a worker answers of ``node`` judged now on what came back, its check stopped by the sweep's
        ``reason``; None when it is not being checked here."""
        verdict = self.engine.cut_short(node, reason)
        return None if verdict is None else self._judged(node, verdict)

    def _judged(self, node: Node, verdict: Any) -> WorkerJudged:
        engine = self.engine
        facts = engine.facts.get(node.name)
        if facts is None:  # the engine found it unreachable: its one finding says why
            return WorkerJudged(report=None, unreachable=_reason(verdict.findings[0].message))
        runs = (engine.runs_kept or {}).pop(node.name, [])
        last = self._last.setdefault(node.name, {})
        last.update({run.probe: run for run in runs})
        empty = ProbeRunRecord(
            probe="", command="", exit_status=None, started_at=0.0, duration_s=0.0, stdout=b"", problem=None
        )
        sections = [Section(probe, (run := last.get(probe, empty)).stdout, run.exit_status) for probe in facts.outcomes]
        report = build_report(
            node, "worker", "done", 0.0, verdict, facts, engine.packs.get(node.gpu_model), sections, raw=False
        )
        listed = facts.outcomes.get(LISTED) if len(facts.gpus) < node.gpu_count else None
        # Outputs leave compressed as the store keeps them: ~8x fewer bytes through the pipe, and the
        # compression on this core instead of the console's (0.26 s of its 1.2 s for 256 nodes).
        packed = [run.packed() for run in runs]
        # The engine keeps them packed already: sent as they are, not loaded and packed again.
        screens = facts.packed_screens() if isinstance(facts, PackedFacts) else None
        if screens is None:
            screens = (pack_screen(facts.gpus), pack_screen(facts.xgmi), pack_screen(facts.nics))
        return WorkerJudged(report, None, *screens, listed, packed)


def _reason(message: str) -> str:
    """The reason in an unreachable node's finding (``could not check: <reason>``)."""
    return message.split(": ", 1)[1] if ": " in message else message
