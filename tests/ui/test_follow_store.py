"""The console follows the history database (issue 19's walk-through).

With the console open (``tui --no-sweep``), ``repaired`` / ``revalidate`` / ``resume`` from a shell
stored a PASS of sim002 in a newer sweep, while the console kept showing it FAIL from the old sweep.
Here another connection to the same database (what another process holds) stores newer verdicts, and
each test waits for the console's row, counts and detail screen to move to them: a node that healed, a
node that failed since (the worse case: never shown better than its newest verdict), a late write into
an older sweep (never shown), and a node this console is sweeping itself (its sweep's to show).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from console.checks import CheckPack
from console.cli import main
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.store.follow import watermark
from console.sweep.events import NodeDone, SweepStarted
from console.ui.app import ConsoleApp
from console.ui.rows import COLUMNS, row_cells
from console.ui.screens.detail import DetailScreen
from tests.ui.helpers import main_screen, wait_until
from tests.ui.synthetic import SyntheticFleet, renamed

SIZE = (170, 48)
FOLLOW_S = 0.05  # the tests' poll interval; they wait for the state, never for a time
REASON = [c.key for c in COLUMNS].index("reason")


@pytest.fixture
def own_store(tmp_path: Path) -> Iterator[Store]:
    """The console's connection to a history of this test's own."""
    opened = Store(tmp_path / "history.sqlite")
    yield opened
    opened.close()


@pytest.fixture
def other(own_store: Store) -> Iterator[Store]:
    """Another process's connection to the same database (watch, revalidate, a headless sweep)."""
    opened = Store(own_store.path)
    yield opened
    opened.close()


def _first_sweep(store: Store, fleet: SyntheticFleet) -> int:
    sweep_id = store.start_sweep("quick", fleet.inventory.source, "", None, origin="sweep")
    for event in fleet.node_done():
        store.record_node(sweep_id, event.pool, event.verdict, event.snapshot.stack)
    store.finish_sweep(sweep_id, "done", {})
    return sweep_id


def _one_of(fleet: SyntheticFleet, status: Status) -> NodeDone:
    return next(e for e in fleet.node_done() if e.verdict.status is status)


def _store_as(store: Store, event: NodeDone, node: str, origin: str, sweep_id: int | None = None) -> int:
    """Store ``event``'s verdict as ``node``'s, in a new sweep by ``origin`` (or into ``sweep_id``)."""
    moved = renamed(event, {event.verdict.node: node})
    assert isinstance(moved, NodeDone)
    if sweep_id is None:
        sweep_id = store.start_sweep("quick", "synthetic", node, None, origin=origin)
        store.record_node(sweep_id, moved.pool, moved.verdict, moved.snapshot.stack)
        store.finish_sweep(sweep_id, "done", {})
    else:
        store.record_node(sweep_id, moved.pool, moved.verdict, moved.snapshot.stack)
    return sweep_id


def _console(make_app: Callable[..., ConsoleApp], store: Store, **options: object) -> ConsoleApp:
    settings: dict[str, object] = {"store": store, "start_sweep": False, "follow_interval_s": FOLLOW_S}
    return make_app(**{**settings, **options})


def _polled(app: ConsoleApp, store: Store) -> Callable[[], bool]:
    """True once the console has read everything stored so far."""
    assert app.follower is not None
    follower = app.follower
    return lambda: follower._mark is not None and follower._mark >= watermark(store)


async def test_a_node_healed_by_another_process_shows_its_newer_pass_and_where_it_came_from(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, own_store: Store, other: Store
) -> None:
    _first_sweep(own_store, fleet)
    failing, passing = _one_of(fleet, Status.FAIL), _one_of(fleet, Status.PASS)
    node = failing.verdict.node
    app = _console(make_app, own_store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.state.row(node).status is Status.FAIL)
        fails_before = app.state.counts().get(Status.FAIL, 0)
        main_screen(pilot).grid.move_cursor_to(node)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, DetailScreen)

        healed = _store_as(other, passing, node, "revalidate")

        await wait_until(pilot, lambda: app.state.row(node).status is Status.PASS)
        row = app.state.row(node)
        assert row.sweep_id == healed and row.followed is not None
        assert row.followed_from(row.followed.stored_at + 120) == f"sweep {healed} by revalidate, 2 min ago"
        assert app.state.counts().get(Status.FAIL, 0) == fails_before - 1
        assert all(f.status is not Status.FAIL for f in app.queries.findings_of(row)[0])  # the old FAILs are gone
        reason = row_cells(row, False)[REASON][0]
        assert reason.startswith(f"sweep {healed} by revalidate")
        await wait_until(pilot, lambda: f"from sweep {healed} by revalidate" in head_of(screen))
        head = head_of(screen)
        assert "PASS" in head and f"(sweep {healed})" in head  # the verdict and the last active check agree


def head_of(screen: DetailScreen) -> str:
    return str(screen.query_one("#detail-head", Static).render())


