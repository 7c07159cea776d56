"""The console's remediation view (H): nodes per stage with age, next step, who takes it, action, strikes
and last check; the breaker and the open proposals; and its keys (a repaired, v revalidate, p approve,
X escalate) going through the one action catalogue and the confirm dialog, as drain does.

The keys are played on the simulator (real SSH, its scontrol on sim001) with the engine on a thread:
each one is confirmed and the test waits for the store's cases, proposals and audit log to say so.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from rich.text import Text
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Input, Static

from console.actions.proposal_why import drain_reason
from console.checks import CheckPack
from console.inventory import load_inventory
from console.model.findings import Evidence, Finding, Remedy, Scope, Status, Subject, roll_up
from console.remediation.cases import acknowledge_repair, close_case, open_case, record_revalidation
from console.service.assembly import EngineSpec
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.store.lifecycle import Stage
from console.store.watch import Breaker
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.detail import DetailScreen
from console.ui.screens.help import help_content
from console.ui.screens.main import MainScreen
from console.ui.screens.remediation import RemediationScreen
from console.ui.widgets.key_bar import KeyBar
from tests.ui.conftest import FIXED_NOW
from tests.ui.helpers import main_screen, type_text, wait_until
from tests.ui.synthetic import SyntheticFleet

SIZE = (190, 50)
HOUR = 3600.0
WHY = "pool mi300x: 3 nodes held out, over its limit 2 (20% of 8; [lifecycle] breaker_pool_fraction)"


def _after(store: Store) -> int:
    """A finished revalidation sweep that started now (a pass counts only from one after the repair)."""
    sweep = store.start_sweep("standard", "synthetic", "")
    store.finish_sweep(sweep, "done", {})
    return sweep


def _open(store: Store, node: str, action: Remedy) -> None:
    open_case(store, node, user="watch", action=action, sweep_id=1, findings=["ecc.uncorrectable"], audit_id=None)


def _loop(path: Path, fleet: SyntheticFleet) -> Store:
    """Six nodes at six points of the loop, a tripped breaker and two open proposals, dated before the
    console's fixed clock so every age reads the same on any day."""
    store = Store(path)
    policy = fleet.inventory.lifecycle
    n = [node.name for node in fleet.inventory.nodes]
    checked = store.start_sweep("quick", "synthetic", "")
    for node in fleet.inventory.nodes[:6]:
        store.record_node(checked, node.pool, roll_up(node.name, [], passed={"gpu.count": 1}), {})
    store.finish_sweep(checked, "done", {})
    store.propose("drain", n[0], sweep_id=checked, reason="watch: FAIL")  # suspect: no case yet
    _open(store, n[1], Remedy.REBOOT)  # drained, the operator reboots it
    _open(store, n[2], Remedy.REBOOT)  # a strike after its repair: awaiting the technician
    acknowledge_repair(store, n[2], user="ops", note="rebooted", audit_id=None)
    record_revalidation(
        store, n[2], passed=False, sweep_id=checked, action=Remedy.INSPECT, user="ops", policy=policy, note="FAIL: ecc"
    )
    _open(store, n[3], Remedy.RESET_GPU)  # one pass of two
    acknowledge_repair(store, n[3], user="ops", note="reset GPU 2", audit_id=None)
    record_revalidation(
        store, n[3], passed=True, sweep_id=_after(store), action=None, user="ops", policy=policy, note="PASS"
    )
    _open(store, n[4], Remedy.REBOOT)  # passed twice: watch proposes its resume
    acknowledge_repair(store, n[4], user="ops", note="rebooted", audit_id=None)
    for _ in range(2):  # two sweeps, one after the other, both after the repair
        record_revalidation(
            store, n[4], passed=True, sweep_id=_after(store), action=None, user="ops", policy=policy, note="PASS"
        )
    store.propose("resume", n[4], sweep_id=None, reason="watch: revalidated")
    _open(store, n[5], Remedy.RMA)  # sent to the vendor
    close_case(store, n[5], Stage.ESCALATED, user="ops", note="RMA 4411", audit_id=None)
    store.set_breaker(Breaker(FIXED_NOW - 2 * HOUR, WHY))
    with store.conn:
        # Dated by row: the sweep 3 d before the clock, each later record an hour after the one before.
        store.conn.execute("UPDATE sweeps SET started_at = ?, finished_at = ?", (FIXED_NOW - 72 * HOUR,) * 2)
        store.conn.execute("UPDATE cases SET opened_at = ? + id * ?", (FIXED_NOW - 60 * HOUR, HOUR))
        store.conn.execute("UPDATE cases SET closed_at = ? WHERE closed_at IS NOT NULL", (FIXED_NOW - 5 * HOUR,))
        store.conn.execute("UPDATE case_steps SET at = ? + id * ?", (FIXED_NOW - 40 * HOUR, HOUR))
        store.conn.execute("UPDATE watch_proposals SET at = ? + id * ?", (FIXED_NOW - 4 * HOUR, HOUR))
    return store


