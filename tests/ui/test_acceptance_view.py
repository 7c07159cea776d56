"""The console's acceptance view (W): a row per workload and pool with its state (running while the engine
says a run goes on), what changed and its trend, the selected row's records below, read from the
history database as ``acceptance`` reads it; its keys (run, accept, roll back) and the main screen's B."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static

from console.actions.acceptance import AcceptanceState, merge_stacks, record_outcomes
from console.checks import CheckPack
from console.inventory import load_inventory
from console.inventory.hostlist import fold
from console.inventory.model import Inventory
from console.model.findings import Evidence, Finding, Status, Subject, roll_up
from console.model.workload import WorkloadSpec
from console.service.assembly import EngineSpec
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.store.acceptance import AcceptanceRecord
from console.sweep.events import Event, WorkloadFinished, WorkloadStarted
from console.ui.acceptance import acceptance_content, row_cells
from console.ui.app import ConsoleApp
from console.ui.screens.acceptance import AcceptanceScreen
from console.ui.screens.confirm import ConfirmScreen
from tests.ui.conftest import FIXED_NOW
from tests.ui.helpers import acceptance_shown, feed, main_screen, wait_until
from tests.ui.synthetic import SyntheticFleet

SIZE = (170, 50)
STACK_A = {"rocm": "6.4.1", "amdgpu_driver": "6.12.12", "torch": "2.6.0+rocm6.4.1", "firmware.PM": "85.110.0"}
STACK_C = {**STACK_A, "rocm": "6.2.2"}
VLLM = "vllm-serving"
FIXED_AT = 1_763_631_000.0  # 2025-11-20 09:30:00 UTC


def _with_vllm(inventory: Inventory) -> Inventory:
    """The fleet's inventory with a site workload declared on every pool."""
    spec = WorkloadSpec.model_validate(
        {
            "name": VLLM,
            "timeout_s": 1800,
            "command": ["vllm", "bench", "serve"],
            "results": {"regex": {"request_throughput": r"Request throughput \(req/s\):\s+(\S+)"}},
            "criteria": [{"figure": "request_throughput", "fail_if": "< 11", "source": "accepted run: 13.1 req/s"}],
        }
    )
    return inventory.model_copy(update={"workloads": {VLLM: spec}})


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


def _rows(app: ConsoleApp) -> dict[tuple[str, str], list[str]]:
    """The acceptance table as text: (workload, pool) -> its cells."""
    screen = app.screen
    assert isinstance(screen, AcceptanceScreen)
    table = screen.table
    rows = {}
    for index in range(table.row_count):
        cells = [str(c) for c in table.get_row_at(index)]
        rows[(cells[0], cells[1])] = cells
    return rows


def _detail(app: ConsoleApp) -> str:
    return str(app.screen.query_one("#acceptance-detail", Static).render())


async def test_the_view_shows_due_and_accepted_pools_and_b_plans_a_rollback(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _history(tmp_path / "h.sqlite", fleet)
    first, second = sorted(fleet.inventory.pools)
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("W")
            await wait_until(pilot, lambda: acceptance_shown(app))
            rows = _rows(app)
            assert rows[("framework", first)][2] == "due" and rows[("framework", second)][2] == "accepted"
            assert rows[("framework", first)][4] == "rocm 6.4.1->6.4.2" and rows[("framework", second)][4] == "-"
            detail = _detail(app)  # the first row is selected: the due pool
            assert "changed   rocm: 6.4.1 -> 6.4.2" in detail and "validation of ROCm 6.4.1" in detail
            assert "figures   bf16_tflops=712.5" in detail and "r runs it on the pool now" in detail
            await pilot.press("down")
            await wait_until(pilot, lambda: "figures   bf16_tflops=1650" in _detail(app))
            assert "changed" not in _detail(app)
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, AcceptanceScreen))
            await pilot.press("B")  # the cursor node's pool, through the confirm dialog like every action
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "rollback"
            title = str(dialog.query_one("#confirm-title", Static).render())
            assert "Roll back" in title, title
    finally:
        history.close()


