"""A connection dropped under a bundle of probes blames the probe that was running, not the bundle's first.

The walk-through's dropped connection read as a host.os failure: every probe of the bundle got the
same error, and the first one (the OS release, long finished) headed the node's reason.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.launcher import start_sim_cluster
from console.sweep import SweepEngine
from console.transport.connect import transport_for

SCENARIO = """time_factor = 400
[[nodes]]
names = "sim001"
[[faults]]
nodes = "sim001"
kind = "ssh_drop_mid_command"
args = "metric"
"""


def test_the_probe_running_when_the_link_dropped_is_blamed(tmp_path: Path) -> None:
    scenario = tmp_path / "drop.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        loaded = load_inventory(sim.inventory_path)
        # One bundle at a time on the node: when the link drops under amd-smi metric, no other bundle is
        # on it (with several, each running probe is rightly blamed too, and which ones is timing).
        inventory = loaded.model_copy(update={"ssh": loaded.ssh.model_copy(update={"max_channels_per_node": 1})})

        async def sweep() -> tuple[Status, str, dict[str, str | None]]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs(), steady_max_age_s=0)
            try:
                result = await engine.run()
            finally:
                await engine.close()
            verdict = result.verdicts["sim001"]
            problems = {probe: outcome.problem for probe, outcome in engine.outcomes["sim001"].items()}
            return verdict.status, verdict.reason, problems

        status, reason, problems = asyncio.run(sweep())
    assert status is Status.UNKNOWN
    assert (problems["amdsmi.metric"] or "").startswith("disconnected: connection lost"), problems
    assert "amdsmi.metric: disconnected" in reason, reason
    assert "host.os" not in reason, reason
    # The probes that had finished before the link went kept their answers.
    assert problems["host.os"] is None, problems
    not_run = {p for p, why in problems.items() if (why or "").startswith("not run: the connection was lost")}
    assert all("while amdsmi.metric ran" in (problems[p] or "") for p in not_run)
