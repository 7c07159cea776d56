"""The ``multinode`` probe set: rccl-tests over node pairs (or groups) after the per-node sweep.

Per pool, the first node that passed its own probes is the reference (ROCm/cvs's pairwise phase 1);
every other reachable node runs ``all_reduce_perf`` with a known-good node, is judged against the
pool's two-node busbw floor and ``#wrong``, and failing runs are bisected (``console.sweep.bisect``)
until the node behind them is named. Nodes named in one rack (the ``rack`` label of the cluster file)
whose every failed run left the rack are then run with each other: when that is clean, the rack's
way out (its uplink) is named instead of them (``RackCulprit``) and they read WARN, not FAIL. In rack
and switch pairing, a named node whose every failing run crossed its rack's or switch's uplink, while
another node of that group failed across it too, is not convicted either: the uplink verdict names the
group's uplink (``RackCulprit.label`` says rack or switch) and the node reads WARN.

Each run's raw output is stored like a probe's; the verdicts join the nodes' own through
``SweepEngine.add_findings(node, "multinode", ...)``, and the runs are returned as a
``MultinodeResult`` for the JSON report. Each run is also announced on the engine's
event stream as it finishes (``MultinodeRunDone``), between ``MultinodeStarted`` and ``MultinodeDone``,
so the console draws the node-pair view live through the same service wire as every verdict.

Pools run side by side; within a pool, runs never share a node (a collective takes all its GPUs).

A second pass needs a known-good partner. It comes from this sweep: a node that passed its own probes
(``_select``'s references), in the paired modes once a clean run with another such node cleared it. A
node whose own probes FAILed or were UNKNOWN is judged but never vouches for anyone: not a partner, not
the reference, not an isolation baseline, not a clearing run (``known_good`` of both plans). When no
node of this sweep can give one, from the pool's accepted baseline
(``accept``): a node that PASSed there and is not swept now. Every run says where its known-good node
came from (``partner_from``) and where its nodes sit by the cluster file's labels (``topology``); every
node's standing says which runs convicted or cleared it, and each culprit which pairing mode found it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from console.inventory import Inventory
from console.inventory.hostlist import fold
from console.model.family import Family
from console.model.findings import Evidence, Finding, Remedy, SourceKind, Status, Subject
from console.model.multinode import CollectiveRun, Culprit, MultinodeResult, NodeStanding, PoolRuns, RackCulprit
from console.store import ProbeRunRecord, Store
from console.sweep.bisect import Bisection, Conclusion, Outcome, Purpose, Trial
from console.sweep.collective import COLLECTIVE, Floor, Judgement, LaunchSettings, judge, launch_argv
from console.sweep.coverage import (
    Symptom,
    covered_groups,
    crosses,
    explained_by,
    group_ring,
    proven,
    ring_named,
    symptom,
    wanted_runs,
)
from console.sweep.engine import SweepEngine, SweepResult, describe
from console.sweep.events import MultinodeDone, MultinodeRunDone, MultinodeStarted
from console.sweep.known_good import disqualified
from console.sweep.pairing import MODE_LABEL, MODE_PURPOSE, Pairing, PairPlan
from console.transport import ErrorKind, Transport, TransportError

SOURCE = "multinode"
PROBE_ID = "multinode.all_reduce"
CHECK_ID = "rccl.multinode"
FLOOR_VAR = "rccl_pair_busbw_min_gbps"
MULTINODE_ACTION = (
    "estimate: named after runs with known-good partners; check its NICs, cables and switch ports, or the"
    " rack's uplink (docs/sources/actions.md#multi-node-runs)"
)
RACK_LABEL = "rack"  # the topology label naming the switch a node hangs from (the cluster file's labels)
# Labels whose groups have one way out (an uplink) the uplink verdict can name, coarsest first.
UPLINK_LABELS = ("rack", "switch")
# Pairing modes whose runs stay inside a group: a named node's runs all crossing its group's uplink mean it
# had no partner inside, not that it was tested there (``_PoolRun._uplink_verdict``).
WITHIN_GROUP_MODES = frozenset({Pairing.RACK, Pairing.SWITCH})
# Pairing modes whose first pass never leaves a group of their label: the group pass crosses each group's
# way out (``console.sweep.coverage``), and a group no clean run left is not judged for it.
GROUP_PASS_MODES = frozenset({Pairing.RACK, Pairing.SWITCH, Pairing.RAIL})
# Labels a run's nodes are described by (``CollectiveRun.topology``), coarsest first.
TOPOLOGY_LABELS = ("rack", "switch", "rail")
# RCCL reads NCCL's variables: no GPU peer-to-peer and no shared memory sends even a node's own ranks'
# traffic through the network (docs/sources/rccl.md#network-only-run).
NETWORK_ONLY_ENV: tuple[tuple[str, str], ...] = (("NCCL_P2P_DISABLE", "1"), ("NCCL_SHM_DISABLE", "1"))
# Below this share of two good nodes' network-only busbw the named node's own network is slow
# (an estimate, docs/sources/rccl.md#network-only-run).
NETWORK_ONLY_SHARE = 0.9
_OUTCOME = {Status.PASS: Outcome.PASS, Status.FAIL: Outcome.FAIL}
_BAD = (Status.FAIL, Status.UNKNOWN)


@dataclass
class _Uplink:
    """A group (rack or switch) whose way out the runs named, and how."""

    label: str
    group: str
    nodes: list[str]  # its nodes the runs cleared of a fault of their own
    runs: list[int]  # seq of the runs that convicted the uplink
    reached: list[str]  # the groups its failed runs reached
    inside: bool  # True: a clean run inside the group (the rack pass); False: the verdict alone


@dataclass(frozen=True)
class MultinodeOptions:
    """How the multi-node phase runs. ``site`` launches every run from one host (srun on a login node)."""

    launch: LaunchSettings = field(default_factory=LaunchSettings)
    group_size: int = 1
    max_parallel: int = 1
    site: str | None = None
    pairing: Pairing = Pairing.REFERENCE  # how the first pass pairs nodes (console.sweep.pairing)
    seed: int = 0  # for Pairing.RANDOM (and the order within racks): the same seed, the same pairs
    # A second pass with no free known-good node of this sweep borrows one known-good by the accepted baseline.
    baseline_partners: bool = True
    # Only these nodes may vouch for another (a revalidation's chosen known-good partner): the node under
    # revalidation passed its own checks too, and must never be taken as the reference that clears its partner.
    vouchers: tuple[str, ...] | None = None


def pool_floor(engine: SweepEngine, model: str, nodes: int) -> Floor | None:
    """The pack's two-node floor; beyond two nodes vendors publish none, so it is reused as an estimate."""
    pack = engine.packs.get(model)
    if pack is None:
        return None
    sourced = pack.pack.source_of(FLOOR_VAR)
    if sourced is None or not isinstance(sourced.value, int | float):
        return None
    if nodes <= 2:
        return Floor(float(sourced.value), sourced.source, sourced.source_kind)
    source = f"two-node floor reused for {nodes} nodes (thresholds.md A.5: no vendor number); {sourced.source}"
    return Floor(float(sourced.value), source, SourceKind.ESTIMATE)


