"""What the console knows about the fleet, fed by sweep events from the engine.

``LiveState`` is the one hand-off point between the thread that receives engine events (the engine
process's reader, or the engine thread) and the UI loop: that thread calls ``apply(event)``, which
replaces the node's immutable ``NodeRow`` and marks it dirty; the UI takes the dirty names with
``take_dirty()`` when it repaints. Rows are never mutated in place, so a row the UI holds stays
consistent while the engine moves on. No Textual here.

Rows are compact: a verdict keeps only its findings that are not PASS, and GPUs, links and ports are
reduced to the figures the screens draw. A node's full verdict is ~650 KB of models and its snapshot
~190 KB; at 1,000 nodes the UI must not pin them. The detail screen reads every finding back from the
history database, where the engine committed it before the event was sent.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from console.inventory.model import Inventory, Node
from console.model.family import DRIFT_FAMILIES, Family
from console.model.findings import NodeVerdict, Status
from console.model.gpu import GpuRecord, LinkStatus, XgmiLink
from console.model.host import NicPort
from console.service.commands import without_passing
from console.store.faults import StoreFault
from console.store.follow import StoredVerdict
from console.sweep.events import (
    Event,
    MultinodeDone,
    MultinodeRunDone,
    MultinodeStarted,
    NodeDone,
    NodeSnapshot,
    ProbeFinished,
    ProbeStarted,
    StoreFailed,
    SweepDone,
    SweepStarted,
    WorkloadFinished,
    WorkloadStarted,
)
from console.sweep.freshness import age_text
from console.ui.pairs import PairBoard
from console.ui.workload_runs import RunningWorkloads

# Check families shown as columns, in the order an operator reads a node (``Family``'s own order).
FAMILIES: tuple[str, ...] = tuple(family.value for family in Family.columns())
PROBLEMS = frozenset({Status.FAIL, Status.UNKNOWN, Status.WARN})
HISTORY_SAMPLES = 120
# A node with a probe in flight this long shows what it waits for and a countdown: a healthy node's
# quick probes answer within a second or two, so past this it is likely stuck.
WAITING_SHOWN_AFTER_S = 5.0


@dataclass(frozen=True, slots=True)
class PcieView:
    """Host PCIe link of one GPU: speed, width and the error counters the link panel shows."""

    speed_gts: float | None
    width: int | None
    replay: int | None
    recovery: int | None
    naks: int | None


@dataclass(frozen=True, slots=True)
class GpuView:
    """One GPU as the screens draw it (``None``: the tool did not report the figure)."""

    index: int
    bdf: str | None = None
    edge_temp_c: float | None = None
    hotspot_temp_c: float | None = None
    mem_temp_c: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    gfx_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    gfx_util_pct: float | None = None
    vram_used_bytes: int | None = None
    vram_total_bytes: int | None = None
    ecc_correctable: int | None = None
    ecc_uncorrectable: int | None = None
    bad_pages_retired: int | None = None
    bad_pages_pending: int | None = None
    bad_pages_over_threshold: bool | None = None
    pcie: PcieView | None = None


def _pcie_view(gpu: GpuRecord) -> PcieView | None:
    link = gpu.metrics.pcie if gpu.metrics is not None else None
    if link is None:
        return None
    naks = None
    if link.nak_sent_count is not None or link.nak_received_count is not None:
        naks = (link.nak_sent_count or 0) + (link.nak_received_count or 0)
    return PcieView(link.speed_gts, link.width, link.replay_count, link.l0_to_recovery_count, naks)


def gpu_view(gpu: GpuRecord, position: int) -> GpuView:
    """The drawn figures of one GPU record."""
    m, ecc, bad = gpu.metrics, gpu.ecc, gpu.bad_pages
    return GpuView(
        index=gpu.identity.index if gpu.identity.index is not None else position,
        bdf=gpu.identity.bdf,
        edge_temp_c=m.edge_temp_c if m else None,
        hotspot_temp_c=m.hotspot_temp_c if m else None,
        mem_temp_c=m.mem_temp_c if m else None,
        power_w=m.power_w if m else None,
        power_cap_w=m.power_cap_w if m else None,
        gfx_clock_mhz=m.gfx_clock_mhz if m else None,
        mem_clock_mhz=m.mem_clock_mhz if m else None,
        gfx_util_pct=m.gfx_util_pct if m else None,
        vram_used_bytes=m.vram_used_bytes if m else None,
        vram_total_bytes=m.vram_total_bytes if m else None,
        ecc_correctable=ecc.correctable if ecc else None,
        ecc_uncorrectable=ecc.uncorrectable if ecc else None,
        bad_pages_retired=len(bad.retired) if bad else None,
        bad_pages_pending=len(bad.pending) if bad else None,
        bad_pages_over_threshold=bad.threshold_exceeded if bad else None,
        pcie=_pcie_view(gpu),
    )


def _link_states(links: list[XgmiLink]) -> dict[tuple[int, int], LinkStatus]:
    return {
        (link.src_index, link.dst_index): link.status
        for link in links
        if link.src_index is not None and link.dst_index is not None
    }


@dataclass(frozen=True)
class NodeView:
    """What the screens draw of a node besides its verdict: GPUs, XGMI states, pair GB/s, ports, stack."""

    gpus: tuple[GpuView, ...] = ()
    links: dict[tuple[int, int], LinkStatus] = field(default_factory=dict)
    pair_gbps: dict[str, float] = field(default_factory=dict)
    nics: tuple[NicPort, ...] = ()
    stack: dict[str, str] = field(default_factory=dict)
    probe_runs: dict[str, int] = field(default_factory=dict)

    @property
    def gpu_count(self) -> int:
        """GPUs the matrix needs: the highest index seen in GPUs, links or pairs, plus one."""
        indices = [g.index for g in self.gpus]
        indices += [i for pair in self.links for i in pair]
        for pair in self.pair_gbps:
            indices += [int(p) for p in pair.split("-") if p.isdigit()]
        return max(indices) + 1 if indices else 0


def view_of(snapshot: NodeSnapshot) -> NodeView:
    """The compact view of an engine snapshot."""
    return NodeView(
        gpus=tuple(gpu_view(g, i) for i, g in enumerate(snapshot.gpus)),
        links=_link_states(snapshot.xgmi),
        pair_gbps=dict(snapshot.pair_gbps),
        nics=tuple(snapshot.nics),
        stack=dict(snapshot.stack),
        probe_runs=dict(snapshot.probe_runs),
    )


Prepared = tuple[NodeVerdict, NodeView, int]
"""A NodeDone as a row keeps it: the verdict without its PASS findings, the view, how many findings it had."""


def _prepare(event: NodeDone) -> Prepared:
    if event.findings_total is not None:  # the engine process sent it without its PASS findings already
        return event.verdict, view_of(event.snapshot), event.findings_total
    return without_passing(event.verdict), view_of(event.snapshot), event.verdict.total


@dataclass(frozen=True)
class MetricSample:
    """Every GPU of a node at one moment (keyed by the tool's GPU index), for the sparklines."""

    at: float
    gpus: dict[int, GpuView]


@dataclass(frozen=True, slots=True)
class ProbeWait:
    """A probe in flight on a node: when it was sent, and the most the console waits for it (clock times)."""

    probe: str
    since: float
    deadline: float


@dataclass(frozen=True)
class InFlight:
    """A node's probes in flight whose timeout is known, with their earliest start and latest deadline
    worked out once per event (the header asks every node's each second)."""

    waits: tuple[ProbeWait, ...] = ()
    probes: tuple[str, ...] = ()
    since: float = 0.0
    deadline: float = 0.0

    @staticmethod
    def of(waits: tuple[ProbeWait, ...]) -> InFlight:
        """The summary of ``waits`` (in the order the probes started)."""
        if not waits:
            return NOTHING_IN_FLIGHT
        since = min(w.since for w in waits)
        return InFlight(waits, tuple(w.probe for w in waits), since, max(w.deadline for w in waits))

    def started(self, wait: ProbeWait) -> InFlight:
        """With ``wait`` added (replacing an earlier start of the same probe)."""
        return InFlight.of((*(w for w in self.waits if w.probe != wait.probe), wait))

    def finished(self, probe: str) -> InFlight:
        """Without ``probe``."""
        if probe not in self.probes:
            return self
        return InFlight.of(tuple(w for w in self.waits if w.probe != probe))


NOTHING_IN_FLIGHT = InFlight()


@dataclass(frozen=True)
class Holdup:
    """A node whose probes have been in flight a while: which ones, since when, and until when at most.

    ``deadline`` is the latest of the probes' (ProbeStarted.timeout_s from when it arrived): by then the
    console has stopped waiting for every probe in flight and the node has its verdict or its next probes.
    """

    node: str
    probes: tuple[str, ...]
    since: float
    deadline: float

    def left_s(self, now: float) -> float:
        """Seconds until the deadline (negative once it has passed: the probes are being stopped)."""
        return self.deadline - now


@dataclass(frozen=True)
class NodeRow:
    """One node as the UI shows it. Replaced, never mutated, on every change."""

    node: Node
    verdict: NodeVerdict | None = None
    view: NodeView | None = None
    sweep_id: int | None = None
    findings_total: int = 0
    probes_started: int = 0
    probes_done: int = 0
    probes_total: int = 0
    running: bool = False
    updated_at: float | None = None
    scheduler: str = ""
    in_flight: InFlight = NOTHING_IN_FLIGHT
    # Set when the verdict is one another process stored (``LiveState.follow``), not this console's sweep.
    followed: StoredVerdict | None = None
    version: int = 0

    @property
    def name(self) -> str:
        """The node's name (the row key everywhere in the UI)."""
        return self.node.name

    @property
    def probes_expected(self) -> int:
        """Probes this node runs in the current sweep (known up front, or counted as they start)."""
        return max(self.probes_total, self.probes_started, self.probes_done)

    def followed_from(self, now: float) -> str | None:
        """``sweep 14 by watch, 2 min ago`` for a verdict another process stored (None for this console's)."""
        stored = self.followed
        if stored is None:
            return None
        return f"{stored.where()}, {age_text(max(0.0, now - stored.stored_at))} ago"

    @property
    def status(self) -> Status | None:
        """The node verdict, None before the first one arrives."""
        return self.verdict.status if self.verdict is not None else None

    @property
    def drift(self) -> bool:
        """True when a stack or firmware finding is WARN or FAIL."""
        if self.verdict is None:
            return False
        return any(f.family in DRIFT_FAMILIES and f.status in (Status.WARN, Status.FAIL) for f in self.verdict.findings)

    @property
    def scheduler_word(self) -> str:
        """The scheduler state as one lower-case word (``drained`` from ``DRAINED by root: ...``), or blank."""
        text = self.scheduler.strip()
        if not text or text.lower().startswith("not a"):
            return ""
        return text.split(":", 1)[0].split()[0].lower().rstrip("*~#$@^!")

    @property
    def out_of_service(self) -> bool:
        """True when the scheduler keeps the node from jobs (drained, draining, down, failed, maintenance)."""
        return any(word in self.scheduler_word for word in ("drain", "down", "fail", "maint"))

    @property
    def problem(self) -> bool:
        """True for FAIL, UNKNOWN and WARN nodes."""
        return self.status in PROBLEMS

    def family(self, name: str) -> Status | None:
        """Roll-up of one check family, None when no check of it ran."""
        return self.verdict.families.get(name) if self.verdict is not None else None

    def holdup(self, now: float, after_s: float = WAITING_SHOWN_AFTER_S) -> Holdup | None:
        """What the node waits for once a probe of it has been in flight ``after_s``; else None."""
        waiting = self.in_flight
        if not self.running or not waiting.waits or now - waiting.since < after_s:
            return None
        return Holdup(self.name, waiting.probes, waiting.since, waiting.deadline)


@dataclass
class SweepProgress:
    """The sweep in progress (or the last one): how far it got and when it should end."""

    sweep_id: int = 0
    level: str = ""
    rerun: bool = False
    nodes: tuple[str, ...] = ()
    done: set[str] = field(default_factory=set)
    started_at: float | None = None
    finished_at: float | None = None
    outcome: str = ""
    last_full_sweep_id: int | None = None
    from_history: bool = False  # shown from the history database when the console opened, not swept now
    swept: frozenset[str] = frozenset()  # ``nodes`` as a set: which verdicts come from probing, not re-judging

    @property
    def running(self) -> bool:
        """True between SweepStarted and SweepDone."""
        return self.started_at is not None and self.finished_at is None

    def eta_s(self, now: float) -> float | None:
        """Seconds left at the pace so far; None before the first node is done or after the end."""
        if not self.running or not self.done or self.started_at is None:
            return None
        remaining = len(self.nodes) - len(self.done)
        return max(0.0, (now - self.started_at) / len(self.done) * remaining)


def shows_older(row: NodeRow, stored: StoredVerdict) -> bool:
    """True when ``stored`` is a newer verdict of the row's node than the one the row shows."""
    if row.sweep_id is None or stored.sweep_id > row.sweep_id:
        return True
    # The same sweep re-judged the node later (a rerun's fleet pass): taken only over a row that followed
    # that sweep; a row this console's own engine made already shows its engine's latest judgement.
    return stored.sweep_id == row.sweep_id and row.followed is not None and stored.newer_than(row.followed)


class LiveState:
    """Rows per node and sweep progress, written by the engine events' thread, read by the UI loop."""

    def __init__(self, inventory: Inventory, clock: Callable[[], float] = time.time) -> None:
        self.inventory = inventory
        self.clock = clock
        self._lock = threading.Lock()
        self.workload_runs = RunningWorkloads()
        self._rows: dict[str, NodeRow] = {n.name: NodeRow(node=n) for n in inventory.nodes}
        # Kept up to date by ``_replace``: the summary asks on every repaint and keystroke.
        self._counts: dict[Status | None, int] = {None: len(self._rows)} if self._rows else {}
        self._history: dict[str, deque[MetricSample]] = {}
        self._dirty: set[str] = set()
        # Nodes with probes in flight whose timeout is known (kept up to date by ``_replace``).
        self._waiting: set[str] = set()
        self._summary_dirty = False
        self._notify_pending = False
        self.progress = SweepProgress()
        # The history database's failure, once it failed: the console shows it until it quits.
        self.store_fault: StoreFault | None = None
        # The multi-node phase: replaced whole by each of its events, so the UI reads it without the lock.
        self.pairs = PairBoard()

    # read side (UI loop) ------------------------------------------------------------------------

    def row(self, name: str) -> NodeRow:
        """The current row of ``name`` (KeyError for a node outside the inventory)."""
        return self._rows[name]

    def rows(self) -> list[NodeRow]:
        """Every row, in inventory order."""
        with self._lock:
            return list(self._rows.values())

    def names(self) -> list[str]:
        """Every node name, in inventory order."""
        return list(self._rows)

    def history(self, name: str) -> list[MetricSample]:
        """Telemetry samples of ``name`` over this session, oldest first."""
        with self._lock:
            return list(self._history.get(name, ()))

    def take_dirty(self) -> tuple[set[str], bool]:
        """Names changed since the last call and whether the sweep summary changed; re-arms notification."""
        with self._lock:
            dirty, summary = self._dirty, self._summary_dirty
            self._dirty, self._summary_dirty, self._notify_pending = set(), False, False
            return dirty, summary

    def holdups(self, now: float, after_s: float = WAITING_SHOWN_AFTER_S) -> list[Holdup]:
        """Nodes waiting on probes in flight for ``after_s`` or more, the one that may hold longest first."""
        with self._lock:
            held = [h for name in self._waiting if (h := self._rows[name].holdup(now, after_s)) is not None]
        return sorted(held, key=lambda h: (-h.deadline, h.node))

    def counts(self) -> dict[Status | None, int]:
        """Nodes per verdict (None: not judged yet)."""
        with self._lock:
            return {status: count for status, count in self._counts.items() if count}

    # write side (events' thread) -----------------------------------------------------------------

    def apply(self, event: Event) -> bool:
        """Fold one engine event in; True when the UI should be told (first change since its last look)."""
        # The costly part of a verdict (copying it, the GPU view) is made before taking the lock, which
        # the UI loop needs to read rows: a keypress never waits for it.
        prepared = _prepare(event) if isinstance(event, NodeDone) else None
        with self._lock:
            changed = self._apply(event, prepared)
            if not changed or self._notify_pending:
                return False
            self._notify_pending = True
            return True

    def follow(self, event: NodeDone, stored: StoredVerdict) -> bool:
        """Show a verdict another process stored (``stored`` says which); True when the UI should be told.

        Refused (False, row unchanged) when the node is being swept by this console (its sweep's verdict
        is the one to show), or when the row already shows that verdict or a newer one: a row never goes
        back to an older sweep. The check and the change are one step under the lock, so an engine event
        arriving meanwhile cannot be overwritten by what was read before it.
        """
        prepared = _prepare(event)
        with self._lock:
            row = self._rows.get(stored.node)
            if row is None or row.running or not shows_older(row, stored):
                return False
            self._replace(
                row,
                verdict=prepared[0],
                view=prepared[1],
                sweep_id=stored.sweep_id,
                findings_total=prepared[2],
                in_flight=NOTHING_IN_FLIGHT,
                updated_at=stored.stored_at,
                followed=stored,
            )
            self._summary_dirty = True
            if self._notify_pending:
                return False
            self._notify_pending = True
            return True

    def set_scheduler_states(self, states: dict[str, str]) -> bool:
        """Record scheduler states (idle, drained, ...); True when the UI should be told."""
        with self._lock:
            changed = False
            for name, state in states.items():
                row = self._rows.get(name)
                if row is not None and row.scheduler != state:
                    self._replace(row, scheduler=state)
                    changed = True
            if not changed or self._notify_pending:
                return False
            self._notify_pending = True
            return True

    def _replace(self, row: NodeRow, **changes: object) -> None:
        new = replace(row, version=row.version + 1, **changes)  # type: ignore[arg-type]
        self._rows[row.name] = new
        self._dirty.add(row.name)
        if new.in_flight.waits:
            self._waiting.add(row.name)
        else:
            self._waiting.discard(row.name)
        if new.status is not row.status:
            self._counts[row.status] -= 1
            self._counts[new.status] = self._counts.get(new.status, 0) + 1

    def _apply(self, event: Event, prepared: Prepared | None = None) -> bool:
        if isinstance(event, WorkloadStarted | WorkloadFinished):
            self.workload_runs.apply(event)
            self._summary_dirty = True
            return True
        if isinstance(event, MultinodeStarted | MultinodeRunDone | MultinodeDone):
            self.pairs = self.pairs.apply(event)
            self._summary_dirty = True
            return True
        if isinstance(event, SweepStarted):
            return self._sweep_started(event)
        if isinstance(event, StoreFailed):
            self.store_fault = event.fault
            self._summary_dirty = True
            return True
        if isinstance(event, SweepDone):
            self.progress.finished_at = self.clock()
            self.progress.outcome = event.outcome
            self._summary_dirty = True
            for name in self.progress.nodes:
                row = self._rows.get(name)
                if row is not None and row.running:
                    self._replace(row, running=False, in_flight=NOTHING_IN_FLIGHT)
            return True
        row = self._rows.get(event.node if not isinstance(event, NodeDone) else event.verdict.node)
        if row is None:
            return False
        if isinstance(event, ProbeStarted):
            # The countdown starts when the console hears of the probe (what timeout_s is counted from).
            in_flight = row.in_flight if row.running else NOTHING_IN_FLIGHT
            if event.timeout_s is not None:
                now = self.clock()
                in_flight = in_flight.started(ProbeWait(event.probe, now, now + event.timeout_s))
            if row.running:
                self._replace(row, probes_started=row.probes_started + 1, in_flight=in_flight)
            else:
                # A rerun joining a running sweep sends no SweepStarted: count its probes as they start.
                self._replace(row, running=True, probes_started=1, probes_done=0, probes_total=0, in_flight=in_flight)
            return True
        if isinstance(event, ProbeFinished):
            self._replace(row, probes_done=row.probes_done + 1, in_flight=row.in_flight.finished(event.probe))
            return True
        return self._node_done(row, event, prepared or _prepare(event))

    def _sweep_started(self, event: SweepStarted) -> bool:
        self.progress = SweepProgress(
            sweep_id=event.sweep_id,
            level=event.level,
            rerun=event.rerun,
            nodes=tuple(event.nodes),
            swept=frozenset(event.nodes),
            started_at=self.clock(),
            last_full_sweep_id=self.progress.last_full_sweep_id if event.rerun else event.sweep_id,
        )
        self._summary_dirty = True
        for name in event.nodes:
            row = self._rows.get(name)
            if row is not None:
                self._replace(
                    row,
                    running=True,
                    probes_started=0,
                    probes_done=0,
                    probes_total=len(event.probes),
                    in_flight=NOTHING_IN_FLIGHT,
                )
        return True

    def _node_done(self, row: NodeRow, event: NodeDone, prepared: Prepared) -> bool:
        now = self.clock()
        # A pool peer re-judged by a rerun's fleet pass was not probed: its UPDATED time stays, and it
        # does not count towards the rerun's progress (a one-node rerun read "7/1 nodes").
        swept = event.sweep_id != self.progress.sweep_id or row.name in self.progress.swept
        self._replace(
            row,
            verdict=prepared[0],
            view=prepared[1],
            sweep_id=event.sweep_id,
            findings_total=prepared[2],
            running=False,
            in_flight=NOTHING_IN_FLIGHT,
            updated_at=now if swept or row.updated_at is None else row.updated_at,
            followed=None,
        )
        view = self._rows[row.name].view
        if view is not None and view.gpus:
            sample = MetricSample(now, {g.index: g for g in view.gpus})
            self._history.setdefault(row.name, deque(maxlen=HISTORY_SAMPLES)).append(sample)
        if event.sweep_id == self.progress.sweep_id and row.name in self.progress.swept:
            self.progress.done.add(row.name)
            self._summary_dirty = True
        return True
