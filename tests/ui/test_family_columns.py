"""The node grid's per-family columns come from ``Family``: every family a check can have is a column, so a
node failing a check shows it in that check's column (framework findings once had none)."""

from __future__ import annotations

from console.checks import load_packs
from console.inventory.load import from_mapping
from console.model.family import Family
from console.model.findings import Evidence, Finding, Scope, Status, Subject, roll_up
from console.sweep.events import NodeDone, NodeSnapshot
from console.ui.rows import COLUMNS, FAMILY_TITLES, row_cells
from console.ui.state import LiveState
from console.ui.text import STATUS_GLYPH


def test_every_family_a_check_names_has_a_column_in_the_node_grid() -> None:
    named = {check.family for pack in load_packs().values() for check in pack.checks}
    shown = {column.key for column in COLUMNS}
    assert named - shown == set(), "findings of these families show in no column of the node grid"


def test_the_grid_takes_its_family_columns_from_the_enum_in_its_order() -> None:
    families = {family.value for family in Family}
    in_grid = [column.key for column in COLUMNS if column.key in families]
    assert in_grid == [family.value for family in Family if family.column is not None]
    assert FAMILY_TITLES[Family.FRAMEWORK] == Family.FRAMEWORK.column


def test_a_framework_failure_shows_in_the_framework_column() -> None:
    inventory = from_mapping({"name": "t", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu1"}]})
    state = LiveState(inventory)
    failed = Finding(
        check_id="framework.hip_build",
        family="framework",
        status=Status.FAIL,
        subject=Subject(node="gpu1", scope=Scope.NODE),
        message="PyTorch ROCm build: false",
        evidence=Evidence(observed=False, expected="== false"),
    )
    verdict = roll_up("gpu1", [failed], {"ecc.uncorrectable": 8}, {"ecc"})
    state.apply(NodeDone(sweep_id=1, pool="p", verdict=verdict, snapshot=NodeSnapshot()))
    cells = dict(zip((column.key for column in COLUMNS), row_cells(state.row("gpu1"), marked=False), strict=True))
    assert cells["framework"][0] == STATUS_GLYPH[Status.FAIL]
    assert cells["ecc"][0] == STATUS_GLYPH[Status.PASS]
