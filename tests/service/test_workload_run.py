"""The engine side of the acceptance view's run key: what it plans, and what it refuses (read-only mode,
an unknown workload or pool, a workload that does not apply, another heavy phase going on)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from console.checks import load_packs
from console.inventory import load_inventory
from console.service.assembly import EngineSpec
from console.service.commands import PlanPreview
from console.service.context import close_context, open_context
from console.service.workload_run import PlanWorkloadRun, StartWorkloadRun, plan_workload_run, start_workload_run

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


def _plan(tmp_path: Path, command: PlanWorkloadRun, *, read_only: bool = False) -> tuple[PlanPreview, str]:
    path = tmp_path / "c.toml"
    path.write_text(CLUSTER)
    inventory = load_inventory(path)
    spec = EngineSpec(inventory, load_packs(), tmp_path / "h.sqlite", read_only=read_only)

    async def ask() -> tuple[PlanPreview, str]:
        context = open_context(spec, lambda _event: None)
        try:
            preview = plan_workload_run(context, command)
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
