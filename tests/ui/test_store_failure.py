"""The console whose history database fails mid-sweep: the sweep finishes on screen, a banner stays up, and
the console goes on read-only. A real engine over real SSH (two simulated nodes, amd-smi hung on one), the
store's file deleted for real once the healthy node is judged."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from console.checks import CheckPack
from console.inventory import load_inventory
from console.model.findings import Status
from console.service.assembly import EngineSpec
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from console.store import Store
from console.store.db import open_for_sweeping
from console.ui.app import ConsoleApp
from console.ui.registry import DANGEROUS_ACTION_NAMES
from tests.multinode.simcluster import start_cluster
from tests.ui.helpers import main_screen

SIZE = (170, 40)


@pytest.fixture(scope="module")
def one_hung() -> Iterator[SimCluster]:
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        yield sim


async def wait_for(check: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("engine", ["thread", "process"])
async def test_a_store_failing_mid_sweep_shows_a_banner_and_the_console_goes_on_read_only(
    one_hung: SimCluster, packs: dict[str, CheckPack], tmp_path: Path, engine: str
) -> None:
    inventory = load_inventory(one_hung.inventory_path)
    db = tmp_path / "history.sqlite"
    store = Store(db)
    spec = EngineSpec(inventory, packs, db, probe_timeout_cap_s=6)
    app = ConsoleApp(
        inventory,
        packs,
        store=store,
        engine_spec=spec,
        engine_in_thread=engine == "thread",
        refresh_interval_s=0.1,
        export_dir=tmp_path,
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(lambda: app.state.row("sim001").status is Status.PASS)
            db.unlink()  # the engine's next write (the hung node's verdict) finds its file gone
            await wait_for(lambda: app.state.progress.finished_at is not None)
            await wait_for(lambda: main_screen(pilot).query_one("#store-banner", Static).display)
            banner = str(main_screen(pilot).query_one("#store-banner", Static).render())
            assert "HISTORY NOT STORED" in banner and "deleted" in banner and str(db) in banner, banner
            # The sweep ran to its end on screen: both nodes judged, the progress not frozen.
            assert app.state.progress.outcome == "done"
            assert app.state.row("sim002").status is Status.UNKNOWN
            # Read-only from now on: the actions that need their audit row are hidden and refused.
            assert app.read_only and main_screen(pilot).read_only
            assert all(main_screen(pilot).check_action(name, ()) is None for name in DANGEROUS_ACTION_NAMES)
            # It keeps working: a new sweep runs and shows, and the banner stays.
            swept = app.state.progress.sweep_id
            await pilot.press("S")
            await wait_for(lambda: app.state.progress.sweep_id != swept and app.state.progress.finished_at is not None)
            assert main_screen(pilot).query_one("#store-banner", Static).display
    finally:
        store.close()


async def test_a_console_started_on_a_corrupt_store_says_so_and_sweeps_read_only(
    one_hung: SimCluster, packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    inventory = load_inventory(one_hung.inventory_path)
    db = tmp_path / "history.sqlite"
    Store(db).close()
    _corrupt(db)
    store, fault = open_for_sweeping(db)  # as ``tui`` opens it
    assert fault is not None and fault.kind == "corrupt"
    spec = EngineSpec(inventory, packs, db, probe_timeout_cap_s=6)
    app = ConsoleApp(inventory, packs, store=store, engine_spec=spec, engine_in_thread=True, refresh_interval_s=0.1)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(lambda: main_screen(pilot).query_one("#store-banner", Static).display)
            banner = str(main_screen(pilot).query_one("#store-banner", Static).render())
            assert "HISTORY NOT STORED" in banner and "corrupt" in banner, banner
            await wait_for(lambda: app.state.progress.finished_at is not None)
            assert app.state.row("sim001").status is Status.PASS and app.read_only
    finally:
        if store is not None:
            store.close()


def _corrupt(db: Path) -> None:
    """Overwrite the pages after the first two with garbage, as a torn write or a bad disk would."""
    with db.open("r+b") as f:
        f.seek(4096 * 2)
        f.write(b"\xa5" * 4096 * 3)
