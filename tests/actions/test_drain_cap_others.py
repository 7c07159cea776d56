"""The drain cap counts every node out of service, whoever took it out, and keeps one node of a pool in service.

Against the real Slurm lab: nodes drained or downed by an operator count against the pool's cap as the
console's own drains do; a pool of two nodes cannot be fully drained unless forced (asked for both, the
console drains the one that fits and names the other), and the forced override is in the audit log.
"""

from __future__ import annotations

import json

from console.actions import ActionKind, ActionRequest, ActionService
from console.inventory import Inventory, from_mapping
from console.store import Store
from tests.harness.slurm_lab import SlurmLab

POOLS = from_mapping(
    {
        "pools": [
            {"name": "quad", "gpu_model": "MI300X", "nodes": "gpu[001-004]"},  # cap max(2, 10% of 4) = 2
            {"name": "pair", "gpu_model": "MI300X", "nodes": "gpu[005-006]"},
        ]
    }
)


async def act(svc: ActionService, *targets: str, force: bool = False):  # type: ignore[no-untyped-def]
    request = ActionRequest(ActionKind.DRAIN, targets, reason="gpu fault", force=force)
    await svc.refresh(request)
    plan = svc.plan(request)
    return plan, await svc.execute(plan)


def service(store: Store, inventory: Inventory = POOLS) -> ActionService:
    return ActionService(inventory, store)


async def test_nodes_drained_or_down_by_others_count_against_the_cap(lab: SlurmLab, store: Store) -> None:
    lab.run("scontrol", "update", "NodeName=gpu001", "State=DRAIN", "Reason=ops: reseat riser")
    lab.run("scontrol", "update", "NodeName=gpu002", "State=DOWN", "Reason=psu failed")
    plan, result = await act(service(store), "gpu003")
    assert plan.refused is not None, plan.decisions
    assert "pool quad: 3 nodes would be out of service (2 already: 0 by the console, 2 by others; 1 new)" in (
        plan.refused
    )
    assert "cap 2 = max(2, 10% of 4)" in plan.refused and "--force" in plan.refused
    assert not result.ok and lab.state("gpu003") == "idle"


async def test_a_pool_of_two_keeps_one_node_in_service_unless_forced(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    # Both asked for: the one that fits is drained, the other is named with the pool's count.
    plan, first = await act(svc, "gpu005", "gpu006")
    assert plan.refused is None and plan.capped == ("gpu006",) and plan.acting_on == ("gpu005",)
    assert "cap 1 = max(2, 10% of 2), leaving 1 of 2 in service" in plan.decisions["gpu006"]
    assert plan.notes[0].startswith("1 of 2 nodes left out by the cap: gpu006")
    assert not first.ok  # asked for two, one done
    assert (lab.state("gpu005"), lab.state("gpu006")) == ("drained", "idle")

    plan, _ = await act(svc, "gpu006")
    assert plan.refused is not None and "(1 already: 1 by the console, 0 by others; 1 new)" in plan.refused
    assert lab.state("gpu006") == "idle"

    plan, forced = await act(svc, "gpu006", force=True)
    assert forced.ok and lab.state("gpu006") == "drained"
    entry = store.audit_log(1)[0]
    assert entry["id"] == forced.audit_id
    inputs = json.loads(entry["inputs"])
    assert inputs["force"] is True
    assert (
        "cap overridden (--force): pool pair: 2 nodes would be out of service (1 already: 1 by the console, 0 by"
        " others; 1 new), over the cap 1 = max(2, 10% of 2), leaving 1 of 2 in service"
    ) in inputs["notes"]