@pytest.mark.usefixtures("utc")
async def test_a_run_shows_running_from_the_engines_events_and_settles(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _history(tmp_path / "h.sqlite", fleet)
    first, _ = sorted(fleet.inventory.pools)
    nodes = sorted(n.name for n in fleet.inventory.nodes if n.pool == first)[:2]
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("W")
            await wait_until(pilot, lambda: acceptance_shown(app))
            started = WorkloadStarted(sweep_id=7, workload="framework", pool=first, nodes=nodes, started_at=FIXED_AT)
            await feed(pilot, [started])
            await wait_until(pilot, lambda: _rows(app)[("framework", first)][2] == "running (was due)")
            assert _rows(app)[("framework", first)][3] == f"since 2025-11-20 09:30:00 on {fold(nodes)}"
            assert "running   since 2025-11-20 09:30:00" in _detail(app) and "(sweep #7), was due" in _detail(app)
            finished = WorkloadFinished(sweep_id=7, workload="framework", pool=first, nodes=nodes, status=Status.PASS)
            await feed(pilot, [finished])
            await wait_until(pilot, lambda: _rows(app)[("framework", first)][2] == "due")
    finally:
        history.close()


async def test_read_only_refuses_the_run_key_and_accept_needs_a_passed_run(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _history(tmp_path / "h.sqlite", fleet)
    try:
        app = make_app(store=history, read_only=True)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("W")
            await wait_until(pilot, lambda: acceptance_shown(app))
            await pilot.press("r")
            await wait_until(pilot, lambda: any("read-only" in str(n.message) for n in app._notifications))
            assert isinstance(app.screen, AcceptanceScreen), "no confirm dialog in read-only mode"
            await pilot.press("a")  # not dangerous, but the history holds no run of the framework to accept
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen)
            await wait_until(pilot, lambda: dialog.preview is not None)
            assert dialog.preview is not None and "no run of framework" in str(dialog.preview.refused)
            assert dialog.query_one("#confirm-yes", Button).disabled
    finally:
        history.close()


async def test_b_in_the_view_plans_the_rollback_of_the_selected_rows_pool(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _history(tmp_path / "h.sqlite", fleet)
    _, second = sorted(fleet.inventory.pools)
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("W")
            await wait_until(pilot, lambda: acceptance_shown(app))
            await pilot.press("down", "B")  # the second row: the second pool
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "rollback"
            assert dialog.targets == tuple(n.name for n in fleet.inventory.nodes if n.pool == second)
            await pilot.press("escape")
            await wait_until(pilot, lambda: acceptance_shown(app))
    finally:
        history.close()


def _workload_history(store: Store, inventory: Inventory) -> None:
    """vLLM on the first pool: accepted on stack A at 13.1 req/s, then slower runs after a ROCm change, the
    last one regressed."""
    first, _ = sorted(inventory.pools)
    members = [n for n in inventory.nodes if n.pool == first]
    figures = [(13.1, Status.PASS, STACK_A), (12.9, Status.PASS, STACK_A), (10.4, Status.FAIL, STACK_C)]
    for figure, status, stack in figures:
        sweep = store.start_sweep("workload", "synthetic", "")
        for node in members:
            store.add_probe_run(
                sweep, node.name, f"workload.{VLLM}", command="vllm bench serve", exit_status=0, started_at=1.0,
                duration_s=1.0, stdout=b"", stderr=b"", problem=None,
            )  # fmt: skip
            found = Finding(
                check_id=f"workload.{VLLM}.request_throughput", family="workload", status=status,
                subject=Subject(node=node.name), message="vllm", evidence=Evidence(observed=figure),
            )  # fmt: skip
            store.record_node(sweep, first, roll_up(node.name, [found]), stack)
        store.finish_sweep(sweep, "done", {})
        outcome = "accepted" if figure == 13.1 else "regressed" if status is Status.FAIL else None
        if outcome is not None:
            store.record_acceptance(
                VLLM, first, outcome, stack=merge_stacks([stack]), figures={"request_throughput": figure},
                sweep_id=sweep, user="ops", reason="validation of ROCm 6.4.1" if outcome == "accepted" else "",
            )  # fmt: skip


@pytest.mark.usefixtures("utc")
def test_acceptance_view_snapshot(
    snap_compare: Callable[..., bool],
    packs: dict[str, CheckPack],
    fleet: SyntheticFleet,
    tmp_path: Path,
) -> None:
    """Running, due, regressed (with its trend) and accepted rows; the regressed one selected."""
    history = _history(tmp_path / "h.sqlite", fleet)
    inventory = _with_vllm(fleet.inventory)
    _workload_history(history, inventory)
    _, second = sorted(inventory.pools)
    running = sorted(n.name for n in inventory.nodes if n.pool == second)[:2]

    async def run_before(pilot: Pilot[int]) -> None:
        app = pilot.app
        assert isinstance(app, ConsoleApp)
        started = WorkloadStarted(sweep_id=12, workload=VLLM, pool=second, nodes=running, started_at=FIXED_AT)
        await feed(pilot, [started])
        await pilot.press("W")
        await wait_until(pilot, lambda: acceptance_shown(app))
        await wait_until(pilot, lambda: (VLLM, second) in _rows(app) and "running" in _rows(app)[(VLLM, second)][2])
        screen = app.screen
        assert isinstance(screen, AcceptanceScreen)
        screen.table.move_cursor(row=[s.workload for s in screen.states].index(VLLM))
        await wait_until(pilot, lambda: "regressed " in _detail(app))

    app = ConsoleApp(
        inventory, packs, store=history, clock=lambda: FIXED_NOW, export_dir=tmp_path, refresh_interval_s=0.0
    )
    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
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


SIM_WORKLOAD = """
[[workloads]]
name = "vllm-serving"
timeout_s = 600
command = ["vllm", "bench", "serve", "--model", "m", "--num-prompts", "5000"]

[workloads.results.regex]
request_throughput = 'Request throughput \\(req/s\\):\\s+(\\S+)'

[[workloads.criteria]]
figure = "request_throughput"
fail_if = "< 11"
source = "accepted run: 13.1 req/s; fail at -15 %"
"""


async def test_r_runs_a_due_workload_through_the_engine_and_a_accepts_it(
    packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    """On the simulator: vLLM was accepted on another ROCm release (due). r on its row asks, runs it on the
    pool through the engine (which says when each node's run starts and ends: the view shows those as
    running, test_a_run_shows_running_from_the_engines_events_and_settles), and the row turns accepted
    again; a accepts that run with a reason. The audit log tells it in order."""
    # Healthy nodes: the demo faults (a link down on sim002) would block the rerun instead (see
    # test_a_rerun_on_a_failed_node_shows_blocked_and_a_refuses_it_before_yes).
    with start_sim_cluster(nodes=2, models="mi300x", time_factor=400, faults="none") as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + SIM_WORKLOAD)
        inventory = load_inventory(cluster)
        pool = inventory.nodes[0].pool
        store = Store(tmp_path / "h.sqlite")
        app = ConsoleApp(
            inventory, packs, store=store, engine_spec=EngineSpec(inventory, packs, store.path), engine_in_thread=True,
            level="quick", refresh_interval_s=0.1, export_dir=tmp_path,
        )  # fmt: skip
        runs: list[WorkloadStarted | WorkloadFinished] = []
        ingest = app.ingest

        def heard(event: Event) -> None:  # what the engine told the console, in order
            if isinstance(event, WorkloadStarted | WorkloadFinished):
                runs.append(event)
            ingest(event)

        app.ingest = heard
        try:
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.state.progress.finished_at is not None, 90)
                members = [n.name for n in inventory.nodes]
                current = merge_stacks(store.pool_stacks(members).values())
                store.record_acceptance(
                    "vllm-serving", pool, "accepted", stack={**current, "rocm": "6.3.4"},
                    figures={"request_throughput": 13.0}, sweep_id=None, user="ops", reason="stack A",
                )  # fmt: skip
                await pilot.press("W")
                await wait_until(pilot, lambda: acceptance_shown(app))
                assert _rows(app)[("vllm-serving", pool)][2] == "due"
                await pilot.press("r")
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                dialog = app.screen
                assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "acceptance-run"
                await pilot.press(*"rerun after the ROCm upgrade")
                yes = dialog.query_one("#confirm-yes", Button)
                await wait_until(pilot, lambda: not yes.disabled, 30)
                assert dialog.preview is not None and dialog.preview.refused is None
                assert any("vllm bench serve" in line for line in dialog.preview.command_lines())
                await pilot.pause()
                await pilot.click("#confirm-yes")
                await wait_until(pilot, lambda: acceptance_shown(app), 10)
                await wait_until(pilot, lambda: _rows(app)[("vllm-serving", pool)][2] == "accepted-again", 90)
                # Each node ran it (one-node workload): started, then ended PASS, as the view was told.
                told = [(type(e).__name__, tuple(e.nodes)) for e in runs if e.workload == "vllm-serving"]
                assert sorted(told) == sorted(
                    [(kind, (node,)) for node in members for kind in ("WorkloadFinished", "WorkloadStarted")]
                )
                order = {event: i for i, event in enumerate(told)}
                assert all(order[("WorkloadStarted", (n,))] < order[("WorkloadFinished", (n,))] for n in members)
                assert {e.status for e in runs if isinstance(e, WorkloadFinished)} == {Status.PASS}
                assert "request_throughput 13.0" not in _rows(app)[("vllm-serving", pool)][5]  # a run, not a record
                assert _rows(app)[("vllm-serving", pool)][5].startswith("request_throughput 1")
                # Accept the passed run as the operator's own acceptance, with a reason.
                await pilot.press("a")
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                dialog = app.screen
                assert isinstance(dialog, ConfirmScreen)
                await pilot.press(*"validated on the new ROCm")
                yes = dialog.query_one("#confirm-yes", Button)
                await wait_until(pilot, lambda: not yes.disabled, 30)
                await pilot.pause()
                await pilot.click("#confirm-yes")
                await wait_until(
                    pilot, lambda: store.acceptance_history("vllm-serving", pool)[-1].outcome == "accepted"
                )
            history = store.acceptance_history("vllm-serving", pool)
            assert [r.outcome for r in history] == ["accepted", "accepted-again", "accepted"]
            assert history[-1].reason == "validated on the new ROCm" and history[-1].sweep_id == history[1].sweep_id
            log = list(reversed(store.audit_log(20)))
            story = [(r["action"], json.loads(r["inputs"]).get("reason", "")) for r in log if r["action"] != "host-key"]
            assert story[-4:] == [
                ("workload-rerun", "rerun after the ROCm upgrade"),
                ("workload-run", ""),
                ("accept", story[-2][1]),
                ("accept", "validated on the new ROCm"),
            ], story
            assert story[-2][1].startswith("rerun after a stack change: rocm 6.3.4 -> ")
            [run] = [r for r in log if r["action"] == "workload-run"]
            assert run["outcome"].startswith(f"vllm-serving on pool {pool} (sweep ") and "PASS on" in run["outcome"]
        finally:
            store.close()


async def test_r_holds_the_run_to_the_pools_cap_unless_overridden(packs: dict[str, CheckPack], tmp_path: Path) -> None:
    """On the simulator, a pool of 3: r plans the run 2 nodes at a time (the drains' default cap, one node
    always stays in), names the node that waits, and offers the override; typed, the plan runs every node
    at once, and the run that follows is audited as forced."""
    with start_sim_cluster(nodes=3, models="mi300x", time_factor=400) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + SIM_WORKLOAD)
        inventory = load_inventory(cluster)
        pool = inventory.nodes[0].pool
        store = Store(tmp_path / "h.sqlite")
        app = ConsoleApp(
            inventory, packs, store=store, engine_spec=EngineSpec(inventory, packs, store.path), engine_in_thread=True,
            level="quick", refresh_interval_s=0.1, export_dir=tmp_path,
        )  # fmt: skip
        try:
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.state.progress.finished_at is not None, 90)
                await pilot.press("W")
                await wait_until(pilot, lambda: acceptance_shown(app))
                await pilot.press("r")
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                dialog = app.screen
                assert isinstance(dialog, ConfirmScreen)
                await pilot.press(*"capped run")
                await wait_until(pilot, lambda: getattr(dialog.preview, "reason", None) == "capped run", 30)
                preview = dialog.preview
                assert preview is not None and preview.refused is None and not preview.forced
                assert preview.capped == (inventory.nodes[2].name,)
                assert any(n.startswith(f"pool {pool}: at most 2 nodes run it at once") for n in preview.notes)
                plan_text = str(dialog.query_one("#confirm-plan", Static).render())
                assert "at most 2 nodes run it at once" in plan_text
                override = dialog.query_one("#confirm-override", Input)
                override.focus()
                await pilot.press(*"override")
                await wait_until(pilot, lambda: dialog.preview is not None and dialog.preview.forced, 30)
                assert dialog.preview is not None and dialog.preview.capped == ()
                assert "cap overridden: every node of the pool runs it at once" in dialog.preview.notes
                yes = dialog.query_one("#confirm-yes", Button)
                await wait_until(pilot, lambda: not yes.disabled, 30)
                await pilot.pause()
                await pilot.click("#confirm-yes")
                await wait_until(pilot, lambda: any(r["action"] == "workload-run" for r in store.audit_log(20)), 90)
            [request] = [r for r in store.audit_log(20) if r["action"] == "workload-rerun"]
            assert json.loads(request["inputs"]) == {
                "workload": "vllm-serving", "pool": pool, "reason": "capped run", "force": True,
            }  # fmt: skip
        finally:
            store.close()


