"""A node's verdict from what came back of it, whichever way it was checked (``console.sweep.checker``).

Outcomes of probes run here are judged by the packs; a report a node or an engine worker made of itself
is taken once this console can vouch for it, with the checks of change judged here against the history;
a pool's nodes are compared as a fleet; findings made outside a node's probes (multi-node runs) join its
verdict. The engine (``console.sweep.engine``) publishes each verdict: its event and its store record.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from console.checks import CheckPack, NodeFacts, ProbeOutcome, build_facts, evaluate_fleet, evaluate_node
from console.checks.evaluate import observe, unanswered_probe_finding, unreachable_finding
from console.checks.metrics import CHANGE_METRICS, NO_VARIABLES
from console.inventory.model import Node, StackPin
from console.model.family import Family
from console.model.findings import Finding, NodeVerdict, roll_up
from console.model.kept import HISTORY_CHECKS
from console.store import Store
from console.sweep.catalog import PROBES_BY_ID, ProbeSpec, in_pool
from console.sweep.events import NodeSnapshot
from console.sweep.node_report import LocalCheckReport, WorkerJudged, admit, console_checks, judged_with
from console.sweep.packed import PackedFacts, PackedOutcome
from console.sweep.probe_runs import dropped_connection, kept_packed
from console.sweep.vanished import vanished_gpus

if TYPE_CHECKING:
    from console.sweep.engine import SweepEngine

Readings = tuple[int, dict[str, tuple[float, float]]]
# How the finding of a node whose check was cut short begins (and how a worker's report says it).
CUT_LEAD = "check cut short: "
# Why a node judged again with its pool, but not probed, in a sweep is no check of it: only nodes a sweep
# probed become fresh (``console.sweep.freshness``).
NOT_PROBED = "not probed in this sweep: judged again with its pool"
_PAIR_METRIC = "link.tb_a2a_gbps"


class Judging:
    """Judges the nodes of one engine and hands each verdict to it to publish; keeps what judging again
    needs: the reports taken, the findings from outside, what cut a node's check, the earlier figures."""

    def __init__(self, engine: SweepEngine) -> None:
        self.engine = engine
        # Reports taken instead of outputs: a node that judged itself, or that an engine worker judged.
        self.judged: dict[str, LocalCheckReport] = {}
        # Findings from outside the per-node probes (multi-node RCCL, bisection): node -> source -> findings.
        self.external: dict[str, dict[str, list[Finding]]] = {}
        # Nodes of this sweep whose check a deadline or a cancel cut short: node -> what was cut. Stored
        # with the verdict, so that the cut check does not count as the node's last active check.
        self.cut: dict[str, str] = {}
        # Nodes the fleet pass is judging again without having probed them in this sweep (the others of a
        # pool a rerun or a partial sweep compared its nodes with): recorded as no check of theirs.
        self.not_probed: set[str] = set()
        # node -> its earlier figures for checks of change, read once in sweep ``_history_sweep``.
        self.history: dict[str, dict[str, Readings]] = {}
        self._history_sweep = 0
        self._judged_with: dict[str, str] = {}  # pool -> what its nodes must have been judged with
        self._families: dict[str, dict[str, str]] = {}  # GPU model -> check id -> family
        self._worker_runs: dict[str, dict[str, int]] = {}  # node -> probe -> its latest stored run

    def pack_for(self, node: Node) -> CheckPack | None:
        """The check pack of ``node``'s GPU model, if this console has one."""
        return self.engine.packs.get(node.gpu_model)

    def publish(self, node: Node, verdict: NodeVerdict, facts: NodeFacts) -> None:
        """Hand ``node``'s verdict to the engine, with what cut its check (if anything) for the store."""
        cut = self.cut.get(node.name, "") or (NOT_PROBED if node.name in self.not_probed else "")
        self.engine.publish(node, verdict, facts, cut)

    def unreachable(self, node: Node, reason: str) -> None:
        """``node`` could not be checked: one UNKNOWN finding with ``reason``, and what was kept of it goes."""
        engine = self.engine
        engine.outcomes.pop(node.name, None)
        self.judged.pop(node.name, None)
        engine.checker.lost(node.name)
        engine.facts.pop(node.name, None)
        self.publish(node, roll_up(node.name, [unreachable_finding(node.name, reason)]), NodeFacts(node=node))

    def cut_unjudged(self, node: Node, reason: str) -> None:
        """A node the sweep's ``reason`` cut short with nothing back to judge: UNKNOWN with that reason."""
        self.cut[node.name] = reason
        self.unreachable(node, reason)

    def take_cut_report(self, node: Node, worker: WorkerJudged, probes: list[ProbeSpec], whose: str) -> None:
        """Take the report of a node its engine worker judged on what came back when the sweep cut it short."""
        assert worker.report is not None
        said = next((f.message for f in worker.report.findings if f.message.startswith(CUT_LEAD)), None)
        if said is None:
            self.cut.pop(node.name, None)  # every probe had answered there: nothing was cut
        else:
            self.cut[node.name] = said.removeprefix(CUT_LEAD)
        self.take_report(node, worker.report, probes, worker, whose=whose)

    def take_report(
        self,
        node: Node,
        report: LocalCheckReport,
        probes: list[ProbeSpec],
        worker: WorkerJudged | None = None,
        *,
        whose: str,
    ) -> None:
        """Take the verdict a node reached on itself (or an engine worker reached on it), once this console
        can vouch for it; UNKNOWN else, saying that ``whose`` report (it names the mode) cannot be taken. A
        worker's probe runs are stored here, the one store writer."""
        pack = self.pack_for(node)
        pin = self.engine.pins.get(node.pool, StackPin())
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
            self.unreachable(node, f"{whose} cannot be taken: {problem}")
            return
        facts = self._report_facts(node, report, pin, worker)
        # The metrics a console still reads of this node read its report, never outputs it does not have.
        for metric in [*console_checks(pack), _PAIR_METRIC]:
            facts.readings.setdefault(metric, [])
        self.engine.outcomes.pop(node.name, None)
        self.judged[node.name] = report
        self.engine.facts[node.name] = facts
        self._evaluate_judged(node, pack, facts)

    def _report_facts(
        self, node: Node, report: LocalCheckReport, pin: StackPin, worker: WorkerJudged | None
    ) -> NodeFacts:
        """The facts a console keeps of a node judged elsewhere: its report's, and a worker's screens."""
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
        return facts

    def _store_worker_runs(self, node: Node, report: LocalCheckReport, worker: WorkerJudged) -> dict[str, int]:
        """Store the probe runs an engine worker made of ``node``; probe -> run id, for the evidence links
        (a probe reused while the stack stamp is unchanged keeps its earlier run's)."""
        engine = self.engine
        if engine.store is None:
            return {}
        ids = self._worker_runs.setdefault(node.name, {})
        if worker.runs:
            runs, sweep_id = worker.runs, engine.sweep_id
            stored = engine.writes.write(
                "probe outputs of a node", lambda s: s.add_probe_runs(sweep_id, node.name, runs)
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
        report = self.judged[node.name]
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
        findings += self._vanished(node, facts)
        self._roll_up(node, pack, facts, findings, passed, extra)

    def _vanished(self, node: Node, facts: NodeFacts) -> list[Finding]:
        sweep_id = self.engine.sweep_id
        return self.engine.writes.read(lambda s: vanished_gpus(s, node, facts, sweep_id), [])

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
        external = [f for group in self.external.get(node.name, {}).values() for f in group]
        everything = findings + external + (extra or [])
        if (cut := self.cut.get(node.name)) is not None and node.name not in self.judged:
            # First, so that it is the reason of a node that is UNKNOWN (a FAIL found still heads it). A
            # node an engine worker judged has it in its report already.
            everything.insert(0, unreachable_finding(node.name, cut, lead=CUT_LEAD.removesuffix(": ")))
        passed_families = {families[c] for c in passed if c in families}
        self.publish(node, roll_up(node.name, everything, dict(passed), passed_families), facts)

    def judge(self, node: Node, extra: list[Finding] | None = None) -> None:
        """Judge ``node`` (again) on what this engine keeps of it, then keep its facts and outputs packed.

        Its outcomes are loaded once for the judging (the checks read some of them many times); those kept
        packed stay as they were, and those that came in this sweep are packed (``console.sweep.packed``).
        """
        outcomes = self.engine.outcomes
        kept = outcomes.get(node.name)
        if kept is not None:
            outcomes[node.name] = {p: o.loaded() if isinstance(o, PackedOutcome) else o for p, o in kept.items()}
        self._evaluate_node(node, extra)
        if kept is not None:
            kept = outcomes[node.name] = {p: kept_packed(o) for p, o in kept.items()}
        facts = self.engine.facts.get(node.name)
        if node.name in self.judged or facts is None or isinstance(facts, PackedFacts):
            return  # a node-judged node is kept as its report and packed facts already
        self.engine.facts[node.name] = PackedFacts.of(facts, dict(kept or {}))

    def _evaluate_node(self, node: Node, extra: list[Finding] | None = None) -> None:
        engine = self.engine
        if node.name in self.judged and (pack := self.pack_for(node)) is not None:
            self._evaluate_judged(node, pack, engine.facts[node.name], extra)
            return
        outcomes = engine.outcomes.get(node.name, {})
        facts = build_facts(node, engine.pins.get(node.pool, StackPin()), outcomes)
        facts.previous = self._previous_readings(node)
        engine.facts[node.name] = facts
        pack = self.pack_for(node)
        run_ids = {probe: o.run_id for probe, o in outcomes.items() if o.run_id is not None}
        passed = Counter[str]()
        findings = evaluate_node(pack, facts, run_ids, counted=passed) if pack is not None else []
        for outcome in outcomes.values():
            if not outcome.usable:
                spec = PROBES_BY_ID.get(outcome.probe)
                spec = in_pool(spec, engine.inventory.pools.get(node.pool)) if spec else None  # the command it ran
                family, command = (spec.family, spec.command_line) if spec else (Family.PROBE, outcome.probe)
                findings.append(unanswered_probe_finding(facts, outcome, family, command))
        if (lost := dropped_connection(outcomes)) is not None:
            reason = f"{lost.probe}: {lost.problem}"
            findings.append(unreachable_finding(node.name, reason, lead="connection lost during the sweep"))
        findings += self._vanished(node, facts)
        self._roll_up(node, pack, facts, findings, passed, extra)

    def _previous_readings(self, node: Node) -> dict[str, Readings]:
        """The node's figures from its previous sweep that checks of change compare with (read once a sweep)."""
        engine = self.engine
        if engine.store is None:
            return {}
        if self._history_sweep != engine.sweep_id:  # a new sweep compares with what came before it
            self._history_sweep, self.history = engine.sweep_id, {}
        found = self.history.get(node.name)
        if found is None:
            found = self.history[node.name] = {}
            for check_id in HISTORY_CHECKS:
                readings = engine.writes.read(partial(_readings, node.name, check_id, engine.sweep_id), None)
                if readings is not None:
                    found[check_id] = readings
        return found

    def add_findings(self, node: Node, source: str, findings: list[Finding]) -> None:
        """Attach findings made outside the node's own probes and judge it again (``SweepEngine.add_findings``)."""
        self.external.setdefault(node.name, {})[source] = list(findings)
        if node.name in self.engine.outcomes or node.name in self.judged:
            self.judge(node)
        else:
            facts = self.engine.facts.get(node.name) or NodeFacts(node=node)
            self.publish(node, roll_up(node.name, list(findings)), facts)

    def fleet_pass(self, targets: list[Node]) -> None:
        """Judge the pools of ``targets`` as fleets (medians, outliers); the pools' other nodes are judged
        again too, as verdicts of this sweep that are no check of theirs (``NOT_PROBED``)."""
        probed = {n.name for n in targets}
        engine = self.engine
        for pool in sorted({n.pool for n in targets}):
            members = [n for n in engine.inventory.nodes if n.pool == pool and n.name in engine.facts]
            if not members:
                continue
            pack = self.pack_for(members[0])
            if pack is None:
                continue
            extra: dict[str, list[Finding]] = {}
            for finding in evaluate_fleet(pack, [engine.facts[n.name] for n in members]):
                extra.setdefault(finding.subject.node, []).append(finding)
            for node in members:
                if node.name not in extra:
                    continue
                if node.name not in probed:
                    self.not_probed.add(node.name)
                try:
                    self.judge(node, extra[node.name])
                finally:
                    self.not_probed.discard(node.name)


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


def _number(value: object) -> float | None:
    """A figure kept in a finding's evidence as a number, else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pair_bandwidth(facts: NodeFacts) -> dict[str, float]:
    return {
        f"{o.subject.gpu}-{o.subject.peer}": float(o.value)
        # The panel's heatmap shows what was measured; no pack variable changes a measured figure.
        for o in observe(_PAIR_METRIC, facts, NO_VARIABLES)
        if isinstance(o.value, int | float)
    }


def _readings(node: str, check_id: str, sweep_id: int, store: Store) -> Readings | None:
    return store.previous_readings(node, check_id, before_sweep=sweep_id)
