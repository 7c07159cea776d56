"""The remediation view's ``v`` at a pool's multinode revalidation level names the known-good partner
and says its GPUs are taken, before anything runs (issue 19 item 3), on the simulator over real SSH."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.widgets import Button, DataTable, Static

from console.checks import CheckPack
from console.cli import main
from console.inventory import load_inventory
from console.model.findings import Remedy
from console.remediation.cases import acknowledge_repair, open_case
from console.service.assembly import EngineSpec
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.remediation import RemediationScreen
from tests.ui.helpers import wait_until

SIZE = (190, 50)


async def test_the_v_dialog_names_the_partner_of_a_multinode_revalidation(
    packs: dict[str, CheckPack], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-003]"\n')
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(sim.inventory_path.read_text() + '\n[pools.lifecycle]\nlevel = "multinode"\n')
        db = tmp_path / "h.sqlite"
        assert await asyncio.to_thread(main, ["sweep", "-i", str(cluster), "--store", str(db)]) == 0
        assert (
            await asyncio.to_thread(main, ["accept", "-i", str(cluster), "--store", str(db), "--reason", "baseline"])
            == 0
        )
        capsys.readouterr()
        inventory = load_inventory(cluster)
        store = Store(db)
        open_case(store, "sim002", user="ops", action=Remedy.REBOOT, sweep_id=1, findings=[], audit_id=None)
        acknowledge_repair(store, "sim002", user="ops", note="rebooted", audit_id=None)
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
                table: DataTable[object] = screen.query_one("#rem-table", DataTable)
                await wait_until(pilot, lambda: "sim002" in {str(k.value) for k in table.rows})
                table.move_cursor(row=table.get_row_index("sim002"))
                await pilot.pause()
                await pilot.press("v")
                await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                dialog = app.screen
                assert isinstance(dialog, ConfirmScreen)
                yes = dialog.query_one("#confirm-yes", Button)
                await wait_until(pilot, lambda: not yes.disabled and dialog.preview is not None, 30)
                plan = " ".join(str(dialog.query_one("#confirm-plan", Static).render()).split())
                assert "revalidate at multinode" in plan, plan
                assert "one pair run with sim001 (PASS in pool" in plan and "sim001's GPUs are taken" in plan, plan
                await pilot.press("escape")  # nothing runs: the case is as it was
                await wait_until(pilot, lambda: isinstance(app.screen, RemediationScreen), 10)
            case = store.case("sim002")
            assert (
                case is not None and case.passes == 0 and "revalidate" not in [e["action"] for e in store.audit_log(5)]
            )
        finally:
            store.close()