async def test_a_node_that_failed_since_is_never_shown_better_nor_sent_back_to_an_older_verdict(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, own_store: Store, other: Store
) -> None:
    first = _first_sweep(own_store, fleet)
    failing, passing = _one_of(fleet, Status.FAIL), _one_of(fleet, Status.PASS)
    node = passing.verdict.node
    app = _console(make_app, own_store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.state.row(node).status is Status.PASS)
        passes_before = app.state.counts().get(Status.PASS, 0)

        worse = _store_as(other, failing, node, "watch")

        await wait_until(pilot, lambda: app.state.row(node).status is Status.FAIL)
        row = app.state.row(node)
        assert row.sweep_id == worse and row.followed is not None and row.followed.where() == f"sweep {worse} by watch"
        assert app.state.counts().get(Status.PASS, 0) == passes_before - 1
        assert row.verdict is not None and any(f.status is Status.FAIL for f in row.verdict.findings)

        # A late write into the older sweep (its process re-judging the node) is stored after the FAIL,
        # but it is not the newest verdict: the row stays on the FAIL.
        _store_as(other, passing, node, "sweep", sweep_id=first)
        await wait_until(pilot, _polled(app, other))
        await pilot.pause()
        assert app.state.row(node).status is Status.FAIL and app.state.row(node).sweep_id == worse


async def test_a_node_this_console_is_sweeping_is_its_own_sweeps_to_show(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, own_store: Store, other: Store
) -> None:
    _first_sweep(own_store, fleet)
    failing, passing = _one_of(fleet, Status.FAIL), _one_of(fleet, Status.PASS)
    early = passing.verdict.node
    late = next(e.verdict.node for e in reversed(fleet.node_done()) if e.verdict.node != early)
    app = _console(make_app, own_store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.state.row(early).sweep_id is not None)
        # Another process starts a sweep before this console's (a lower id) and one after it.
        before = other.start_sweep("quick", "synthetic", early, None, origin="watch")
        own = own_store.start_sweep("quick", "synthetic", f"{early},{late}", None, origin="console")
        app.ingest(SweepStarted(sweep_id=own, nodes=[early, late], probes=["amdsmi.static"], level="quick"))
        await wait_until(pilot, lambda: app.state.row(early).running and app.state.row(late).running)
        _store_as(other, failing, early, "watch", sweep_id=before)
        after = _store_as(other, failing, late, "revalidate")
        await wait_until(pilot, _polled(app, other))
        await pilot.pause()
        # Both nodes are being swept here: neither row takes what the other process stored.
        for name in (early, late):
            assert app.state.row(name).running and app.state.row(name).followed is None

        # This console's sweep gives both their verdicts (PASS, as its engine would send them).
        for name in (early, late):
            moved = renamed(passing, {passing.verdict.node: name})
            assert isinstance(moved, NodeDone)
            app.ingest(moved.model_copy(update={"sweep_id": own}))
        await wait_until(pilot, lambda: not app.state.row(early).running)
        # The other process's verdict of `early` is older than this console's: the row keeps its own PASS.
        # Its verdict of `late` is newer (a later sweep): the row moves to it once its own sweep is done.
        await wait_until(pilot, lambda: app.state.row(late).status is Status.FAIL)
        assert app.state.row(late).sweep_id == after and app.state.row(late).followed is not None
        await wait_until(pilot, _polled(app, other))
        assert app.state.row(early).status is Status.PASS and app.state.row(early).sweep_id == own
        assert app.state.row(early).followed is None


SCENARIO = """
name = "follow"
seed = 3
time_factor = 400

[[nodes]]
names = "sim[001-002]"
model = "MI300X"
pool = "mi300x"
"""


async def _cli(*args: str) -> int:
    # In a thread: ``main`` runs its own asyncio loop, and this test's is running.
    return await asyncio.to_thread(main, list(args))


async def test_headless_sweeps_on_the_simulator_move_the_open_console_both_ways(
    tmp_path: Path, packs: dict[str, CheckPack], capsys: pytest.CaptureFixture[str]
) -> None:
    """The walk-through end to end: real ``sweep`` runs over SSH to the simulator, the console open beside.
    sim002 passes, its NIC then slows (the console must show the FAIL), then it is repaired (the PASS)."""
    scenario = tmp_path / "follow.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=400) as sim:
        path, inv, state = tmp_path / "h.db", str(sim.inventory_path), str(sim.state_dir)
        assert await _cli("sweep", "-i", inv, "--store", str(path)) == 0, capsys.readouterr()
        store = Store(path)
        try:
            app = ConsoleApp(
                load_inventory(sim.inventory_path),
                packs,
                store=store,
                start_sweep=False,
                export_dir=tmp_path,
                refresh_interval_s=0.0,
                follow_interval_s=FOLLOW_S,
            )
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.state.row("sim002").status is Status.PASS)
                first = app.state.row("sim002").sweep_id
                assert first is not None

                assert await _cli("sim", "inject", "sim002", "--kind", "nic_slow", "--state-dir", state) == 0
                await asyncio.to_thread(sim.wait_for_generation, 2)
                assert await _cli("sweep", "-i", inv, "--store", str(path), "--nodes", "sim002") == 1
                await wait_until(pilot, lambda: app.state.row("sim002").status is Status.FAIL)
                failed = app.state.row("sim002")
                assert failed.followed is not None and failed.followed.where() == f"sweep {first + 1} by sweep"
                assert app.state.counts().get(Status.FAIL, 0) == 1
                assert failed.verdict is not None
                assert any("RDMA port rate" in f.message for f in failed.verdict.findings)

                assert await _cli("sim", "repair", "sim002", "--state-dir", state) == 0
                await asyncio.to_thread(sim.wait_for_generation, 3)
                assert await _cli("sweep", "-i", inv, "--store", str(path), "--nodes", "sim002") == 0
                await wait_until(pilot, lambda: app.state.row("sim002").status is Status.PASS)
                row = app.state.row("sim002")
                assert row.followed is not None and row.followed.where() == f"sweep {first + 2} by sweep"
                assert app.state.counts().get(Status.FAIL, 0) == 0
        finally:
            store.close()
