"""Borrowed nodes are named before they are used: the multinode level's confirm dialog lists the baseline
nodes a second pass may borrow (they are not selected, and a run takes their GPUs), and its checkbox opts
out, on the simulator over real SSH (issue 21 follow-up).

Scenario: one MI300X pool of three nodes on one switch, sim002 with a slow NIC. A first sweep is accepted
as the baseline (sim001 and sim003 PASS there); the operator then marks sim001 and sim002 only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Button, Checkbox, Static

from console.checks import CheckPack
from console.cli import main
from console.inventory import load_inventory
from console.model.multinode import MultinodeResult
from console.service.assembly import EngineSpec
from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.pairs import verdict_lines
from console.ui.screens.confirm import ConfirmScreen
from tests.ui.helpers import main_screen, wait_until

SIZE = (170, 50)
SCENARIO = """
name = "borrow"
seed = 2
time_factor = 400

[[nodes]]
names = "sim[001-003]"
model = "MI300X"
pool = "mi300x"
labels = { rack = "r01", switch = "sw1" }

[[faults]]
nodes = "sim002"
kind = "nic_slow"
"""


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[SimCluster]:
    scenario = tmp_path / "borrow.toml"
    scenario.write_text(SCENARIO, encoding="utf-8")
    with start_sim_cluster(scenario=scenario, time_factor=400) as cluster:
        yield cluster


@pytest.fixture
def db(sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A history whose accepted baseline (sweep #1) has sim001 and sim003 PASS."""
    path, inv = tmp_path / "h.db", str(sim.inventory_path)
    main(["sweep", "-i", inv, "--store", str(path)])  # sim002's NIC fails its own check: exit 1
    # Accepted knowing sim002 fails: the operator's deliberate --allow-failing.
    assert main(["accept", "-i", inv, "--store", str(path), "--reason", "fleet baseline", "--allow-failing"]) == 0
    capsys.readouterr()
    return path


def _plan(dialog: ConfirmScreen) -> str:
    return str(dialog.query_one("#confirm-plan", Static).render())


@pytest.mark.parametrize("tui_default", [True, False])
async def test_the_confirm_dialog_names_the_borrowable_nodes_and_its_checkbox_keeps_them_out(
    sim: SimCluster, db: Path, packs: dict[str, CheckPack], tmp_path: Path, tui_default: bool
) -> None:
    inventory = load_inventory(sim.inventory_path)
    store = Store(db)
    app = ConsoleApp(
        inventory,
        packs,
        store=store,
        engine_spec=EngineSpec(inventory, packs, store.path),
        engine_in_thread=True,
        start_sweep=False,
        export_dir=tmp_path,
        refresh_interval_s=0.0,
        baseline_partners=tui_default,  # tui --no-baseline-partners: the dialog opens unticked
    )
    try:
        async with app.run_test(size=SIZE) as pilot:
            grid = main_screen(pilot).grid
            grid.toggle_mark("sim001")
            grid.toggle_mark("sim002")
            await pilot.press("m")
            dialog = app.screen
            assert isinstance(dialog, ConfirmScreen) and dialog.targets == ("sim001", "sim002")
            await pilot.press(*"nccl slow")
            await wait_until(pilot, lambda: bool(dialog.query("#confirm-borrow")))
            box = dialog.query_one("#confirm-borrow", Checkbox)
            assert box.value is tui_default and "sim003 (not selected)" in str(box.label)
            if tui_default:
                # Named before anything runs: the node, where it is known-good from, and what it costs.
                plan = _plan(dialog)
                assert "may borrow" in plan and "sim003 (known-good in baseline sweep #1 of pool mi300x)" in plan
                assert "their GPUs are taken" in plan
                box.value = False  # the operator unticks it: planned again without the baseline
            await wait_until(pilot, lambda: "no baseline partner will be borrowed" in _plan(dialog))
            yes = dialog.query_one("#confirm-yes", Button)
            await wait_until(pilot, lambda: not yes.disabled)
            await pilot.click("#confirm-yes")
            await wait_until(pilot, lambda: app.state.pairs.result is not None, timeout_s=120)
            result = app.state.pairs.result
            assert result is not None
            # Nothing outside the selection ran: sim002 is named without the second opinion sim003 would give.
            assert all("sim003" not in run.nodes for run in result.runs)
            assert result.pools[0].borrowed == [] and result.pools[0].baseline_sweep is None
            (culprit,) = result.culprits
            assert culprit.node == "sim002" and "no second known-good node to confirm" in culprit.reason
            await wait_until(pilot, lambda: store.audit_log()[0]["finished_at"] is not None)
            (entry,) = [row for row in store.audit_log() if row["action"] == "multinode"]
            assert json.loads(entry["inputs"])["baseline_partners"] is False
    finally:
        store.close()


def test_a_headless_multinode_sweep_names_what_it_may_borrow_and_can_opt_out(
    sim: SimCluster, db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["sweep", "-i", str(sim.inventory_path), "--store", str(db), "--nodes", "sim[001-002]"]
    args += ["--probes", "multinode", "--pairing", "switch"]
    main([*args, "--json", str(tmp_path / "with.json")])
    said = capsys.readouterr().err
    assert "pool mi300x may borrow sim003 (known-good in baseline sweep #1, not selected)" in said
    borrowed = MultinodeResult.model_validate(json.loads((tmp_path / "with.json").read_text())["multinode"])
    assert borrowed.pools[0].borrowed == ["sim003"]
    # The node's detail in the console names the borrowed partner and where it is known-good from.
    lines = verdict_lines(borrowed, "sim002")
    assert ("pairing", "switch (pairs within a switch), seed 0") in lines
    convicted = dict(lines)["FAIL"]
    assert convicted.startswith("convicted by #") and "with sim003 (known-good from baseline sweep #1" in convicted
    main([*args, "--no-baseline-partners", "--json", str(tmp_path / "without.json")])
    said = capsys.readouterr().err
    assert "no baseline partner borrowed (sim003 stay untouched)" in said and "may borrow" not in said
    multinode = json.loads((tmp_path / "without.json").read_text())["multinode"]
    assert multinode["pools"][0]["borrowed"] == [] and all("sim003" not in r["nodes"] for r in multinode["runs"])
