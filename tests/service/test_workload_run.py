"""The engine side of the acceptance view's run key: what it plans, and what it refuses (read-only mode,
an unknown workload or pool, a workload that does not apply, another heavy phase going on)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import pytest

from console.actions.acceptance import FRAMEWORK, acceptance_state, runs_in_progress
from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import Status
from console.service.assembly import EngineSpec
from console.service.context import close_context, open_context
from console.service.run_plan import RunPlan
from console.service.workload_run import (
    PlanWorkloadRun,
    StartWorkloadRun,
    WorkloadRunOutcome,
    plan_workload_run,
    start_workload_run,
)
from console.sim.launcher import start_sim_cluster
from console.store import Store
from console.sweep.events import Event, WorkloadFinished, WorkloadStarted

CLUSTER = """
[[pools]]
name = "a"
nodes = "n[1-4]"
gpu_model = "MI300X"
[[pools]]
name = "b"
nodes = "m1"
gpu_model = "MI300X"
[[workloads]]
name = "pair"
pools = ["a"]
nodes = 2
timeout_s = 600
command = ["train", "--steps", "10"]
[workloads.results]
json_prefix = "RESULT "
"""


def _plan(
    tmp_path: Path,
    command: PlanWorkloadRun,
    *,
    read_only: bool = False,
    drained: tuple[str, ...] = (),
    start: bool = True,
    cluster: str = CLUSTER,
) -> tuple[RunPlan, str]:
    """The plan, and what starting it said (``start``: only where it is refused, as these nodes do not exist)."""
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "c.toml"
    path.write_text(cluster)
    inventory = load_inventory(path)
    spec = EngineSpec(inventory, load_packs(), tmp_path / "h.sqlite", read_only=read_only)
    if drained:  # nodes the console holds drained (no scheduler here to say more): out of service
        with contextlib.closing(Store(spec.store_path)) as store:
            store.record_drains(drained, "test", user="ops", sweep_id=None, audit_id=None)

    async def ask() -> tuple[RunPlan, str]:
        context = open_context(spec, lambda _event: None)
        try:
            preview = await plan_workload_run(context, command)
            if not start:
                return preview, "not started"
            try:
                await start_workload_run(context, StartWorkloadRun(command.workload, command.pool, command.reason))
            except PermissionError as exc:
                started = str(exc)
            else:
                started = "ran"
            return preview, started
        finally:
            await close_context(context)

    return asyncio.run(ask())


def test_the_plan_shows_the_srun_line_held_to_the_first_group(tmp_path: Path) -> None:
    preview, _ = _plan(tmp_path, PlanWorkloadRun("pair", "b", "why"))
    assert preview.refused == "pair does not apply to pool b"
    preview, _ = _plan(tmp_path, PlanWorkloadRun("pair", "a", "why"), read_only=True)
    assert preview.targets == ("n1", "n2", "n3", "n4")
    [argv] = preview.commands
    assert argv[:3] == ("srun", "--nodes=2", "--nodelist=n1,n2") and argv[-3:] == ("train", "--steps", "10")
    assert any("once per 2 nodes, through srun" in n for n in preview.notes)


def test_a_run_holds_no_more_of_the_pool_at_once_than_the_drains_cap(tmp_path: Path) -> None:
    """Pool a has 4 nodes: the default cap is 2 (max(2, 10 % of 4)), so one pair runs at a time and the
    other waits; with one node already drained only 1 place is left, and no pair fits: refused, unless
    the operator overrides the cap."""
    preview, _ = _plan(tmp_path, PlanWorkloadRun("pair", "a", "why"), read_only=True)
    assert preview.capped == () and not any("at most" in n for n in preview.notes), "refused first: no cap read"
    preview, _ = _plan(tmp_path / "1", PlanWorkloadRun("pair", "a", "why"), start=False)
    assert preview.refused is None and preview.capped == ("n3", "n4")
    assert any(n.startswith("pool a: at most 2 nodes run it at once (cap 2 = max(2, 10% of 4))") for n in preview.notes)
    assert any("the scheduler was not read" in n for n in preview.notes), "no Slurm here: said, not guessed"
    preview, _ = _plan(tmp_path / "2", PlanWorkloadRun("pair", "a", "why"), drained=("n4",), start=False)
    assert preview.refused is not None and preview.refused.startswith("over the cap: pair needs 2 nodes of pool a")
    assert "1 already out of service" in preview.refused and preview.capped == ("n1", "n2", "n3", "n4")
    forced, _ = _plan(tmp_path / "3", PlanWorkloadRun("pair", "a", "why", force=True), drained=("n4",), start=False)
    assert forced.refused is None and forced.forced and forced.capped == ()
    assert "cap overridden: every node of the pool runs it at once" in forced.notes


def test_with_a_slurm_controller_the_plan_starts_srun_there(tmp_path: Path) -> None:
    with_controller = '[slurm]\ncontroller = "head01"\n' + CLUSTER
    # read-only: refused before the cap is read, so no SSH to head01 is tried; the plan still says where.
    preview, _ = _plan(tmp_path, PlanWorkloadRun("pair", "a", "why"), read_only=True, cluster=with_controller)
    assert preview.where == "on the Slurm controller head01, once per group"
    assert any("once per 2 nodes, through srun from the Slurm controller head01" in n for n in preview.notes)
    preview, _ = _plan(tmp_path / "first", PlanWorkloadRun("pair", "a", "why"), read_only=True)
    assert preview.where == "from the first node of each group"


@pytest.mark.parametrize(
    ("workload", "pool", "read_only", "said"),
    [
        ("pair", "a", True, "read-only mode: a workload occupies every GPU of the nodes it runs on"),
        ("nope", "a", False, "no workload 'nope' in the cluster file"),
        ("pair", "b", False, "pair does not apply to pool b"),
    ],
)
def test_refused_runs_do_not_start(tmp_path: Path, workload: str, pool: str, read_only: bool, said: str) -> None:
    preview, started = _plan(tmp_path, PlanWorkloadRun(workload, pool), read_only=read_only)
    assert preview.refused == said and started == said


def test_the_framework_runs_on_a_pool_as_a_workload_and_is_audited(tmp_path: Path) -> None:
    """On the simulator: the built-in framework workload runs on the pool (its probes are the run), is
    announced running and then ended, and the request and the run are in the audit log."""
    with start_sim_cluster(nodes=2, models="mi300x", time_factor=400) as sim:
        inventory = load_inventory(sim.inventory_path)
        pool = inventory.nodes[0].pool
        spec = EngineSpec(inventory, load_packs(), tmp_path / "h.sqlite")
        events: list[Event] = []

        async def run() -> WorkloadRunOutcome:
            context = open_context(spec, events.append)
            try:
                return await start_workload_run(context, StartWorkloadRun(FRAMEWORK, pool, "after the torch upgrade"))
            finally:
                await close_context(context)

        outcome = asyncio.run(run())
    assert outcome.status is Status.PASS and outcome.recorded == ()
    assert "nothing recorded" in outcome.summary, "never accepted: the operator's a accepts it"
    runs = [e for e in events if isinstance(e, WorkloadStarted | WorkloadFinished)]
    names = [n.name for n in inventory.nodes]
    assert [(type(e).__name__, e.workload, e.pool, e.nodes) for e in runs] == [
        ("WorkloadStarted", FRAMEWORK, pool, names),
        ("WorkloadFinished", FRAMEWORK, pool, names),
    ]
    store = Store(tmp_path / "h.sqlite")
    try:
        log = {r["action"]: r for r in store.audit_log(10)}
        assert json.loads(log["workload-rerun"]["inputs"])["reason"] == "after the torch upgrade"
        assert log["workload-run"]["outcome"] == f"framework on pool {pool} (sweep {outcome.sweep_id}): PASS on " + (
            ", ".join(names)
        )
        assert runs_in_progress(store) == {}
        state = acceptance_state(store, inventory, FRAMEWORK, pool)
        assert [t.sweep_id for t in state.trend] == [outcome.sweep_id] and state.trend[0].status is Status.PASS
    finally:
        store.close()
