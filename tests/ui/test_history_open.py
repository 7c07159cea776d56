"""The console opens on the newest sweep of its inventory in the history, marked with its age.

In the walk-through it opened blank, even with ``--no-sweep``, with a sweep from minutes ago stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from console.model.findings import Status
from console.store import Store
from console.ui.app import ConsoleApp
from tests.ui.synthetic import SyntheticFleet

SIZE = (160, 48)


def _store_sweep(store: Store, fleet: SyntheticFleet) -> tuple[int, dict[str, Status]]:
    done = fleet.node_done()
    sweep_id = store.start_sweep("quick", fleet.inventory.source, "", None)
    for event in done:
        store.record_node(sweep_id, event.pool, event.verdict, event.snapshot.stack)
    store.finish_sweep(sweep_id, "done", {})
    return sweep_id, {e.verdict.node: e.verdict.status for e in done}


@pytest.fixture
def own_store(tmp_path: Path) -> Iterator[Store]:
    """A history of this test's own (the session's synthetic store is shared by other tests)."""
    opened = Store(tmp_path / "history.sqlite")
    yield opened
    opened.close()


async def test_no_sweep_opens_on_the_last_stored_sweep_with_its_age(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, own_store: Store
) -> None:
    sweep_id, statuses = _store_sweep(own_store, fleet)
    finished = own_store.sweep(sweep_id)["finished_at"]
    app = make_app(store=own_store, start_sweep=False, clock=lambda: finished + 14 * 60)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        progress = app.state.progress
        assert progress.sweep_id == sweep_id and progress.from_history and not progress.running
        shown = {name: app.state.row(name).status for name in statuses}
        assert shown == statuses  # every node with the verdict it was stored with
        failing = next(name for name, status in statuses.items() if status is Status.FAIL)
        row = app.state.row(failing)
        assert row.verdict is not None and row.verdict.findings  # the findings that are not PASS, as live
        assert all(f.status is not Status.PASS for f in row.verdict.findings)
        summary = str(app.screen.query_one("#summary", Static).render())
        assert f"sweep #{sweep_id} quick" in summary and "from history, 14 min old" in summary


async def test_a_sweep_at_start_is_not_mixed_with_the_stored_one(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, own_store: Store
) -> None:
    _store_sweep(own_store, fleet)
    app = make_app(
        store=own_store, clock=time.time
    )  # starts a sweep (none runs without an engine): nothing old is shown
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.state.progress.sweep_id == 0
        assert all(app.state.row(n.name).status is None for n in fleet.inventory.nodes)