class _PoolRun:
    """The runs of one pool: drives its bisection plan and keeps every run's record."""

    def __init__(
        self,
        engine: SweepEngine,
        *,
        sweep_id: int,
        pool: str,
        plan: Bisection | PairPlan,
        options: MultinodeOptions,
        transport: Transport,
        seq: itertools.count[int],
        baseline: int | None = None,
    ) -> None:
        self.engine = engine
        self.baseline = baseline  # the pool's accepted sweep, whose known-good nodes ``plan.borrowed`` lists
        self.seq = seq  # shared by every pool: runs are numbered in the order they finish
        self.sweep_id = sweep_id
        self.pool = pool
        self.plan = plan
        self.options = options
        self.transport = transport
        self.records: list[tuple[Trial, CollectiveRun, Floor | None]] = []
        # (label, group) -> the group's uplink the runs named (the rack pass, then the uplink verdict)
        self.racks: dict[tuple[str, str], _Uplink] = {}
        # named node -> (its network-only run with a good node, two good nodes' network-only run)
        self.isolation: dict[str, tuple[CollectiveRun, CollectiveRun]] = {}
        # named node -> its runs again with clean known-good nodes (``_recheck``); empty: none was free
        self.rechecked: dict[str, list[CollectiveRun]] = {}

    def conclusion(self) -> Conclusion:
        """The plan's conclusion with the rechecks applied: a named node whose recheck passed is cleared
        (its failed runs must still be explained, ``_unsettled``); one that could not be rechecked is not judged."""
        found = self.plan.conclusion()
        for node, runs in self.rechecked.items():
            how = found.culprits.pop(node, None)
            if how is None:
                continue
            if not runs:
                found.unknown[node] = (
                    f"{how}, but other faults explain some of those runs, and no clean known-good node was free to "
                    "run it again"
                )
            elif runs[-1].status is Status.PASS:
                found.cleared.append(node)
            elif runs[-1].status is Status.FAIL:
                partners = " and ".join(run.nodes[0] for run in runs)
                found.culprits[node] = f"{how}, and again with {partners} (clean known-good nodes)"
            else:
                found.unknown[node] = f"{how}; its run again with {runs[-1].nodes[0]} could not be judged"
        return found

    def _floor(self, trial: Trial) -> Floor | None:
        model = self.engine.inventory.node(trial.reference).gpu_model
        return pool_floor(self.engine, model, len(trial.nodes))

    def _record(self, trial: Trial, run: CollectiveRun, floor: Floor | None) -> CollectiveRun:
        record = run.model_copy(update={"seq": next(self.seq)})
        self.records.append((trial, record, floor))
        self.engine.announce(MultinodeRunDone(sweep_id=self.sweep_id, run=record))
        return record

    async def run(self) -> None:
        running: dict[asyncio.Task[CollectiveRun], tuple[Trial, Floor | None]] = {}
        try:
            while not self.plan.done:
                for trial in self.plan.start():
                    floor = self._floor(trial)
                    running[asyncio.ensure_future(self._run_trial(trial, floor))] = (trial, floor)
                if not running:
                    break
                finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in finished:
                    trial, floor = running.pop(task)
                    record = self._record(trial, task.result(), floor)
                    self.plan.finish(trial, _OUTCOME.get(record.status, Outcome.UNKNOWN))
            await self._group_pass()
            await self._rack_pass()
            await self._recheck()
            await self._uplink_verdict()
            await self._isolation_pass()
        finally:
            # Cancelled (deadline, Ctrl-C): the transport kills each launcher on the node as its task ends.
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _judged_run(self, trial: Trial) -> CollectiveRun:
        """Run ``trial`` now against its floor, record it and return its record."""
        floor = self._floor(trial)
        return self._record(trial, await self._run_trial(trial, floor), floor)

    def _groups(self, label: str) -> dict[str, str | None]:
        return {node: self._label(node, label) for node in {*self.plan.nodes, *self.plan.borrowed}}

    def _clean(self, found: Conclusion) -> list[str]:
        """Known-good nodes the runs cleared with nothing against them: the only ones a later pass runs with. A
        node with a failed run nothing else explains is not one (a flaky link may break the next run too)."""
        fit = self.plan.known_good
        suspect = {node for path in found.suspect_paths for node in path}
        behind = _behind_uplinks(self)
        failed = [run for run in _judged([r for _, r, _ in self.records]) if run.status is Status.FAIL]
        return [
            node
            for node in dict.fromkeys([found.reference, *found.cleared])
            if node in fit and node not in found.culprits and node not in found.unknown
            if node not in suspect and node not in behind
            if not any(node in run.nodes and not self.explained(run, node, found) for run in failed)
        ]

    async def _group_pass(self) -> None:
        """In a pairing mode whose pairs stay inside their group, each group's clean known-good node runs with
        the next group's (``coverage.group_ring``): a group whose every such run fails, while the other ends
        pass elsewhere, has a slow way out, and its nodes read WARN behind it instead of PASS."""
        if self.options.pairing not in GROUP_PASS_MODES:
            return
        label = MODE_LABEL[self.options.pairing]
        found = self.conclusion()
        representatives: dict[str, str] = {}
        # A clean node first; else one the runs cleared though a failure of it is not explained yet (a slow
        # uplink's group may have no other): only slow runs name a group, so a flaky one's broken run cannot.
        behind, suspect = _behind_uplinks(self), {n for path in found.suspect_paths for n in path}
        cleared = [
            n
            for n in [found.reference, *found.cleared]
            if n in self.plan.known_good and n not in found.culprits and n not in found.unknown
            if n not in behind and n not in suspect
        ]
        for node in [*self._clean(found), *cleared]:
            group = self._label(node, label)
            if group is not None:
                representatives.setdefault(group, node)
        group_of = {node: group for group, node in representatives.items()}
        results: list[tuple[str, str, bool]] = []
        records: list[CollectiveRun] = []

        async def cross(a: str, b: str) -> None:
            record = await self._judged_run(Trial(a, (b,), Purpose.UPLINK))
            records.append(record)
            # A slow uplink slows what crosses it: a run that broke (a flaky link) or could not be read says nothing.
            if record.status is Status.PASS or symptom(record) is Symptom.SLOW:
                results.append((group_of[a], group_of[b], record.status is Status.PASS))

        for a, b in group_ring(sorted(representatives.items())):
            await cross(a, b)
        # A group the ring left open runs with groups a clean run proved until it is proven or named (slow with
        # two of them, so that each slow run explains the other's for its proven end).
        for group, node in sorted(representatives.items()):
            tried = {b if a == group else a for a, b, _ in results if group in (a, b)}
            for other in sorted(proven(results) - tried - {group}):
                if not wanted_runs(group, results):
                    break
                await cross(node, representatives[other])
        groups = self._groups(label)
        for group in ring_named(results):
            failed = [run for run in records if symptom(run) is Symptom.SLOW and crosses(run.nodes, groups, group)]
            members = [
                node
                for node in self.plan.nodes
                if groups.get(node) == group and node not in found.culprits and node not in found.unknown
            ]
            reached = sorted({groups.get(n) or "unlabelled" for run in failed for n in run.nodes} - {group})
            runs = [run.seq for run in failed]
            self.racks[(label, group)] = _Uplink(label, group, members, runs, reached, inside=True)

    def _partner_from(self, trial: Trial) -> str:
        if trial.purpose in (Purpose.PAIR, Purpose.RACK):
            return ""  # neither node is known to be good: each is under test
        if trial.reference in self.plan.borrowed:
            return f"baseline sweep #{self.baseline}"
        return "this sweep"

    def _rack(self, node: str) -> str | None:
        return self.engine.inventory.node(node).labels.get(RACK_LABEL)

    def _leaves(self, run: CollectiveRun, rack: str) -> bool:
        return any(self._rack(node) != rack for node in run.nodes)

    def _left_rack_only(self, node: str, rack: str) -> bool:
        """Every failed run of ``node`` had a node outside ``rack`` (and there was one)."""
        failed = [run for _, run, _ in self.records if node in run.nodes and run.status in _BAD]
        return bool(failed) and all(self._leaves(run, rack) for run in failed)

    async def _rack_pass(self) -> None:
        """Nodes named in one rack, whose failures all left it, run with each other (one at a time).

        A clean run inside the rack clears both of a fault of their own: what they share is the way out
        of the rack. Its first pair failing leaves every node named (either may be slow itself).
        """
        by_rack: dict[str, list[str]] = {}
        for node in self.conclusion().culprits:
            rack = self._rack(node)
            if rack is not None and self._left_rack_only(node, rack):
                by_rack.setdefault(rack, []).append(node)
        for rack, named in sorted(by_rack.items()):
            if len(named) < 2:
                continue
            first, *others = named
            behind: list[str] = []
            inside: list[int] = []
            for other in others:
                trial = Trial(first, (other,), Purpose.RACK)
                floor = self._floor(trial)
                record = self._record(trial, await self._run_trial(trial, floor), floor)
                if record.status is Status.PASS:
                    behind += [first, other] if not behind else [other]
                    inside.append(record.seq)
                elif not behind:
                    break
            if behind:
                left = [
                    run
                    for _, run, _ in self.records
                    if run.status in _BAD and set(run.nodes) & set(behind) and self._leaves(run, rack)
                ]
                reached = sorted({self._rack(n) or "unlabelled" for run in left for n in run.nodes} - {rack})
                runs = sorted([run.seq for run in left] + inside)
                # The group pass of rack pairing may have named this rack already: its nodes stay behind it too.
                uplink = self.racks.setdefault((RACK_LABEL, rack), _Uplink(RACK_LABEL, rack, [], [], [], inside=True))
                uplink.nodes += [node for node in behind if node not in uplink.nodes]
                uplink.runs = sorted({*uplink.runs, *runs})
                uplink.reached = sorted({*uplink.reached, *reached})

    def _label(self, node: str, label: str) -> str | None:
        return self.engine.inventory.node(node).labels.get(label)

    async def _uplink_verdict(self) -> None:
        """In rack or switch pairing, a named node whose every failing run crossed its group's uplink, while
        runs of another node of the group across it failed too, is not convicted: the uplink is named instead.

        In switch or rack pairing a node whose own group has no free known-good partner is confirmed with
        a cleared node of another group, so each of its runs crosses its group's way out; a slow uplink
        then fails them though its NIC is fine. When a clean known-good node of its group exists now, the
        node runs with it first: a slow NIC is slow with every partner, its own group's too, and stays named;
        an uplink is slow only across. With no such node nothing tells the two apart, so it reads WARN, with
        the reason, never PASS. A node failing a run inside its group stays named.
        """
        if self.options.pairing not in WITHIN_GROUP_MODES:
            # Elsewhere every run may cross an uplink by design (each node with the reference): a slow NIC's
            # failures cross it too, and the rack pass, which tests inside the rack, is the evidence there.
            return
        behind = _behind_uplinks(self)
        failed = [run for _, run, _ in self.records if run.status in _BAD and run.purpose != Purpose.ISOLATION]
        found = self.conclusion()
        for node in found.culprits:
            if node in behind:
                continue
            # Failures another named node or a named uplink explains say nothing of this node's group.
            mine = [run for run in failed if node in run.nodes and not self.explained(run, node, found, own=False)]
            kinds = {symptom(run) for run in mine}
            for label in UPLINK_LABELS:
                group = self._label(node, label)
                if group is None or not mine:
                    continue
                groups = self._groups(label)
                if not all(crosses(run.nodes, groups, group) for run in mine):
                    continue
                # Other failures across the same uplink, the same way: runs without this node, with another node
                # of it (a flaky link's broken run and a slow uplink's slow ones are not one fault).
                others = [
                    run
                    for run in failed
                    if node not in run.nodes and crosses(run.nodes, groups, group) and symptom(run) in kinds
                ]
                if not others:
                    continue
                mates = [n for n in self._clean(found) if groups.get(n) == group and n != node]
                inside = await self._judged_run(Trial(mates[0], (node,), Purpose.CONFIRM)) if mates else None
                if inside is not None and inside.status is not Status.PASS:
                    break  # slow inside its own group too: its own fault, it stays named
                uplink = self.racks.setdefault((label, group), _Uplink(label, group, [], [], [], inside=False))
                uplink.inside = uplink.inside or inside is not None
                uplink.nodes.append(node)
                uplink.runs = sorted({*uplink.runs, *(run.seq for run in [*mine, *others, *filter(None, [inside])])})
                outside = {self._label(n, label) or "unlabelled" for run in mine for n in run.nodes} - {group}
                uplink.reached = sorted({*uplink.reached, *outside})
                break

    def explained(self, run: CollectiveRun, node: str, found: Conclusion, *, own: bool = True) -> bool:
        """``run`` failed for a reason other than ``node``: another node of it named by runs without ``node``
        that failed the same way (``coverage.explained_by``), or a named uplink it crossed that did (with
        ``own`` False, not the uplink of a group of ``node``'s: the uplink verdict asks whether it sits behind one)."""
        behind = _behind_uplinks(self)
        records = _judged([record for _, record, _ in self.records])
        named = {
            # What a named node's own runs say of it: not a run another named node or a named uplink was part of.
            culprit: [
                r
                for r in records
                if culprit in r.nodes
                and r.status is Status.FAIL
                and not any(n in found.culprits for n in r.nodes if n != culprit)
                and not self._over_named_uplink(r.nodes)
            ]
            for culprit in found.culprits
            if culprit != node and culprit not in behind
        }
        good = frozenset(n for n in self.plan.known_good if n not in found.culprits)
        if explained_by(run, node, named, good):
            return True
        uplinks = [u for u in self.racks.values() if own or self._label(node, u.label) != u.group]
        return any(_uplink_explains(self, uplink, run, node) for uplink in uplinks)

    def _over_named_uplink(self, nodes: Iterable[str]) -> bool:
        """A run over ``nodes`` would cross an uplink the runs named (a convicted path)."""
        return any(crosses(nodes, self._groups(u.label), u.group) for u in self.racks.values())

    async def _recheck(self) -> None:
        """In a paired mode a node is named by two failed runs, but its first partner was not known to be good,
        and a known-good one may since have turned out flaky or behind a slow uplink. A named node that lacks
        two failed runs, failing the same way, that nothing else explains (another named node, a named uplink)
        runs again with clean known-good nodes it has not met, off every named uplink, its own group's first,
        until it has two such failures (named) or passes (cleared; its failed runs must still be explained,
        ``_unsettled``), at most twice; with no such node free it is not judged. Two runs, so that a partner
        of one of them finds its own failure explained by the other."""
        if not isinstance(self.plan, PairPlan):
            return
        found = self.conclusion()
        behind = _behind_uplinks(self)
        clean = self._clean(found)
        label = MODE_LABEL.get(self.options.pairing, RACK_LABEL)
        failed = [run for run in _judged([r for _, r, _ in self.records]) if run.status is Status.FAIL]
        for node in found.culprits:
            if node in behind:
                continue
            own = [symptom(run) for run in failed if node in run.nodes and not self.explained(run, node, found)]
            if any(own.count(kind) >= 2 for kind in set(own)):
                continue  # named by its own runs: it stands
            met = {n for run in failed if node in run.nodes for n in run.nodes}
            partners = [n for n in clean if n not in met and not self._over_named_uplink((n, node))]
            group = self._label(node, label)
            partners.sort(key=lambda n: self._label(n, label) != group)
            runs = self.rechecked.setdefault(node, [])
            for partner in partners[:2]:
                run = await self._judged_run(Trial(partner, (node,), Purpose.CONFIRM))
                runs.append(run)
                own.append(symptom(run))
                if run.status is not Status.FAIL or own.count(symptom(run)) >= 2:
                    break

    async def _isolation_pass(self) -> None:
        """Each named node runs once more with a good node over the network only (no GPU peer-to-peer),
        against the same run between two good nodes: slow there too puts the fault in its network."""
        found = self.conclusion()
        behind = _behind_uplinks(self)
        named = [node for node in found.culprits if node not in behind]
        # Two nodes that passed their own checks and the runs: a node whose own checks failed is no baseline.
        fit = self.plan.known_good
        good = [
            n for n in [found.reference, *found.cleared] if n in fit and n not in found.culprits and n not in behind
        ]
        if not named or len(good) < 2:
            return  # no two good nodes: no baseline to compare with (the single-node run still tells)
        baseline = await self._network_only(Trial(good[0], (good[1],), Purpose.ISOLATION))
        if baseline.status is not Status.PASS or not baseline.busbw_gbps:
            return
        for node in named:
            self.isolation[node] = (await self._network_only(Trial(good[0], (node,), Purpose.ISOLATION)), baseline)

    async def _network_only(self, trial: Trial) -> CollectiveRun:
        launch = dataclasses.replace(self.options.launch, env=self.options.launch.env + NETWORK_ONLY_ENV)
        run = await self._run_trial(trial, None, launch)
        if run.busbw_gbps is not None and run.status is Status.PASS:
            # Judged against no floor: a network-only run has none; it is compared with its baseline.
            run = run.model_copy(update={"reason": f"network-only busbw {run.busbw_gbps:.1f} GB/s"})
        return self._record(trial, run, None)

    async def _run_trial(
        self, trial: Trial, floor: Floor | None, settings: LaunchSettings | None = None
    ) -> CollectiveRun:
        nodes = [self.engine.inventory.node(name) for name in trial.nodes]
        settings = settings or self.options.launch
        argv = launch_argv(nodes, settings)
        site = self.options.site or trial.reference
        started_at, t0 = time.time(), time.monotonic()
        stdout = stderr = b""
        exit_status: int | None = None
        try:
            result = await self.transport.run(site, argv, timeout_s=settings.timeout_s)
        except TransportError as exc:
            verdict = _transport_failure(exc, settings)
        else:
            stdout, stderr, exit_status = result.stdout, result.stderr, result.exit_status
            ranks = sum(n.gpu_count for n in nodes)
            verdict = judge(_text(stdout), _text(stderr), exit_status, nodes=len(nodes), ranks=ranks, floor=floor)
        duration = time.monotonic() - t0
        run = ProbeRunRecord(
            PROBE_ID,
            shlex.join(argv),
            exit_status,
            started_at,
            duration,
            stdout,
            None if verdict.status is Status.PASS else verdict.reason,
            stderr,
        )
        stored = self.engine.writes.write(
            "multi-node run output", lambda store: store.add_probe_runs(self.sweep_id, site, [run])
        )
        run_id = stored[0] if stored else None
        return CollectiveRun(
            pool=self.pool,
            nodes=list(trial.nodes),
            purpose=trial.purpose.value,
            partner_from=self._partner_from(trial),
            topology=topology_of(self.engine, trial.nodes),
            status=verdict.status,
            busbw_gbps=verdict.busbw_gbps,
            floor_gbps=floor.gbps if floor else None,
            wrong=verdict.wrong,
            reason=verdict.reason,
            command=shlex.join(argv),
            duration_s=round(duration, 3),
            run_id=run_id,
        )


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _transport_failure(exc: TransportError, settings: LaunchSettings) -> Judgement:
    if exc.kind is ErrorKind.TIMEOUT:
        # D.4: a run that never prints its average has hung; the transport killed the launcher's group.
        return Judgement(Status.FAIL, f"no result within {settings.timeout_s:g} s: the collective hung and was killed")
    return Judgement(Status.UNKNOWN, f"could not run: {describe(exc)}")


