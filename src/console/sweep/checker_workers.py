"""Checking nodes in engine worker processes (``--workers N``): each node's report, taken as it comes.

The engine's side of worker mode (the processes themselves are ``console.service.workers``'s): a node is
sent to its worker with the console's pin and pool now, its probe events come back as this engine's,
and the worker's report of it is taken once this console can vouch for it, its probe runs stored here,
the one store writer. A node the sweep cuts short is judged in its worker on what came back there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from console.inventory.model import Node, StackPin
from console.sweep.catalog import ProbeSet, ProbeSpec
from console.sweep.checker import ServesEngine
from console.sweep.events import Event
from console.sweep.node_report import JudgedByWorkers
from console.sweep.probe_runs import describe
from console.transport import Transport, TransportError

if TYPE_CHECKING:
    from console.sweep.multinode import MultinodeOptions

# What an engine worker's node may take past its budget, as a share of the cap: its judging and report.
WORKER_HANDBACK = 0.025
# How long a sweep cut short waits for its engine workers to send the nodes they judged on what came back
# (beyond the nodes' own stop, ``DEADLINE_MARGIN_S``); a node whose report is later is UNKNOWN whole.
CUT_REPLY_S = 0.5
# Why a node's report is refused, in this mode's words.
WORKER_REPORT = "its engine worker's report"


class WorkerChecker(ServesEngine):
    """Checks nodes in ``pool``'s worker processes; the engine's other commands go through ``transport``."""

    def __init__(self, pool: JudgedByWorkers, transport: Transport) -> None:
        self.pool = pool
        self.transport = transport
        self._asked: dict[str, list[ProbeSpec]] = {}  # a node's probes while its check runs (for a cut one)

    async def gather(self, nodes: Sequence[Node], level: ProbeSet | str) -> None:
        """Nothing to fetch ahead: each node is sent to its worker when its turn comes."""

    def first_wave(self, first: list[Node]) -> None:
        """The workers start (~1 s each) while this process checks ``first`` itself, when there is more to
        the sweep than that wave; the rest wait for their workers, their budgets from then."""
        self.pool.start(first)

    async def check(self, node: Node, probes: list[ProbeSpec], refresh: bool, given: float | None) -> None:
        """Have ``node`` checked and judged by its worker, then take its report."""
        self._asked[node.name] = list(probes)
        engine, judging = self.engine, self.engine.judging
        try:  # its worker started (a second or so, once): the node's budget counts from then, as there
            await self.pool.ready(node)
        except TransportError as exc:
            judging.unreachable(node, describe(exc))
            return
        deadline = engine.deadline(given)
        pin = engine.pins.get(node.pool, StackPin())
        pool = engine.inventory.pools.get(node.pool)  # its framework image as this engine has it now
        work = self.pool.judge(node, probes, refresh, pin, self._relay, deadline, pool)
        # The worker ends the node at this same deadline, then judges it and sends the report: half the
        # sweep's share for giving up (``NODE_BUDGET_FACTOR``) waits for that.
        cap = engine.probe_timeout_cap_s
        late = None if deadline is None or cap is None else deadline + cap * WORKER_HANDBACK
        try:
            judged = await engine.by(late, work)
        except TransportError as exc:
            judging.unreachable(node, describe(exc))
        except TimeoutError:
            judging.unreachable(node, engine.past_cap(ran=None))
        else:
            if judged.report is None:
                judging.unreachable(node, judged.unreachable or "not checked by its engine worker")
            else:
                judging.take_report(node, judged.report, probes, judged, whose=WORKER_REPORT)

    def _relay(self, event: Event) -> None:
        """An engine worker's probe event, told as this engine's sweep's.

        The event was just unpickled for this engine alone: its sweep id is set in place, without a copy
        and a validation per event (32 per node; the copies were a fifth of the console's CPU per node).
        """
        event.__dict__["sweep_id"] = self.engine.sweep_id
        self.engine.emit(event)

    def forget(self, node: str) -> None:
        """Its check ended: its report was taken, or it was found unreachable."""
        self._asked.pop(node, None)

    def lost(self, node: str) -> None:
        """Nothing is kept here to check it faster: its worker keeps that."""

    def cutting(self, reason: str | None) -> None:
        """Nodes cancelled from now on are judged in their workers on what came back there."""
        self.pool.cutting(reason)

    async def judge_cut(self, nodes: list[Node], reason: str) -> None:
        """Take what the workers judged of the nodes the sweep cut short; a node not back in time is UNKNOWN
        with ``reason``."""
        cut = await self.pool.cut_reports(CUT_REPLY_S)
        judging = self.engine.judging
        for node in nodes:
            if node.name in self.engine.published:
                continue
            worker = cut.get(node.name)
            if worker is not None and worker.report is not None:
                # Judged in its engine worker on what came back there (``cut_short``), as in process.
                judging.take_cut_report(node, worker, self._asked.get(node.name, []), WORKER_REPORT)
            else:
                judging.cut_unjudged(node, reason)
        self._asked = {}

    def cut_short(self, node: Node, reason: str) -> bool:
        """Its worker judges it when it is cut (``cutting``): nothing is judged in this process."""
        return False

    def multinode_launch(self, options: MultinodeOptions) -> MultinodeOptions:
        """Launched over the engine's transport, as the options say: the workers check nodes only."""
        return options

    async def close(self) -> None:
        """Stop the workers (each cancels its nodes and waits for their kills on the nodes)."""
        await self.pool.close()
