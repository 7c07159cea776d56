"""Pairing modes of the multi-node phase: which two nodes run together first, and the plan that follows.

``reference`` (the default) is ``console.sweep.bisect``: every node with one known-good node, one run
at a time per pool. The other modes pair the nodes with each other, so a pool's first pass runs side
by side (cluster-health-scanner's pairwise NCCL test):

* ``random``: shuffled with a seed (the same seed gives the same pairs);
* ``rack``: within each rack (the cluster file's ``rack`` label), the odd ones out paired across;
* ``across``: every pair spans two racks, where the racks allow it;
* ``switch`` / ``across-switches``: the same on the ``switch`` label (the leaf switch a node hangs from);
* ``rail``: rail-aligned pairs, within each rail group (the ``rail`` label: the set of rail switches, one
  per NIC position, that a node's NICs attach to), so NIC k of one node reaches NIC k of the other
  through one switch.

A mode whose label a node lacks groups that node with the others lacking it (``TopologyPlan.missing``
says which). When no node of this sweep is free to be the known-good partner of a second pass (none
passed, or none is left), ``borrowed`` nodes, known-good by the pool's accepted baseline, stand in.

Only a node that passed its own single-node checks (``known_good``) or a borrowed one ever partners a
second pass, is the pool's reference, or clears anyone: a clean pair with a node whose own checks
FAILed (or could not be read) says nothing about the other node, which then runs again with a known-good
one. A node that failed its own checks is still paired and judged (its own fault may not be the fabric's).

Neither node of a first pair is known to be good, so a pair that fails says only that one of the two
(or the path between them) is at fault. The second pass runs each of them with a node cleared by a
passing pair: failing again names it; both passing leaves the first path suspect. Pure logic, with the
interface of ``Bisection`` (``start`` / ``finish`` / ``done`` / ``conclusion``), run by the same runner.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from console.sweep.bisect import Conclusion, Outcome, Purpose, Trial


class Pairing(StrEnum):
    """How the first pass pairs the nodes of a pool."""

    REFERENCE = "reference"
    RANDOM = "random"
    RACK = "rack"
    ACROSS = "across"
    SWITCH = "switch"
    ACROSS_SWITCHES = "across-switches"
    RAIL = "rail"


# The topology label each mode groups by (the cluster file's node labels), and whether its pairs stay
# inside a group (within) or span two (across).
MODE_LABEL: dict[Pairing, str] = {
    Pairing.RACK: "rack",
    Pairing.ACROSS: "rack",
    Pairing.SWITCH: "switch",
    Pairing.ACROSS_SWITCHES: "switch",
    Pairing.RAIL: "rail",
}
_ACROSS = frozenset({Pairing.ACROSS, Pairing.ACROSS_SWITCHES})
# What a mode looks for, said with its findings ("which mode found what").
MODE_PURPOSE: dict[Pairing, str] = {
    Pairing.REFERENCE: "each node with a known-good node of the pool",
    Pairing.RANDOM: "random pairs",
    Pairing.RACK: "pairs within a rack",
    Pairing.ACROSS: "pairs across racks",
    Pairing.SWITCH: "pairs within a switch",
    Pairing.ACROSS_SWITCHES: "pairs across switches",
    Pairing.RAIL: "rail-aligned pairs within a rail group",
}


def first_pairs(
    nodes: Sequence[str], racks: Mapping[str, str | None], mode: Pairing, seed: int
) -> tuple[list[tuple[str, str]], list[str]]:
    """The first pass's pairs and the node left over (an odd count), for ``mode`` with ``seed``.

    ``racks`` maps each node to its value of the mode's label (``MODE_LABEL``: rack, switch or rail)."""
    rng = random.Random(f"pairing:{mode.value}:{seed}")
    order = list(nodes)
    rng.shuffle(order)
    if mode in MODE_LABEL and mode not in _ACROSS:
        by_rack: dict[str | None, list[str]] = {}
        for node in order:
            by_rack.setdefault(racks.get(node), []).append(node)
        pairs: list[tuple[str, str]] = []
        odd: list[str] = []
        for members in by_rack.values():
            pairs += list(zip(members[0::2], members[1::2], strict=False))
            if len(members) % 2:
                odd.append(members[-1])
        return pairs + list(zip(odd[0::2], odd[1::2], strict=False)), odd[len(odd) - len(odd) % 2 :]
    if mode in _ACROSS:
        # Deal the nodes out rack by rack, largest rack first: neighbours then come from different racks.
        by_rack = {}
        for node in order:
            by_rack.setdefault(racks.get(node), []).append(node)
        queues = sorted(by_rack.values(), key=len, reverse=True)
        dealt: list[str] = []
        while any(queues):
            for queue in queues:
                if queue:
                    dealt.append(queue.pop(0))
        order = dealt
    return list(zip(order[0::2], order[1::2], strict=False)), order[len(order) - len(order) % 2 :]


