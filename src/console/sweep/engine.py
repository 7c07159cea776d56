"""The sweep engine: nodes x probes in waves, within deadlines, judged into verdicts, streamed as events.

One engine owns one transport (so connections are reused across sweeps and reruns), one node checker
(``console.sweep.checker``: in this process, engine workers or a Slurm job, chosen by the assembly) and
one store. It keeps the waves, the deadlines, cancel and give-up, the events and the store; the checker
checks each node, and ``console.sweep.judging`` makes its verdict.
Subscribers receive every event synchronously, in order, on the engine's loop; they must not block
(the TUI forwards them to its own loop, the headless display updates a progress bar).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from console.checks import CheckPack, NodeFacts, ProbeOutcome
from console.inventory.hostlist import fold
from console.inventory.model import Inventory, Node, StackPin
from console.model.findings import Finding, NodeVerdict, Status
from console.store import ProbeRunRecord, Store
from console.store.faults import StoreFault, StoreWrites
from console.store.pins import effective_pins
from console.sweep.bundle import DEFAULT_MAX_PROBE_OUTPUT
from console.sweep.catalog import PROBES_BY_ID, RERUN_PREFIX, ProbeSet, ProbeSpec, probes_for
from console.sweep.checker import NodeChecker
from console.sweep.checker_local import DEADLINE_MARGIN_S, LocalChecker
from console.sweep.events import Event, NodeDone, StoreFailed, SweepDone, SweepStarted
from console.sweep.judging import Judging, snapshot_of
from console.sweep.probe_runs import describe, exit_problem, probe_problem
from console.sweep.steady import DEFAULT_MAX_AGE_S
from console.transport import Transport

Subscriber = Callable[[Event], None]
# A node may take its probe timeout plus 5 %: the promise is the timeout plus 10 % for the whole sweep,
# and the other 5 % are for giving up (the kill on the node, a busy event loop, the fleet pass).
NODE_BUDGET_FACTOR = 1.05
# The first few nodes start alone and the rest join at the first verdict (or after the head start):
# with every node in flight at once, a CPU-bound console and fleet finish them all together, and an
# operator watching a 1,000-node sweep saw the first verdict only after 15-25 s. Alone, the first wave
# answers in ~0.4 s; with a 0.5 s head start 1,016 nodes could join first and push it to 1.1 s.
FIRST_WAVE = 8
HEAD_START_S = 1.0
T = TypeVar("T")
# What stopped the nodes of a sweep that did not end "done", as their checks and findings say it.
_CUT_REASON = {"deadline": "deadline exceeded", "cancelled": "sweep cancelled"}


@dataclass
class SweepResult:
    """What a finished sweep returns to its caller."""

    sweep_id: int
    outcome: str
    verdicts: dict[str, NodeVerdict]
    duration_s: float
    counts: dict[Status, int] = field(default_factory=dict)


def probes_for_families(packs: dict[str, CheckPack], level: ProbeSet, families: set[str] | None) -> list[ProbeSpec]:
    """Probes of ``level`` needed by checks of ``families`` (all of the level when None)."""
    available = probes_for(level)
    if families is None:
        return available
    wanted: set[str] = set()
    for pack in packs.values():
        for check in pack.checks:
            if check.family in families:
                wanted.update(check.requires)
    return [p for p in available if p.id in wanted or p.family in families]


class SweepEngine:
    """Runs sweeps and reruns of nodes through one node checker, keeping the latest outcomes per node."""

    def __init__(
        self,
        inventory: Inventory,
        transport: Transport,
        packs: dict[str, CheckPack],
        store: Store | None = None,
        *,
        checker: NodeChecker | None = None,
        pins: dict[str, StackPin] | None = None,
        probe_timeout_cap_s: float | None = None,
        steady_max_age_s: float = DEFAULT_MAX_AGE_S,
        max_probe_output_bytes: int = DEFAULT_MAX_PROBE_OUTPUT,
        origin: str = "",
    ) -> None:
        self.inventory = inventory
        # The command this engine sweeps for (stored with each sweep): another console names it.
        self.origin = origin
        # What one probe's output may cost in memory, whatever a node sends; a cut output is UNKNOWN.
        self.max_probe_output_bytes = max_probe_output_bytes
        # An operator (or a test) may cap every probe's timeout, e.g. for a prolog with a hard budget.
        # The cap is then also the most the engine spends on one node, connecting included: work still
        # running at the cap is given up, and its commands are killed on the node in the background.
        self.probe_timeout_cap_s = probe_timeout_cap_s
        self.steady_max_age_s = steady_max_age_s  # reuse of slow-changing probes (``console.sweep.steady``)
        self.transport = transport  # also what the commands that are not one node's probes go through
        self.packs = packs
        self.store = store
        # Every write to the store goes through ``writes``: a failing store costs the history, never the sweep.
        self.writes = StoreWrites(store)
        self.writes.on_fault(self._store_failed)
        # Every engine judges against the same pins: the inventory's, overridden by the stored ones. The
        # console's engine used the inventory's alone while its detail screen and `sweep` used both.
        # Without a store, or with one that fails, the inventory's pins still hold: drift is never unjudged.
        self.pins = (
            pins
            if pins is not None
            else self.writes.read(lambda s: effective_pins(inventory, s), effective_pins(inventory, None))
        )
        self.verdicts: dict[str, NodeVerdict] = {}
        self.facts: dict[str, NodeFacts] = {}
        self.outcomes: dict[str, dict[str, ProbeOutcome]] = {}  # node -> probe -> its latest outcome
        # Without a store, the probe runs a store would keep, by node (an engine worker sends them on).
        self.runs_kept: dict[str, list[ProbeRunRecord]] | None = None
        # Bundles per node run on parallel channels; stay well under sshd's MaxSessions (10).
        self.bundles_per_node = max(1, min(4, inventory.ssh.max_channels_per_node))
        self.sweep_id = 0
        self.published: set[str] = set()  # nodes with a verdict in this sweep
        self._subscribers: list[Subscriber] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._abandoned: set[asyncio.Future[Any]] = set()  # work given up at the cap, still cleaning up
        self._running = False
        self._cancelling = False  # ``cancel`` was called during the running sweep
        self._first_verdict: asyncio.Event | None = None
        self._node_tasks: dict[str, asyncio.Task[None]] = {}  # the node's check in flight, for give_up
        self._given_up: set[str] = set()
        self.judging = Judging(self)
        # How each node is checked: the assembly chooses (``console.service.assembly``); this process by default.
        self.checker: NodeChecker = checker if checker is not None else LocalChecker(transport)
        self.checker.attach(self)

    # events -----------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with every event; returns a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def emit(self, event: Event) -> None:
        """Send ``event`` to every subscriber, in order."""
        for callback in list(self._subscribers):
            callback(event)

    def _store_failed(self, fault: StoreFault) -> None:
        self.emit(StoreFailed(sweep_id=self.sweep_id, fault=fault))

    def announce(self, event: Event) -> None:
        """Send an event made outside the per-node sweep (the multi-node phase's runs) to every subscriber."""
        self.emit(event)

    def publish(self, node: Node, verdict: NodeVerdict, facts: NodeFacts, cut: str = "") -> None:
        """Keep, store and announce ``node``'s verdict (``cut``: what cut its check short, if anything)."""
        self.verdicts[node.name] = verdict
        self.published.add(node.name)
        if self._first_verdict is not None:
            self._first_verdict.set()
        sweep_id = self.sweep_id
        self.writes.write("node verdict", lambda s: s.record_node(sweep_id, node.pool, verdict, facts.stack, cut=cut))
        self.emit(NodeDone(sweep_id=sweep_id, pool=node.pool, verdict=verdict, snapshot=snapshot_of(facts)))

    # running ----------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while a sweep is in progress."""
        return self._running

    async def prepare(self, nodes: Sequence[Node], level: ProbeSet | str) -> None:
        """Before a sweep of ``nodes``: what its checker fetches ahead (a Slurm job runs, every sweep afresh)."""
        await self.checker.gather(nodes, level)

    async def run(
        self,
        nodes: Iterable[Node] | None = None,
        level: ProbeSet | str = ProbeSet.QUICK,
        families: set[str] | None = None,
        deadline_s: float | None = None,
        started: float | None = None,
    ) -> SweepResult:
        """Sweep ``nodes`` (all by default) with the probes of ``level``; returns when every node has a verdict.
        ``started``: when the sweep began (``time.monotonic``), if before this call: its checker's gather."""
        targets = list(nodes) if nodes is not None else list(self.inventory.nodes)
        level = ProbeSet(level)
        probes = self.capped(probes_for_families(self.packs, level, families))
        started = time.monotonic() if started is None else started
        # A sweep of some families only (drift: stack and firmware) is recorded as such: "quick:firmware,stack".
        recorded = f"{level.value}:{','.join(sorted(families))}" if families else level.value
        self.published, self.judging.cut = set(), {}
        self._cancelling = False
        self._begin(recorded, targets, probes, level.value)
        outcome = await self._sweep(targets, probes, deadline_s)
        if outcome != "done":
            await self.checker.judge_cut(targets, _CUT_REASON[outcome])
        return self._finish(targets, outcome, started)

    async def _sweep(
        self, targets: list[Node], probes: list[ProbeSpec], deadline_s: float | None
    ) -> Literal["done", "cancelled", "deadline"]:
        """Check ``targets`` in waves within ``deadline_s``; how the sweep ended."""
        outcome: Literal["done", "cancelled", "deadline"] = "done"
        self.checker.cutting(None)
        try:
            async with asyncio.timeout(deadline_s):
                await self._sweep_in_waves(targets, probes)
                await self._drain_reruns()
        except TimeoutError:
            outcome = "deadline"
        except asyncio.CancelledError:
            outcome = "cancelled"
        finally:
            if outcome != "done":
                # Nodes stopped in engine workers are judged there on what came back, and sent back.
                self.checker.cutting(_CUT_REASON[outcome])
            await self._stop_nodes()
            self._running = False
        if outcome == "done" and self._cancelling:
            # ``cancel`` ended the nodes' tasks, not this one: the waves ended without every verdict.
            outcome = "cancelled"
        return outcome

    def _finish(self, targets: list[Node], outcome: str, started: float, *, summary_time: bool = True) -> SweepResult:
        """The fleet pass, the sweep's end stored and announced, and its result."""
        self.judging.fleet_pass(targets)
        duration = time.monotonic() - started
        counts = self._counts(targets)
        summary: dict[str, Any] = {"counts": {k.value: v for k, v in counts.items()}}
        if summary_time:
            summary["duration_s"] = duration
        sweep_id = self.sweep_id
        self.writes.write("sweep end", lambda s: s.finish_sweep(sweep_id, outcome, summary))
        self.emit(SweepDone(sweep_id=sweep_id, outcome=outcome, counts=counts, duration_s=duration))
        return SweepResult(sweep_id, outcome, {n.name: self.verdicts[n.name] for n in targets}, duration, counts)

    def cancel(self) -> None:
        """Stop the running sweep: in-flight probes are killed on the nodes by the transport."""
        self._cancelling = self._running
        if self._running:
            self.checker.cutting(_CUT_REASON["cancelled"])
        for task in list(self._tasks):
            task.cancel()

    def give_up(self, node_name: str) -> bool:
        """Stop waiting for one node of the running sweep (an operator's call on a stuck node).

        Its commands are killed on the node as for a cancelled sweep; the node is UNKNOWN, "given up",
        and the sweep goes on with the others. False when the node is not being checked now.
        """
        task = self._node_tasks.get(node_name)
        if task is None or task.done():
            return False
        self._given_up.add(node_name)
        task.cancel()
        return True

    async def rerun(
        self, nodes: Iterable[str], families: set[str] | None = None, level: ProbeSet | str = ProbeSet.QUICK
    ) -> SweepResult | None:
        """Run again the probes behind ``families`` (all of ``level`` when None) on ``nodes``.

        While a sweep runs, the rerun joins it; otherwise it is recorded as a new sweep whose parent
        is the last one. Returns the result of a standalone rerun, None when it joined a sweep.
        """
        targets = [self.inventory.node(name) for name in nodes]
        probes = self.capped(probes_for_families(self.packs, ProbeSet(level), families))
        # Asking for families by name means wanting them looked at now, not their stamp-checked copies.
        refresh = families is not None
        if self._running:
            for node in targets:
                self._spawn(self._sweep_node(node, probes, refresh))
            return None
        started = time.monotonic()
        recorded = f"{RERUN_PREFIX}{','.join(sorted(families or [])) or ProbeSet(level).value}"
        self._begin(recorded, targets, probes, str(level), rerun=True)
        try:
            await asyncio.gather(*(self._spawn(self._sweep_node(node, probes, refresh)) for node in targets))
        finally:
            self._running = False
            # A standalone rerun is not judged in part when cancelled (``close``): what it kept goes.
            for node in targets:
                self.checker.forget(node.name)
        return self._finish(targets, "done", started, summary_time=False)

    def capped(self, probes: list[ProbeSpec]) -> list[ProbeSpec]:
        """``probes`` with their timeouts under the engine's cap (``probe_timeout_cap_s``), if any."""
        cap = self.probe_timeout_cap_s
        if cap is None:
            return probes
        # Long tests end on the node a little before the cap, so what they printed comes back and is
        # judged (a table without its footer fails) instead of being cut off at the cap. The margin is
        # 15% of the cap but at least 10 s (half a short cap): a loaded node or client needs seconds to
        # kill the test and send its output, and a margin lost reads UNKNOWN where a FAIL was printed.
        margin = max(0.15 * cap, min(10.0, 0.5 * cap))
        return [replace(p, timeout_s=min(p.timeout_s, cap - margin if p.judge_partial else cap)) for p in probes]

    async def close(self) -> None:
        """Cancel work in flight, stop the checker and close the transport's connections."""
        self.cancel()
        await asyncio.gather(*self._tasks, *self._abandoned, return_exceptions=True)
        await self.disconnect()

    async def disconnect(self) -> None:
        """Stop the checker (its worker processes) and close the transport, without waiting for the work
        given up in flight (``close`` does)."""
        await self.checker.close()
        await self.transport.close()

    # internals --------------------------------------------------------------------------------

    async def _stop_nodes(self) -> None:
        """Cancel the nodes still being checked; wait for them only briefly.

        A cancelled node's commands are killed on the node by the transport, which over a hung probe
        takes its grace: the sweep's deadline must not wait for that (``--deadline 15`` ended at 16.5 s).
        The kills go on; ``close`` waits for them, and a cancelled node publishes nothing afterwards.
        """
        running = list(self._tasks)
        for task in running:
            task.cancel()
        if running:
            with contextlib.suppress(BaseException):
                _, lingering = await asyncio.wait(running, timeout=DEADLINE_MARGIN_S)
                for task in lingering:
                    self._abandon(task)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _drain_reruns(self) -> None:
        # Reruns requested during the sweep are part of it; wait for them before the fleet pass.
        while self._tasks:
            await _all_of(list(self._tasks), raise_first=False)

    async def _sweep_in_waves(self, targets: list[Node], probes: list[ProbeSpec]) -> None:
        first, rest = targets[:FIRST_WAVE], targets[FIRST_WAVE:]
        self._first_verdict = asyncio.Event()
        self.checker.first_wave(first if rest else [])
        tasks = [self._spawn(self._sweep_node(node, probes)) for node in first]
        if rest:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._first_verdict.wait(), HEAD_START_S)
            if not self._cancelling:
                tasks += [self._spawn(self._sweep_node(node, probes)) for node in rest]
        await _all_of(tasks)

    def _begin(
        self, recorded: str, targets: list[Node], probes: list[ProbeSpec], level: str, *, rerun: bool = False
    ) -> None:
        """Record a new sweep (a rerun's parent is the sweep before it) and announce it as running."""
        parent = (self.sweep_id or None) if rerun else None
        nodes = fold(n.name for n in targets)
        stored = self.writes.write(
            "sweep start", lambda s: s.start_sweep(recorded, self.inventory.source, nodes, parent, origin=self.origin)
        )
        self.sweep_id = self.sweep_id + 1 if stored is None else stored
        self._running = True
        nodes_named, probe_ids = [n.name for n in targets], [p.id for p in probes]
        self.emit(SweepStarted(sweep_id=self.sweep_id, nodes=nodes_named, probes=probe_ids, level=level, rerun=rerun))

    async def _sweep_node(
        self, node: Node, probes: list[ProbeSpec], refresh: bool = False, deadline: float | None = None
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._node_tasks[node.name] = task
        started = asyncio.get_running_loop().time()
        self.judging.cut.pop(node.name, None)  # checked again: what cut its earlier check no longer says anything
        cut = False
        try:
            await self.checker.check(node, probes, refresh, deadline)
        except asyncio.CancelledError:
            if node.name not in self._given_up:
                # The sweep's deadline or cancel: the checker's ``judge_cut`` judges what came back. Outside
                # a sweep (an engine worker's node, a standalone rerun) nothing will: it is not kept.
                cut = self._running
                raise
            # The operator's call, not the sweep's end: the node is not judged, the others go on.
            waited = asyncio.get_running_loop().time() - started
            self.judging.unreachable(node, f"given up by the operator after {waited:.0f} s (killed on the node)")
        finally:
            if not cut:
                self.checker.forget(node.name)
            self._given_up.discard(node.name)
            if self._node_tasks.get(node.name) is task:
                del self._node_tasks[node.name]

    async def check(
        self, node: Node, probes: list[ProbeSpec], refresh: bool = False, deadline: float | None = None
    ) -> NodeVerdict:
        """Check one node now, outside a sweep of this engine (an engine worker serving its parent), by
        ``deadline`` (``time.monotonic``, the loops' clock in every process) instead of its own budget."""
        await self._sweep_node(node, probes, refresh, deadline)
        return self.verdicts[node.name]

    def cut_short(self, node: Node, reason: str) -> NodeVerdict | None:
        """Judge now, on what came back, a node whose check (``check``: an engine worker's) is being stopped
        by its sweep's ``reason``; None when it is not being checked. Its task is to be cancelled next."""
        return self.verdicts[node.name] if self.checker.cut_short(node, reason) else None

    def deadline(self, given: float | None = None) -> float | None:
        """When a node's check starting now must end (loop time): ``given``, else its budget under the cap.

        A node may take its probe timeout plus a margin (connecting included): probes end on the node at
        the cap, and the margin lets their exit status and output come back before the node is given up.
        """
        if given is not None:
            return given
        cap = self.probe_timeout_cap_s
        return None if cap is None else asyncio.get_running_loop().time() + cap * NODE_BUDGET_FACTOR

    async def by(self, deadline: float | None, work: Awaitable[T]) -> T:
        """``work``, or TimeoutError at ``deadline`` (loop time; None waits for it).

        Work given up is cancelled but not waited for: cancelling a command makes the transport kill
        it on the node, which over a dead link takes the kill's own timeout, and the node's verdict
        must not wait for that cleanup. ``close`` does.
        """
        if deadline is None:
            return await work
        task = asyncio.ensure_future(work)
        try:
            done, _ = await asyncio.wait({task}, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
        except asyncio.CancelledError:
            self._abandon(task)
            raise
        if task in done:
            return task.result()
        self._abandon(task)
        raise TimeoutError

    def _abandon(self, task: asyncio.Future[Any]) -> None:
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(self._abandoned.discard)
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # its failure is no news

    def past_cap(self, *, ran: bool | None = True) -> str:
        """Why a node was given up at its budget: stopped on the node only when it was seen running there
        (``ran``); a node never connected (False), or that sent nothing back (None), may be dead: say so."""
        budget = (self.probe_timeout_cap_s or 0) * NODE_BUDGET_FACTOR
        said = f"no answer within {budget:g} s (probe timeout"
        if ran is False:
            return f"{said}): no connection to the node, which may be unreachable or dead; nothing was started there"
        if ran is None:
            return (
                f"{said}): nothing came back from the node, which may be unreachable or dead; what started there"
                " ends at its own timeout"
            )
        return f"{said}; stopped on the node)"

    def add_findings(self, node_name: str, source: str, findings: list[Finding]) -> NodeVerdict:
        """Attach findings made outside the node's own probes (e.g. a multi-node RCCL pair) and re-judge it.

        Findings of the same ``source`` replace the earlier ones, so a rerun of that source does not pile up.
        """
        self.judging.add_findings(self.inventory.node(node_name), source, findings)
        return self.verdicts[node_name]

    def _counts(self, targets: list[Node]) -> dict[Status, int]:
        counts = {status: 0 for status in Status}
        for node in targets:
            verdict = self.verdicts.get(node.name)
            counts[verdict.status if verdict else Status.UNKNOWN] += 1
        return counts


async def _all_of(tasks: list[asyncio.Task[None]], *, raise_first: bool = True) -> None:
    """Wait for every task; the first failure is raised when ``raise_first``.

    Not ``gather``: a cancelled gather waits for its tasks to finish cancelling, and a node's
    cancellation waits for the kill of its hung probe on the node (its grace). A sweep at its deadline
    or cancelled must stop now; ``_stop_nodes`` deals with the tasks.
    """
    if not tasks:
        return
    await asyncio.wait(tasks)
    for task in tasks:
        failure = None if task.cancelled() else task.exception()
        if raise_first and failure is not None:
            raise failure


# Re-exported: callers and tests name them as the engine's.
__all__ = [
    "PROBES_BY_ID",
    "SweepEngine",
    "SweepResult",
    "describe",
    "exit_problem",
    "probe_problem",
    "probes_for_families",
    "snapshot_of",
]
