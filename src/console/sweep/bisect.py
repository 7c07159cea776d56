"""Planning multi-node collective runs that name the node behind a slow or failing collective.

Pure logic, no I/O: the runner (``console.sweep.multinode``) asks ``start()`` for the trials it may
launch now, runs them, and reports each one's outcome with ``finish()`` until ``done``.

A trial is one collective over a known-good *reference* node plus the *members* under test. The
plan follows ROCm/cvs's pairwise phase: the reference is the first node of the pool that passed its
own probes, and a member is admitted when its run with a known-good node is clean. Members are
first tried in groups of ``group_size`` (1: plain pairs); a group that fails is split in halves that
are rerun against a reference until single members remain. A single member that fails is tried
once more against a second known-good node (one that already passed with the reference):

* it fails again: the member is the culprit;
* it passes: the member is fine and the trouble lies on the path between it and the first reference
  (a *suspect path*); when two or more members of a pool fail only with the same reference, that
  reference is the culprit.

When no member passes at all, every failure shares one factor, the reference: the plan switches to
the next node that passed its own probes (the old reference is then tested like any member) or, when
there is none, names the reference and leaves the members unjudged.

Nodes admitted by a passing trial become references too (only those that passed their own probes,
``known_good``: a node whose own checks failed or could not be read is judged, never a partner), so
with ``max_parallel`` > 1 independent trials run side by side (a node is never in two trials at once:
a collective uses all its GPUs).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class Purpose(StrEnum):
    """Why a trial runs."""

    GROUP = "group"  # first run of members (a pair when group_size is 1)
    SPLIT = "split"  # half of a failed group
    CONFIRM = "confirm"  # a failed single member against a second known-good node
    RACK = "rack"  # two nodes named behind one rack, run with each other (``console.sweep.multinode``)
    PAIR = "pair"  # two untested nodes paired by a pairing mode (``console.sweep.pairing``)
    ISOLATION = "isolation"  # network-only (no GPU peer-to-peer): which layer a named node's fault is in
    UPLINK = (
        "uplink"  # a group's known-good node with another group's: the group's way out (``console.sweep.coverage``)
    )


class Outcome(StrEnum):
    """What a trial's collective showed."""

    PASS = "pass"
    FAIL = "fail"  # slow, corrupt, hung or crashed
    UNKNOWN = "unknown"  # could not be run or read (launch error, transport failure)