def _rows(screen: RemediationScreen) -> dict[str, list[str]]:
    table: DataTable[Text] = screen.query_one("#rem-table", DataTable)
    return {str(key.value): [str(c) for c in table.get_row(key)] for key in table.rows}


async def test_the_view_shows_each_stage_with_its_age_next_step_strikes_and_the_breaker(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _loop(tmp_path / "h.sqlite", fleet)
    n = [node.name for node in fleet.inventory.nodes]
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            # The help screen lists H and the view's own keys, from the registry like every key.
            helped = help_content(False).plain
            assert "Remediation view (H)" in helped and "nodes per stage of the remediation loop" in helped
            assert all(f"{k}  " in helped for k in ("a", "v", "p", "X"))
            await pilot.press("H")
            await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen))
            screen = app.screen
            assert isinstance(screen, RemediationScreen)
            bar = str(screen.query_one(KeyBar).render())
            assert all(t in bar for t in ("a Repaired", "v Revalidate", "p Approve proposal", "X Escalate"))
            rows = _rows(screen)
            assert list(rows) == [n[0], n[1], n[2], n[3], n[4], n[5]]  # in the loop's order
            stage = {node: cells[2] for node, cells in rows.items()}
            assert stage == {
                n[0]: "suspect", n[1]: "drained", n[2]: "awaiting-repair", n[3]: "revalidating",
                n[4]: "revalidating", n[5]: "escalated",
            }  # fmt: skip
            assert rows[n[0]][4] == "approve the proposed drain  [proposed: #1 drain]"
            assert rows[n[1]][4] == "reboot, then: repaired" and rows[n[1]][5] == "operator (a once done)"
            assert rows[n[2]][5] == "technician, then operator (a)" and rows[n[2]][6] == "inspect (physical)"
            assert rows[n[2]][7] == "1/3"  # strikes within the window against the policy's
            assert rows[n[3]][8] == "1/2" and rows[n[4]][4].startswith("resume: the revalidation passed")
            assert rows[n[4]][5] == "operator: approve (p)" and rows[n[5]][5] == "vendor (RMA)"
            assert rows[n[1]][9] == "PASS 3 d ago"  # the last active check, as watch --freshness reads it
            assert rows[n[1]][3] == "2 d"  # drained at its case's first step, 39 h before the clock
            head = str(screen.query_one("#rem-head", Static).render())
            assert "BREAKER TRIPPED  2 h ago: " + WHY in head
            assert "instinct-console watch --clear-breaker" in head
            assert "1 suspect  1 drained  1 awaiting-repair  2 revalidating  1 escalated" in head
            proposals = str(screen.query_one("#rem-proposals", Static).render())
            assert f"#1 drain {n[0]} (sweep 1) proposed " in proposals and "#2 resume " in proposals
            # Each node's strikes within its window, oldest first: when, which sweep, which command (issue 33).
            struck = str(screen.query_one("#rem-strikes", Static).render())
            assert f"{n[2]} 1/3: " in struck and "sweep 1 (revalidation)" in struck, struck
            assert n[1] not in struck, struck
            await pilot.press("escape")
            await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
            # The node's detail head says how fresh its last active check is.
            main_screen(pilot).grid.move_cursor_to(n[1])
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen))
            await wait_until(pilot, lambda: "last active check" in str(app.screen.query_one("#detail-head").render()))
            head = app.screen.query_one("#detail-head")
            assert "last active check 3 d ago (sweep 1)" in str(head.render())
            # Its open case's line is the head's third line, shown whole, not cut by the head's height.
            assert "case #" in str(head.render()).splitlines()[2]
            await wait_until(pilot, lambda: head.region.height >= 3)
    finally:
        history.close()


