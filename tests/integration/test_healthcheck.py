"""TransferBench's healthcheck preset in a standard sweep: judged on MI300-series nodes, declined elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Finding, Status
from console.sim.launcher import start_sim_cluster
from console.sweep import SweepEngine
from console.transport.connect import transport_for

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-002]"
[[nodes]]
names = "sim003"
model = "MI355X"
[[faults]]
nodes = "sim002"
kind = "transferbench_pair_slow"
gpu = 1
peer = 6
"""


def test_the_healthcheck_judges_mi300x_and_its_decline_on_mi355x_is_a_skip_in_the_tools_words(tmp_path: Path) -> None:
    """No sweep level ran it, though the code documented a SKIP for a decline (issue 16)."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> dict[str, list[Finding]]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs())
            result = await engine.run(level="standard")
            await engine.close()
            return {n: [f for f in v.findings if f.check_id == "tb.healthcheck"] for n, v in result.verdicts.items()}

        found = asyncio.run(sweep())
    assert [f.status for f in found["sim001"]] == [Status.PASS]
    [slow] = found["sim002"]
    assert slow.status is Status.FAIL and "GPU 01 to GPU 06" in slow.message
    [declined] = found["sim003"]
    assert declined.status is Status.SKIP
    assert "healthcheck preset is currently not supported on this hardware" in declined.message
