"""Second-pass partners from the accepted baseline, and pairing by switch and rail labels (pure logic).

A node of a failed run is run again with a known-good node before it is named. When this sweep has none
free (a two-node sweep, or no pair passed), a node known-good by the pool's accepted baseline stands in.
"""

from __future__ import annotations

from collections.abc import Callable

from console.sweep.bisect import Bisection, Outcome, Purpose, Trial
from console.sweep.pairing import Pairing, PairPlan, first_pairs

NODES = [f"n{i}" for i in range(1, 9)]
SWITCHES = {n: ("sw1" if i < 4 else "sw2") for i, n in enumerate(NODES)}
RAILS = {n: ("railA" if i % 2 else "railB") for i, n in enumerate(NODES)}


def drive(plan: PairPlan | Bisection, outcome: Callable[[Trial], Outcome]) -> list[Trial]:
    ran: list[Trial] = []
    while not plan.done:
        trials = plan.start()
        if not trials:
            break
        ran += trials
        for trial in trials:
            plan.finish(trial, outcome(trial))
    return ran


def test_switch_pairs_stay_inside_a_switch_across_switch_pairs_span_two_and_rail_pairs_share_a_rail() -> None:
    inside, left = first_pairs(NODES, SWITCHES, Pairing.SWITCH, seed=1)
    assert left == [] and all(SWITCHES[a] == SWITCHES[b] for a, b in inside)
    across, _ = first_pairs(NODES, SWITCHES, Pairing.ACROSS_SWITCHES, seed=1)
    assert all(SWITCHES[a] != SWITCHES[b] for a, b in across)
    rail, _ = first_pairs(NODES, RAILS, Pairing.RAIL, seed=1)
    assert all(RAILS[a] == RAILS[b] for a, b in rail)
    assert sorted(n for pair in rail for n in pair) == sorted(NODES)


def test_a_failed_pair_with_no_known_good_node_in_the_sweep_borrows_from_the_baseline() -> None:
    bad = "n2"

    def outcome(trial: Trial) -> Outcome:
        return Outcome.FAIL if bad in trial.nodes else Outcome.PASS

    alone = PairPlan(["n1", "n2"], SWITCHES, Pairing.SWITCH)
    drive(alone, outcome)
    assert set(alone.conclusion().unknown) == {"n1", "n2"} and not alone.conclusion().culprits
    plan = PairPlan(["n1", "n2"], SWITCHES, Pairing.SWITCH, borrowed=["n7", "n3", "n1"])
    assert plan.borrowed == ["n7", "n3"]  # a node under test is never its own partner
    ran = drive(plan, outcome)
    second = [t for t in ran if t.purpose is Purpose.CONFIRM]
    # Both nodes of the failed pair run again, one at a time, with the baseline node of their own switch.
    assert sorted((t.reference, t.members) for t in second) == [("n3", ("n1",)), ("n3", ("n2",))]
    found = plan.conclusion()
    assert list(found.culprits) == [bad] and found.culprits[bad] == "failed with n1 and with n3"
    assert "n1" in [found.reference, *found.cleared] and not found.unknown


def test_the_baseline_is_borrowed_only_when_the_sweep_has_no_known_good_node_free() -> None:
    plan = PairPlan(NODES, SWITCHES, Pairing.SWITCH, seed=3, max_parallel=4, borrowed=["x1"])
    ran = drive(plan, lambda t: Outcome.FAIL if "n5" in t.nodes else Outcome.PASS)
    assert "x1" not in {n for t in ran for n in t.nodes}
    confirm = [t for t in ran if t.purpose is Purpose.CONFIRM]
    # The second pass picks a cleared node of the node's own switch: the run tests the node, not the uplink.
    assert confirm and all(SWITCHES[t.reference] == SWITCHES[t.members[0]] for t in confirm)
    assert list(plan.conclusion().culprits) == ["n5"]


def test_reference_bisection_confirms_with_a_baseline_node_when_the_sweep_has_no_second_one() -> None:
    def outcome(trial: Trial) -> Outcome:
        return Outcome.FAIL if "n2" in trial.nodes else Outcome.PASS

    without = Bisection(["n1"], ["n1", "n2"])
    drive(without, outcome)
    assert without.conclusion().culprits == {"n2": "failed with n1 (no second known-good node to confirm)"}
    plan = Bisection(["n1"], ["n1", "n2"], borrowed=["n9"])
    ran = drive(plan, outcome)
    assert [(t.reference, t.members, t.purpose) for t in ran] == [
        ("n1", ("n2",), Purpose.GROUP),
        ("n9", ("n2",), Purpose.CONFIRM),
    ]
    assert plan.conclusion().culprits == {"n2": "failed with n1 and with n9"}
    # A third node of the sweep that passed gives the second opinion: no baseline node is needed.
    plan = Bisection(["n1"], ["n1", "n2", "n3"], borrowed=["n9"])
    ran = drive(plan, outcome)
    assert "n9" not in {n for t in ran for n in t.nodes}
    assert plan.conclusion().culprits == {"n2": "failed with n1 and with n3"}
