"""The multi-node phase as the console knows it: every run as it finished, then the phase's conclusion.

Folded from the engine's ``MultinodeStarted`` / ``MultinodeRunDone`` / ``MultinodeDone`` events on the
events' thread; each event replaces the whole board (a frozen value), so the UI loop reads one
consistent board without a lock. The node-pair heatmap and the straggler ranking are read from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from console.model.findings import Status
from console.model.multinode import CollectiveRun, MultinodeResult
from console.sweep.events import MultinodeDone, MultinodeRunDone, MultinodeStarted
from console.sweep.multinode import run_words
from console.sweep.pairing import MODE_PURPOSE, Pairing

MultinodeEvent = MultinodeStarted | MultinodeRunDone | MultinodeDone


@dataclass(frozen=True)
class Standing:
    """One line of the straggler ranking: a node, its worst run, and (once concluded) its verdict."""

    node: str
    worst_ratio: float | None
    worst_with: tuple[str, ...]
    runs: tuple[int, ...]
    status: Status | None = None  # None while the phase still runs
    named: str = ""  # how the runs named it, for a culprit
    convicting: tuple[int, ...] = ()  # seq of the runs that convicted it
    layer: str = ""  # intra-node / inter-node / unknown, for a culprit
    decided: tuple[int, ...] = ()  # seq of the runs that convicted (FAIL) or cleared (PASS) it
    found_by: str = ""  # for a culprit: the pairing mode, and each convicting run's partner and its source


@dataclass(frozen=True)
class PairBoard:
    """Runs of the current (or last) multi-node phase."""

    sweep_id: int = 0
    nodes: tuple[str, ...] = ()
    runs: tuple[CollectiveRun, ...] = ()
    result: MultinodeResult | None = None
    stopped: bool = False
    version: int = 0

    @property
    def started(self) -> bool:
        """A phase has begun in this session."""
        return self.version > 0

    @property
    def running(self) -> bool:
        """Runs are still to come."""
        return self.started and self.result is None

    def apply(self, event: MultinodeEvent) -> PairBoard:
        """The board after ``event``."""
        version = self.version + 1
        if isinstance(event, MultinodeStarted):
            return PairBoard(sweep_id=event.sweep_id, nodes=tuple(event.nodes), version=version)
        if isinstance(event, MultinodeRunDone):
            return replace(self, runs=(*self.runs, event.run), version=version)
        return replace(self, runs=tuple(event.result.runs), result=event.result, stopped=event.stopped, version=version)

    def pair_runs(self) -> dict[frozenset[str], CollectiveRun]:
        """The latest two-node run of each pair (group runs have no single cell)."""
        cells: dict[frozenset[str], CollectiveRun] = {}
        for run in self.runs:
            # A network-only run is judged against no floor: it says which layer, not how the pair does.
            if len(run.nodes) == 2 and run.purpose != "isolation":
                cells[frozenset(run.nodes)] = run
        return cells

    def axis(self) -> list[str]:
        """Nodes that ran, in the order the phase listed them."""
        ran = {node for run in self.runs for node in run.nodes}
        return [node for node in self.nodes if node in ran] + sorted(ran - set(self.nodes))

    def standings(self) -> list[Standing]:
        """Nodes ranked by their worst run: the phase's own ranking once it ended, else one made live."""
        if self.result is not None and self.result.stragglers:
            culprits = {c.node: c for c in self.result.culprits}
            return [
                Standing(
                    s.node,
                    s.worst_ratio,
                    tuple(s.worst_with),
                    tuple(s.runs),
                    s.status,
                    culprits[s.node].reason if s.node in culprits else "",
                    tuple(culprits[s.node].runs) if s.node in culprits else (),
                    culprits[s.node].layer if s.node in culprits else "",
                    tuple(s.decided_by),
                    culprits[s.node].found_by if s.node in culprits else "",
                )
                for s in self.result.stragglers
            ]
        live: list[Standing] = []
        for node in self.axis():
            mine = [run for run in self.runs if node in run.nodes]
            rated = [run for run in mine if run.ratio is not None]
            worst = min(rated, key=lambda run: run.ratio or 0.0) if rated else None
            live.append(
                Standing(
                    node,
                    worst.ratio if worst is not None else None,
                    tuple(n for n in worst.nodes if n != node) if worst is not None else (),
                    tuple(run.seq for run in mine),
                )
            )
        return sorted(live, key=lambda s: (s.worst_ratio is None, s.worst_ratio or 0.0, s.node))


def verdict_lines(result: MultinodeResult, node: str) -> list[tuple[str, str]]:
    """(label, text) lines saying how the multi-node phase judged ``node``: the pairing mode and what it
    covered in the node's pool, its verdict and the runs that decided it (each with its partner and where
    that partner came from), what named it or the uplink it sits behind, and every run it took part in.
    Empty when it was not judged."""
    standing = next((s for s in result.stragglers if s.node == node), None)
    if standing is None:
        return []
    mode = Pairing(result.pairing) if result.pairing in {p.value for p in Pairing} else None
    pairing = f"{result.pairing} ({MODE_PURPOSE[mode]})" if mode is not None else result.pairing
    if result.seed is not None:
        pairing += f", seed {result.seed}"
    lines = [("pairing", pairing)]
    # What the mode tested in the node's pool: a path it did not test is why a node may read UNKNOWN.
    lines += [("coverage", p.coverage) for p in result.pools if p.pool == standing.pool and p.coverage]
    lines += [(standing.status.value, standing.how or "no run decided it")]
    for culprit in result.culprits:
        if culprit.node == node:
            lines += [
                ("found by", culprit.found_by or culprit.reason),
                ("layer", f"{culprit.layer}: {culprit.layer_evidence}"),
            ]
    for rack in result.racks:
        if node in rack.nodes:
            lines += [(f"{rack.label} uplink", f"{rack.rack}: {rack.reason}"), ("found by", rack.found_by)]
    by_seq = {run.seq: run for run in result.runs}
    lines += [("run", run_words(by_seq[seq], node)) for seq in standing.runs if seq in by_seq]
    return lines
