"""Only the nodes a sweep probed become fresh: a rerun of one node re-judges its pool (the fleet checks
compare it with the others) but vouches for none of them (issue 33: a TUI rerun of one node at
``standard`` marked every node of its pool freshly checked, and ``watch`` then skipped them)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.sweep import SweepEngine
from console.sweep.freshness import judged_from_history, last_active_check
from console.transport.connect import transport_for


def test_a_rerun_of_one_node_makes_only_that_node_fresh(tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    # Four nodes: the fleet checks (busbw, all-to-all against the pool median) judge pools of four or more.
    with start_sim_cluster(4, faults="none", time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)
        [first, *others] = [n.name for n in inventory.nodes]

        async def sweeps() -> tuple[int, int]:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs(), Store(db))
            try:
                swept = await engine.run(level="standard")  # every node: the pool's facts are known
                result = await engine.rerun([first], level="standard")  # the console's "rerun" of one node
                assert result is not None
                return swept.sweep_id, result.sweep_id
            finally:
                await engine.close()

        swept, rerun = asyncio.run(sweeps())
    store = Store(db)
    recorded = {
        str(r["node"]): str(r["cut"])
        for r in store.conn.execute("SELECT node, cut FROM node_verdicts WHERE sweep_id = ?", (rerun,))
    }
    assert recorded[first] == ""
    now = time.time()
    assert set(recorded) > {first}  # the fleet pass judged the pool's other nodes again in the rerun...
    for node in others:  # ...but it did not probe them: their last active check is still the sweep's
        assert recorded[node] == "not probed in this sweep: judged again with its pool"
        for level in (None, "standard"):  # what the console shows, and what watch and --max-age go by
            shown = last_active_check(store, node, level)
            assert shown is not None and shown.sweep_id == swept, (node, level, shown)
    check = last_active_check(store, first, "standard")
    assert check is not None and check.sweep_id == rerun
    assert judged_from_history(store, first, "standard", 3600, now).status is Status.PASS
    store.conn.execute("UPDATE sweeps SET started_at = started_at - 7200 WHERE id = ?", (swept,))
    for node in others:  # their check two hours old now: stale, whatever the rerun re-judged an hour later
        judged = judged_from_history(store, node, "standard", 3600, now)
        assert judged.status is Status.UNKNOWN and "older than 1 h" in judged.reason, judged