def _select(engine: SweepEngine, sweep: SweepResult, pool: str) -> tuple[list[str], list[str]]:
    """(references, candidates) of a pool: nodes that passed, best first; every node that was reached."""
    members = [n.name for n in engine.inventory.nodes if n.pool == pool and n.name in sweep.verdicts]
    verdicts = {name: sweep.verdicts[name] for name in members}
    reached = [name for name in members if "reachability" not in verdicts[name].families]
    passed = [name for name in reached if verdicts[name].status is Status.PASS]
    warned = [name for name in reached if verdicts[name].status is Status.WARN]
    return passed or warned, reached


async def run_multinode(
    engine: SweepEngine,
    sweep: SweepResult,
    options: MultinodeOptions | None = None,
    transport: Transport | None = None,
    deadline_s: float | None = None,
) -> MultinodeResult:
    """Run the multi-node phase after ``sweep`` and attach its findings to the nodes' verdicts.

    ``transport`` defaults to the engine's (runs launched on each trial's reference node). A run still
    going at ``deadline_s`` is killed and the nodes it left unjudged get an UNKNOWN finding.
    """
    options = options or MultinodeOptions()
    transport = transport or engine.transport
    seeded = options.pairing is not Pairing.REFERENCE
    result = MultinodeResult(
        launcher=options.launch.launcher,
        pairing=options.pairing.value,
        seed=options.seed if seeded else None,
        label=MODE_LABEL.get(options.pairing),
    )
    seq = itertools.count(1)  # runs are numbered from 1, as the report's text says them (#1, #2, ...)
    runs: list[_PoolRun] = []
    for pool in sorted({engine.inventory.node(name).pool for name in sweep.verdicts}):
        references, candidates = _select(engine, sweep, pool)
        if options.vouchers is not None:
            references = [name for name in references if name in options.vouchers]
        if not references or len(candidates) < 2:
            why = "no node of the pool passed its own probes" if not references else "fewer than two nodes reached"
            result.pools.append(PoolRuns(pool=pool, note=f"no multi-node run: {why}"))
            continue
        baseline, borrowed = baseline_partners(engine, sweep, pool) if options.baseline_partners else (None, [])
        plan = _plan(engine, references, candidates, options, borrowed)
        runs.append(
            _PoolRun(
                engine,
                sweep_id=sweep.sweep_id,
                pool=pool,
                plan=plan,
                options=options,
                transport=transport,
                seq=seq,
                baseline=baseline,
            )
        )
    engine.announce(MultinodeStarted(sweep_id=sweep.sweep_id, nodes=[n for r in runs for n in r.plan.nodes]))
    stopped = cancelled = False
    try:
        async with asyncio.timeout(deadline_s):
            await asyncio.gather(*(pool_run.run() for pool_run in runs))
    except TimeoutError:
        stopped = True
    except asyncio.CancelledError:
        # The operator cancelled: what finished is still judged and shown, the rest is UNKNOWN.
        stopped = cancelled = True
    for pool_run in runs:
        ended = "cancelled" if cancelled else "stopped at the deadline"
        _conclude(engine, pool_run, result, stopped=stopped, why=ended, sweep=sweep)
    result.runs.sort(key=lambda run: run.seq)
    result.stragglers.sort(key=_straggler_rank)
    engine.announce(MultinodeDone(sweep_id=sweep.sweep_id, result=result, stopped=stopped))
    if cancelled:
        raise asyncio.CancelledError
    return result


