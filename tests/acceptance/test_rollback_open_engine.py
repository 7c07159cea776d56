"""A rollback made in an open console: its engine, built before, and the engine worker process it already
started run the framework probe in the image set back from the next sweep on, not the one they started
with (the console sends each node's pool with its pin: ``console.service.worker``)."""

from __future__ import annotations

from pathlib import Path

from console.actions.model import ActionKind, ActionRequest
from console.actions.service import ActionService
from console.checks import load_packs
from console.inventory import load_inventory
from console.service.assembly import EngineSpec, build_engine
from console.service.workers import WorkerPool
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.sweep.catalog import ProbeSet
from console.sweep.checker_workers import WorkerChecker
from tests.acceptance.test_acceptance_story import IMAGE_A, IMAGE_B, SCENARIO, _with_framework_container

POOL = "mi300x-a"


def _images(store: Store) -> list[str]:
    rows = store.conn.execute("SELECT command FROM probe_runs WHERE probe = 'framework.torch' ORDER BY id")
    return ["A" if IMAGE_A in r["command"] else "B" if IMAGE_B in r["command"] else "?" for r in rows]


async def test_an_open_consoles_engine_and_its_worker_take_the_rolled_back_image(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    with start_sim_cluster(scenario=scenario) as sim:
        cluster = tmp_path / "cluster.toml"
        cluster.write_text(_with_framework_container(sim.inventory_path.read_text(), POOL, IMAGE_B))
        inventory = load_inventory(cluster)
        store = Store(tmp_path / "h.sqlite")
        # The framework was accepted in image A; the cluster file now names B.
        store.record_acceptance(
            "framework", POOL, "accepted", stack={"image": IMAGE_A}, figures={}, sweep_id=None, user="ops", reason="A"
        )
        engine = build_engine(EngineSpec(inventory, load_packs(), store.path, workers=1), store)
        try:
            assert isinstance(engine.checker, WorkerChecker)
            pool = engine.checker.pool
            assert isinstance(pool, WorkerPool)
            await engine.run(inventory.nodes, level=ProbeSet.FRAMEWORK)
            assert pool.pids, "its worker started, with the spec of image B"
            actions = ActionService(inventory, store, facts=engine.facts, packs=engine.packs, engine=engine)
            request = ActionRequest(ActionKind.ROLLBACK, (), reason="back to A", pool=POOL, workload="framework")
            plan = actions.plan(request)
            assert f"image of framework: {IMAGE_B} -> {IMAGE_A}" in plan.notes
            await actions.execute(plan)  # the holds fail (the simulator has no apt-mark); the image is set back
            assert store.image_override("framework", POOL) == IMAGE_A
            await engine.run(inventory.nodes, level=ProbeSet.FRAMEWORK)
        finally:
            await engine.close()
            store.close()
    store = Store(tmp_path / "h.sqlite")
    try:
        assert _images(store) == ["B", "B", "A", "A"], "both nodes, in the same worker, before and after"
    finally:
        store.close()
