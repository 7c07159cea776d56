"""The console's engine, sweep and drift judge one fleet against the same pins (issue 17's behaviour bug).

With an inventory pin of ROCm 6.4.1 and a stored pin of 6.4.0 (``pin --from-node`` on another node),
``sweep`` judged against 6.4.0 and the TUI's engine against 6.4.1, while the TUI's detail screen and
``enforce`` used 6.4.0: the screen and the verdict disagreed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.service.assembly import EngineSpec
from console.service.client import ProcessBridge
from console.service.commands import StartSweep
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.sweep.events import Event, NodeDone
from console.ui.bridge import EngineBridge

SWEEP_TIMEOUT_S = 120
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

        spec = EngineSpec(inventory=inventory, packs=packs, store_path=store_path)

        def judged(bridge_type: type[EngineBridge] | type[ProcessBridge]) -> dict[str, Status]:
            """The console's own engine (on its thread, or in its process) sweeps; its events carry the verdicts."""
            events: list[Event] = []
            bridge = bridge_type(spec, events.append)
            bridge.start()
            try:
                assert bridge.request(StartSweep("quick")).result(SWEEP_TIMEOUT_S) is None
            finally:
                bridge.stop()
            return {
                e.verdict.node: next(f.status for f in e.verdict.findings if f.check_id == "stack.rocm")
                for e in events
                if isinstance(e, NodeDone)
            }

        console_thread = judged(EngineBridge)
        engine_process = judged(ProcessBridge)
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
