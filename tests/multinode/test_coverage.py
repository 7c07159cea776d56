"""The pure rules of the paired modes' group pass and explained failures (``console.sweep.coverage``)."""

from __future__ import annotations

import pytest

from console.model.findings import Status
from console.model.multinode import CollectiveRun
from console.sweep.coverage import (
    Symptom,
    covered_groups,
    crosses,
    explained_by,
    group_ring,
    ring_named,
    symptom,
    wanted_runs,
)

GROUPS = {"a1": "r1", "a2": "r1", "b1": "r2", "b2": "r2", "c1": "r3", "d1": "r4"}


def _run(
    nodes: str, status: Status, busbw: float | None = None, *, purpose: str = "pair", **kw: object
) -> CollectiveRun:
    reason = {Status.PASS: "busbw 370.0 GB/s >= 304 GB/s", Status.UNKNOWN: "could not run: refused"}.get(status, "")
    if status is Status.FAIL:
        reason = f"busbw {busbw:.1f} GB/s < 304 GB/s" if busbw is not None else "Test NCCL failure common.cu:1005"
    fields = {"pool": "p", "nodes": nodes.split(","), "purpose": purpose, "status": status, "busbw_gbps": busbw}
    return CollectiveRun.model_validate({**fields, "floor_gbps": 304.0, "reason": reason, **kw})


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (_run("a1,b1", Status.PASS, 370.0), None),
        (_run("a1,b1", Status.UNKNOWN), None),
        (_run("a1,b1", Status.FAIL, 200.0), Symptom.SLOW),
        (_run("a1,b1", Status.FAIL, 370.0, wrong=3), Symptom.WRONG),
        (_run("a1,b1", Status.FAIL), Symptom.BROKEN),
        # A broken run may still carry the busbw of the last row it printed: its reason says it broke.
        (_run("a1,b1", Status.FAIL, 12.0, reason="sim007: Test NCCL failure common.cu:1005"), Symptom.BROKEN),
    ],
)
def test_a_failed_run_has_one_symptom(run: CollectiveRun, expected: Symptom | None) -> None:
    assert symptom(run) is expected


def test_a_run_crosses_a_group_only_with_nodes_on_both_sides() -> None:
    assert crosses(["a1", "b1"], GROUPS, "r1") and crosses(["a1", "b1"], GROUPS, "r2")
    assert not crosses(["a1", "a2"], GROUPS, "r1") and not crosses(["a1", "b1"], GROUPS, "r3")


def test_the_ring_runs_each_group_with_the_next_and_two_groups_once() -> None:
    assert group_ring([("r1", "a1")]) == []
    assert group_ring([("r1", "a1"), ("r2", "b1")]) == [("a1", "b1")]
    assert group_ring([("r1", "a1"), ("r2", "b1"), ("r3", "c1")]) == [("a1", "b1"), ("b1", "c1"), ("c1", "a1")]


@pytest.mark.parametrize(
    ("results", "named", "open_group", "more"),
    [
        # Four racks, r2 slow: its two runs fail, the other ends pass with each other. r2 is named.
        ([("r1", "r2", False), ("r2", "r3", False), ("r3", "r4", True), ("r4", "r1", True)], ["r2"], "r2", 0),
        # r2 slow with one proven group only, while two are proven: one more run is wanted before naming it.
        ([("r1", "r2", False), ("r3", "r4", True), ("r4", "r1", True)], [], "r2", 1),
        # Two groups, one slow run: either end may be slow, nothing is named (nothing was proven).
        ([("r1", "r2", False)], [], "r1", 1),
        # A clean run proves both its ends, so a group open after the ring runs with two proven ones.
        ([("r1", "r3", True), ("r2", "r1", False), ("r2", "r3", False)], ["r2"], "r2", 0),
        # Every run clean: nothing named, nothing open.
        ([("r1", "r2", True), ("r2", "r3", True), ("r3", "r1", True)], [], "r2", 0),
    ],
)
def test_a_group_is_named_when_slow_with_two_proven_groups(
    results: list[tuple[str, str, bool]], named: list[str], open_group: str, more: int
) -> None:
    assert ring_named(results) == named
    assert wanted_runs(open_group, results) == more


def test_a_group_is_covered_by_a_clean_run_across_it_only() -> None:
    runs = [
        _run("a1,a2", Status.PASS, 370.0),
        _run("a1,b1", Status.FAIL, 200.0),
        _run("b2,c1", Status.PASS, 370.0),
        _run("c1,d1", Status.PASS, 200.0, purpose="isolation"),
    ]
    assert covered_groups(runs, GROUPS) == {"r2", "r3"}


def test_a_named_partner_explains_a_failure_only_when_it_fails_the_same_way_without_the_node() -> None:
    fit = frozenset({"a1", "a2", "b1", "b2", "c1"})
    slow_pair = _run("a1,c1", Status.FAIL, 190.0)  # c1, a slow NIC, with a healthy a1
    broken_pair = _run("b1,c1", Status.FAIL)  # b1's flaky link broke the run with c1
    named = {"c1": [_run("a2,c1", Status.FAIL, 188.0)]}  # c1 slow again with a known-good a2
    assert explained_by(slow_pair, "a1", named, fit) == "c1"
    assert explained_by(broken_pair, "b1", named, fit) is None
    # Named only by runs with partners not known to be good: it explains nothing.
    assert explained_by(slow_pair, "a1", {"c1": [_run("c1,d1", Status.FAIL, 188.0)]}, fit) is None
    # A run that passed needs no explanation.
    assert explained_by(_run("a1,c1", Status.PASS, 370.0), "a1", named, fit) is None
