"""Pairing modes of the multi-node phase (pure logic): which pairs run first, and the second pass."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from console.sweep.bisect import Outcome, Purpose, Trial
from console.sweep.pairing import Pairing, PairPlan, first_pairs

NODES = [f"n{i}" for i in range(1, 9)]
RACKS = {n: ("r1" if i < 4 else "r2") for i, n in enumerate(NODES)}


def drive(plan: PairPlan, outcome: Callable[[Trial], Outcome]) -> list[Trial]:
    """Run the plan to its end, answering each trial with ``outcome``; the trials in launch order."""
    ran: list[Trial] = []
    while not plan.done:
        trials = plan.start()
        if not trials:
            break
        ran += trials
        for trial in trials:
            plan.finish(trial, outcome(trial))
    return ran


def test_random_pairs_follow_the_seed_and_cover_every_node_once() -> None:
    pairs, left = first_pairs(NODES, RACKS, Pairing.RANDOM, seed=7)
    again, _ = first_pairs(NODES, RACKS, Pairing.RANDOM, seed=7)
    other, _ = first_pairs(NODES, RACKS, Pairing.RANDOM, seed=8)
    assert pairs == again and pairs != other and left == []
    assert sorted(n for pair in pairs for n in pair) == sorted(NODES)
    _, odd = first_pairs(NODES[:7], RACKS, Pairing.RANDOM, seed=7)
    assert len(odd) == 1


def test_rack_pairs_stay_inside_racks_and_across_pairs_span_them() -> None:
    inside, left = first_pairs(NODES, RACKS, Pairing.RACK, seed=1)
    assert left == [] and all(RACKS[a] == RACKS[b] for a, b in inside)
    across, left = first_pairs(NODES, RACKS, Pairing.ACROSS, seed=1)
    assert left == [] and all(RACKS[a] != RACKS[b] for a, b in across)
    assert sorted(n for pair in across for n in pair) == sorted(NODES)
    # Three nodes in one rack: the odd one pairs with the other rack's odd one.
    uneven = {**RACKS, "n5": "r1"}
    inside, left = first_pairs(NODES, uneven, Pairing.RACK, seed=1)
    assert left == [] and sum(1 for a, b in inside if uneven[a] != uneven[b]) == 1


def test_the_first_pass_runs_side_by_side_then_the_bad_node_is_named_and_its_partner_cleared() -> None:
    plan = PairPlan(NODES, RACKS, Pairing.RANDOM, seed=3, max_parallel=4)
    first = plan.start()
    assert len(first) == 4 and all(t.purpose is Purpose.PAIR for t in first)
    bad = "n5"
    partner = next(t for t in first if bad in t.nodes)
    for trial in first:
        plan.finish(trial, Outcome.FAIL if bad in trial.nodes else Outcome.PASS)
    ran = drive(plan, lambda t: Outcome.FAIL if bad in t.nodes else Outcome.PASS)
    # Second pass: each node of the failed pair with a node a clean pair cleared (never with each other).
    assert sorted(t.members[0] for t in ran) == sorted(partner.nodes)
    assert all(t.purpose is Purpose.CONFIRM and t.reference not in partner.nodes for t in ran)
    found = plan.conclusion()
    other = next(n for n in partner.nodes if n != bad)
    assert list(found.culprits) == [bad] and found.culprits[bad].startswith(f"failed with {other} and with ")
    assert other in [found.reference, *found.cleared] and not found.unknown and not found.suspect_paths
    assert sorted([found.reference, *found.cleared]) == sorted(set(NODES) - {bad})


def test_both_nodes_passing_the_second_pass_leave_their_path_suspect() -> None:
    plan = PairPlan(NODES, RACKS, Pairing.RANDOM, seed=3, max_parallel=4)
    first = plan.start()
    broken = first[0]
    for trial in first:
        plan.finish(trial, Outcome.FAIL if trial == broken else Outcome.PASS)
    drive(plan, lambda t: Outcome.PASS)
    found = plan.conclusion()
    assert found.culprits == {} and len(found.suspect_paths) == 1
    assert sorted(found.suspect_paths[0]) == sorted(broken.nodes)


def test_no_clean_pair_leaves_every_node_unknown_never_pass() -> None:
    plan = PairPlan(NODES[:4], RACKS, Pairing.RANDOM, seed=3, max_parallel=2)
    drive(plan, lambda t: Outcome.FAIL)
    found = plan.conclusion()
    assert plan.done and found.cleared == [] and sorted(found.unknown) == sorted(NODES[:4])
    assert all("no known-good node" in why for why in found.unknown.values())


@pytest.mark.parametrize("mode", [Pairing.RANDOM, Pairing.RACK, Pairing.ACROSS])
def test_an_odd_node_runs_with_a_cleared_node(mode: Pairing) -> None:
    plan = PairPlan(NODES[:5], RACKS, mode, seed=2, max_parallel=4)
    ran = drive(plan, lambda t: Outcome.PASS)
    assert [t.purpose for t in ran].count(Purpose.PAIR) == 2 and [t.purpose for t in ran][-1] is Purpose.GROUP
    found = plan.conclusion()
    assert sorted([found.reference, *found.cleared]) == NODES[:5]
