"""Checking a node in this process: its probes in bundles over a transport, parsed and judged here.

The default ``NodeChecker`` (``console.sweep.checker``), and the one an engine worker process and
``check-local`` run. Slow-changing probes are reused while the node's stack stamp is unchanged
(``console.sweep.steady``); a probe whose narrow form the node's tool refused is sent in its full form
from then on. What a node's check has brought back so far is kept while it runs, so that a deadline or a
cancel judges the node on it (a FAIL found stays a FAIL).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from console.checks import ProbeOutcome
from console.checks.facts import UNSUPPORTED
from console.inventory.model import Node
from console.store import ProbeRunRecord
from console.sweep.bundle import BundleOutput, bundle_script, bundle_timeout, group_probes, split_bundle
from console.sweep.catalog import ProbeSet, ProbeSpec, in_pool
from console.sweep.checker import ServesEngine
from console.sweep.events import ProbeFinished, ProbeStarted
from console.sweep.node_report import LocalCheckReport
from console.sweep.probe_runs import (
    CONNECTION_KINDS,
    UNPARSED,
    ProbeRun,
    describe,
    judged_run,
    parse_runs,
    running_one,
    runs_of,
    wants_parse,
)
from console.sweep.steady import DEFAULT_MAX_AGE_S, SteadyCache, stamp_of
from console.transport import CommandResult, ErrorKind, OutputSink, Transport, TransportError
from console.transport.base import shown_command

if TYPE_CHECKING:
    from console.sweep.engine import SweepEngine
    from console.sweep.multinode import MultinodeOptions

# How long before a node's budget ends its bundles time out themselves (with what they printed so far).
DEADLINE_MARGIN_S = 0.25


class BundleSource(Protocol):
    """Where a node's bundles of probes run: a transport, or the outputs a Slurm job gathered."""

    async def check_reachable(self, node: str, timeout_s: float = 3.0) -> None:
        """Raise TransportError when ``node`` cannot be checked."""

    async def run_script(
        self, node: str, script: str, *, timeout_s: float, sink: OutputSink | None = None
    ) -> CommandResult:
        """Run the bundle ``script`` on ``node``, its output through ``sink``."""