def opening_pair(
    nodes: Sequence[str], groups: Mapping[str, str | None], mode: Pairing, seed: int
) -> tuple[str, str] | None:
    """The first run ``PairPlan`` starts for these nodes (its first node launches it), or None (one node).

    The confirm dialog shows it before any GPU is taken; the run draws the same pair when every node
    is reached, since the pairs depend only on the nodes, their labels, the mode and the seed."""
    pairs, _ = first_pairs(nodes, groups, mode, seed)
    return pairs[0] if pairs else None


@dataclass(frozen=True)
class _Job:
    node: str
    partner: str  # the node it failed with (or, for a leftover, "")
    purpose: Purpose


class PairPlan:
    """Pairs of untested nodes first, then a second pass for each node of a failed pair (module docstring)."""

    def __init__(
        self,
        candidates: Sequence[str],
        racks: Mapping[str, str | None],
        mode: Pairing,
        *,
        seed: int = 0,
        max_parallel: int = 1,
        borrowed: Sequence[str] = (),
        known_good: Sequence[str] | None = None,
    ) -> None:
        """``known_good``: the candidates that passed their own single-node checks this sweep (None: every
        candidate, for a plan made without single-node verdicts)."""
        self._nodes = list(dict.fromkeys(candidates))
        # Nodes fit to clear others: passed their own checks; a failed or unread one never vouches for anyone.
        self._fit = frozenset(self._nodes if known_good is None else known_good)
        # Known-good by the accepted baseline, not swept now: partners only when this sweep has none free.
        self.borrowed = [n for n in dict.fromkeys(borrowed) if n not in self._nodes]
        self._max_parallel = max(1, max_parallel)
        self._groups = dict(racks)
        pairs, left = first_pairs(self._nodes, racks, mode, seed)
        self._first: deque[Trial] = deque(Trial(a, (b,), Purpose.PAIR) for a, b in pairs)
        self._waiting: deque[_Job] = deque(_Job(node, "", Purpose.GROUP) for node in left)
        self._running: dict[Trial, None] = {}
        self._partner: dict[Trial, str] = {}  # a second-pass trial -> the node its member failed with
        self._cleared: list[str] = []
        self._culprits: dict[str, str] = {}
        self._unknown: dict[str, str] = {}
        self._confirmed: dict[str, str] = {}  # node -> the partner it failed with, then passed without
        self._paths: list[tuple[str, str]] = []

    @property
    def nodes(self) -> list[str]:
        """Every node the plan judges."""
        return list(self._nodes)

    @property
    def known_good(self) -> frozenset[str]:
        """Nodes that may partner a second pass: passed their own checks, or borrowed from the baseline."""
        return self._fit | frozenset(self.borrowed)

    @property
    def reference(self) -> str:
        """The first known-good node a clean run cleared (the pool's reference), else the first known-good
        node, else the first node (a pool with no known-good node runs no pair at all)."""
        fit = [n for n in self._cleared if n in self._fit] or [n for n in self._nodes if n in self._fit]
        return fit[0] if fit else self._nodes[0]

    @property
    def done(self) -> bool:
        """Every node is judged and nothing runs."""
        return not self._first and not self._waiting and not self._running

    def start(self) -> list[Trial]:
        """Trials to launch now (nodes of a running trial are busy until ``finish``)."""
        busy = {node for trial in self._running for node in trial.nodes}
        trials: list[Trial] = []
        while self._first and len(self._running) < self._max_parallel:
            trial = self._first.popleft()
            self._running[trial] = None
            busy.update(trial.nodes)
            trials.append(trial)
        for job in list(self._waiting):
            if len(self._running) >= self._max_parallel:
                break
            free = [n for n in self._cleared if n in self._fit and n not in busy and n != job.partner]
            good = self._partner_for(job, free or self._unproven(job, busy))
            if good is None or job.node in busy:
                continue
            trials.append(self._start(job, good, busy))
        if not trials and not self._running and not self._first and self._waiting:
            trials = self._borrow(busy)
            if not trials:
                self._settle()
        return trials

    def _unproven(self, job: _Job, busy: set[str]) -> list[str]:
        """Nodes that passed their own checks and every run so far, but only with a node unfit to clear
        them: partners when no cleared one is free, as reference pairing's reference is (its own checks)."""
        return [
            other.node
            for other in self._waiting
            if other.purpose is Purpose.GROUP
            and other.partner
            and other.node in self._fit
            and other.node not in busy
            and other.node not in (job.node, job.partner)
        ]

    def _start(self, job: _Job, good: str, busy: set[str]) -> Trial:
        """Run ``job``'s node with the known-good ``good`` now: it leaves the queue, its nodes are busy."""
        self._waiting.remove(job)
        trial = Trial(good, (job.node,), job.purpose)
        self._running[trial] = None
        self._partner[trial] = job.partner
        busy.update(trial.nodes)
        return trial

    def _partner_for(self, job: _Job, free: list[str]) -> str | None:
        """A known-good partner for ``job``, of its own group (rack, switch or rail) when one is free: a
        run that stays inside the group tests the node, not the way out of the group."""
        group = self._groups.get(job.node)
        same = [n for n in free if group is not None and self._groups.get(n) == group]
        return next(iter(same or free), None)

    def _borrow(self, busy: set[str]) -> list[Trial]:
        """Second-pass runs with baseline nodes: nothing runs and no node of this sweep can partner."""
        trials: list[Trial] = []
        for job in list(self._waiting):
            if len(self._running) >= self._max_parallel:
                break
            good = self._partner_for(job, [n for n in self.borrowed if n not in busy])
            if good is None or job.node in busy:
                continue
            trials.append(self._start(job, good, busy))
        return trials

    def finish(self, trial: Trial, outcome: Outcome) -> None:
        """Record the outcome of a trial returned by ``start``."""
        del self._running[trial]
        if trial.purpose is Purpose.PAIR:
            a, (b,) = trial.reference, trial.members
            if outcome is Outcome.PASS:
                # A clean pair clears each node only by a partner fit to vouch for it; the other runs again
                # with a known-good node (a plain first run, not a second opinion: nothing failed).
                for node, other in ((a, b), (b, a)):
                    if other in self._fit:
                        self._cleared.append(node)
                    else:
                        self._waiting.append(_Job(node, other, Purpose.GROUP))
            else:
                # Either may be at fault: each runs again with a node a clean pair cleared.
                self._waiting += [_Job(a, b, Purpose.CONFIRM), _Job(b, a, Purpose.CONFIRM)]
            return
        (node,) = trial.members
        if outcome is Outcome.PASS:
            self._vouched(trial.reference)
        if trial.purpose is Purpose.GROUP:  # a leftover with a known-good node: a plain first run
            self._partner.pop(trial, None)
            if outcome is Outcome.PASS:
                self._cleared.append(node)
            elif outcome is Outcome.FAIL:
                self._waiting.append(_Job(node, trial.reference, Purpose.CONFIRM))
            else:
                self._unknown[node] = f"the run with {trial.reference} could not be judged"
            return
        first = self._partner.pop(trial, "")
        if outcome is Outcome.PASS:
            self._cleared.append(node)
            if first and self._confirmed.get(first) == node:
                self._paths.append((first, node))  # both pass with others: the path between them
            self._confirmed[node] = first
        elif outcome is Outcome.FAIL:
            self._culprits[node] = f"failed with {first} and with {trial.reference}"
        else:
            self._unknown[node] = f"failed with {first}; the run with {trial.reference} could not be judged"

    def conclusion(self) -> Conclusion:
        """What is known now (complete once ``done``)."""
        cleared = [n for n in self._cleared if n != self.reference]
        return Conclusion(
            reference=self.reference,
            cleared=cleared,
            culprits=dict(self._culprits),
            unknown=dict(self._unknown),
            suspect_paths=list(self._paths),
        )

    # --- internals -----------------------------------------------------------------------------

    def _vouched(self, partner: str) -> None:
        """An unproven partner (``_unproven``) that ran clean with a node now cleared is cleared by that run."""
        for job in list(self._waiting):
            if job.node == partner and job.purpose is Purpose.GROUP and job.partner:
                self._waiting.remove(job)
                self._cleared.append(partner)

    def _settle(self) -> None:
        """Nothing runs and no clean pair cleared a node to confirm with: say so for each node left."""
        for job in self._waiting:
            if job.purpose is Purpose.GROUP and job.partner:
                self._unknown[job.node] = (
                    f"passed only with {job.partner}, whose own checks did not pass; no known-good node was free "
                    "to run with it"
                )
                continue
            why = f"failed with {job.partner}" if job.partner else "never ran"
            self._unknown[job.node] = f"{why}; no pair passed, so no known-good node to tell which node is at fault"
        self._waiting.clear()