async def test_read_only_refuses_every_key_that_moves_a_case(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _loop(tmp_path / "h.sqlite", fleet)
    n = [node.name for node in fleet.inventory.nodes]
    try:
        app = make_app(store=history, read_only=True)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("H")
            await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen))
            screen = app.screen
            assert isinstance(screen, RemediationScreen)
            assert "read-only" in str(screen.query_one("#rem-head", Static).render())
            bar = str(screen.query_one(KeyBar).render())
            assert "Repaired" not in bar and "Approve" not in bar and "esc Back" in bar
            for key, title in (("a", "Repaired"), ("v", "Revalidate"), ("p", "Approve proposal"), ("X", "Escalate")):
                await pilot.press(key)
                await pilot.pause()
                assert isinstance(app.screen, RemediationScreen), key
                said = [note.message for note in app._notifications]
                assert f"{title}: not available in read-only mode (--read-only)" in said, said
            await screen.run_action("approve")  # even called by name it does nothing
            await pilot.pause()
            assert isinstance(app.screen, RemediationScreen)
        # Nothing moved.
        assert [p.node for p in history.proposals()] == [n[0], n[4]]
        case = history.case(n[1])
        assert case is not None and case.stage is Stage.DRAINED
        assert history.audit_log(10) == []
    finally:
        history.close()


@pytest.mark.usefixtures("utc")
def test_remediation_view_snapshot(
    snap_compare: Callable[..., bool], make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _loop(tmp_path / "h.sqlite", fleet)

    async def run_before(pilot: Pilot[int]) -> None:
        await pilot.press("H")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, RemediationScreen))

    try:
        assert snap_compare(make_app(store=history), terminal_size=SIZE, run_before=run_before)
    finally:
        history.close()


async def _confirm(pilot: Pilot[int], screen: RemediationScreen, node: str, key: str, reason: str = "") -> None:
    """Put the cursor on ``node``, press ``key``, give the reason and click Yes once the plan is shown."""
    table: DataTable[Text] = screen.query_one("#rem-table", DataTable)
    await wait_until(pilot, lambda: node in {str(k.value) for k in table.rows})
    table.move_cursor(row=table.get_row_index(node))
    await pilot.pause()
    await pilot.press(key)
    app = pilot.app
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
    dialog = app.screen
    assert isinstance(dialog, ConfirmScreen) and dialog.targets == (node,)
    if reason:
        dialog.query_one("#confirm-reason", Input).focus()
        await type_text(pilot, reason)
    yes = dialog.query_one("#confirm-yes", Button)
    await wait_until(pilot, lambda: not yes.disabled and dialog.preview is not None, 30)
    await pilot.pause()
    await pilot.click("#confirm-yes")
    await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen), 10)


