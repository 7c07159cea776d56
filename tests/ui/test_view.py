"""Filter grammar (shared with --nodes) plus live labels, and the sorts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from console.inventory.load import from_mapping
from console.inventory.select import node_matches
from console.model.findings import NodeVerdict, Status
from console.ui.state import NodeRow
from console.ui.view import Arranger, SortKey, ViewSpec, narrows, natural_key


def rows() -> list[NodeRow]:
    inventory = from_mapping(
        {
            "name": "t",
            "pools": [
                {"name": "alpha", "gpu_model": "MI300X", "nodes": "gpu[1-4]", "labels": {"rack": "r1"}},
                {"name": "beta", "gpu_model": "MI355X", "nodes": "gpu[10-12]", "labels": {"rack": "r2"}},
            ],
        }
    )
    statuses = {"gpu2": Status.FAIL, "gpu3": Status.WARN, "gpu10": Status.UNKNOWN, "gpu11": Status.PASS}
    out = []
    for node in inventory.nodes:
        status = statuses.get(node.name)
        verdict = NodeVerdict(node=node.name, status=status) if status is not None else None
        out.append(NodeRow(node=node, verdict=verdict, scheduler="DRAINED by x: y" if node.name == "gpu4" else "IDLE"))
    return out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ["gpu1", "gpu2", "gpu3", "gpu4", "gpu10", "gpu11", "gpu12"]),
        ("gpu1", ["gpu1", "gpu10", "gpu11", "gpu12"]),
        ("gpu[2-3,11]", ["gpu2", "gpu3", "gpu11"]),
        ("gpu[2-", []),  # half-typed hostlist: nothing, no error
        ("pool=beta", ["gpu10", "gpu11", "gpu12"]),
        ("!pool=beta", ["gpu1", "gpu2", "gpu3", "gpu4"]),
        ("rack=r1 !gpu[1-2]", ["gpu3", "gpu4"]),
        ("verdict=FAIL", ["gpu2"]),
        ("!verdict=PASS pool=beta", ["gpu10", "gpu12"]),
        ("verdict=none", ["gpu1", "gpu4", "gpu12"]),
        ("sched=drained", ["gpu4"]),
        ("model=MI355X !gpu11", ["gpu10", "gpu12"]),
        ("!", ["gpu1", "gpu2", "gpu3", "gpu4", "gpu10", "gpu11", "gpu12"]),
    ],
)
def test_filter(text: str, expected: list[str]) -> None:
    assert Arranger().arrange(rows(), ViewSpec(text)) == expected


def test_sorts_and_problems_first() -> None:
    arranger = Arranger()
    assert arranger.arrange(rows(), ViewSpec(sort=SortKey.SEVERITY)) == [
        "gpu2",
        "gpu10",
        "gpu3",
        "gpu11",
        "gpu1",
        "gpu4",
        "gpu12",
    ]
    assert arranger.arrange(rows(), ViewSpec(sort=SortKey.POOL))[:4] == ["gpu1", "gpu2", "gpu3", "gpu4"]
    assert arranger.arrange(rows(), ViewSpec(problems_first=True)) == [
        "gpu2",
        "gpu3",
        "gpu10",
        "gpu1",
        "gpu4",
        "gpu11",
        "gpu12",
    ]


def test_which_views_move_with_verdicts() -> None:
    assert not ViewSpec("gpu1").depends_on_verdicts
    assert ViewSpec("verdict=FAIL").depends_on_verdicts
    assert ViewSpec(sort=SortKey.SEVERITY).depends_on_verdicts
    assert ViewSpec(problems_first=True).depends_on_verdicts


def test_natural_order() -> None:
    names = ["gpu10", "gpu2", "gpu1", "Gpu3", "gpu1-b"]
    assert sorted(names, key=natural_key) == ["gpu1", "gpu1-b", "gpu2", "Gpu3", "gpu10"]


EXPRESSIONS = [
    "",
    "gpu1",
    "GPU1",
    "pu1",
    "gpu[2-3,11]",
    "gpu[2-",
    "gpu2,gpu4",
    "pool=beta",
    "pool = beta",
    "name=gpu3",
    "!name=gpu3",
    "rack=r1 !gpu[1-2]",
    "model=MI355X !gpu11",
    "!",
    "!!gpu1",
    "nolabel=x",
    "=",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_filter_agrees_with_the_inventory_grammar(text: str) -> None:
    everything = rows()
    expected = [r.name for r in everything if node_matches(r.node, text)]
    assert [r.name for r in everything if Arranger().matches(r, text)] == expected


def test_typing_on_and_backspace_give_what_a_fresh_filter_gives() -> None:
    arranger = Arranger()
    typed = ["g", "gp", "gpu", "gpu1", "gpu1 ", "gpu1 pool=b", "gpu1 pool=beta", "gpu1 pool=bet", "gpu1", "gpu", ""]
    typed += ["!", "!g", "!gpu1", "gpu[1-", "gpu[1-3]", "gpu[1-3] gpu2", "gpu[1-3] gpu", "verdict=FAIL", "gpu"]
    for text in typed:
        assert arranger.arrange(rows(), ViewSpec(text)) == Arranger().arrange(rows(), ViewSpec(text)), text


def test_a_row_change_is_seen_by_a_kept_result() -> None:
    arranger = Arranger()
    before = rows()
    assert arranger.arrange(before, ViewSpec("verdict=FAIL")) == ["gpu2"]
    after = [
        r if r.name != "gpu3" else replace(r, verdict=NodeVerdict(node="gpu3", status=Status.FAIL), version=1)
        for r in before
    ]
    assert arranger.arrange(after, ViewSpec("verdict=FAIL")) == ["gpu2", "gpu3"]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("gpu", "gpu1", True),
        ("gpu", "gpu1 pool=beta", True),
        ("gpu1 pool=beta", "gpu1 pool=beta rack=r2", True),
        ("gpu1", "gpu", False),
        ("!gpu", "!gpu1", False),
        ("pool=b", "pool=be", False),
        ("gpu[1-", "gpu[1-3]", False),
        ("", "anything", True),
    ],
)
def test_which_edits_only_narrow(old: str, new: str, expected: bool) -> None:
    assert narrows(old, new) is expected