def baseline_partners(engine: SweepEngine, sweep: SweepResult, pool: str) -> tuple[int | None, list[str]]:
    """The pool's accepted baseline and its nodes that PASSed there and are not swept now (a node swept
    now is judged by this sweep: known-good when it passed, never when it did not)."""
    return borrowable(engine.store, engine.inventory, pool, swept=sweep.verdicts, sweep_id=sweep.sweep_id)


def borrowable(
    store: Store | None, inventory: Inventory, pool: str, *, swept: Iterable[str], sweep_id: int | None = None
) -> tuple[int | None, list[str]]:
    """The nodes of ``pool`` a second pass may borrow when ``swept`` are swept: PASS in the pool's accepted
    baseline, not swept now, and nothing known against them since (a later FAIL or UNKNOWN verdict, an
    open case, a console drain: ``known_good.disqualified``). The same list the run uses, so a plan can
    name them before any GPU is taken."""
    base = store.baseline(pool) if store is not None else None
    if store is None or base is None or base == sweep_id:
        return base, []
    members = {n.name for n in inventory.nodes if n.pool == pool}
    now = set(swept)
    rows = store.node_verdicts(base)
    good = [r["node"] for r in rows if r["status"] == Status.PASS.value and r["node"] in members]
    free = [node for node in good if node not in now]
    ruled_out = disqualified(store, free, after=base)
    return base, [node for node in free if node not in ruled_out]


