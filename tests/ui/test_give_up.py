"""Giving up on a stuck node from the console, against a real engine sweeping the simulated cluster.

sim002's ``amd-smi list`` hangs and ignores SIGTERM: without the operator the sweep would wait its
bundle's timeout + 10 % (33 s). The console shows the node waiting with a countdown, in its row and
in the header; ``w`` on it goes through the engine's command wire (its own process, or its thread),
the node reads UNKNOWN "given up" at once and the sweep ends with the other nodes PASS.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from console.checks import CheckPack
from console.inventory import load_inventory
from console.service.assembly import EngineSpec
from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store
from console.ui.app import ConsoleApp
from tests.integration.test_give_up import SCENARIO
from tests.ui.helpers import cell_text, main_screen, wait_until

SIZE = (170, 40)
STUCK = "sim002"
COUNTDOWN = re.compile(r"waiting, 0:(\d\d) left: .*\bamdsmi\.list\b.*")


@pytest.fixture(scope="module")
def stuck_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    scenario = tmp_path_factory.mktemp("stuck") / "stuck.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as cluster:
        yield cluster


def summary_text(app: ConsoleApp) -> str:
    return str(app.main_screen.query_one("#summary", Static).render())


def seconds_left(text: str) -> int | None:
    found = COUNTDOWN.fullmatch(text)
    return int(found.group(1)) if found else None


@pytest.mark.parametrize("engine", ["process", "thread"])
async def test_a_stuck_node_counts_down_and_w_gives_up_on_it(
    stuck_sim: SimCluster, packs: dict[str, CheckPack], tmp_path: Path, engine: str
) -> None:
    inventory = load_inventory(stuck_sim.inventory_path)
    store = Store(tmp_path / "history.sqlite")
    options: dict[str, object] = {}
    if engine == "process":
        options["engine_spec"] = EngineSpec(inventory, packs, store.path)
    else:
        options["engine_spec"] = EngineSpec(inventory, packs, store.path)
        options["engine_in_thread"] = True
    app = ConsoleApp(
        inventory,
        packs,
        store=store,
        level="quick",
        refresh_interval_s=0.1,
        export_dir=tmp_path,
        waiting_after_s=1.0,
        **options,  # type: ignore[arg-type]
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            others = [n.name for n in inventory.nodes if n.name != STUCK]
            await wait_until(pilot, lambda: seconds_left(cell_text(pilot, STUCK, "reason")) is not None, 60)
            first = seconds_left(cell_text(pilot, STUCK, "reason"))
            assert first is not None and first <= 33
            await wait_until(pilot, lambda: all(cell_text(pilot, n, "verdict") == "✓ PASS" for n in others), 60)
            # The countdown moves with the clock, with no news from the node.
            await wait_until(pilot, lambda: (seconds_left(cell_text(pilot, STUCK, "reason")) or 99) < first, 10)
            summary = summary_text(app)
            assert f"2/3 nodes  held by {STUCK}: 0:" in summary and "left at most (w gives up on a node)" in summary
            holdup = app.state.row(STUCK).holdup(app.clock(), app.waiting_after_s)
            assert holdup is not None
            main_screen(pilot).grid.move_cursor_to(STUCK)
            await pilot.press("w")
            await wait_until(pilot, lambda: cell_text(pilot, STUCK, "verdict") == "? UNKNOWN", 30)
            assert "given up by the operator" in cell_text(pilot, STUCK, "reason")
            await wait_until(pilot, lambda: app.state.progress.finished_at is not None, 30)
            progress = app.state.progress
            assert progress.outcome == "done" and progress.done == {STUCK, *others}
            assert progress.finished_at is not None and progress.finished_at < holdup.deadline  # before its timeout
            assert all(cell_text(pilot, n, "verdict") == "✓ PASS" for n in others)
            assert "held by" not in summary_text(app) and "3/3 nodes" in summary_text(app)
            said = [n.message for n in app._notifications]
            assert f"gave up on {STUCK}: its probes are killed on the node, it will read UNKNOWN" in said
            # Nothing left to give up on: the key says so instead of doing nothing.
            await pilot.press("w")
            said = [n.message for n in app._notifications]
            assert said[-1] == f"nothing to give up on: {STUCK} is not being checked now"
    finally:
        store.close()
