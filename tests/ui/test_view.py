"""Filter grammar (shared with --nodes) plus live labels, and the sorts."""

from __future__ import annotations

import pytest

from console.inventory.load import from_mapping
from console.model.findings import NodeVerdict, Status
from console.ui.state import NodeRow
from console.ui.view import Arranger, SortKey, ViewSpec, natural_key


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