def _plan(
    engine: SweepEngine,
    references: list[str],
    candidates: list[str],
    options: MultinodeOptions,
    borrowed: list[str] | None = None,
) -> Bisection | PairPlan:
    borrowed = borrowed or []
    # Only the nodes that passed their own checks (``_select``'s references) ever vouch for another node.
    if options.pairing is Pairing.REFERENCE:
        return Bisection(
            references,
            candidates,
            group_size=options.group_size,
            max_parallel=options.max_parallel,
            borrowed=borrowed,
            known_good=references,
        )
    label = MODE_LABEL.get(options.pairing, RACK_LABEL)
    groups = {name: engine.inventory.node(name).labels.get(label) for name in [*candidates, *borrowed]}
    # Pairs of a first pass never share a node: they all run at once unless a cap is given.
    parallel = options.max_parallel if options.max_parallel > 1 else max(1, len(candidates) // 2)
    return PairPlan(
        candidates,
        groups,
        options.pairing,
        seed=options.seed,
        max_parallel=parallel,
        borrowed=borrowed,
        known_good=references,
    )


def topology_of(engine: SweepEngine, nodes: Iterable[str]) -> str:
    """Where ``nodes`` sit by the cluster file's labels: 'rack r01; switch sw1 and sw2' (unlabelled: left out)."""
    names = list(nodes)
    parts = []
    for label in TOPOLOGY_LABELS:
        values = [engine.inventory.node(name).labels.get(label) for name in names]
        if all(v is None for v in values):
            continue
        distinct = sorted({v or "unlabelled" for v in values})
        parts.append(f"{label} {distinct[0]}" if len(distinct) == 1 else f"{label} {' and '.join(distinct)}")
    return "; ".join(parts)


_SEVERITY = {Status.FAIL: 0, Status.UNKNOWN: 1, Status.WARN: 2, Status.PASS: 3, Status.SKIP: 4}


def _straggler_rank(standing: NodeStanding) -> tuple[float, int, str]:
    # A run that failed without a busbw (hung, crashed) ranks as no bandwidth at all.
    ratio = standing.worst_ratio
    if ratio is None:
        ratio = 0.0 if standing.status is Status.FAIL else float("inf")
    return ratio, _SEVERITY.get(standing.status, 5), standing.node


def _layer(sweep: SweepResult, pool_run: _PoolRun, node: str) -> tuple[str, str]:
    """Which layer a named node's fault lies in: from its network-only run when it had one, else from
    its own single-node RCCL run of this sweep.

    A network-only run uses no XGMI: slow there too (against two good nodes' same run) puts the fault in
    the node's network. Its own run (standard level and up) uses only its GPUs and XGMI: failing too
    puts the fault inside the node; passing puts it on the way out (NICs, cables, the switch).
    """
    own = _single_node_layer(sweep, node)
    also = f"; {own[1]}" if own[0] != "unknown" else ""
    if node in pool_run.isolation:
        run, baseline = pool_run.isolation[node]
        if run.status is Status.FAIL and run.busbw_gbps is None:
            return "inter-node", f"its network-only run #{run.seq} failed too: {run.reason}{also}"
        if run.status is Status.PASS and run.busbw_gbps is not None and baseline.busbw_gbps:
            share = run.busbw_gbps / baseline.busbw_gbps
            words = (
                f"network-only run #{run.seq} (no GPU peer-to-peer): {run.busbw_gbps:.1f} GB/s, {share:.0%} "
                f"of two good nodes' #{baseline.seq} ({baseline.busbw_gbps:.1f} GB/s)"
            )
            if share < NETWORK_ONLY_SHARE:
                return "inter-node", f"{words}: its network is slow{also}"
            return "intra-node", f"{words}: its network is fine, the fault needs its GPUs' own links{also}"
    return own


def _single_node_layer(sweep: SweepResult, node: str) -> tuple[str, str]:
    verdict = sweep.verdicts.get(node)
    own = [f for f in verdict.findings if f.family == Family.RCCL and f.check_id != CHECK_ID] if verdict else []
    if not own:
        return "unknown", "no single-node all_reduce_perf in this sweep (standard level and up run one)"
    bad = [f for f in own if f.status in _BAD]
    if bad:
        return "intra-node", f"its own single-node run fails too: {bad[0].message}"
    return "inter-node", "its own single-node all_reduce_perf passes: the NICs or the fabric"


def _conclude(
    engine: SweepEngine, pool_run: _PoolRun, result: MultinodeResult, *, stopped: bool, why: str, sweep: SweepResult
) -> None:
    found = pool_run.conclusion()
    records = [record for _, record, _ in pool_run.records]
    result.runs.extend(records)
    unjudged = [] if pool_run.plan.done else _unjudged(pool_run, found)
    note = f"{why}; not judged: {fold(unjudged)}" if stopped and unjudged else ""
    borrowed = pool_run.plan.borrowed
    used = [node for node in borrowed if any(node in run.nodes for run in records)]
    label = MODE_LABEL.get(pool_run.options.pairing)
    missing = [n for n in pool_run.plan.nodes if engine.inventory.node(n).labels.get(label) is None] if label else []
    result.pools.append(
        PoolRuns(
            pool=pool_run.pool,
            reference=found.reference,
            retired_references=found.retired,
            cleared=found.cleared,
            note=note,
            baseline_sweep=pool_run.baseline,
            borrowed=used,
            topology_missing=missing,
            coverage=coverage_of(pool_run),
        )
    )
    mode = pool_run.options.pairing
    found_with = f"{mode.value} pairing ({MODE_PURPOSE[mode]})"
    for node, reason in _culprits(found, pool_run).items():
        convicting = [run for run in _judged(records) if node in run.nodes and run.status in _BAD]
        layer, evidence = _layer(sweep, pool_run, node)
        result.culprits.append(
            Culprit(
                pool=pool_run.pool,
                node=node,
                reason=reason,
                runs=[run.seq for run in convicting],
                layer=layer,
                layer_evidence=evidence,
                found_by=f"{found_with}: " + "; ".join(run_words(run, node) for run in convicting),
            )
        )
    for uplink in pool_run.racks.values():
        # With two groups the runs cannot tell which end of the link between them is slow: say so.
        where, to = f"{uplink.label} {uplink.group}", f"{uplink.label} {', '.join(uplink.reached)}"
        if uplink.inside:
            reason = (
                f"{_names(uplink.nodes)} fail with nodes of {to} and pass with each other: "
                f"the uplink of {where} (or the way to {to}) is slow"
            )
            how = "then the rack pass (two named nodes of the rack, with each other)"
        else:
            reason = (
                f"every failing run of {_names(uplink.nodes)} crossed the uplink of {where}, and runs of other "
                f"nodes of it across it failed too: the uplink of {where} (or the way to {to}) is slow; no "
                f"known-good partner of {where} was free to test {_names(uplink.nodes)} inside it"
            )
            how = f"then the uplink verdict (no run inside {where}; every failing run crossed its uplink)"
        result.racks.append(
            RackCulprit(
                pool=pool_run.pool,
                rack=uplink.group,
                label=uplink.label,
                nodes=uplink.nodes,
                reason=reason,
                runs=uplink.runs,
                found_by=f"{found_with}, {how}",
            )
        )
    for node, node_findings in _findings(pool_run, found, unjudged, why).items():
        engine.add_findings(node, SOURCE, node_findings)
        status = min((f.status for f in node_findings), key=lambda s: _SEVERITY.get(s, 5))  # the worst
        said = next((f.message for f in node_findings if f.status is status), "")
        said = said.removeprefix(f"multi-node {COLLECTIVE}: ")  # the standing is of that run already
        fit = pool_run.plan.known_good
        result.stragglers.append(_standing(pool_run.pool, node, status, records, said, fit=fit))


def _standing(
    pool: str,
    node: str,
    status: Status,
    records: list[CollectiveRun],
    said: str = "",
    *,
    fit: Iterable[str] | None = None,
) -> NodeStanding:
    """``node``'s line of the straggler ranking: its verdict, its worst run, and the runs that decided it.

    ``fit``: the nodes that passed their own checks (or were borrowed): only a clean run with one of them
    clears a node, and a node outside them says so, since its multi-node PASS is not its node's verdict."""
    mine = [run for run in records if node in run.nodes]
    rated = [run for run in _judged(mine) if run.ratio is not None]
    worst = min(rated, key=lambda run: run.ratio or 0.0) if rated else None
    wanted = (Status.PASS,) if status is Status.PASS else _BAD
    good = None if fit is None else set(fit)
    decided = [
        run
        for run in _judged(mine)
        if run.status in wanted
        and (status is not Status.PASS or good is None or any(n in good for n in run.nodes if n != node))
    ]
    verb = {Status.PASS: "cleared by", Status.FAIL: "convicted by"}.get(status, f"left {status.value} by")
    how = f"{verb} " + "; ".join(run_words(run, node) for run in decided) if decided else said
    if decided and said and status not in (Status.PASS, Status.FAIL):
        how = f"{said}; {how}"  # a WARN or UNKNOWN says why first: its runs alone do not (an uplink, a path)
    if good is not None and node not in good and status is Status.PASS:
        # Its runs may be clean, its node is not: the grid's FAIL and this line must not read as a contradiction.
        how = f"its own checks did not pass this sweep, so it was never a known-good partner; {how}"
    return NodeStanding(
        pool=pool,
        node=node,
        status=status,
        worst_ratio=round(worst.ratio, 4) if worst is not None and worst.ratio is not None else None,
        worst_with=[n for n in worst.nodes if n != node] if worst is not None else [],
        runs=[run.seq for run in mine],
        decided_by=[run.seq for run in decided],
        # No run of the wanted outcome (a reference cleared by its partner's conviction): its finding's words.
        how=how,
    )


def run_words(run: CollectiveRun, node: str) -> str:
    """One run as ``node`` saw it (the report's ``how``/``found_by`` and the console's detail say it alike):
    '#4 confirm with sim009 (known-good from baseline sweep #1; switch sw1 and sw2): FAIL' for ``node``."""
    others = ", ".join(n for n in run.nodes if n != node)
    if run.partner_from and run.nodes[0] != node:
        source = f"known-good from {run.partner_from}"
    elif run.partner_from:
        source = f"it was the known-good node, from {run.partner_from}"
    else:
        source = "neither known-good"
    where = f"; {run.topology}" if run.topology else ""
    return f"#{run.seq} {run.purpose} with {others} ({source}{where}): {run.status.value}"


def _unjudged(pool_run: _PoolRun, found: Conclusion) -> list[str]:
    judged = {found.reference, *found.cleared, *found.culprits, *found.unknown}
    return sorted(set(pool_run.plan.nodes) - judged)


def _judged(records: list[CollectiveRun]) -> list[CollectiveRun]:
    """Runs judged against the floor (network-only runs only say which layer a fault is in)."""
    return [run for run in records if run.purpose != Purpose.ISOLATION]


def _latest(pool_run: _PoolRun, node: str, statuses: Iterable[Status]) -> tuple[CollectiveRun, Floor | None] | None:
    wanted = set(statuses)
    for trial, record, floor in reversed(pool_run.records):
        if node in trial.nodes and record.status in wanted and trial.purpose is not Purpose.ISOLATION:
            return record, floor
    return None


def _behind_uplinks(pool_run: _PoolRun) -> dict[str, _Uplink]:
    return {node: uplink for uplink in pool_run.racks.values() for node in uplink.nodes}


def _culprits(found: Conclusion, pool_run: _PoolRun) -> dict[str, str]:
    """Each named node with how it was named and what its last failing run showed (not those a rack's
    uplink explains)."""
    named = {}
    behind = _behind_uplinks(pool_run)
    for node, how in found.culprits.items():
        if node in behind:
            continue
        latest = _latest(pool_run, node, _BAD)
        named[node] = f"{how}: {latest[0].reason}" if latest else how
        # A partner this sweep could not give came from the accepted baseline: the finding says so.
        lent = sorted(
            {
                f"{record.nodes[0]} (known-good from {record.partner_from})"
                for _, record, _ in pool_run.records
                if node in record.nodes[1:] and record.partner_from.startswith("baseline")
            }
        )
        if lent:
            named[node] += f"; second-pass partner {', '.join(lent)}"
    return named


def _names(nodes: list[str]) -> str:
    # A pair reads best spelled out; a large group as a hostlist.
    return ", ".join(nodes) if len(nodes) <= 4 else fold(nodes)


def _finding(node: str, status: Status, message: str, run: CollectiveRun | None, floor: Floor | None) -> Finding:
    evidence = Evidence(probe=PROBE_ID)
    if run is not None:
        peers = _names(run.nodes)
        evidence = Evidence(
            observed=run.busbw_gbps if run.busbw_gbps is not None else run.reason,
            expected=f">= {floor.gbps:g} GB/s with {peers}" if floor else f"a clean run with {peers}",
            unit="GB/s" if run.busbw_gbps is not None else None,
            source=floor.source if floor else "ROCm/cvs rccl_lib.py: #wrong, out-of-bounds, missing average fail",
            source_kind=floor.source_kind if floor else SourceKind.VENDOR_SPEC,
            probe=PROBE_ID,
            probe_run_id=run.run_id,
        )
    if status in (Status.FAIL, Status.WARN):
        # Convicted with known-good partners (or a rack's uplink): the fault is in the fabric path.
        evidence.action, evidence.action_source = Remedy.INSPECT, MULTINODE_ACTION
    return Finding(
        check_id=CHECK_ID,
        family=Family.RCCL,
        status=status,
        subject=Subject(node=node),
        message=f"multi-node {COLLECTIVE}: {message}",
        evidence=evidence,
    )


def _explained(pool_run: _PoolRun, node: str, found: Conclusion) -> str | None:
    """Why ``node``'s failed runs are not its own: each had a node that also failed with another known-good
    partner (a run without ``node``). None when one is unexplained, or when it had no run at all."""
    runs = [
        record
        for trial, record, _ in pool_run.records
        if node in record.nodes and trial.purpose is not Purpose.ISOLATION
    ]
    if not runs or any(run.status not in _BAD for run in runs):
        return None
    blamed: list[str] = []
    for run in runs:
        named = [
            other
            for other in run.nodes
            if other in found.culprits
            and any(other in r.nodes and node not in r.nodes and r.status in _BAD for _, r, _ in pool_run.records)
        ]
        if not named:
            return None
        blamed += [n for n in named if n not in blamed]
    return f"its only runs were with {_names(blamed)}, named with another known-good partner too: not its fault"


def _findings(pool_run: _PoolRun, found: Conclusion, unjudged: list[str], ended: str) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}

    def add(node: str, status: Status, message: str, statuses: Iterable[Status]) -> None:
        latest = _latest(pool_run, node, statuses)
        run, floor = latest if latest else (None, None)
        out.setdefault(node, []).append(_finding(node, status, message, run, floor))

    bad = _BAD
    # Culprits always rest on a failed run (an unreadable one alone leaves a node unknown).
    for node, reason in _culprits(found, pool_run).items():
        add(node, Status.FAIL, reason, bad)
    for node, uplink in _behind_uplinks(pool_run).items():
        where = f"{uplink.label} {uplink.group}"
        if uplink.inside:
            message = f"behind the slow uplink of {where}: runs leaving the {uplink.label} fail, runs within it pass"
        else:
            # Not convicted of a NIC fault: no run inside its group could tell its NIC from the uplink.
            message = (
                f"behind the slow uplink of {where}: every failing run crossed it, and other nodes' runs across it "
                f"failed too; not convicted of a NIC fault (no known-good partner of {where} was free to test it "
                "inside)"
            )
        add(node, Status.WARN, message, bad)
    for node, why in found.unknown.items():
        add(node, Status.UNKNOWN, f"not judged: {why}", bad)
    behind = _behind_uplinks(pool_run)
    for node in dict.fromkeys([found.reference, *found.cleared]):
        if node in behind:
            continue  # WARN behind its group's slow uplink (above), never PASS
        unsettled = _unsettled(pool_run, node, found)
        if unsettled is not None and node not in found.culprits and node not in found.unknown:
            add(node, unsettled[0], unsettled[1], bad)
        elif node not in found.culprits and node not in found.unknown and _latest(pool_run, node, (Status.PASS,)):
            add(node, Status.PASS, "clean run with a known-good node", (Status.PASS,))
        elif node not in found.culprits and node not in found.unknown:
            # A reference whose only runs were with a node another known-good partner convicted too: the
            # second pass cleared it, as it clears a first-pass partner.
            explained = _explained(pool_run, node, found)
            if explained is not None:
                add(node, Status.PASS, explained, bad)
    for reference, member in found.suspect_paths:
        for node, other in ((reference, member), (member, reference)):
            message = f"failed with {other} though both pass with other nodes: check the network path between them"
            add(node, Status.WARN, message, bad)
    for group in found.unresolved:
        for node in group:
            add(node, Status.WARN, f"a run of {_names(list(group))} failed though each passed alone", bad)
    for node in unjudged:
        add(node, Status.UNKNOWN, f"not judged: the multi-node phase was {ended}", bad)
    return out


