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
    with start_sim_cluster(3, faults="none", time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)
        [first, *others] = [n.name for n in inventory.nodes]

        async def sweeps() -> int:
            engine = SweepEngine(inventory, transport_for(inventory), load_packs(), Store(db))
            try:
                await engine.run(level="quick")  # every node, at quick: the pool's facts are known
                result = await engine.rerun([first], level="standard")  # the console's "rerun" of one node
                assert result is not None
                return result.sweep_id
            finally:
                await engine.close()

        rerun = asyncio.run(sweeps())
    store = Store(db)
    recorded = {
        str(r["node"]): str(r["cut"])
        for r in store.conn.execute("SELECT node, cut FROM node_verdicts WHERE sweep_id = ?", (rerun,))
    }
    assert recorded[first] == ""
    check = last_active_check(store, first, "standard")
    assert check is not None and check.sweep_id == rerun
    now = time.time()
    assert judged_from_history(store, first, "standard", 3600, now).status is Status.PASS
    for node in others:  # never probed at standard: not fresh there, whatever the rerun re-judged
        assert last_active_check(store, node, "standard") is None, node
        judged = judged_from_history(store, node, "standard", 3600, now)
        assert judged.status is Status.UNKNOWN and "no active check at standard" in judged.reason