async def test_the_keys_acknowledge_revalidate_approve_and_escalate_through_the_catalogue(
    packs: dict[str, CheckPack], tmp_path: Path
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-003]"\n')
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"  # revalidations at the quick level: the test waits for one
        cluster.write_text(sim.inventory_path.read_text() + '\n[lifecycle]\nlevel = "quick"\n')
        inventory = load_inventory(cluster)
        store = Store(tmp_path / "h.sqlite")
        _open(store, "sim001", Remedy.REBOOT)
        _open(store, "sim002", Remedy.REBOOT)
        acknowledge_repair(store, "sim002", user="ops", note="rebooted", audit_id=None)
        store.propose("drain", "sim003", sweep_id=None, reason="watch: FAIL")
        app = ConsoleApp(
            inventory, packs, store=store, engine_spec=EngineSpec(inventory, packs, store.path), engine_in_thread=True,
            start_sweep=False, refresh_interval_s=0.1, export_dir=tmp_path,
        )  # fmt: skip
        try:
            async with app.run_test(size=SIZE) as pilot:
                await wait_until(pilot, lambda: app.bridge is not None and app.bridge.running, 30)
                await pilot.press("H")
                await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen))
                screen = app.screen
                assert isinstance(screen, RemediationScreen)

                def stage(node: str) -> Stage | None:
                    case = store.case(node)
                    return case.stage if case is not None else None

                await _confirm(pilot, screen, "sim001", "a", "rebooted node")
                await wait_until(pilot, lambda: stage("sim001") is Stage.REVALIDATING, 30)

                await _confirm(pilot, screen, "sim002", "v")  # a quick sweep of sim002: a pass
                await wait_until(pilot, lambda: (store.case("sim002") or store.cases("sim002")[-1]).passes == 1, 120)

                await _confirm(pilot, screen, "sim003", "p")  # watch's proposed drain, carried out
                await wait_until(pilot, lambda: store.proposals() == [], 30)
                [decided] = store.proposals(open_only=False)
                assert decided.outcome is not None and decided.outcome.startswith("drain"), decided.outcome
                assert [d.node for d in store.drains(open_only=True)] == ["sim003"]

                await _confirm(pilot, screen, "sim001", "X", "RMA 4411")
                await wait_until(pilot, lambda: store.case("sim001") is None, 30)
                assert store.cases("sim001")[-1].stage is Stage.ESCALATED
                # The view shows what the keys did.
                await wait_until(pilot, lambda: _rows(screen).get("sim001", [""] * 3)[2] == "escalated", 10)
            audited = [(row["action"], row["outcome"]) for row in store.audit_log(10)][::-1]
            assert [a for a, _ in audited] == ["repaired", "revalidate", "approve", "drain", "escalate"], audited
            assert audited[1][1] == "done" and audited[2][1].startswith("approved #1")
        finally:
            store.close()


async def test_the_view_opens_on_the_node_the_operator_came_from(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    history = _loop(tmp_path / "h.sqlite", fleet)
    n = [node.name for node in fleet.inventory.nodes]
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
            for node in (n[3], n[1]):  # twice: the second time it is not where the first left it
                main_screen(pilot).grid.move_cursor_to(node)
                await pilot.press("H")
                await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen))
                screen = app.screen
                assert isinstance(screen, RemediationScreen)
                await wait_until(pilot, lambda: screen.cursor_node == node)  # noqa: B023
                await pilot.press("escape")
                await wait_until(pilot, lambda: isinstance(app.screen, MainScreen))
    finally:
        history.close()


async def test_a_suspect_row_shows_the_action_its_findings_call_for_and_the_proposal_says_why(
    make_app: Callable[..., ConsoleApp], fleet: SyntheticFleet, tmp_path: Path
) -> None:
    """A trial found proposals reading only ``watch: FAIL`` and the suspect's action column empty: the
    reason now carries the node's worst finding and its action, and the row the action."""
    history = Store(tmp_path / "h.sqlite")
    node = fleet.inventory.nodes[0]
    fatal = Finding(
        check_id="ras.cper_fatal", family="ras", status=Status.FAIL,
        subject=Subject(node=node.name, scope=Scope.GPU, gpu=3), message="Fatal CPER records: 1 (AFID 30)",
        evidence=Evidence(action=Remedy.RMA),
    )  # fmt: skip
    sweep = history.start_sweep("quick", "synthetic", "")
    verdict = roll_up(node.name, [fatal])
    history.record_node(sweep, node.pool, verdict, {})
    history.finish_sweep(sweep, "done", {})
    history.propose("drain", node.name, sweep_id=sweep, reason=drain_reason(verdict))
    try:
        app = make_app(store=history)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("H")
            await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen))
            screen = app.screen
            assert isinstance(screen, RemediationScreen)
            row = _rows(screen)[node.name]
            assert row[2] == "suspect" and row[6] == "rma (physical)", row
            proposals = " ".join(str(screen.query_one("#rem-proposals", Static).render()).split())
            assert "watch: FAIL ras.cper_fatal: gpu3 Fatal CPER records: 1 (AFID 30); calls for rma" in proposals, (
                proposals
            )
    finally:
        history.close()