class LocalChecker(ServesEngine):
    """Checks nodes in this process: bundles of probes run through ``source``, parsed and judged here."""

    # Why a node's report is refused, in this mode's words (``SlurmChecker`` takes reports).
    whose_report = "its report"

    def __init__(self, transport: Transport, source: BundleSource | None = None) -> None:
        self.transport = transport
        # Where the bundles run: the transport itself, unless they were gathered elsewhere (a Slurm job).
        self.source: BundleSource = source if source is not None else transport
        # Slow-changing probes (versions, firmware) are reused on later passes while the node's stack
        # stamp is unchanged; 0 runs them every time (``attach`` sets the engine's age).
        self.steady = SteadyCache(DEFAULT_MAX_AGE_S)
        # (node, probe) whose narrow form the node's tool refused: its fallback form is sent from then on,
        # until the node goes unreachable (a reboot may bring a newer tool that knows the narrow form).
        self.refused: set[tuple[str, str]] = set()
        # A node's check in flight, kept until it ends so that a deadline or a cancel judges the node on
        # what had come back: the probes it asks for, the outcomes of those that finished, and the bundles
        # stopped mid-way with the output they had printed.
        self._asked: dict[str, list[ProbeSpec]] = {}
        self._so_far: dict[str, dict[str, ProbeOutcome]] = {}
        self._in_flight: dict[str, list[tuple[list[ProbeSpec], BundleOutput, float]]] = {}

    def attach(self, engine: SweepEngine) -> None:
        """Serve ``engine``, reusing slow-changing probes for as long as it says."""
        super().attach(engine)
        self.steady = SteadyCache(engine.steady_max_age_s)

    async def gather(self, nodes: Sequence[Node], level: ProbeSet | str) -> None:
        """Nothing to fetch ahead: each node is probed when its turn comes."""

    def first_wave(self, first: list[Node]) -> None:
        """Nothing to start."""

    def judged(self, node: str) -> LocalCheckReport | None:
        """A report ``node`` made of itself, to take instead of probing it (``SlurmChecker``)."""
        return None

    async def check(self, node: Node, probes: list[ProbeSpec], refresh: bool, given: float | None) -> None:
        """Probe ``node`` through the source, judge what came back and publish it."""
        self._asked[node.name], self._so_far[node.name] = list(probes), {}
        self._in_flight.pop(node.name, None)
        engine, judging = self.engine, self.engine.judging
        deadline = engine.deadline(given)
        try:
            await engine.by(deadline, self.source.check_reachable(node.name))
        except TransportError as exc:
            judging.unreachable(node, describe(exc))
            return
        except TimeoutError:
            judging.unreachable(node, engine.past_cap(ran=False))
            return
        report = self.judged(node.name)
        if report is not None:
            judging.take_report(node, report, probes, whose=self.whose_report)
            return
        judging.judged.pop(node.name, None)
        outcomes = await self._probe(node, probes, refresh, deadline)
        if outcomes and all(not o.usable for o in outcomes):
            # Nothing came back (connection refused mid-way, every probe hung): one reason, not 40.
            connection_kinds = {k.value for k in CONNECTION_KINDS}
            first = next((o for o in outcomes if (o.problem or "").split(":", 1)[0] in connection_kinds), outcomes[0])
            judging.unreachable(node, f"{first.probe}: {first.problem}" if first.problem else "no output")
            return
        merged = engine.outcomes.setdefault(node.name, {})
        merged.update({o.probe: o for o in outcomes})
        judging.judge(node)

    async def _probe(
        self, node: Node, probes: list[ProbeSpec], refresh: bool, deadline: float | None
    ) -> list[ProbeOutcome]:
        """Run ``probes`` on ``node``; the slow-changing ones only when its stack stamp changed."""
        plan = self.steady.plan(node.name, probes, self.engine.outcomes.get(node.name, {}), refresh)
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
        return outcomes

    def forget(self, node: str) -> None:
        """Its check ended: what came back is judged already."""
        self._asked.pop(node, None)
        self._so_far.pop(node, None)
        self._in_flight.pop(node, None)

    def lost(self, node: str) -> None:
        """Unreachable: its reused probes and refused forms go (a reboot may bring another stack)."""
        self.steady.forget(node)
        self.refused = {key for key in self.refused if key[0] != node}

    def cutting(self, reason: str | None) -> None:
        """Nothing to tell: a cancelled node keeps what came back until ``judge_cut``."""

    async def judge_cut(self, nodes: list[Node], reason: str) -> None:
        """Judge each of ``nodes`` on what came back before the sweep's ``reason`` stopped it."""
        for node in nodes:
            if node.name not in self.engine.published:
                self._judge_cut(node, reason)
        self._asked, self._so_far, self._in_flight = {}, {}, {}

    def cut_short(self, node: Node, reason: str) -> bool:
        """Judge ``node`` now on what came back (an engine worker's node its sweep is stopping)."""
        if node.name not in self._so_far:
            return False
        self._judge_cut(node, reason)
        self.forget(node.name)
        return True

    def multinode_launch(self, options: MultinodeOptions) -> MultinodeOptions:
        """Launched over the engine's transport, as the options say."""
        return options

    async def close(self) -> None:
        """Nothing of its own: the engine closes the transport."""

    def _judge_cut(self, node: Node, reason: str) -> None:
        """Judge a node whose check ``reason`` (deadline exceeded, sweep cancelled) cut short, on what came back.

        The same path as a bundle that timed out on the node: the probes that finished keep their
        answers (a FAIL found stays a FAIL), each probe that did not finish is UNKNOWN with ``reason``,
        and a finding says what was cut, so the node is at best UNKNOWN, never PASS.
        """
        judging = self.engine.judging
        asked, so_far = self._asked.get(node.name), self._so_far.get(node.name)
        if asked is None or so_far is None or not (self._in_flight.get(node.name) or so_far):
            # Its check had not started, was connecting, or its report was taken: nothing to judge here.
            judging.cut_unjudged(node, reason)
            return
        runs = []
        for group, output, started in self._in_flight.get(node.name, []):
            left = [spec for spec in group if spec.id not in so_far]
            sections = split_bundle(output.value(), left, output.dropped)
            runs += runs_of(left, sections, started, 0.0, reason)
        outcomes = self._finish_probes(node, runs, parse_runs(runs))
        sent = {o.probe for o in outcomes} | set(so_far)
        never = [ProbeRun(spec, None, None, reason, time.time(), 0.0) for spec in asked]
        never = [run for run in never if run.spec.id not in sent]
        self._finish_probes(node, never, [UNPARSED] * len(never))
        finished = dict(so_far)
        if not any(o.usable for o in finished.values()):
            judging.cut_unjudged(node, reason)  # nothing came back to judge: one reason, not one per probe
            return
        cut = sorted(p.id for p in asked if finished[p.id].problem == reason)
        if cut:
            judging.cut[node.name] = f"{reason}: {len(cut)} of {len(asked)} probes unfinished ({', '.join(cut)})"
        else:  # every probe had answered, only the node's judging was to come: nothing was cut
            judging.cut.pop(node.name, None)
        self.engine.outcomes.setdefault(node.name, {}).update(finished)
        judging.judge(node)

    async def _run_probes(self, node: Node, probes: list[ProbeSpec], deadline: float | None) -> list[ProbeOutcome]:
        probes = [self.timed_for(node, self.form_for(node, spec)) for spec in probes]
        groups = group_probes(probes, self.engine.bundles_per_node)
        results = await asyncio.gather(*(self._run_bundle(node, group, deadline) for group in groups))
        return [o for group in results for o in group]

    def timed_for(self, node: Node, spec: ProbeSpec) -> ProbeSpec:
        """``spec`` with its node's model's timeout where the pack gives one (then the cap, if any): a hung
        RCCL run on an MI300X costs the minutes the test takes there, not a flat 900 s."""
        pack = self.engine.judging.pack_for(node)
        timeout = pack.pack.timeout_of(spec.id) if pack is not None else None
        if timeout is None:
            return spec
        return self.engine.capped([replace(spec, timeout_s=timeout)])[0]

    def form_for(self, node: Node, spec: ProbeSpec) -> ProbeSpec:
        """``spec`` as ``node`` runs it: its fallback form once refused there, in its pool's image."""
        fallback = spec.fallback_spec() if (node.name, spec.id) in self.refused else None
        return in_pool(fallback or spec, self.engine.inventory.pools.get(node.pool))

    async def _with_fallbacks(self, node: Node, runs: list[ProbeRun], deadline: float | None) -> list[ProbeOutcome]:
        """Finish ``runs``; those whose narrow form the tool refused as unknown run again in their full form."""
        redo = [run.spec for run in runs if run.spec.fallback and (run.problem or "").startswith(UNSUPPORTED)]
        if not redo:
            return self._finish_probes(node, runs, await _parse(runs))
        self.refused.update((node.name, spec.id) for spec in redo)
        kept = [run for run in runs if run.spec not in redo]
        outcomes = self._finish_probes(node, kept, await _parse(kept))
        outcomes += await self._run_bundle(node, [self.form_for(node, spec) for spec in redo], deadline)
        order: dict[str, int] = {run.spec.id: i for i, run in enumerate(runs)}
        return sorted(outcomes, key=lambda o: order[o.probe])

    def _reused(self, node: Node, spec: ProbeSpec) -> None:
        kept = self.engine.outcomes[node.name][spec.id]
        if (so_far := self._so_far.get(node.name)) is not None:
            so_far[spec.id] = kept
        self.engine.emit(
            ProbeFinished(
                sweep_id=self.engine.sweep_id,
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
        output = BundleOutput(self.engine.max_probe_output_bytes)
        # Kept while it runs: stopped by the sweep's deadline or a cancel, what it printed (the probes ahead
        # of a hung one) is judged by ``judge_cut``, as a bundle that timed out is judged here. Kept
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
        engine = self.engine
        script = bundle_script(group)
        timeout_s, capped = bundle_timeout(group), False
        if deadline is not None:
            # The transport times out just before the node's budget ends, so what the bundle printed
            # until then (the probes ahead of a hung one) comes back with its timeout.
            left = deadline - asyncio.get_running_loop().time() - DEADLINE_MARGIN_S
            if left < timeout_s:
                timeout_s, capped = max(left, 0.1), True
        for spec in group:
            engine.emit(ProbeStarted(sweep_id=engine.sweep_id, node=node.name, probe=spec.id, timeout_s=timeout_s))
        run = self.source.run_script(node.name, script, timeout_s=timeout_s, sink=output)
        try:
            result = await engine.by(deadline, run)
        except (TransportError, TimeoutError) as exc:
            return await self._bundle_failed(node, group, deadline, output, started, exc, timeout_s, capped)
        sections = split_bundle(result.stdout, group, output.dropped)
        share = result.duration_s / max(len(group), 1)
        unfinished = "connection lost while the probe ran" if result.exit_status is None else None
        return await self._with_fallbacks(node, runs_of(group, sections, started, share, unfinished), deadline)

    async def _bundle_failed(  # noqa: PLR0917
        self,
        node: Node,
        group: list[ProbeSpec],
        deadline: float | None,
        output: BundleOutput,
        started: float,
        exc: TransportError | TimeoutError,
        timeout_s: float,
        capped: bool,
    ) -> list[ProbeOutcome]:
        """The outcomes of a bundle that ended in ``exc``: the probes that finished before it keep theirs."""
        if isinstance(exc, TimeoutError):
            failed = self.engine.past_cap(ran=True if output.received else None)
        elif exc.kind is ErrorKind.TIMEOUT:
            failed = self.engine.past_cap() if capped else f"no answer within {timeout_s:g} s (killed on the node)"
            if exc.partial_stdout:  # the probes that finished before one hung keep their answers
                sections = split_bundle(exc.partial_stdout, group, output.dropped)
                runs = runs_of(group, sections, started, 0.0, failed)
                return await self._with_fallbacks(node, runs, deadline)
        else:
            failed = describe(exc)
            if exc.partial_stdout:
                # The probes that finished before the link went keep their answers; the one running
                # then is blamed, not the bundle's first (a dropped link read as a host.os failure).
                sections = split_bundle(exc.partial_stdout, group, output.dropped)
                runs = runs_of(group, sections, started, 0.0, failed, not_started=running_one(group, sections))
                return await self._with_fallbacks(node, runs, deadline)
        lost = [ProbeRun(spec, None, None, failed, started, 0.0) for spec in group]
        return self._finish_probes(node, lost, [UNPARSED] * len(lost))

    def _finish_probes(self, node: Node, runs: list[ProbeRun], results: list[Any]) -> list[ProbeOutcome]:
        """Outcomes of one bundle's runs: stored together (one transaction), then announced in order."""
        engine = self.engine
        judged = [judged_run(run, result) for run, result in zip(runs, results, strict=True)]
        run_ids = self._record_runs(node, [(run, problem) for run, (_, problem) in zip(runs, judged, strict=True)])
        outcomes = []
        for run, (parsed, problem), run_id in zip(runs, judged, run_ids, strict=True):
            engine.emit(
                ProbeFinished(
                    sweep_id=engine.sweep_id,
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

    def _record_runs(self, node: Node, runs: list[tuple[ProbeRun, str | None]]) -> list[int | None]:
        engine = self.engine
        if engine.store is None and engine.runs_kept is None:
            return [None] * len(runs)
        records = [
            ProbeRunRecord(
                probe=run.spec.id,
                command=shown_command(self.source, run.spec.command_line),
                exit_status=run.exit_status,
                started_at=run.started_at,
                duration_s=run.duration_s,
                stdout=run.output or b"",
                problem=problem,
            )
            for run, problem in runs
        ]
        if engine.store is None:
            assert engine.runs_kept is not None
            engine.runs_kept.setdefault(node.name, []).extend(records)
            return [None] * len(runs)
        sweep_id = engine.sweep_id
        stored = engine.writes.write(
            "probe outputs of a node", lambda s: s.add_probe_runs(sweep_id, node.name, records)
        )
        return [None] * len(runs) if stored is None else list(stored)


async def _parse(runs: list[ProbeRun]) -> list[Any]:
    # A big output costs milliseconds of CPU to parse: in a worker thread, the loop keeps serving
    # deadlines, keepalives and the UI meanwhile (parsers are pure functions). One hand-off per
    # bundle, not per probe: each costs a thread wake-up and a loop wake-up.
    if not any(map(wants_parse, runs)):
        return [UNPARSED] * len(runs)
    return await asyncio.to_thread(parse_runs, runs)
