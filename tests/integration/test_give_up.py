"""An operator gives up on a stuck node: it is UNKNOWN at once, killed on the node, and the sweep goes on."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.launcher import start_sim_cluster
from console.sweep import SweepEngine
from console.sweep.events import Event, ProbeStarted
from console.transport.connect import transport_for

# Three nodes, sim002's `amd-smi list` hangs and ignores SIGTERM (the console's give-up tests share it).
SCENARIO = """time_factor = 400
[[nodes]]
names = "sim[001-003]"
[[faults]]
nodes = "sim002"
kind = "ignores_sigterm"
args = "list"
"""


def test_giving_up_on_a_stuck_node_ends_it_and_not_the_sweep(tmp_path: Path) -> None:
    scenario = tmp_path / "stuck.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = load_inventory(sim.inventory_path)

        async def sweep() -> tuple[dict[str, tuple[Status, str]], float, list[float]]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs())
            stuck = asyncio.Event()
            countdowns: list[float] = []

            def watch(event: Event) -> None:
                if isinstance(event, ProbeStarted) and event.node == "sim002" and event.probe == "amdsmi.list":
                    countdowns.append(event.timeout_s or 0.0)
                    stuck.set()

            engine.subscribe(watch)
            running = asyncio.ensure_future(engine.run())
            await stuck.wait()
            assert not engine.give_up("sim009")  # not in this sweep
            started = time.monotonic()
            assert engine.give_up("sim002")
            result = await running
            waited = time.monotonic() - started
            await engine.close()
            verdicts = {name: (v.status, v.reason) for name, v in result.verdicts.items()}
            return verdicts, waited, countdowns

        verdicts, waited, countdowns = asyncio.run(sweep())
    # The stuck probe's countdown is what the console would have waited: its timeout + 10 %.
    assert countdowns == [30 * 1.1]
    assert waited < 10, "giving up does not wait for the probe's timeout"
    status, reason = verdicts["sim002"]
    assert status is Status.UNKNOWN and "given up by the operator" in reason
    assert verdicts["sim001"][0] is Status.PASS and verdicts["sim003"][0] is Status.PASS
