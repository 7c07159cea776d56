"""What the runs of a paired mode covered, and what explains a failed run: pure logic over finished runs.

A pairing mode that keeps its pairs inside a group (rack, switch or rail) never crosses the group's way
out, so its runs alone cannot pass a slow uplink. The group pass (``group_ring``) runs each group's
known-good representative with the next group's, then a group still open with groups a clean run proved: a
group with no clean run, slow with two proven groups, has a slow way out (``ring_named``); a group no clean
run ever left is not covered, and its nodes are not judged for it (``covered_groups``).

In a first pass neither node is known to be good, so the second pass clears a node when its partner is
named. That holds only when the partner's fault explains the failed run (``explained_by``): a node slow
with every partner explains a slow run, not a run that broke with a network error, which is the mark
of a flaky link on the other node (docs/sources/rccl.md#paired-modes-the-group-pass-and-explained-failures).
``console.sweep.multinode`` runs what this plans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum

from console.model.findings import Status
from console.model.multinode import CollectiveRun
from console.sweep.collective import SLOW_REASON


class Symptom(StrEnum):
    """How a run failed: what a fault must also cause to explain it."""

    SLOW = "slow"  # ran to the end with busbw under the floor (a slow NIC, a slow uplink)
    WRONG = "wrong"  # wrong elements in the result
    BROKEN = "broken"  # no result: a network error, a crash or a hang


def symptom(run: CollectiveRun) -> Symptom | None:
    """How ``run`` failed; None when it did not FAIL (a PASS, or an UNKNOWN that could not be run or read)."""
    if run.status is not Status.FAIL:
        return None
    if run.wrong:
        return Symptom.WRONG
    # Only a run that finished clean and under its floor is judged "busbw X < floor" (``collective.judge``); a
    # broken one may still carry the busbw of the last row it printed, so the busbw alone does not tell.
    slow = run.busbw_gbps is not None and run.reason.startswith(SLOW_REASON)
    return Symptom.SLOW if slow else Symptom.BROKEN


def crosses(nodes: Iterable[str], groups: Mapping[str, str | None], group: str) -> bool:
    """Some of ``nodes`` are in ``group`` and some are not: the run went through the group's way out."""
    inside = [groups.get(node) == group for node in nodes]
    return any(inside) and not all(inside)


def group_ring(representatives: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The group pass's runs for ``(group, representative)`` in order: each representative with the next
    group's, around the ring, so each group's way out is crossed twice and a run's two ends can be told
    apart; two groups give one run (it cannot say which of the two is slow)."""
    reps = [rep for _, rep in representatives]
    if len(reps) < 2:
        return []
    if len(reps) == 2:
        return [(reps[0], reps[1])]
    return [(reps[i], reps[(i + 1) % len(reps)]) for i in range(len(reps))]


def proven(results: Sequence[tuple[str, str, bool]]) -> set[str]:
    """Groups a clean run of the group pass left or entered: their way out is fine."""
    return {g for a, b, ok in results if ok for g in (a, b)}


def wanted_runs(group: str, results: Sequence[tuple[str, str, bool]]) -> int:
    """How many more slow runs with proven groups would name ``group`` (0: named, or proven)."""
    good = proven(results)
    if group in good:
        return 0
    slow_with = {b if a == group else a for a, b, ok in results if not ok and group in (a, b)} & good
    # A clean run proves both its ends, so anything proven is two groups; with none, either end of a slow
    # run may be the slow one, and more runs would not tell.
    return max(0, 2 - len(slow_with)) if good else 1


def ring_named(results: Sequence[tuple[str, str, bool]]) -> list[str]:
    """Groups whose way out the group pass names, from ``(group, other group, passed)`` per slow or clean run:
    no clean run, and slow with two groups a clean run proved. Each of those runs then explains the other's
    failure for its proven end; with nothing proven nothing is named (either end of a slow run may be the
    slow one)."""
    groups = {g for a, b, _ in results for g in (a, b)}
    good = proven(results)
    return sorted(
        g
        for g in groups
        if g not in good and wanted_runs(g, results) == 0 and any(not ok and g in (a, b) for a, b, ok in results)
    )


def covered_groups(runs: Iterable[CollectiveRun], groups: Mapping[str, str | None]) -> set[str]:
    """Groups whose way out a clean run crossed: a slow uplink slows every run through it."""
    covered: set[str] = set()
    for run in runs:
        if run.status is Status.PASS and run.purpose != "isolation":
            covered |= {g for n in run.nodes if (g := groups.get(n)) is not None and crosses(run.nodes, groups, g)}
    return covered


def explained_by(
    run: CollectiveRun, node: str, named: Mapping[str, Sequence[CollectiveRun]], fit: frozenset[str]
) -> str | None:
    """The other node of ``run`` whose fault explains its failure for ``node``: a node named by runs without
    ``node``, one of them with a known-good (``fit``) partner, failing the same way. None when none does."""
    wanted = symptom(run)
    if wanted is None:
        return None
    for other in run.nodes:
        if other == node or other not in named:
            continue
        if any(
            node not in r.nodes and symptom(r) is wanted and any(n in fit for n in r.nodes if n != other)
            for r in named[other]
        ):
            return other
    return None
