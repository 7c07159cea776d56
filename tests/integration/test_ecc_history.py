"""Correctable ECC judged by its change over the history, and diff showing the counters that moved.

30 -> 95 correctable errors between two sweeps stayed PASS and diff showed nothing; 150 -> 5,000 read
like a steady 150 (issue 16). The simulator's live faults play the counters between sweeps.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Finding, Status
from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store
from console.sweep import SweepEngine
from console.transport.connect import transport_for

NODE = "sim002"


def _sweep(sim: SimCluster, store: Path) -> tuple[int, dict[str, Finding]]:
    inventory = load_inventory(sim.inventory_path)

    async def run() -> tuple[int, dict[str, Finding]]:
        engine = SweepEngine(inventory, transport_for(inventory), load_packs(), Store(store), steady_max_age_s=0)
        result = await engine.run()
        await engine.close()
        found = {f.check_id: f for f in result.verdicts[NODE].findings if f.subject.gpu == 3}
        return result.sweep_id, found

    return asyncio.run(run())


def _set_correctable(sim: SimCluster, count: int) -> None:
    state = str(sim.state_dir)
    for args in (["repair", NODE], ["inject", NODE, "--kind", "ecc_correctable_storm", "--gpu", "3"]):
        params = ["--param", f"count={count}"] if args[0] == "inject" else []
        done = subprocess.run(
            [sys.executable, "-m", "console", "sim", *args, *params, "--state-dir", state],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    # Two quick edits may be applied as one generation: wait for the state, not a generation number.
    deadline = time.monotonic() + 10
    while [f.params.get("count") for f in sim.injected()[1]] != [count]:
        assert time.monotonic() < deadline, f"the simulator never served {count} correctable errors"
        time.sleep(0.05)


def test_correctable_ecc_is_judged_by_how_much_it_grew_since_the_last_sweep(tmp_path: Path) -> None:
    scenario = tmp_path / "fleet.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-002]"\n')
    store = tmp_path / "history.sqlite"
    inventory = tmp_path / "inventory.toml"
    with start_sim_cluster(scenario=scenario) as sim:
        inventory.write_text(sim.inventory_path.read_text())  # the simulator's state goes with it
        _set_correctable(sim, 30)
        first, found = _sweep(sim, store)
        assert found["ecc.correctable"].status is Status.PASS  # 30 < 100
        assert found["ecc.correctable_increase"].status is Status.SKIP  # nothing to compare with yet
        _set_correctable(sim, 95)
        second, found = _sweep(sim, store)
        assert found["ecc.correctable"].status is Status.PASS  # 95 < 100: the total alone says nothing
        grew = found["ecc.correctable_increase"]
        assert grew.status is Status.WARN and grew.evidence.observed == 65.0
        assert f"30 -> 95 since sweep {first}" in grew.message
        _set_correctable(sim, 5000)
        _, found = _sweep(sim, store)
        storm = found["ecc.correctable_increase"]
        assert storm.status is Status.FAIL and storm.evidence.observed == 4905.0
        assert "(fail if >= 1000)" in storm.message

    # diff against the first sweep as the accepted baseline: the counter that moved is named.
    accepted = _console("accept", "--store", str(store), "-i", str(inventory), "--sweep", str(first))
    assert accepted.returncode == 0, accepted.stderr
    shown = _console("diff", "--store", str(store), "-i", str(inventory), "--sweep", str(second))
    assert f"ecc.correctable {NODE} gpu3" in shown.stdout and "30" in shown.stdout and "95" in shown.stdout, (
        shown.stdout
    )
    as_json = _console("diff", "--store", str(store), "-i", str(inventory), "--sweep", str(second), "--json")
    assert f"ecc.correctable {NODE} gpu3" in as_json.stdout


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, check=False)