def _vllm_sweep(store: Store, pool: str, members: list[str], stack: dict[str, str], own: dict[str, Finding]) -> int:
    """A passing vLLM run on ``members`` with ``own`` findings of each node's own checks (a quick probe's)."""
    sweep = store.start_sweep("workload", "synthetic", "")
    for node in members:
        store.add_probe_run(
            sweep, node, f"workload.{VLLM}", command="vllm bench serve", exit_status=0, started_at=1.0,
            duration_s=1.0, stdout=b"", stderr=b"", problem=None,
        )  # fmt: skip
        found = Finding(
            check_id=f"workload.{VLLM}.request_throughput", family="workload", status=Status.PASS,
            subject=Subject(node=node), message="vllm", evidence=Evidence(observed=13.0),
        )  # fmt: skip
        store.record_node(sweep, pool, roll_up(node, [found, *([own[node]] if node in own else [])]), stack)
    store.finish_sweep(sweep, "done", {})
    return sweep


async def test_a_rerun_on_a_failed_node_shows_blocked_and_a_refuses_it_before_yes(
    packs: dict[str, CheckPack], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    """The trial's finding: a rerun recorded accepted-again although a node it ran on FAILed its own probes
    in that sweep. The row reads blocked, the detail names the node and why, and a refuses in the plan."""
    history = Store(tmp_path / "h.sqlite")
    inventory = _with_vllm(fleet.inventory)
    first = sorted(inventory.pools)[0]
    members = [n.name for n in inventory.nodes if n.pool == first]
    accepted = _vllm_sweep(history, first, members, STACK_A, {})
    history.record_acceptance(
        VLLM, first, "accepted", stack=merge_stacks([STACK_A]), figures={"request_throughput": 13.0},
        sweep_id=accepted, user="ops", reason="stack A",
    )  # fmt: skip
    fatal = Finding(
        check_id="cper.fatal", family="cper", status=Status.FAIL, subject=Subject(node=members[1], gpu=2),
        message="CPER: fatal record on GPU 2",
    )  # fmt: skip
    rerun = _vllm_sweep(history, first, members, STACK_C, {members[1]: fatal})
    assert [r.outcome for r in record_outcomes(history, inventory, rerun, user="ops") if r.workload == VLLM] == [
        "blocked"
    ]
    app = ConsoleApp(
        inventory, packs, store=history, clock=lambda: FIXED_NOW, export_dir=tmp_path, refresh_interval_s=0.0
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("W")
            await wait_until(pilot, lambda: acceptance_shown(app))
            assert _rows(app)[(VLLM, first)][2] == "blocked"
            screen = app.screen
            assert isinstance(screen, AcceptanceScreen)
            screen.table.move_cursor(row=[(s.workload, s.pool) for s in screen.states].index((VLLM, first)))
            await wait_until(pilot, lambda: "blocked   sweep" in _detail(app))
            assert f"{members[1]} FAIL: CPER: fatal record on GPU 2" in " ".join(_detail(app).split())
            await pilot.press("a")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen)
            await pilot.press(*"looks fine")
            await wait_until(pilot, lambda: dialog.preview is not None and dialog.preview.reason == "looks fine")
            assert dialog.preview is not None and f"{members[1]} FAIL" in str(dialog.preview.refused)
            assert dialog.query_one("#confirm-yes", Button).disabled
        assert [r.outcome for r in history.acceptance_history(VLLM, first)] == ["accepted", "blocked"]
    finally:
        history.close()


def test_the_detail_names_the_nodes_that_ran_it_and_those_it_does_not_cover() -> None:
    record = AcceptanceRecord(
        1, VLLM, "a", "accepted", STACK_A, {"rps": 12.0}, 3, FIXED_AT, "op", "validation", None,
        nodes={"gpu001": STACK_A, "gpu002": STACK_A},
    )  # fmt: skip
    state = AcceptanceState(VLLM, "a", "due", STACK_A, record, uncovered={"gpu003": {"rocm": ("6.4.1", "6.2.2")}})
    text = acceptance_content([state]).plain
    assert "ran on    gpu[001-002]" in text and "uncovered gpu003: rocm 6.4.1 -> 6.2.2" in text
    assert row_cells(state)[4][0] == "gpu003 not covered", "the table's 'changed since' says why it is due"
