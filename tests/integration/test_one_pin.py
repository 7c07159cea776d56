"""The console's engine, sweep and drift judge one fleet against the same pins (issue 17's behaviour bug).

With an inventory pin of ROCm 6.4.1 and a stored pin of 6.4.0 (``pin --from-node`` on another node),
``sweep`` judged against 6.4.0 and the TUI's engine against 6.4.1, while the TUI's detail screen and
``enforce`` used 6.4.0: the screen and the verdict disagreed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.service.context import engine_factory_for
from console.service.host import _engine_factory
from console.service.wire import EngineSpec
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.sweep.connect import transport_for

SCENARIO = 'time_factor = 400\n[[nodes]]\nnames = "sim[001-002]"\npool = "p"\nrocm = "6.4.1"\n'


def test_every_engine_judges_against_the_stored_pin(tmp_path: Path) -> None:
    scenario = tmp_path / "fleet.toml"
    scenario.write_text(SCENARIO)
    store_path = tmp_path / "history.sqlite"
    store = Store(store_path)
    store.set_pin("p", {"rocm": "6.4.0"}, from_node="elsewhere", user="test")
    store.close()
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)
        assert inventory.pools["p"].pin.rocm == "6.4.1"
        packs = load_packs()

        async def judged(factory_name: str) -> dict[str, Status]:
            store = Store(store_path)
            if factory_name == "console thread":
                engine = engine_factory_for(inventory, packs, transport_for(inventory))(store)
            else:
                spec = EngineSpec(inventory=inventory, packs=packs, store_path=store_path)
                engine = _engine_factory(spec)(store)
            result = await engine.run()
            await engine.close()
            store.close()
            return {
                name: next(f.status for f in v.findings if f.check_id == "stack.rocm")
                for name, v in result.verdicts.items()
            }

        console_thread = asyncio.run(judged("console thread"))
        engine_process = asyncio.run(judged("engine process"))
        swept = subprocess.run(
            [sys.executable, "-m", "console", "sweep", "-i", str(sim.inventory_path), "--store", str(store_path),
             "--json", str(tmp_path / "report.json")],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        drift = subprocess.run(
            [sys.executable, "-m", "console", "drift", "-i", str(sim.inventory_path), "--store", str(store_path),
             "--json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    report = json.loads((tmp_path / "report.json").read_text())
    by_sweep = {
        n["node"]: Status(next(f["status"] for f in n["findings"] if f["check_id"] == "stack.rocm"))
        for n in report["nodes"]
    }
    rocm_drift = {row["node"]: Status(row["status"]) for row in json.loads(drift.stdout) if row["field"] == "rocm"}
    expected = {"sim001": Status.WARN, "sim002": Status.WARN}  # 6.4.1 against the stored 6.4.0
    assert by_sweep == expected, swept.stderr
    assert console_thread == expected
    assert engine_process == expected
    assert rocm_drift == expected
