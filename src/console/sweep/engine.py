"""The sweep engine: nodes x probes over a transport, outcomes -> checks -> verdicts, streamed as events.

One engine owns one transport (so connections are reused across sweeps and reruns) and one store.
Subscribers receive every event synchronously, in order, on the engine's loop; they must not block
(the TUI forwards them to its own loop, the headless display updates a progress bar).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, TypeVar

from console.checks import CheckPack, NodeFacts, ProbeOutcome, build_facts, evaluate_fleet, evaluate_node
from console.checks.evaluate import observe, unanswered_probe_finding, unreachable_finding
from console.checks.facts import UNSUPPORTED
from console.checks.metrics import CHANGE_METRICS
from console.inert import redact
from console.inventory.hostlist import fold
from console.inventory.model import Inventory, Node, StackPin
from console.model.family import Family
from console.model.findings import Finding, NodeVerdict, Status, roll_up
from console.model.kept import HISTORY_CHECKS
from console.probes.base import ParsedOutput, ParseError
from console.store import ProbeRunRecord, Store
from console.store.faults import StoreFault, StoreWrites
from console.store.pins import effective_pins
from console.sweep.bundle import (
    DEFAULT_MAX_PROBE_OUTPUT,
    BundleOutput,
    Section,
    bundle_script,
    bundle_timeout,
    group_probes,
    split_bundle,
)
from console.sweep.catalog import PROBES_BY_ID, RERUN_PREFIX, ProbeSet, ProbeSpec, in_pool, probes_for
from console.sweep.events import (
    Event,
    NodeDone,
    NodeSnapshot,
    ProbeFinished,
    ProbeStarted,
    StoreFailed,
    SweepDone,
    SweepStarted,
)
from console.sweep.node_report import (
    JudgedByWorkers,
    JudgedOnNodes,
    LocalCheckReport,
    WorkerJudged,
    admit,
    console_checks,
    judged_with,
)
from console.sweep.packed import PackedFacts, PackedOutcome
from console.sweep.steady import DEFAULT_MAX_AGE_S, SteadyCache, stamp_of
from console.sweep.vanished import vanished_gpus
from console.transport import ErrorKind, Transport, TransportError
from console.transport.base import shown_command

Subscriber = Callable[[Event], None]
Readings = tuple[int, dict[str, tuple[float, float]]]
# A node may take its probe timeout plus 5 %: the promise is the timeout plus 10 % for the whole sweep,
# and the other 5 % are for giving up (the kill on the node, a busy event loop, the fleet pass).
NODE_BUDGET_FACTOR = 1.05
# What an engine worker's node may take past its budget, as a share of the cap: its judging and report.
WORKER_HANDBACK = 0.025
# How long before a node's budget ends its bundles time out themselves (with what they printed so far).
DEADLINE_MARGIN_S = 0.25
# The first few nodes start alone and the rest join at the first verdict (or after the head start):
# with every node in flight at once, a CPU-bound console and fleet finish them all together, and an
# operator watching a 1,000-node sweep saw the first verdict only after 15-25 s. Alone, the first wave
# answers in ~0.4 s; with a 0.5 s head start 1,016 nodes could join first and push it to 1.1 s.
FIRST_WAVE = 8
HEAD_START_S = 1.0
T = TypeVar("T")

# Transport failures that mean the node itself could not be reached or trusted; every probe would
# fail the same way, so the node gets one UNKNOWN finding with this reason instead of one per check.
_CONNECTION_KINDS = {
    ErrorKind.UNREACHABLE,
    ErrorKind.REFUSED,
    ErrorKind.CONNECT_TIMEOUT,
    ErrorKind.AUTH_FAILED,
    ErrorKind.HOST_KEY_CHANGED,
    ErrorKind.HOST_KEY_UNKNOWN,
}


@dataclass
class SweepResult:
    """What a finished sweep returns to its caller."""

    sweep_id: int
    outcome: str
    verdicts: dict[str, NodeVerdict]
    duration_s: float
    counts: dict[Status, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _ProbeRun:
    """What came back for one probe of a bundle, before parsing."""

    spec: ProbeSpec
    output: bytes | None
    exit_status: int | None
    problem: str | None
    started_at: float
    duration_s: float


def describe(error: TransportError) -> str:
    """One line an operator can act on: ``auth-failed: Permission denied (publickey)``.

    A password in an address or jump host (``ssh://ops:secret@host``) is redacted: this line goes to
    the store, the reports and the screen.
    """
    return redact(f"{error.kind.value}: {error.detail}")


# How argparse-based tools (amd-smi, rvs wrappers) refuse a subcommand or option they do not have, with
# usage status 2: the line naming what was refused.
_USAGE_ERROR = re.compile(rb"^.*error: (?:unrecognized arguments|argument .*invalid choice).*$", re.MULTILINE)
# A driver that does not offer what the probe reads (amd-smi on a GPU or kernel without the CPER ring):
# the same as an older tool, whatever the exit status. Looked for as lower-case bytes, then its line taken:
# a multi-line ``^.*...`` pattern tried at every line of a 108 KiB output cost 1.3 ms of a node's CPU.
_NOT_OFFERED = b"requires cper to be enabled"


OUTPUT_CUT = "output cut"  # how a probe's problem starts when its output was past the limit


def probe_problem(exit_status: int | None, output: bytes, spec: ProbeSpec, dropped_bytes: int = 0) -> str | None:
    """Why a probe's run gives nothing to judge, from its exit status and output; None when it may be parsed.

    A cut output is never judged, whatever it says: the part that was not kept may hold the failure.
    Timeouts, signals and a missing tool are problems; any other status is read with the output.
    """
    if dropped_bytes:
        kept = len(output)
        return (
            f"{OUTPUT_CUT}: {_mib(kept + dropped_bytes)} printed, the console keeps {_mib(kept)} of one probe's output"
        )
    if exit_status == 2 and (refusal := _USAGE_ERROR.search(output)) is not None:
        return f"{UNSUPPORTED}: {refusal.group(0).decode(errors='replace').strip()}"
    if (said := _line_saying(output, _NOT_OFFERED)) is not None:
        return f"{UNSUPPORTED}: {said.decode(errors='replace').strip()}"
    if exit_status is None:
        return "no result: the connection or the bundle ended before the probe finished"
    if exit_status == 127 or (exit_status == 126 and b"not found" in output):
        return f"{spec.argv[0]}: command not found on the node"
    if exit_status == 124:
        return f"timed out on the node after {spec.timeout_s:g} s"
    if exit_status == 128 + signal.SIGKILL:
        # GNU timeout's -k: the probe ignored SIGTERM at its timeout; else the kernel (out of memory).
        return (
            f"killed on the node (SIGKILL): it ignored SIGTERM at its {spec.timeout_s:g} s timeout, "
            "or ran out of memory"
        )
    if exit_status > 128 and (name := _signal_name(exit_status - 128)) is not None:
        return f"{spec.argv[0]} was killed by {name} on the node"
    return None  # another status is read with the output (``_judged``): the tool may say why it failed


def _line_saying(output: bytes, lowered: bytes) -> bytes | None:
    """The line of ``output`` that holds ``lowered`` in any case, or None."""
    at = output.lower().find(lowered)
    if at < 0:
        return None
    start = output.rfind(b"\n", 0, at) + 1
    end = output.find(b"\n", at)
    return output[start : end if end >= 0 else len(output)]


def exit_problem(spec: ProbeSpec, exit_status: int, output: bytes) -> str:
    """A quick probe whose tool said it failed without its parser recognising why: its own last words."""
    return f"{spec.argv[0]} exited with status {exit_status}: {_last_line(output)}"


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _signal_name(number: int) -> str | None:
    try:
        return signal.Signals(number).name
    except ValueError:
        return None


def _last_line(output: bytes) -> str:
    """The tool's own last words (what an operator would read first), one line, bounded."""
    lines = [line.strip() for line in output[-4096:].decode("utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


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
    """Runs sweeps and reruns over one transport, keeping the latest outcomes per node."""

    def __init__(
        self,
        inventory: Inventory,
        transport: Transport,
        packs: dict[str, CheckPack],
        store: Store | None = None,
        *,
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
        self.transport = transport
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
        self._outcomes: dict[str, dict[str, ProbeOutcome]] = {}
        self._subscribers: list[Subscriber] = []
        self._sweep_id = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._abandoned: set[asyncio.Future[Any]] = set()  # work given up at the cap, still cleaning up
        self._running = False
        self._cancelling = False  # ``cancel`` was called during the running sweep
        self._published: set[str] = set()
        self._first_verdict: asyncio.Event | None = None
        # Findings from outside the per-node probes (multi-node RCCL, bisection): node -> source -> findings.
        self._external: dict[str, dict[str, list[Finding]]] = {}
        # Bundles per node run on parallel channels; stay well under sshd's MaxSessions (10).
        self.bundles_per_node = max(1, min(4, inventory.ssh.max_channels_per_node))
        # Slow-changing probes (versions, firmware) are reused on later passes while the node's stack
        # stamp is unchanged; 0 runs them every time.
        self.steady = SteadyCache(steady_max_age_s)
        # (node, probe) whose narrow form the node's tool refused: its fallback form is sent from then on,
        # until the node goes unreachable (a reboot may bring a newer tool that knows the narrow form).
        self._refused: set[tuple[str, str]] = set()
        self._node_tasks: dict[str, asyncio.Task[None]] = {}  # the node's check in flight, for give_up
        # node -> its earlier figures for checks of change, read once in sweep ``_history_sweep``.
        self._history: dict[str, dict[str, tuple[int, dict[str, tuple[float, float]]]]] = {}
        self._history_sweep = 0
        self._given_up: set[str] = set()
        # Nodes that judged themselves (sweep --via-slurm): their reports, taken instead of outputs.
        self._judging = transport if isinstance(transport, JudgedOnNodes) else None
        # Nodes checked by engine worker processes (``--workers``): each node's report, taken as it comes.
        self._workers = transport if isinstance(transport, JudgedByWorkers) else None
        # Without a store, the probe runs a store would keep, by node (an engine worker sends them on).
        self.runs_kept: dict[str, list[ProbeRunRecord]] | None = None
        self._judged: dict[str, LocalCheckReport] = {}
        self._judged_with: dict[str, str] = {}  # pool -> what its nodes must have been judged with
        self._families: dict[str, dict[str, str]] = {}  # GPU model -> check id -> family
        self._worker_runs: dict[str, dict[str, int]] = {}  # node -> probe -> its latest stored run
        # A node's check in flight, kept until it ends so that a deadline or a cancel judges the node on
        # what had come back (a FAIL found stays a FAIL): the probes it asks for, the outcomes of those
        # that finished, and the bundles stopped mid-way with the output they had printed.
        self._asked: dict[str, list[ProbeSpec]] = {}
        self._so_far: dict[str, dict[str, ProbeOutcome]] = {}
        self._in_flight: dict[str, list[tuple[list[ProbeSpec], BundleOutput, float]]] = {}
        # Nodes of this sweep whose check a deadline or a cancel cut short: node -> what was cut. Stored
        # with the verdict, so that the cut check does not count as the node's last active check.
        self._cut: dict[str, str] = {}
        # Nodes the fleet pass is judging again without having probed them in this sweep (the others of a
        # pool a rerun or a partial sweep compared its nodes with): recorded as no check of theirs.
        self._not_probed: set[str] = set()

    # events -----------------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback`` with every event; returns a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    def _emit(self, event: Event) -> None:
        for callback in list(self._subscribers):
            callback(event)

    def _store_failed(self, fault: StoreFault) -> None:
        self._emit(StoreFailed(sweep_id=self._sweep_id, fault=fault))

    def announce(self, event: Event) -> None:
        """Send an event made outside the per-node sweep (the multi-node phase's runs) to every subscriber."""
        self._emit(event)

    # running ----------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while a sweep is in progress."""
        return self._running

    async def run(
        self,
        nodes: Iterable[Node] | None = None,
        level: ProbeSet | str = ProbeSet.QUICK,
        families: set[str] | None = None,
        deadline_s: float | None = None,
    ) -> SweepResult:
        """Sweep ``nodes`` (all by default) with the probes of ``level``; returns when every node has a verdict."""
        targets = list(nodes) if nodes is not None else list(self.inventory.nodes)
        level = ProbeSet(level)
        probes = self._capped(probes_for_families(self.packs, level, families))
        started = time.monotonic()
        # A sweep of some families only (drift: stack and firmware) is recorded as such: "quick:firmware,stack".
        recorded = f"{level.value}:{','.join(sorted(families))}" if families else level.value
        self._sweep_id = self._start_record(recorded, targets)
        self._published, self._cut = set(), {}
        self._asked, self._so_far, self._in_flight = {}, {}, {}
        self._running, self._cancelling = True, False
        self._emit(
            SweepStarted(
                sweep_id=self._sweep_id,
                nodes=[n.name for n in targets],
                probes=[p.id for p in probes],
                level=level.value,
            )
        )
        outcome: Literal["done", "cancelled", "deadline"] = "done"
        if self._workers is not None:
            self._workers.cutting(None)
        try:
            async with asyncio.timeout(deadline_s):
                await self._sweep_in_waves(targets, probes)
                await self._drain_reruns()
        except TimeoutError:
            outcome = "deadline"
        except asyncio.CancelledError:
            outcome = "cancelled"
        finally:
            if self._workers is not None and outcome != "done":
                # Nodes stopped in engine workers are judged there on what came back, and sent back.
                self._workers.cutting(_CUT_REASON[outcome])
            await self._stop_nodes()
            self._running = False
        if outcome == "done" and self._cancelling:
            # ``cancel`` ended the nodes' tasks, not this one: the waves ended without every verdict.
            outcome = "cancelled"
        if outcome != "done":
            cut = await self._workers.cut_reports(CUT_REPLY_S) if self._workers is not None else {}
            self._mark_unfinished(targets, _CUT_REASON[outcome], cut)
        self._fleet_pass(targets)
        duration = time.monotonic() - started
        counts = self._counts(targets)
        summary = {"counts": {k.value: v for k, v in counts.items()}, "duration_s": duration}
        self.writes.write("sweep end", lambda s: s.finish_sweep(self._sweep_id, outcome, summary))
        self._emit(
            SweepDone(
                sweep_id=self._sweep_id,
                outcome=outcome,
                counts=counts,
                duration_s=duration,
            )
        )
        return SweepResult(self._sweep_id, outcome, {n.name: self.verdicts[n.name] for n in targets}, duration, counts)

    def cancel(self) -> None:
        """Stop the running sweep: in-flight probes are killed on the nodes by the transport."""
        self._cancelling = self._running
        if self._running and self._workers is not None:
            self._workers.cutting(_CUT_REASON["cancelled"])
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
        probes = self._capped(probes_for_families(self.packs, ProbeSet(level), families))
        # Asking for families by name means wanting them looked at now, not their stamp-checked copies.
        refresh = families is not None
        if self._running:
            for node in targets:
                self._spawn(self._sweep_node(node, probes, refresh))
            return None
        parent = self._sweep_id or None
        started = time.monotonic()
        self._sweep_id = self._start_record(
            f"{RERUN_PREFIX}{','.join(sorted(families or [])) or ProbeSet(level).value}", targets, parent
        )
        self._running = True
        self._emit(
            SweepStarted(
                sweep_id=self._sweep_id,
                nodes=[n.name for n in targets],
                probes=[p.id for p in probes],
                level=str(level),
                rerun=True,
            )
        )
        try:
            await asyncio.gather(*(self._spawn(self._sweep_node(node, probes, refresh)) for node in targets))
        finally:
            self._running = False
            # A standalone rerun is not judged in part when cancelled (``close``): what it kept goes.
            self._asked, self._so_far, self._in_flight = {}, {}, {}
        self._fleet_pass(targets)
        duration = time.monotonic() - started
        counts = self._counts(targets)
        summary = {"counts": {k.value: v for k, v in counts.items()}}
        self.writes.write("sweep end", lambda s: s.finish_sweep(self._sweep_id, "done", summary))
        self._emit(SweepDone(sweep_id=self._sweep_id, outcome="done", counts=counts, duration_s=duration))
        return SweepResult(self._sweep_id, "done", {n.name: self.verdicts[n.name] for n in targets}, duration, counts)

    def _capped(self, probes: list[ProbeSpec]) -> list[ProbeSpec]:
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
        """Cancel work in flight and close the transport's connections."""
        self.cancel()
        await asyncio.gather(*self._tasks, *self._abandoned, return_exceptions=True)
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
        if self._workers is not None:
            # The workers start (~1 s each) while this process checks the first wave itself, when there is
            # more to the sweep than that wave; the rest wait for their workers, their budgets from then.
            self._workers.start(first if rest else [])
        tasks = [self._spawn(self._sweep_node(node, probes)) for node in first]
        if rest:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._first_verdict.wait(), HEAD_START_S)
            if not self._cancelling:
                tasks += [self._spawn(self._sweep_node(node, probes)) for node in rest]
        await _all_of(tasks)

    def _start_record(self, level: str, targets: list[Node], parent: int | None = None) -> int:
        nodes = fold(n.name for n in targets)
        stored = self.writes.write(
            "sweep start", lambda s: s.start_sweep(level, self.inventory.source, nodes, parent, origin=self.origin)
        )
        return self._sweep_id + 1 if stored is None else stored

    async def _sweep_node(
        self, node: Node, probes: list[ProbeSpec], refresh: bool = False, deadline: float | None = None
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._node_tasks[node.name] = task
        started = asyncio.get_running_loop().time()
        self._asked[node.name], self._so_far[node.name] = list(probes), {}
        self._in_flight.pop(node.name, None)
        self._cut.pop(node.name, None)  # checked again: what cut its earlier check no longer says anything
        cut = False
        try:
            await self._check_node(node, probes, refresh, deadline)
        except asyncio.CancelledError:
            if node.name not in self._given_up:
                # The sweep's deadline or cancel: ``_mark_unfinished`` judges what came back. Outside a
                # sweep (an engine worker's node, a standalone rerun) nothing will: it is not kept.
                cut = self._running
                raise
            # The operator's call, not the sweep's end: the node is not judged, the others go on.
            waited = asyncio.get_running_loop().time() - started
            self._node_unreachable(node, f"given up by the operator after {waited:.0f} s (killed on the node)")
        finally:
            if not cut:
                self._forget_progress(node.name)
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

    async def _check_node(
        self, node: Node, probes: list[ProbeSpec], refresh: bool = False, given: float | None = None
    ) -> None:
        cap = self.probe_timeout_cap_s
        if self._workers is not None:
            try:  # its worker started (a second or so, once): the node's budget counts from then, as there
                await self._workers.ready(node)
            except TransportError as exc:
                self._node_unreachable(node, describe(exc))
                return
        # A node may take its probe timeout plus a margin (connecting included): probes end on the node at
        # the cap, and the margin lets their exit status and output come back before the node is given up.
        deadline = None if cap is None else asyncio.get_running_loop().time() + cap * NODE_BUDGET_FACTOR
        if given is not None:
            deadline = given
        if self._workers is not None:
            pin = self.pins.get(node.pool, StackPin())
            pool = self.inventory.pools.get(node.pool)  # its framework image as this engine has it now
            work = self._workers.judge(node, probes, refresh, pin, self._relay, deadline, pool)
            # The worker ends the node at this same deadline, then judges it and sends the report: half
            # the sweep's share for giving up (``NODE_BUDGET_FACTOR``) waits for that.
            late = None if deadline is None or cap is None else deadline + cap * WORKER_HANDBACK
            try:
                judged = await self._by(late, work)
            except TransportError as exc:
                self._node_unreachable(node, describe(exc))
            except TimeoutError:
                self._node_unreachable(node, self._past_cap(ran=None))
            else:
                if judged.report is None:
                    self._node_unreachable(node, judged.unreachable or "not checked by its engine worker")
                else:
                    self._take_report(node, judged.report, probes, judged)
            return
        try:
            await self._by(deadline, self.transport.check_reachable(node.name))
        except TransportError as exc:
            self._node_unreachable(node, describe(exc))
            return
        except TimeoutError:
            self._node_unreachable(node, self._past_cap(ran=False))
            return
        report = self._judging.judged(node.name) if self._judging is not None else None
        if report is not None:
            self._take_report(node, report, probes)
            return
        self._judged.pop(node.name, None)
        plan = self.steady.plan(node.name, probes, self._outcomes.get(node.name, {}), refresh)
        began = self.steady.now()
        outcomes = await self._run_probes(node, plan.now, deadline)
        stamp = stamp_of({o.probe: o for o in outcomes})
        if plan.deferred and self.steady.unchanged(node.name, stamp):
            for spec in plan.deferred:
                self._reused(node, spec)
        elif plan.deferred and not any(o.usable for o in outcomes):
            pass  # nothing came back: asking for the slow probes too would only wait for the same failure
        else:
            if plan.deferred:
                outcomes += await self._run_probes(node, plan.deferred, deadline)
            if plan.deferred or any(p.slow_changing for p in plan.now):
                self.steady.ran(node.name, stamp, began)
        if outcomes and all(not o.usable for o in outcomes):
            # Nothing came back (connection refused mid-way, every probe hung): one reason, not 40.
            connection_kinds = {k.value for k in _CONNECTION_KINDS}
            first = next((o for o in outcomes if (o.problem or "").split(":", 1)[0] in connection_kinds), outcomes[0])
            self._node_unreachable(node, f"{first.probe}: {first.problem}" if first.problem else "no output")
            return
        merged = self._outcomes.setdefault(node.name, {})
        merged.update({o.probe: o for o in outcomes})
        self._judge(node)

    async def _run_probes(self, node: Node, probes: list[ProbeSpec], deadline: float | None) -> list[ProbeOutcome]:
        probes = [self._timed_for(node, self._form_for(node, spec)) for spec in probes]
        groups = group_probes(probes, self.bundles_per_node)
        results = await asyncio.gather(*(self._run_bundle(node, group, deadline) for group in groups))
        return [o for group in results for o in group]

    def _timed_for(self, node: Node, spec: ProbeSpec) -> ProbeSpec:
        """``spec`` with its node's model's timeout where the pack gives one (then the cap, if any): a hung
        RCCL run on an MI300X costs the minutes the test takes there, not a flat 900 s."""
        pack = self._pack_for(node)
        timeout = pack.pack.timeout_of(spec.id) if pack is not None else None
        if timeout is None:
            return spec
        return self._capped([replace(spec, timeout_s=timeout)])[0]

    def _form_for(self, node: Node, spec: ProbeSpec) -> ProbeSpec:
        fallback = spec.fallback_spec() if (node.name, spec.id) in self._refused else None
        return in_pool(fallback or spec, self.inventory.pools.get(node.pool))

    async def _with_fallbacks(self, node: Node, runs: list[_ProbeRun], deadline: float | None) -> list[ProbeOutcome]:
        """Finish ``runs``; those whose narrow form the tool refused as unknown run again in their full form."""
        redo = [run.spec for run in runs if run.spec.fallback and (run.problem or "").startswith(UNSUPPORTED)]
        if not redo:
            return self._finish_probes(node, runs, await self._parse(runs))
        self._refused.update((node.name, spec.id) for spec in redo)
        kept = [run for run in runs if run.spec not in redo]
        outcomes = self._finish_probes(node, kept, await self._parse(kept))
        outcomes += await self._run_bundle(node, [self._form_for(node, spec) for spec in redo], deadline)
        order: dict[str, int] = {run.spec.id: i for i, run in enumerate(runs)}
        return sorted(outcomes, key=lambda o: order[o.probe])

    def _reused(self, node: Node, spec: ProbeSpec) -> None:
        kept = self._outcomes[node.name][spec.id]
        if (so_far := self._so_far.get(node.name)) is not None:
            so_far[spec.id] = kept
        self._emit(
            ProbeFinished(
                sweep_id=self._sweep_id,
                node=node.name,
                probe=spec.id,
                ok=True,
                duration_s=0.0,
                run_id=kept.run_id,
                reused=True,
            )
        )

    async def _run_bundle(self, node: Node, group: list[ProbeSpec], deadline: float | None) -> list[ProbeOutcome]:
        started = time.time()
        output = BundleOutput(self.max_probe_output_bytes)
        # Kept while it runs: stopped by the sweep's deadline or a cancel, what it printed (the probes ahead
        # of a hung one) is judged by ``_mark_unfinished``, as a bundle that timed out is judged here. Kept
        # before it is awaited: a cancelled node may still be killing its commands when the sweep ends.
        flight = (group, output, started)
        in_flight = self._in_flight.setdefault(node.name, []) if node.name in self._so_far else None
        if in_flight is not None:
            in_flight.append(flight)
        cancelled = False
        try:
            return await self._bundle(node, group, deadline, output, started)
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            if in_flight is not None and not cancelled:
                in_flight[:] = [f for f in in_flight if f is not flight]

    async def _bundle(
        self, node: Node, group: list[ProbeSpec], deadline: float | None, output: BundleOutput, started: float
    ) -> list[ProbeOutcome]:
        script = bundle_script(group)
        timeout_s, capped = bundle_timeout(group), False
        if deadline is not None:
            # The transport times out just before the node's budget ends, so what the bundle printed
            # until then (the probes ahead of a hung one) comes back with its timeout.
            left = deadline - asyncio.get_running_loop().time() - DEADLINE_MARGIN_S
            if left < timeout_s:
                timeout_s, capped = max(left, 0.1), True
        for spec in group:
            self._emit(ProbeStarted(sweep_id=self._sweep_id, node=node.name, probe=spec.id, timeout_s=timeout_s))
        run = self.transport.run_script(node.name, script, timeout_s=timeout_s, sink=output)
        try:
            result = await self._by(deadline, run)
        except (TransportError, TimeoutError) as exc:
            if isinstance(exc, TimeoutError):
                failed = self._past_cap(ran=True if output.received else None)
            elif exc.kind is ErrorKind.TIMEOUT:
                failed = self._past_cap() if capped else f"no answer within {timeout_s:g} s (killed on the node)"
                if exc.partial_stdout:  # the probes that finished before one hung keep their answers
                    sections = split_bundle(exc.partial_stdout, group, output.dropped)
                    runs = _runs_of(group, sections, started, 0.0, failed)
                    return await self._with_fallbacks(node, runs, deadline)
            else:
                failed = describe(exc)
                if exc.partial_stdout:
                    # The probes that finished before the link went keep their answers; the one running
                    # then is blamed, not the bundle's first (a dropped link read as a host.os failure).
                    sections = split_bundle(exc.partial_stdout, group, output.dropped)
                    runs = _runs_of(group, sections, started, 0.0, failed, not_started=_running_one(group, sections))
                    return await self._with_fallbacks(node, runs, deadline)
            lost = [_ProbeRun(spec, None, None, failed, started, 0.0) for spec in group]
            return self._finish_probes(node, lost, [_UNPARSED] * len(lost))
        sections = split_bundle(result.stdout, group, output.dropped)
        share = result.duration_s / max(len(group), 1)
        unfinished = "connection lost while the probe ran" if result.exit_status is None else None
        return await self._with_fallbacks(node, _runs_of(group, sections, started, share, unfinished), deadline)

    @staticmethod
    async def _parse(runs: list[_ProbeRun]) -> list[Any]:
        # A big output costs milliseconds of CPU to parse: in a worker thread, the loop keeps serving
        # deadlines, keepalives and the UI meanwhile (parsers are pure functions). One hand-off per
        # bundle, not per probe: each costs a thread wake-up and a loop wake-up.
        if not any(map(_wants_parse, runs)):
            return [_UNPARSED] * len(runs)
        return await asyncio.to_thread(_parse_runs, runs)

    async def _by(self, deadline: float | None, work: Awaitable[T]) -> T:
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

    def _past_cap(self, *, ran: bool | None = True) -> str:
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

    def _finish_probes(self, node: Node, runs: list[_ProbeRun], results: list[Any]) -> list[ProbeOutcome]:
        """Outcomes of one bundle's runs: stored together (one transaction), then announced in order."""
        judged = [_judged(run, result) for run, result in zip(runs, results, strict=True)]
        run_ids = self._record_runs(node, [(run, problem) for run, (_, problem) in zip(runs, judged, strict=True)])
        outcomes = []
        for run, (parsed, problem), run_id in zip(runs, judged, run_ids, strict=True):
            self._emit(
                ProbeFinished(
                    sweep_id=self._sweep_id,
                    node=node.name,
                    probe=run.spec.id,
                    ok=problem is None,
                    problem=problem,
                    duration_s=run.duration_s,
                    output_bytes=len(run.output or b""),
                    run_id=run_id,
                )
            )
            outcomes.append(ProbeOutcome(run.spec.id, parsed, problem, run_id, run.duration_s))
        if (so_far := self._so_far.get(node.name)) is not None:
            so_far.update({o.probe: o for o in outcomes})
        return outcomes

    def _record_runs(self, node: Node, runs: list[tuple[_ProbeRun, str | None]]) -> list[int | None]:
        if self.store is None and self.runs_kept is None:
            return [None] * len(runs)
        records = [
            ProbeRunRecord(
                probe=run.spec.id,
                command=shown_command(self.transport, run.spec.command_line),
                exit_status=run.exit_status,
                started_at=run.started_at,
                duration_s=run.duration_s,
                stdout=run.output or b"",
                problem=problem,
            )
            for run, problem in runs
        ]
        if self.store is None:
            assert self.runs_kept is not None
            self.runs_kept.setdefault(node.name, []).extend(records)
            return [None] * len(runs)
        stored = self.writes.write(
            "probe outputs of a node", lambda s: s.add_probe_runs(self._sweep_id, node.name, records)
        )
        return [None] * len(runs) if stored is None else list(stored)

    def _relay(self, event: Event) -> None:
        """An engine worker's probe event, told as this engine's sweep's.

        The event was just unpickled for this engine alone: its sweep id is set in place, without a copy
        and a validation per event (32 per node; the copies were a fifth of the console's CPU per node).
        """
        event.__dict__["sweep_id"] = self._sweep_id
        self._emit(event)

    def _pack_for(self, node: Node) -> CheckPack | None:
        return self.packs.get(node.gpu_model)

    def _take_report(
        self, node: Node, report: LocalCheckReport, probes: list[ProbeSpec], worker: WorkerJudged | None = None
    ) -> None:
        """Take the verdict a node reached on itself (or an engine worker reached on it), once this console
        can vouch for it; UNKNOWN else. A worker's probe runs are stored here, the one store writer."""
        pack = self._pack_for(node)
        pin = self.pins.get(node.pool, StackPin())
        expected = self._judged_with.get(node.pool)
        if expected is None:
            expected = self._judged_with[node.pool] = judged_with(pack, pin, node)
        if pack is None:
            problem: str | None = "no check pack here for its GPU model"
        else:
            # A worker names the probes its report covers; the console named them to it (a rerun may ask
            # for a few families, and the worker judges them with the node's other outputs it still has).
            asked = {p.id for p in probes} | ({d.probe for d in report.probes} if worker is not None else set())
            problem = admit(report, node, asked, expected, pack, pin, whole_level=worker is None)
        if problem is not None or pack is None:
            self._node_unreachable(node, f"its check-local report cannot be taken: {problem}")
            return
        run_ids = self._store_worker_runs(node, report, worker) if worker is not None else {}
        facts = (NodeFacts if worker is None else PackedFacts)(
            node=node,
            pin=pin,
            stack=report.stack,
            outcomes={d.probe: ProbeOutcome(d.probe, d, None, run_ids.get(d.probe)) for d in report.probes},
            readings={metric: [r.observation() for r in found] for metric, found in report.readings.items()},
        )
        if isinstance(facts, PackedFacts) and worker is not None:
            # What the screens show of the node, and the GPU list a vanished GPU is told from.
            facts.keep_packed(worker.gpus, worker.xgmi, worker.nics)
            if worker.listed is not None:
                facts.outcomes[worker.listed.probe] = replace(worker.listed, run_id=run_ids.get(worker.listed.probe))
        # The metrics a console still reads of this node read its report, never outputs it does not have.
        for metric in [*console_checks(pack), _PAIR_METRIC]:
            facts.readings.setdefault(metric, [])
        self._outcomes.pop(node.name, None)
        self._judged[node.name] = report
        self.facts[node.name] = facts
        self._evaluate_judged(node, pack, facts)

    def _store_worker_runs(self, node: Node, report: LocalCheckReport, worker: WorkerJudged) -> dict[str, int]:
        """Store the probe runs an engine worker made of ``node``; probe -> run id, for the evidence links
        (a probe reused while the stack stamp is unchanged keeps its earlier run's)."""
        if self.store is None:
            return {}
        ids = self._worker_runs.setdefault(node.name, {})
        if worker.runs:
            runs = worker.runs
            stored = self.writes.write(
                "probe outputs of a node", lambda s: s.add_probe_runs(self._sweep_id, node.name, runs)
            )
            if stored is not None:
                ids.update({run.probe: run_id for run, run_id in zip(runs, stored, strict=True)})
        for finding in report.findings:
            if finding.evidence.probe in ids and finding.evidence.probe_run_id is None:
                finding.evidence.probe_run_id = ids[finding.evidence.probe]
        return ids

    def _evaluate_judged(
        self, node: Node, pack: CheckPack, facts: NodeFacts, extra: list[Finding] | None = None
    ) -> None:
        """A node-judged node's verdict: its own findings and PASS counts, with the checks of change judged
        here against the history (from the figures it kept), the pool's comparisons and external findings."""
        report = self._judged[node.name]
        changes = [c for c in pack.checks if c.enabled and c.metric in CHANGE_METRICS and facts.ran(c.requires)]
        changed_ids = {c.id for c in changes}
        findings = [f for f in report.findings if f.check_id not in changed_ids]
        passed = Counter(report.passed)
        if changes:
            facts.previous = self._previous_readings(node)
            for check in changes:
                base, read = CHANGE_METRICS[check.metric]
                before = facts.previous.get(base)
                facts.readings[check.metric] = [
                    read(f.subject, _number(f.evidence.observed), f.message, before)
                    for f in report.findings
                    if f.check_id == base
                ]
            findings += evaluate_node(pack, facts, only=changes, counted=passed)
        # A GPU gone since the last sweep (an engine worker sends the GPU list of a node short of GPUs).
        findings += self.writes.read(lambda s: vanished_gpus(s, node, facts, self._sweep_id), [])
        self._roll_up(node, pack, facts, findings, passed, extra)

    def _roll_up(  # noqa: PLR0917
        self,
        node: Node,
        pack: CheckPack | None,
        facts: NodeFacts,
        findings: list[Finding],
        passed: Counter[str],
        extra: list[Finding] | None,
    ) -> None:
        """Publish the node's verdict: its findings, the PASS findings counted (``passed``), the findings
        made outside its own probes (multi-node runs) and ``extra`` (the pool's comparisons)."""
        families: dict[str, str] = {}
        if pack is not None:
            families = self._families.get(node.gpu_model) or {}
            if not families:
                families = self._families[node.gpu_model] = {c.id: c.family for c in pack.checks}
        external = [f for group in self._external.get(node.name, {}).values() for f in group]
        everything = findings + external + (extra or [])
        if (cut := self._cut.get(node.name)) is not None and node.name not in self._judged:
            # First, so that it is the reason of a node that is UNKNOWN (a FAIL found still heads it). A
            # node an engine worker judged has it in its report already.
            everything.insert(0, unreachable_finding(node.name, cut, lead=_CUT_LEAD.removesuffix(": ")))
        passed_families = {families[c] for c in passed if c in families}
        self._publish(node, roll_up(node.name, everything, dict(passed), passed_families), facts)

    def _judge(self, node: Node, extra: list[Finding] | None = None) -> None:
        """Judge ``node`` (again) on what this engine keeps of it, then keep its facts and outputs packed.

        Its outcomes are loaded once for the judging (the checks read some of them many times); those kept
        packed stay as they were, and those that came in this sweep are packed (``console.sweep.packed``).
        """
        kept = self._outcomes.get(node.name)
        if kept is not None:
            self._outcomes[node.name] = {p: o.loaded() if isinstance(o, PackedOutcome) else o for p, o in kept.items()}
        self._evaluate_node(node, extra)
        if kept is not None:
            kept = self._outcomes[node.name] = {p: _packed(o) for p, o in kept.items()}
        facts = self.facts.get(node.name)
        if node.name in self._judged or facts is None or isinstance(facts, PackedFacts):
            return  # a node-judged node is kept as its report and packed facts already
        self.facts[node.name] = PackedFacts.of(facts, dict(kept or {}))

    def _evaluate_node(self, node: Node, extra: list[Finding] | None = None) -> None:
        if node.name in self._judged and (pack := self._pack_for(node)) is not None:
            self._evaluate_judged(node, pack, self.facts[node.name], extra)
            return
        outcomes = self._outcomes.get(node.name, {})
        facts = build_facts(node, self.pins.get(node.pool, StackPin()), outcomes)
        facts.previous = self._previous_readings(node)
        self.facts[node.name] = facts
        pack = self._pack_for(node)
        run_ids = {probe: o.run_id for probe, o in outcomes.items() if o.run_id is not None}
        passed = Counter[str]()
        findings = evaluate_node(pack, facts, run_ids, counted=passed) if pack is not None else []
        for outcome in outcomes.values():
            if not outcome.usable:
                spec = PROBES_BY_ID.get(outcome.probe)
                spec = in_pool(spec, self.inventory.pools.get(node.pool)) if spec else None  # the command it ran
                family, command = (spec.family, spec.command_line) if spec else (Family.PROBE, outcome.probe)
                findings.append(unanswered_probe_finding(facts, outcome, family, command))
        if (lost := _dropped(outcomes)) is not None:
            reason = f"{lost.probe}: {lost.problem}"
            findings.append(unreachable_finding(node.name, reason, lead="connection lost during the sweep"))
        findings += self.writes.read(lambda s: vanished_gpus(s, node, facts, self._sweep_id), [])
        self._roll_up(node, pack, facts, findings, passed, extra)

    def _previous_readings(self, node: Node) -> dict[str, tuple[int, dict[str, tuple[float, float]]]]:
        """The node's figures from its previous sweep that checks of change compare with (read once a sweep)."""
        if self.store is None:
            return {}
        if self._history_sweep != self._sweep_id:  # a new sweep compares with what came before it
            self._history_sweep, self._history = self._sweep_id, {}
        found = self._history.get(node.name)
        if found is None:
            found = self._history[node.name] = {}
            for check_id in HISTORY_CHECKS:
                readings = self.writes.read(partial(_readings, node.name, check_id, self._sweep_id), None)
                if readings is not None:
                    found[check_id] = readings
        return found

    def add_findings(self, node_name: str, source: str, findings: list[Finding]) -> NodeVerdict:
        """Attach findings made outside the node's own probes (e.g. a multi-node RCCL pair) and re-judge it.

        Findings of the same ``source`` replace the earlier ones, so a rerun of that source does not pile up.
        """
        node = self.inventory.node(node_name)
        self._external.setdefault(node_name, {})[source] = list(findings)
        if node_name in self._outcomes or node_name in self._judged:
            self._judge(node)
        else:
            self._publish(node, roll_up(node_name, list(findings)), self.facts.get(node_name) or NodeFacts(node=node))
        return self.verdicts[node_name]

    def _node_unreachable(self, node: Node, reason: str) -> None:
        self._outcomes.pop(node.name, None)
        self._judged.pop(node.name, None)
        self.steady.forget(node.name)
        self._refused = {key for key in self._refused if key[0] != node.name}
        self.facts.pop(node.name, None)
        facts = NodeFacts(node=node)
        self._publish(node, roll_up(node.name, [unreachable_finding(node.name, reason)]), facts)

    def _publish(self, node: Node, verdict: NodeVerdict, facts: NodeFacts) -> None:
        self.verdicts[node.name] = verdict
        self._published.add(node.name)
        if self._first_verdict is not None:
            self._first_verdict.set()
        cut = self._cut.get(node.name, "") or (NOT_PROBED if node.name in self._not_probed else "")
        self.writes.write(
            "node verdict", lambda s: s.record_node(self._sweep_id, node.pool, verdict, facts.stack, cut=cut)
        )
        self._emit(NodeDone(sweep_id=self._sweep_id, pool=node.pool, verdict=verdict, snapshot=snapshot_of(facts)))

    def _mark_unfinished(self, targets: list[Node], reason: str, cut: dict[str, WorkerJudged]) -> None:
        for node in targets:
            if node.name not in self._published:
                self._judge_cut(node, reason, cut.get(node.name))
        self._asked, self._so_far, self._in_flight = {}, {}, {}

    def _forget_progress(self, node: str) -> None:
        self._asked.pop(node, None)
        self._so_far.pop(node, None)
        self._in_flight.pop(node, None)

    def cut_short(self, node: Node, reason: str) -> NodeVerdict | None:
        """Judge now, on what came back, a node whose check (``check``: an engine worker's) is being stopped
        by its sweep's ``reason``; None when it is not being checked. Its task is to be cancelled next."""
        if node.name not in self._so_far:
            return None
        self._judge_cut(node, reason)
        self._forget_progress(node.name)
        return self.verdicts[node.name]

    def _judge_cut(self, node: Node, reason: str, worker: WorkerJudged | None = None) -> None:
        """Judge a node whose check ``reason`` (deadline exceeded, sweep cancelled) cut short, on what came back.

        The same path as a bundle that timed out on the node: the probes that finished keep their
        answers (a FAIL found stays a FAIL), each probe that did not finish is UNKNOWN with ``reason``,
        and a finding says what was cut, so the node is at best UNKNOWN, never PASS.
        """
        asked, so_far = self._asked.get(node.name), self._so_far.get(node.name)
        self._cut[node.name] = reason
        if worker is not None and worker.report is not None:
            # Judged in its engine worker on what came back there (``cut_short``), as here.
            said = next((f.message for f in worker.report.findings if f.message.startswith(_CUT_LEAD)), None)
            if said is None:
                del self._cut[node.name]  # every probe had answered there: nothing was cut
            else:
                self._cut[node.name] = said.removeprefix(_CUT_LEAD)
            self._take_report(node, worker.report, asked or [], worker)
            return
        if asked is None or so_far is None or not (self._in_flight.get(node.name) or so_far):
            # Its check had not started, was connecting, or is an engine worker's: nothing to judge here.
            self._node_unreachable(node, reason)
            return
        runs = []
        for group, output, started in self._in_flight.get(node.name, []):
            left = [spec for spec in group if spec.id not in so_far]
            sections = split_bundle(output.value(), left, output.dropped)
            runs += _runs_of(left, sections, started, 0.0, reason)
        outcomes = self._finish_probes(node, runs, _parse_runs(runs))
        sent = {o.probe for o in outcomes} | set(so_far)
        never = [_ProbeRun(spec, None, None, reason, time.time(), 0.0) for spec in asked]
        never = [run for run in never if run.spec.id not in sent]
        self._finish_probes(node, never, [_UNPARSED] * len(never))
        finished = dict(so_far)
        if not any(o.usable for o in finished.values()):
            self._node_unreachable(node, reason)  # nothing came back to judge: one reason, not one per probe
            return
        cut = sorted(p.id for p in asked if finished[p.id].problem == reason)
        if cut:
            self._cut[node.name] = f"{reason}: {len(cut)} of {len(asked)} probes unfinished ({', '.join(cut)})"
        else:  # every probe had answered, only the node's judging was to come: nothing was cut
            del self._cut[node.name]
        self._outcomes.setdefault(node.name, {}).update(finished)
        self._judge(node)

    def _fleet_pass(self, targets: list[Node]) -> None:
        """Judge the pools of ``targets`` as fleets (medians, outliers); the pools' other nodes are judged
        again too, as verdicts of this sweep that are no check of theirs (``NOT_PROBED``)."""
        probed = {n.name for n in targets}
        for pool in sorted({n.pool for n in targets}):
            members = [n for n in self.inventory.nodes if n.pool == pool and n.name in self.facts]
            if not members:
                continue
            pack = self._pack_for(members[0])
            if pack is None:
                continue
            extra: dict[str, list[Finding]] = {}
            for finding in evaluate_fleet(pack, [self.facts[n.name] for n in members]):
                extra.setdefault(finding.subject.node, []).append(finding)
            for node in members:
                if node.name not in extra:
                    continue
                if node.name not in probed:
                    self._not_probed.add(node.name)
                try:
                    self._judge(node, extra[node.name])
                finally:
                    self._not_probed.discard(node.name)

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


_UNPARSED = object()
# What stopped the nodes of a sweep that did not end "done", as their checks and findings say it.
_CUT_REASON = {"deadline": "deadline exceeded", "cancelled": "sweep cancelled"}
_CUT_LEAD = "check cut short: "
# Why a node judged again with its pool, but not probed, in a sweep is no check of it: only nodes a sweep
# probed become fresh (``console.sweep.freshness``).
NOT_PROBED = (
    "not probed in this sweep: judged again with its pool"  # how the finding of a node whose check was cut short begins
)
# How long a sweep cut short waits for its engine workers to send the nodes they judged on what came back
# (beyond the nodes' own stop, DEADLINE_MARGIN_S); a node whose report is later is UNKNOWN whole.
CUT_REPLY_S = 0.5


def _judged(run: _ProbeRun, result: Any) -> tuple[Any, str | None]:
    """(parsed output or None, problem) of a run given its parse result.

    A non-zero exit is judged only where the output says what failed: a long test's table (a failed
    run), or a tool error its parser recognised (amd-smi saying the driver is not loaded). Anything
    else that exited non-zero is UNKNOWN with the tool's own last line, however complete it looks.
    """
    problem = run.problem
    failed = run.exit_status is not None and run.exit_status not in run.spec.ok_exit and problem is None
    if isinstance(result, ParseError):
        if failed:
            return None, exit_problem(run.spec, run.exit_status or 0, run.output or b"")
        return None, problem or f"unreadable output: {result.reason}"
    if result is _UNPARSED:
        return None, problem
    stopped = run.exit_status not in (None, 0)
    if stopped and isinstance(result, ParsedOutput) and (run.spec.judge_partial or not result.ok):
        said = problem or f"{run.spec.argv[0]} exited with status {run.exit_status}"
        return result.model_copy(update={"ok": False, "errors": [*result.errors, said]}), None
    if failed:
        return None, exit_problem(run.spec, run.exit_status or 0, run.output or b"")
    return result, problem


def _running_one(group: list[ProbeSpec], sections: dict[str, Section]) -> str:
    """Why the probes after the one a lost connection interrupted have no answer."""
    running = next((s.id for s in group if s.id in sections and sections[s.id].exit_status is None), None)
    return f"not run: the connection was lost while {running} ran" if running else "not run: the connection was lost"


def _runs_of(
    group: list[ProbeSpec],
    sections: dict[str, Section],
    started: float,
    share: float,
    unfinished: str | None,
    *,
    not_started: str = "no result: the bundle ended before the probe started",
) -> list[_ProbeRun]:
    """Each probe's run from its section of the bundle's output; ``unfinished`` is why a probe without
    an end marker has none (None: the bundle itself ended normally, so the probe's own output says);
    ``not_started`` why a probe the bundle never reached has none."""
    runs = []
    for spec in group:
        section = sections.get(spec.id)
        output = section.output if section else None
        exit_status = section.exit_status if section else None
        problem: str | None
        if section is not None and (section.exit_status is not None or section.dropped_bytes):
            problem = probe_problem(section.exit_status, section.output, spec, section.dropped_bytes)
        elif unfinished is not None:
            problem = unfinished
        elif section is None:
            problem = not_started
        else:
            problem = probe_problem(None, section.output, spec)
        runs.append(_ProbeRun(spec, output, exit_status, problem, started, share))
    return runs


def _dropped(outcomes: dict[str, ProbeOutcome]) -> ProbeOutcome | None:
    """A probe whose connection dropped under it: the node's reachability is in doubt, whatever answered."""
    signs = (f"{ErrorKind.DISCONNECTED.value}:", "connection lost")
    return next((o for o in outcomes.values() if (o.problem or "").startswith(signs)), None)


def _packed(outcome: ProbeOutcome) -> ProbeOutcome:
    """``outcome`` as the engine keeps it between sweeps: a parsed output kept packed, unless it is a short
    text or figure, or a slow-changing probe's, reused under an unchanged stamp and read at every sweep
    (and identical on most nodes, one object for all through the parse cache)."""
    if isinstance(outcome, PackedOutcome) or isinstance(outcome.parsed, str | int | float | type(None)):
        return outcome
    spec = PROBES_BY_ID.get(outcome.probe)
    return outcome if spec is not None and spec.slow_changing else PackedOutcome.of(outcome)


def _wants_parse(run: _ProbeRun) -> bool:
    # A long test that timed out or was killed on the node is judged on what it printed (a table
    # without its footer fails). A cut output never is.
    stopped = run.exit_status in (124, 128 + signal.SIGKILL) and run.spec.judge_partial and bool(run.output)
    cut = (run.problem or "").startswith(OUTPUT_CUT)
    return (run.problem is None or stopped) and not cut and run.output is not None


def _parse(spec: ProbeSpec, output: bytes) -> Any:
    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Every tool the console runs prints ASCII or UTF-8: other bytes mean a corrupted output (a
        # wrong locale, a broken pipe, a failing disk), and a version read through them is not a version.
        bad = output[exc.start : exc.start + 4].hex(" ")
        raise ParseError(f"not UTF-8 text: bytes {bad} at offset {exc.start}", output) from None
    if (nul := output.find(b"\0")) >= 0:
        # No text tool prints a NUL byte: the output was corrupted on its way.
        raise ParseError(f"a NUL byte at offset {nul}: the output is corrupted", output)
    return spec.parse(text)


def _parse_runs(runs: list[_ProbeRun]) -> list[Any]:
    """Each run's parsed output, the ParseError saying why it could not be read, or _UNPARSED."""
    results: list[Any] = []
    for run in runs:
        if not _wants_parse(run):
            results.append(_UNPARSED)
            continue
        try:
            results.append(_parse(run.spec, run.output or b""))
        except ParseError as exc:
            results.append(exc)
    return results


def snapshot_of(facts: NodeFacts) -> NodeSnapshot:
    """The UI-facing view of a node's facts."""
    return NodeSnapshot(
        gpus=facts.gpus,
        xgmi=facts.xgmi,
        stack=facts.stack,
        nics=facts.nics or [],
        pair_gbps=_pair_bandwidth(facts),
        probe_runs={p: o.run_id for p, o in facts.outcomes.items() if o.run_id is not None},
    )


_PAIR_METRIC = "link.tb_a2a_gbps"


def _number(value: object) -> float | None:
    """A figure kept in a finding's evidence as a number, else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pair_bandwidth(facts: NodeFacts) -> dict[str, float]:
    return {
        f"{o.subject.gpu}-{o.subject.peer}": float(o.value)
        for o in observe(_PAIR_METRIC, facts)
        if isinstance(o.value, int | float)
    }


__all__ = ["PROBES_BY_ID", "SweepEngine", "SweepResult", "describe", "probes_for_families", "snapshot_of"]


def _readings(node: str, check_id: str, sweep_id: int, store: Store) -> Readings | None:
    return store.previous_readings(node, check_id, before_sweep=sweep_id)
