"""Actions over SSH against the simulated cluster (an asyncssh server in its own process).

The sim's inventory names ``sim001`` as the Slurm controller; the sim answers ``scontrol``/``sinfo``
from one cluster-wide state, modelled on Slurm 22.05.8. Drift sweeps its stack and firmware probes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.actions import ActionKind, ActionRequest, ActionService
from console.cli import main
from console.inventory import load_inventory
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    # 8 nodes: the demo faults are link, ECC, missing GPU, thermal and ROCm drift, one node each.
    with start_sim_cluster(nodes=8, models="mi300x", faults="demo", time_factor=400) as cluster:
        yield cluster


def drifted_node(sim: SimCluster) -> str:
    return next(f.node for f in sim.cluster().faults if f.kind is FaultKind.ROCM_DRIFT)


async def test_drain_and_resume_over_ssh_on_the_controller(sim: SimCluster, tmp_path: Path) -> None:
    inventory = load_inventory(sim.inventory_path)
    store = Store(tmp_path / "h.sqlite")
    service = ActionService(inventory, store)
    try:
        req = ActionRequest(ActionKind.DRAIN, ("sim003", "sim004"), reason="it's $(id); `id` | x", sweep_id=9)
        await service.refresh(req)
        plan = service.plan(req)
        assert plan.where == "sim001" and plan.refused is None
        result = await service.execute(plan)
        assert result.ok, result.outcome
        states = await service.node_states(["sim003", "sim004", "sim005"])
        assert states["sim003"] == "DRAINED by the console: instinct-console: it's $(id); `id` | x [sweep 9]"
        assert states["sim005"] == "IDLE"
        back = ActionRequest(ActionKind.RESUME, ("sim003", "sim004"))
        await service.refresh(back)
        result = await service.execute(service.plan(back))
        assert result.ok and result.outcome == "resumed sim[003-004]"
        assert (await service.node_states(["sim003"]))["sim003"] == "IDLE"
    finally:
        await service.close()
        store.close()


def test_drift_finds_the_rocm_drift_and_a_new_pin_moves_it(
    sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "h.sqlite")
    inv = str(sim.inventory_path)
    odd = drifted_node(sim)
    code = main(["drift", "-i", inv, "--store", db, "--json", "--nodes", f"sim001,{odd}"])
    rows = json.loads(capsys.readouterr().out)
    rocm = {r["node"]: r for r in rows if r["field"] == "rocm"}
    assert code == 1
    assert rocm["sim001"]["status"] == "PASS" and rocm["sim001"]["observed"] == ["6.4.1"]
    assert rocm[odd]["status"] == "WARN" and rocm[odd]["pinned"] == "6.4.1"
    older = rocm[odd]["observed"][0]
    assert older != "6.4.1"

    # Pin the pool to the drifted node's stack (read from the sweep just stored): now sim001 drifts.
    assert main(["pin", "-i", inv, "--store", db, "--from-node", odd, "--yes"]) == 0
    assert f"rocm: 6.4.1 -> {older}" in capsys.readouterr().out
    assert main(["pin", "-i", inv, "--store", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mi300x-a"]["rocm"] == older
    main(["drift", "-i", inv, "--store", db, "--json", "--nodes", f"sim001,{odd}"])
    rocm = {r["node"]: r for r in json.loads(capsys.readouterr().out) if r["field"] == "rocm"}
    assert rocm[odd]["status"] == "PASS" and rocm["sim001"]["status"] == "WARN"
    audit = json.loads(main(["audit", "--store", db, "--json"]) == 0 and capsys.readouterr().out)
    assert audit[0]["action"] == "pin" and audit[0]["targets"] == [odd]
