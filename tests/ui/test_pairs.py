"""The node-pair board and its views, from multi-node events alone (no engine, no app)."""

from __future__ import annotations

from console.model.findings import Status
from console.model.multinode import CollectiveRun, MultinodeResult
from console.sweep.events import MultinodeDone, MultinodeRunDone, MultinodeStarted
from console.ui.pairs import PairBoard
from console.ui.widgets.pair_view import MAX_HEAT_NODES, heatmap_content, stragglers_content, summary_content

NODES = [f"n{i:02d}" for i in range(1, 15)]


def run(
    seq: int, nodes: list[str], gbps: float | None, status: Status = Status.PASS, purpose: str = "group"
) -> CollectiveRun:
    return CollectiveRun(
        seq=seq, pool="p", nodes=nodes, purpose=purpose, status=status, busbw_gbps=gbps, floor_gbps=300.0
    )


def test_the_board_ranks_live_then_takes_the_phases_own_ranking() -> None:
    board = PairBoard().apply(MultinodeStarted(sweep_id=4, nodes=NODES[:4]))
    assert board.running and board.axis() == []
    board = board.apply(MultinodeRunDone(sweep_id=4, run=run(0, ["n01", "n02"], 330.0)))
    board = board.apply(MultinodeRunDone(sweep_id=4, run=run(1, ["n01", "n03"], 150.0, Status.FAIL)))
    board = board.apply(MultinodeRunDone(sweep_id=4, run=run(2, ["n01", "n04"], None, Status.FAIL)))  # hung
    live = board.standings()
    assert [s.node for s in live] == ["n01", "n03", "n02", "n04"] and all(s.status is None for s in live)
    assert live[0].worst_ratio == 0.5 and live[-1].worst_ratio is None  # a hung run has no ratio
    heat = heatmap_content(board).plain
    assert "running: 3 run(s) done" in heat and "0.50" in heat and "1.10" in heat and "✗" in heat
    assert "running: 3 run(s)" in summary_content(board, "keys").plain
    done = board.apply(MultinodeDone(sweep_id=4, result=MultinodeResult(launcher="mpirun", runs=list(board.runs))))
    assert not done.running and done.version == board.version + 1
    assert "done: 3 run(s), no node named" in summary_content(done, "keys").plain


def test_a_large_phase_draws_the_worst_nodes_and_says_how_many_it_left_out() -> None:
    board = PairBoard().apply(MultinodeStarted(sweep_id=1, nodes=NODES))
    for i, node in enumerate(NODES[1:]):
        gbps = 100.0 + 20 * i  # n02 worst, n14 best
        board = board.apply(MultinodeRunDone(sweep_id=1, run=run(i, ["n01", node], gbps, Status.FAIL)))
    board = board.apply(MultinodeRunDone(sweep_id=1, run=run(13, NODES[:3], 320.0)))  # a group of three
    heat = heatmap_content(board).plain
    assert f"{len(NODES) - MAX_HEAT_NODES} better-ranked node(s) not drawn" in heat
    assert "n02" in heat and "n14" not in heat
    assert "1 group run(s) of 3+ nodes" in heat
    assert "and 6 more" in stragglers_content(board).plain
