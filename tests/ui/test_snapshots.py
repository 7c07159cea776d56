"""SVG snapshots of the main screen, the link panel and the detail screen in every console theme.

Deterministic: the synthetic fleet (simulator renderers judged by the real checks), a fixed clock
and UTC. Regenerate with ``pytest tests/ui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from textual.pilot import Pilot

from console.sim.faults import FaultKind
from console.ui.app import ConsoleApp
from tests.ui.helpers import feed, main_screen
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)
THEMES = ("dark", "light", "high-contrast")


def node_with(fleet: SyntheticFleet, kind: FaultKind) -> str:
    return next(f.node for f in fleet.cluster.faults if f.kind is kind)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_main_screen(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        await pilot.press("z")  # problems first

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_link_panel_of_a_node_with_a_down_xgmi_link(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        main_screen(pilot).grid.move_cursor_to(node_with(fleet, FaultKind.XGMI_LINK_DOWN))
        await pilot.pause()

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)


@pytest.mark.usefixtures("utc")
@pytest.mark.parametrize("theme", THEMES)
def test_detail_screen_of_a_failing_gpu(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, theme: str
) -> None:
    async def run_before(pilot: Pilot[int]) -> None:
        await feed(pilot, fleet.events)
        main_screen(pilot).grid.move_cursor_to(node_with(fleet, FaultKind.ECC_UNCORRECTABLE))
        await pilot.press("enter")
        await pilot.pause(0.3)

    assert snap_compare(make_app(theme=theme), terminal_size=SIZE, run_before=run_before)
