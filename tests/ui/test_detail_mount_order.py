"""The detail screen is on the stack before it is built: an update or a quit in between must not crash it.

``push_screen`` appends the screen at once and composes and mounts it later, on the screen's own task
(the app prebuilds it from a timer's task, beside its message loop): a repaint can reach it first, and
the app can quit before it is built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from textual.widgets import Static

from console.model.findings import Status
from console.sim.faults import FaultKind
from console.ui.app import ConsoleApp
from console.ui.screens.main import DETAIL_SCREEN
from tests.ui.helpers import feed, main_screen
from tests.ui.synthetic import SyntheticFleet
from tests.ui.test_detail import SIZE, fault_of


async def test_an_update_before_the_detail_screen_is_built_is_shown_once_it_is(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet
) -> None:
    node, gpu = fault_of(fleet, FaultKind.ECC_UNCORRECTABLE)
    verdict = next(e for e in fleet.node_done() if e.verdict.node == node)
    app = make_app(prebuild_detail_after_s=None)  # a busy machine's feed outlasts the 0.5 s prebuild timer
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, [e for e in fleet.events if e is not verdict])
        screen = main_screen(pilot).detail_screen(node)
        built = app.push_screen(DETAIL_SCREEN)
        # Nothing has yielded to the loop since: the screen is on the stack and not composed yet.
        assert app.screen is screen and not screen.is_mounted
        app.ingest(verdict)
        app.flush()  # what FleetChanged does: repaint every detail screen on the stack showing the node
        await built
        assert screen.is_mounted and app.screen is screen
        assert "FAIL" in str(screen.query_one("#detail-head", Static).render())
        finding = screen.selected_finding()
        assert finding is not None and finding.status is Status.FAIL
        assert finding.family == "ecc" and finding.subject.gpu == gpu


@pytest.mark.parametrize("built", ["nothing", "its first widgets"])
async def test_quitting_while_the_detail_screen_is_being_built_ends_cleanly(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, built: str
) -> None:
    node, _gpu = fault_of(fleet, FaultKind.ECC_UNCORRECTABLE)
    app = make_app(prebuild_detail_after_s=None)  # the screen must not be built before the test pushes it
    async with app.run_test(size=SIZE) as pilot:
        await feed(pilot, fleet.events)
        screen = main_screen(pilot).detail_screen(node)
        app.push_screen(DETAIL_SCREEN)
        if built != "nothing":
            # The screen's own widgets are mounted, the tabs' (inside the ContentSwitcher) not yet.
            while not screen.children:
                await asyncio.sleep(0)
        assert not screen.is_mounted
        # Textual prunes the half-built screen on the way out, then still mounts it.
        app.exit()
    # run_test re-raises what the app died of; a clean exit keeps the code it was given.
    assert app.return_code == 0