def _unsettled(pool_run: _PoolRun, node: str, found: Conclusion) -> tuple[Status, str] | None:
    """Why a node a paired mode cleared may not read PASS, or None. Reference pairing keeps its own rules.

    Every failed run of the node must be explained: by another node of it, named by runs without the node
    that failed the same way (``coverage.explained_by``), or by a named uplink it crossed whose runs failed
    the same way. A node must also have a clean run with a known-good partner off every named uplink, and,
    when the mode keeps its pairs inside a group, its group's way out must have been crossed by a clean run.
    """
    if not isinstance(pool_run.plan, PairPlan):
        return None
    records = _judged([record for _, record, _ in pool_run.records])
    good = frozenset(n for n in pool_run.plan.known_good if n not in found.culprits)
    for run in records:
        if node not in run.nodes or run.status is not Status.FAIL or pool_run.explained(run, node, found):
            continue
        others = _names([n for n in run.nodes if n != node])
        return Status.WARN, (
            f"#{run.seq} with {others} failed ({symptom(run)}), and no fault found elsewhere explains it, though "
            f"it passes with known-good nodes: check its links and the network path to {others}"
        )
    clean = [
        run
        for run in records
        if node in run.nodes
        and run.status is Status.PASS
        and any(n in good for n in run.nodes if n != node)
        and not pool_run._over_named_uplink(run.nodes)
    ]
    if not clean:
        return Status.UNKNOWN, "not judged: no clean run with a known-good partner off the slow uplinks the runs named"
    mode = pool_run.options.pairing
    if mode in GROUP_PASS_MODES:
        label = MODE_LABEL[mode]
        group = pool_run._label(node, label)
        if group in _untested_groups(pool_run):
            return Status.UNKNOWN, (
                f"not judged for the way out of {label} {group}: {mode.value} pairing keeps its pairs inside the "
                f"{label}, and no clean run of a known-good node left it (the uplink is untested)"
            )
    return None


