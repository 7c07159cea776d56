"""The console's acceptance view (W): each workload on each pool with its state, accepted and current
stack, what changed and the figures, read from the history database as ``acceptance`` reads it; and
the rollback key (B) opening the confirm dialog for the cursor node's pool."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from console.model.findings import roll_up
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dialogs import TextScreen
from tests.ui.helpers import wait_until
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)
STACK_A = {"rocm": "6.4.1", "amdgpu_driver": "6.12.12", "torch": "2.6.0+rocm6.4.1", "firmware.PM": "85.110.0"}


def _history(path: Path, fleet: SyntheticFleet) -> Store:
    """The first pool accepted the framework on stack A and now runs ROCm 6.4.2 (due); the second runs A."""
    store = Store(path)
    first, second = sorted(fleet.inventory.pools)
    members = {p: [n.name for n in fleet.inventory.nodes if n.pool == p] for p in (first, second)}
    accepted = store.start_sweep("framework", "synthetic", "")
    for pool, nodes in members.items():
        for node in nodes:
            store.record_node(accepted, pool, roll_up(node, []), STACK_A)
    store.finish_sweep(accepted, "done", {})
    for pool in (first, second):
        figures = {"bf16_tflops": 712.5 if pool == first else 1650.0}
        store.record_acceptance(
            "framework", pool, "accepted", stack=STACK_A, figures=figures, sweep_id=accepted, user="ops",
            reason="validation of ROCm 6.4.1",
        )  # fmt: skip
    later = store.start_sweep("quick", "synthetic", "")
    for node in members[first]:
        store.record_node(later, first, roll_up(node, []), {**STACK_A, "rocm": "6.4.2"})
    store.finish_sweep(later, "done", {})
    return store


async def test_the_view_shows_due_and_accepted_pools_and_b_plans_a_rollback(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _history(tmp_path / "h.sqlite", fleet)
    first, second = sorted(fleet.inventory.pools)
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("W")
            await wait_until(pilot, lambda: isinstance(app.screen, TextScreen))
            assert isinstance(app.screen, TextScreen)
            text = app.screen.body.plain
            due, accepted = text.index(f"  {first}"), text.index(f"  {second}")
            assert "due" in text[due:accepted] and "changed   rocm: 6.4.1 -> 6.4.2" in text[due:accepted]
            assert "accepted" in text[accepted:] and "changed" not in text[accepted:]
            assert "figures   bf16_tflops=712.5" in text and "validation of ROCm 6.4.1" in text
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, TextScreen))
            await pilot.press("B")  # the cursor node's pool, through the confirm dialog like every action
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "rollback"
            title = str(dialog.query_one("#confirm-title", Static).render())
            assert "Roll back" in title, title
    finally:
        history.close()


@pytest.mark.usefixtures("utc")
def test_acceptance_view_snapshot(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _history(tmp_path / "h.sqlite", fleet)

    async def run_before(pilot: Pilot[int]) -> None:
        await pilot.press("W")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, TextScreen))

    try:
        assert snap_compare(make_app(store=history), terminal_size=SIZE, run_before=run_before)
    finally:
        history.close()
