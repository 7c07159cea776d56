"""The bisection planner against fake oracles: who gets named, how many runs it takes, and its invariants."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.sweep.bisect import Bisection, Conclusion, Outcome, Purpose, Trial

Oracle = Callable[[Trial], Outcome]


def nodes(count: int) -> list[str]:
    return [f"n{i:02d}" for i in range(count)]


def bad_nodes(*bad: str) -> Oracle:
    """A collective fails when any node in it is bad."""
    return lambda trial: Outcome.FAIL if set(bad).intersection(trial.nodes) else Outcome.PASS


def drive(plan: Bisection, oracle: Oracle, limit: int = 500) -> list[Trial]:
    """Run the plan to the end, checking that no node is ever in two running trials."""
    log: list[Trial] = []
    while not plan.done:
        batch = plan.start()
        assert batch or plan.done, "with nothing running, a plan must offer a trial or conclude"
        seen = [n for trial in batch for n in trial.nodes]
        assert len(seen) == len(set(seen)), f"a node is in two trials at once: {batch}"
        for trial in batch:
            log.append(trial)
            plan.finish(trial, oracle(trial))
        assert len(log) < limit
    return log


def run(candidates: int, oracle: Oracle, **kwargs: int) -> tuple[Conclusion, list[Trial]]:
    names = nodes(candidates + 1)
    plan = Bisection(names[:1], names[1:], **kwargs)
    log = drive(plan, oracle)
    return plan.conclusion(), log


def test_pairs_name_the_bad_node_confirmed_by_a_second_reference() -> None:
    found, log = run(5, bad_nodes("n03"))
    assert found.culprits == {"n03": "failed with n00 and with n01"}
    assert sorted(found.cleared) == ["n01", "n02", "n04", "n05"]
    assert [t.nodes for t in log if t.purpose is Purpose.GROUP] == [("n00", f"n0{i}") for i in range(1, 6)]
    confirm = [t for t in log if t.purpose is Purpose.CONFIRM]
    assert confirm == [Trial("n01", ("n03",), Purpose.CONFIRM)]


def test_healthy_pool_is_cleared_in_one_run_per_node() -> None:
    found, log = run(7, bad_nodes())
    assert found.culprits == {} and found.unknown == {} and len(found.cleared) == 7
    assert len(log) == 7 and all(t.reference == "n00" for t in log)


def test_group_bisection_takes_logarithmic_runs() -> None:
    found, log = run(16, bad_nodes("n11"), group_size=16)
    assert found.culprits == {"n11": "failed with n00 and with n01"}
    assert len(found.cleared) == 15
    # 1 group + 2 halves per level (log2 16 = 4 levels) + 1 confirmation
    assert len(log) == 1 + 2 * 4 + 1
    assert all(t.reference == "n00" for t in log if t.purpose is not Purpose.CONFIRM)


def test_two_bad_nodes_in_one_group_are_both_named() -> None:
    found, _ = run(8, bad_nodes("n02", "n07"), group_size=4)
    assert set(found.culprits) == {"n02", "n07"}
    assert sorted(found.cleared) == ["n01", "n03", "n04", "n05", "n06", "n08"]


def test_bad_reference_is_replaced_and_named() -> None:
    names = nodes(5)
    plan = Bisection(["n00", "n02"], names[1:])
    log = drive(plan, bad_nodes("n00"))
    found = plan.conclusion()
    assert found.retired == ["n00"] and found.reference == "n02"
    assert found.culprits == {"n00": "failed with n02 and with n01"}  # tested like any member
    assert sorted(found.cleared) == ["n01", "n03", "n04"]
    assert Trial("n02", ("n00",), Purpose.GROUP) in log


def test_bad_reference_without_a_spare_is_named_and_the_others_left_unjudged() -> None:
    found, _ = run(3, bad_nodes("n00"))
    assert list(found.culprits) == ["n00"]
    assert set(found.unknown) == {"n01", "n02", "n03"}


def test_a_member_failing_only_with_the_reference_is_a_suspect_path() -> None:
    found, _ = run(4, lambda t: Outcome.FAIL if set(t.nodes) == {"n00", "n02"} else Outcome.PASS)
    assert found.culprits == {}
    assert found.suspect_paths == [("n00", "n02")]
    assert "n02" in found.cleared


def test_two_members_failing_only_with_the_reference_name_the_reference() -> None:
    found, _ = run(5, lambda t: Outcome.FAIL if "n00" in t.nodes and {"n02", "n04"} & set(t.nodes) else Outcome.PASS)
    assert list(found.culprits) == ["n00"]
    assert found.suspect_paths == []


def test_a_group_failing_only_together_is_unresolved() -> None:
    found, _ = run(4, lambda t: Outcome.FAIL if {"n01", "n02"} <= set(t.nodes) else Outcome.PASS, group_size=4)
    assert found.culprits == {} and found.unresolved == [("n01", "n02", "n03", "n04"), ("n01", "n02")]


def test_two_node_pool_names_the_member_unconfirmed() -> None:
    found, log = run(1, bad_nodes("n01"))
    assert found.culprits == {"n01": "failed with n00 (no second known-good node to confirm)"}
    assert len(log) == 1


def test_unknown_single_run_is_unknown_and_not_retried() -> None:
    found, log = run(3, lambda t: Outcome.UNKNOWN if "n02" in t.members else Outcome.PASS)
    assert found.unknown == {"n02": "the run with n00 could not be judged"}
    assert len(log) == 3


def test_parallel_trials_use_admitted_nodes_as_references() -> None:
    found, log = run(7, bad_nodes(), max_parallel=4)
    assert len(found.cleared) == 7
    assert {t.reference for t in log} - {"n00"}, "admitted nodes must serve as references"


def test_needs_a_reference() -> None:
    with pytest.raises(ValueError, match="reference"):
        Bisection([], ["a"])


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(1, 24),
    bad=st.sets(st.integers(1, 24), max_size=4),
    group=st.integers(1, 9),
    parallel=st.integers(1, 4),
)
def test_every_bad_member_is_named_and_only_bad_ones(count: int, bad: set[int], group: int, parallel: int) -> None:
    names = nodes(count + 1)
    bad_names = {names[i] for i in bad if i <= count}
    found, _ = run(count, bad_nodes(*bad_names), group_size=group, max_parallel=parallel)
    good = set(names[1:]) - bad_names
    if good:
        assert set(found.culprits) == bad_names
        assert set(found.cleared) == good
    else:
        # Nobody passes: with no spare reference the common factor is the reference itself.
        assert set(found.culprits) | set(found.unknown) >= bad_names
    assert not found.unresolved and not found.suspect_paths