def _untested_groups(pool_run: _PoolRun) -> list[str]:
    """Groups of the mode's label whose way out no clean run crossed and no run named, while there was a
    healthy group to reach (when every other node sits behind a named slow uplink, there was none)."""
    label = MODE_LABEL[pool_run.options.pairing]
    groups = pool_run._groups(label)
    nodes = pool_run.plan.nodes
    labelled = sorted({g for n in nodes if (g := groups.get(n)) is not None})
    records = _judged([record for _, record, _ in pool_run.records])
    done = covered_groups(records, groups) | {u.group for u in pool_run.racks.values() if u.label == label}
    behind = _behind_uplinks(pool_run)
    return [
        group
        for group in labelled
        if group not in done
        and not all(n in behind for n in nodes if groups.get(n) == group)
        and not all(n in behind for n in nodes if groups.get(n) not in (None, group))
    ]


def _uplink_explains(pool_run: _PoolRun, uplink: _Uplink, run: CollectiveRun, node: str) -> bool:
    """A named uplink explains ``run`` for ``node``: the run crossed it, and runs without ``node`` that
    convicted it failed the same way."""
    if not crosses(run.nodes, pool_run._groups(uplink.label), uplink.group):
        return False
    convicting = [r for _, r, _ in pool_run.records if r.seq in uplink.runs and node not in r.nodes]
    return any(symptom(r) is symptom(run) for r in convicting)


