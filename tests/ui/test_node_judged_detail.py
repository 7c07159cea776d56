"""A node judged on the node (``sweep --via-slurm``) in the console: its PASS findings are counts, shown
as one line per check, and the findings tab says it is complete."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from console.model.findings import Status, roll_up
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.detail import PARTIAL_NOTE, DetailScreen
from console.ui.widgets.row_grid import RowGrid
from tests.ui.helpers import main_screen, wait_until
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)


@pytest.fixture
def own_store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(tmp_path / "history.sqlite")
    yield opened
    opened.close()


async def test_counted_passes_show_one_line_per_check_and_the_list_is_complete(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, own_store: Store
) -> None:
    done = fleet.node_done()
    judged = next(e for e in done if e.verdict.status is Status.PASS)
    sweep_id = own_store.start_sweep("quick", fleet.inventory.source, "", None)
    for event in done:
        verdict = event.verdict
        if event is judged:  # as it comes back from the node: ECC figures whole, the rest counted
            kept = [f for f in verdict.findings if f.status is not Status.PASS or f.check_id == "ecc.correctable"]
            # and one GPU check kept whole on two GPUs only (a counter not 0 there), counted on the others
            split = sorted({f.check_id for f in verdict.findings if f.subject.gpu is not None and f not in kept})[0]
            kept += [f for f in verdict.findings if f.check_id == split][:2]
            passed = Counter(f.check_id for f in verdict.findings if f not in kept)
            families = {f.family for f in verdict.findings if f not in kept}
            verdict = roll_up(verdict.node, kept, dict(passed), families)
            assert verdict.status is Status.PASS and verdict.total == len(event.verdict.findings)
        own_store.record_node(sweep_id, event.pool, verdict, event.snapshot.stack)
    own_store.finish_sweep(sweep_id, "done", {})
    finished = own_store.sweep(sweep_id)["finished_at"]
    app = make_app(store=own_store, start_sweep=False, clock=lambda: finished + 60)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        node = judged.verdict.node
        row = app.state.row(node)
        assert row.status is Status.PASS and row.findings_total == len(judged.verdict.findings)
        assert row.verdict is not None and row.verdict.passed == dict(passed)
        main_screen(pilot).grid.move_cursor_to(node)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        grid = screen.query_one("#findings-table", RowGrid)
        # The rest of the findings are read once the first frame is out.
        await wait_until(pilot, lambda: "PASS|ecc.correctable" in grid.order)
        keys = set(grid.order)
        assert {f"PASS|{check}|counted" for check in passed} <= keys
        assert "PASS|ecc.correctable" in keys  # the figures kept whole, grouped as any PASS
        grid.move_cursor_to(f"PASS|{next(iter(sorted(passed)))}|counted")
        await pilot.pause()
        evidence = str(screen.query_one("#evidence", Static).render())
        assert "passed on" in evidence and "(counted: a PASS is kept whole only for a figure" in evidence
        assert PARTIAL_NOTE.strip() not in evidence  # nothing is missing: the rest are counted
        # A check both kept whole (2 GPUs) and counted: the counted line says it is the others, not "node".
        others = passed[split]
        assert grid.cell(f"PASS|{split}", "subject")[0] == "2 gpus"
        assert grid.cell(f"PASS|{split}|counted", "subject")[0] == f"{others} gpus"
        assert grid.cell(f"PASS|{split}|counted", "message")[0].startswith(f"passed on {others} more (counted")