@dataclass(frozen=True)
class Trial:
    """One collective: ``reference`` plus ``members``, for ``purpose``."""

    reference: str
    members: tuple[str, ...]
    purpose: Purpose

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every node of the run, the reference first (it launches the collective)."""
        return (self.reference, *self.members)


@dataclass(frozen=True)
class _Pending:
    members: tuple[str, ...]
    purpose: Purpose
    avoid: frozenset[str] = frozenset()  # references this trial must not use


@dataclass
class Conclusion:
    """What the plan found out about a pool."""

    reference: str
    cleared: list[str] = field(default_factory=list)
    culprits: dict[str, str] = field(default_factory=dict)  # node -> how it was named
    unknown: dict[str, str] = field(default_factory=dict)  # node -> why it was not judged
    suspect_paths: list[tuple[str, str]] = field(default_factory=list)  # (reference, member)
    unresolved: list[tuple[str, ...]] = field(default_factory=list)  # groups that failed, members passing alone
    retired: list[str] = field(default_factory=list)  # references given up because every run with them failed


class Bisection:
    """The trial plan of one pool (see the module docstring)."""

    def __init__(
        self,
        references: Sequence[str],
        candidates: Sequence[str],
        *,
        group_size: int = 1,
        max_parallel: int = 1,
        borrowed: Sequence[str] = (),
        known_good: Sequence[str] | None = None,
    ) -> None:
        """``references``: nodes that passed their own probes, best first; ``candidates``: nodes to judge;
        ``borrowed``: nodes known-good by the pool's accepted baseline and not swept now, partners of a
        second opinion only when no node of this sweep can give one; ``known_good``: the candidates that
        passed their own checks, the only ones a clean run makes partners (None: every candidate, for a
        plan made without single-node verdicts)."""
        if not references:
            raise ValueError("a bisection needs at least one reference node")
        self._spares = list(dict.fromkeys(references))
        self._fit = frozenset(candidates if known_good is None else known_good) | frozenset(self._spares)
        self.borrowed = [n for n in dict.fromkeys(borrowed) if n not in self._spares and n not in candidates]
        self._nodes = list(dict.fromkeys([self._spares[0], *candidates]))
        self._group_size = max(1, group_size)
        self._max_parallel = max(1, max_parallel)
        self._running: dict[Trial, None] = {}
        self._retired: list[str] = []
        self._begin(self._spares.pop(0))

    # --- state of one reference epoch ----------------------------------------------------------

    def _begin(self, reference: str) -> None:
        self._reference = reference
        self._queue: deque[_Pending] = deque()
        self._cleared: list[str] = []
        self._culprits: dict[str, str] = {}
        self._unknown: dict[str, str] = {}
        self._paths: list[tuple[str, str]] = []
        self._first_failure: dict[str, str] = {}  # member -> reference it failed with
        self._failed_groups: list[Trial] = []
        members = [n for n in self._nodes if n != reference]
        size = self._group_size
        for start in range(0, len(members), size):
            self._queue.append(_Pending(tuple(members[start : start + size]), Purpose.GROUP))

    # --- the runner's interface ----------------------------------------------------------------

    @property
    def nodes(self) -> list[str]:
        """Every node the plan judges, the first reference included."""
        return list(self._nodes)

    @property
    def known_good(self) -> frozenset[str]:
        """Nodes that may partner a run: passed their own checks, or borrowed from the baseline."""
        return self._fit | frozenset(self.borrowed)

    @property
    def reference(self) -> str:
        """The reference node in use."""
        return self._reference

    @property
    def done(self) -> bool:
        """Every candidate is judged and nothing runs."""
        return not self._queue and not self._running

    def start(self) -> list[Trial]:
        """Trials to launch now; their nodes count as busy until ``finish``.

        With nothing running, an empty answer means the plan concluded (``done`` is then True).
        """
        trials = self._schedule()
        if not trials and not self._running and self._queue:
            # This sweep's own spare reference comes first (it passed its probes now); then the baseline.
            if self.borrowed and not (self._reference_is_common_factor() and self._spares):
                trials = self._schedule(borrow=True)
            if not trials:
                self._settle()
                trials = self._schedule()
        return trials

    def finish(self, trial: Trial, outcome: Outcome) -> None:
        """Record the outcome of a trial returned by ``start``."""
        del self._running[trial]
        if outcome is Outcome.PASS:
            self._passed(trial)
        elif len(trial.members) > 1:
            self._failed_groups.append(trial)
            half = (len(trial.members) + 1) // 2
            # Depth first, first half first: a culprit is named before other groups are started.
            for part in (trial.members[half:], trial.members[:half]):
                self._queue.appendleft(_Pending(part, Purpose.SPLIT))
        else:
            self._failed_single(trial, outcome)
        if not self._queue and not self._running:
            self._close_epoch()

    def conclusion(self) -> Conclusion:
        """What is known now (complete once ``done``)."""
        explained = set(self._culprits) | set(self._unknown) | {member for _, member in self._paths}
        unresolved = [
            t.members
            for t in self._failed_groups
            if t.reference not in self._culprits and not explained.intersection(t.members)
        ]
        return Conclusion(
            reference=self._reference,
            cleared=list(self._cleared),
            culprits=dict(self._culprits),
            unknown=dict(self._unknown),
            suspect_paths=list(self._paths),
            unresolved=unresolved,
            retired=list(self._retired),
        )

    # --- internals -----------------------------------------------------------------------------

    def _busy(self) -> set[str]:
        return {node for trial in self._running for node in trial.nodes}

    def _pick_reference(self, pending: _Pending, busy: set[str], borrow: bool = False) -> str | None:
        known_good = [self._reference, *(n for n in self._cleared if n in self._fit)]
        if pending.purpose is Purpose.CONFIRM:
            known_good = known_good[1:]  # a second opinion comes from a node admitted by the reference
        if borrow:
            known_good = self.borrowed
        for node in known_good:
            if node not in busy and node not in pending.avoid and node not in pending.members:
                return node
        return None

    def _schedule(self, borrow: bool = False) -> list[Trial]:
        trials: list[Trial] = []
        busy = self._busy()
        for pending in list(self._queue):
            if len(self._running) >= self._max_parallel:
                break
            if busy.intersection(pending.members):
                continue
            reference = self._pick_reference(pending, busy, borrow)
            if reference is None:
                continue
            self._queue.remove(pending)
            trial = Trial(reference, pending.members, pending.purpose)
            self._running[trial] = None
            busy.update(trial.nodes)
            trials.append(trial)
        return trials

    def _passed(self, trial: Trial) -> None:
        for member in trial.members:
            if trial.purpose is Purpose.CONFIRM:
                self._paths.append((self._first_failure.pop(member), member))
            self._cleared.append(member)

    def _failed_single(self, trial: Trial, outcome: Outcome) -> None:
        (member,) = trial.members
        if trial.purpose is Purpose.CONFIRM:
            first = self._first_failure.pop(member)
            if outcome is Outcome.FAIL:
                self._culprits[member] = f"failed with {first} and with {trial.reference}"
            else:
                self._culprits[member] = f"failed with {first}; the run with {trial.reference} could not be judged"
        elif outcome is Outcome.UNKNOWN:
            self._unknown[member] = f"the run with {trial.reference} could not be judged"
        else:
            self._first_failure[member] = trial.reference
            self._queue.append(_Pending((member,), Purpose.CONFIRM, frozenset({trial.reference})))

    def _settle(self) -> None:
        """Nothing runs and nothing queued can start: only confirmations wait, for a node none can give."""
        if self._reference_is_common_factor() and self._spares:
            self._retired.append(self._reference)
            self._begin(self._spares.pop(0))
            return
        if self._reference_is_common_factor():
            # No other node to test with: every failure shares one node, name that one.
            waiting = sorted(self._first_failure)
            self._culprits[self._reference] = f"every run with it failed ({', '.join(waiting)})"
            for member in waiting:
                self._unknown[member] = f"only tried with {self._reference}, which is at fault"
        else:
            for member, first in self._first_failure.items():
                self._culprits[member] = f"failed with {first} (no second known-good node to confirm)"
        self._first_failure.clear()
        self._queue.clear()
        self._close_epoch()

    def _reference_is_common_factor(self) -> bool:
        return not self._cleared and len(self._first_failure) >= 2

    def _close_epoch(self) -> None:
        """Two or more members failing only with the reference point at the reference itself."""
        by_reference: dict[str, list[str]] = {}
        for reference, member in self._paths:
            by_reference.setdefault(reference, []).append(member)
        for reference, members in by_reference.items():
            if len(members) >= 2:
                self._culprits[reference] = f"{', '.join(members)} failed with it but passed with other nodes"
                self._paths = [p for p in self._paths if p[0] != reference]