def coverage_of(pool_run: _PoolRun) -> str:
    """What the mode's runs tested in this pool, said once in the report (``PoolRuns.coverage``)."""
    mode = pool_run.options.pairing
    if mode not in GROUP_PASS_MODES:
        # Reference, random and across pairings cross the groups by design; the rack pass then names a rack.
        return (
            f"{mode.value} pairing: {MODE_PURPOSE[mode]}; runs cross racks and switches as the pairs fall, and a "
            "rack whose named nodes pass with each other has its uplink named (the rack pass)"
        )
    label = MODE_LABEL[mode]
    groups = pool_run._groups(label)
    labelled = sorted({g for n in pool_run.plan.nodes if (g := groups.get(n)) is not None})
    said = (
        f"{mode.value} pairing: {MODE_PURPOSE[mode]}, then the group pass (each {label}'s known-good node with "
        f"another {label}'s)"
    )
    if len(labelled) < 2:
        return f"{said}: one {label} only, no way out to test"
    untested = _untested_groups(pool_run)
    records = _judged([record for _, record, _ in pool_run.records])
    named = {u.group for u in pool_run.racks.values() if u.label == label}
    # Left untested and not said so: every node out of the group sits behind a named slow uplink.
    only_slow = [g for g in labelled if g not in covered_groups(records, groups) | named | set(untested)]
    tested = f"{said}: the way out of every {label} was tested"
    if only_slow:
        tested += f" or leads only to nodes behind a named slow uplink ({label} {', '.join(only_slow)})"
    if not untested:
        return tested
    return (
        f"{said}: not tested for {label} {', '.join(untested)} (no clean run left it; its nodes are not judged for it)"
    )


def refreshed(engine: SweepEngine, sweep: SweepResult, extra_s: float = 0.0) -> SweepResult:
    """``sweep`` with the verdicts and counts as they are after the multi-node findings joined them."""
    verdicts = {name: engine.verdicts[name] for name in sweep.verdicts}
    counts = {status: 0 for status in Status}
    for verdict in verdicts.values():
        counts[verdict.status] += 1
    duration = sweep.duration_s + extra_s
    summary = {"counts": {k.value: v for k, v in counts.items()}, "duration_s": duration}
    engine.writes.write("sweep end", lambda store: store.finish_sweep(sweep.sweep_id, sweep.outcome, summary))
    return dataclasses.replace(sweep, verdicts=verdicts, counts=counts, duration_s=duration)
