"""The console's acceptance view (W): each workload on each pool with its state, accepted and current
stack, what changed and the figures, read from the history database as ``acceptance`` reads it; and
the rollback key (B) opening the confirm dialog for the cursor node's pool."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static

from console.checks import CheckPack
from console.inventory import load_inventory
from console.model.findings import roll_up
from console.service.assembly import EngineSpec
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.dialogs import TextScreen
from tests.ui.helpers import main_screen, wait_until
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


async def test_b_rolls_the_pool_back_through_the_engine(packs: dict[str, CheckPack], tmp_path: Path) -> None:
    """On the simulator: the framework was accepted on driver 6.14.4, the pool runs 6.12.12 (due); B on a
    node plans the pin back, the operator confirms with a reason, and the pin and audit log say so."""
    with start_sim_cluster(nodes=2, models="mi300x", time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)
        pool = inventory.nodes[0].pool
        store = Store(tmp_path / "h.sqlite")
        accepted = {"rocm": "6.4.1", "amdgpu_driver": "6.14.4"}
        store.record_acceptance(
            "framework", pool, "accepted", stack=accepted, figures={}, sweep_id=None, user="ops", reason="stack A"
        )
        app = ConsoleApp(
            inventory, packs, store=store, engine_spec=EngineSpec(inventory, packs, store.path), engine_in_thread=True,
            level="quick", refresh_interval_s=0.1, export_dir=tmp_path,
        )  # fmt: skip
        try:
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.state.progress.finished_at is not None, 90)
                main_screen(pilot).grid.move_cursor_to(inventory.nodes[0].name)
                await pilot.press("B")
                dialog = app.screen
                assert isinstance(dialog, ConfirmScreen)
                dialog.query_one("#confirm-reason", Input).focus()
                await pilot.press(*"back to stack A")
                yes = dialog.query_one("#confirm-yes", Button)
                await wait_until(pilot, lambda: not yes.disabled, 30)
                assert dialog.preview is not None
                assert any("amdgpu_driver: 6.12.12 -> 6.14.4" in n or "-> 6.14.4" in n for n in dialog.preview.notes)
                await pilot.pause()  # the plan's text is laid out before Yes is clicked where it now is
                await pilot.click("#confirm-yes")
                await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), 10)
                await wait_until(pilot, lambda: store.pin(pool).get("amdgpu_driver") == "6.14.4", 30)
            [row] = [r for r in store.audit_log(10) if r["action"] == "rollback"]
            assert row["outcome"].startswith(f"pool {pool} pinned back to its accepted stack")
            assert json.loads(row["inputs"])["reason"] == "back to stack A"
        finally:
            store.close()
