"""Drain, resume and undrain against a REAL slurmctld + slurmd per node (tests/harness/slurm_lab.py).

The console runs ``scontrol`` locally with the lab's SLURM_CONF, as it does without an inventory
controller; what Slurm then reports (``sinfo -R``, node states) is read back with Slurm's own tools.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest

from console.actions import (
    ActionKind,
    ActionRequest,
    ActionService,
    CapPolicy,
    RunOutput,
    TransportRunner,
    bare_inventory,
)
from console.inventory import Inventory, from_mapping
from console.store import Store
from tests.harness.slurm_lab import SlurmLab

TAG = "instinct-console:"


def service(store: Store, inventory: Inventory | None = None, **kwargs: object) -> ActionService:
    return ActionService(inventory or bare_inventory(), store, **kwargs)  # type: ignore[arg-type]


def request(kind: ActionKind, *targets: str, **fields: object) -> ActionRequest:
    return ActionRequest(kind=kind, targets=targets, **fields)  # type: ignore[arg-type]


async def act(svc: ActionService, req: ActionRequest, refresh: bool = True):  # type: ignore[no-untyped-def]
    if refresh:
        await svc.refresh(req)
    plan = svc.plan(req)
    return plan, await svc.execute(plan)


async def test_drain_with_reason_shows_in_sinfo_and_the_audit_log(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu002", "gpu003", reason="xgmi link down", sweep_id=7))
    assert plan.commands == (
        (
            "scontrol",
            "update",
            "NodeName=gpu[002-003]",
            "State=DRAIN",
            'Reason="instinct-console: xgmi link down [sweep 7]"',
        ),
    )
    assert plan.where == "local"
    assert result.ok, result.outcome
    for node in ("gpu002", "gpu003"):
        assert lab.state(node) == "drained"
        assert lab.reason(node) == f"{TAG} xgmi link down [sweep 7]"
        assert result.per_target[node].startswith("drained: now DRAINED by the console")
    assert lab.state("gpu001") == "idle"
    entry = store.audit_log(1)[0]
    assert entry["action"] == "drain" and entry["id"] == result.audit_id
    assert "gpu002" in entry["targets"] and "xgmi link down" in entry["inputs"]
    assert json.loads(entry["commands"]) == ["local$ " + shlex.join(plan.commands[0])]
    assert entry["outcome"] == "drained gpu[002-003]"
    assert "[local] exit=0" in entry["output"]


async def test_resume_brings_a_console_drain_back_to_idle(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    await act(svc, request(ActionKind.DRAIN, "gpu001", reason="ecc"))
    assert lab.state("gpu001") == "drained"
    plan, result = await act(svc, request(ActionKind.RESUME, "gpu001"))
    assert plan.commands == (("scontrol", "update", "NodeName=gpu001", "State=RESUME"),)
    assert result.ok and result.outcome == "resumed gpu001"
    assert lab.wait_state("gpu001", "idle") == "idle"
    assert lab.reason("gpu001") == ""


async def test_a_drain_by_someone_else_is_shown_as_theirs_and_not_resumed_without_force(
    lab: SlurmLab, store: Store
) -> None:
    lab.run("scontrol", "update", "NodeName=gpu003", "State=DRAIN", "Reason=ops: reseat riser")
    svc = service(store)
    states = await svc.node_states(["gpu003", "gpu004"])
    assert states["gpu003"] == "DRAINED by root: ops: reseat riser"
    assert states["gpu004"] == "IDLE"

    plan, result = await act(svc, request(ActionKind.RESUME, "gpu003"))
    assert plan.refused is not None and "DRAINED by root: ops: reseat riser" in plan.refused
    assert not result.ok and result.outcome.startswith("refused:")
    assert lab.state("gpu003") == "drained"
    assert store.audit_log(1)[0]["outcome"].startswith("refused:")

    # Draining it again would overwrite their reason: skipped as well.
    plan, _ = await act(svc, request(ActionKind.DRAIN, "gpu003", reason="console wants it"))
    assert plan.refused is not None
    assert lab.reason("gpu003") == "ops: reseat riser"

    plan, result = await act(svc, request(ActionKind.RESUME, "gpu003", force=True))
    assert plan.commands and result.ok, result.outcome
    assert lab.wait_state("gpu003", "idle") == "idle"


async def test_resume_of_a_mixed_selection_resumes_only_console_drains(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    await act(svc, request(ActionKind.DRAIN, "gpu001", reason="ecc"))
    lab.run("scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=NHC: hung gpu")
    plan, result = await act(svc, request(ActionKind.RESUME, "gpu001", "gpu002", "gpu005"))
    assert plan.commands == (("scontrol", "update", "NodeName=gpu001", "State=RESUME"),)
    assert result.ok and result.outcome == "resumed gpu001; skipped gpu002"
    assert result.per_target["gpu005"].startswith("no-op: IDLE")
    assert lab.wait_state("gpu001", "idle") and lab.state("gpu002") == "drained"


async def test_cap_refuses_more_than_the_pool_allows_unless_forced(lab: SlurmLab, store: Store) -> None:
    inventory = from_mapping({"pools": [{"name": "mi300x", "gpu_model": "MI300X", "nodes": "gpu[001-006]"}]})
    svc = service(store, inventory)  # 6 nodes: cap = max(2, 10% of 6) = 2
    _, result = await act(svc, request(ActionKind.DRAIN, "gpu001", reason="first"))
    assert result.ok
    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu002", "gpu003", reason="two more"))
    assert plan.refused is None and plan.capped == ("gpu003",)  # gpu002 fits under the cap of 2
    assert plan.decisions["gpu003"].startswith("skip: cap: cap 2 = max(2, 10% of 6); 1 already out")
    assert not result.ok  # asked for two, one done
    assert (lab.state("gpu002"), lab.state("gpu003")) == ("drained", "idle")

    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu003", reason="one more"))
    assert plan.refused is not None
    assert "pool mi300x: 3 nodes would be out of service (2 already: 2 by the console, 0 by others; 1 new)" in (
        plan.refused
    )
    assert "cap 2 = max(2, 10% of 6)" in plan.refused and "--force" in plan.refused
    assert not result.ok and lab.state("gpu003") == "idle"

    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu003", reason="one more", force=True))
    assert plan.refused is None and any("cap overridden" in note for note in plan.notes)
    assert result.ok and lab.state("gpu003") == "drained"

    wide = service(store, inventory, caps=CapPolicy(per_pool={"mi300x": 5}))
    plan = wide.plan(request(ActionKind.DRAIN, "gpu004", "gpu005", reason="within a cap of 5"))
    assert plan.refused is None


async def test_idempotent_drain_and_resume_are_no_ops(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    await act(svc, request(ActionKind.DRAIN, "gpu004", reason="first reason"))
    stamp = lab.run("sinfo", "-R", "-h", "-n", "gpu004", "-o", "%H").stdout
    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu004", reason="second reason"))
    assert plan.commands == () and plan.refused is None
    assert result.ok and result.outcome.startswith("nothing to drain: gpu004: no-op: already DRAINED by the console")
    assert lab.reason("gpu004") == f"{TAG} first reason"
    assert lab.run("sinfo", "-R", "-h", "-n", "gpu004", "-o", "%H").stdout == stamp

    plan, result = await act(svc, request(ActionKind.RESUME, "gpu005"))
    assert plan.commands == () and result.ok
    assert result.per_target["gpu005"] == "no-op: IDLE, nothing to resume"


async def test_undrain_clears_only_the_drain_flag(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    await act(svc, request(ActionKind.DRAIN, "gpu006", reason="bad hbm"))
    plan, result = await act(svc, request(ActionKind.UNDRAIN, "gpu006"))
    assert plan.commands == (("scontrol", "update", "NodeName=gpu006", "State=UNDRAIN"),)
    assert result.ok
    assert lab.wait_state("gpu006", "idle") == "idle"
    _, result = await act(svc, request(ActionKind.UNDRAIN, "gpu006"))
    assert result.per_target["gpu006"] == "no-op: IDLE, nothing to undrain"


async def test_a_node_with_a_running_job_goes_draining_then_drained(lab: SlurmLab, store: Store) -> None:
    job = lab.run("sbatch", "--parsable", "-w", "gpu004", "-o", "/dev/null", "--wrap", "sleep 3").stdout.strip()
    assert job.isdigit()
    lab.wait_state("gpu004", "allocated|mixed")
    svc = service(store)
    _, result = await act(svc, request(ActionKind.DRAIN, "gpu004", reason="ras: uncorrectable ecc"))
    assert result.ok
    assert result.per_target["gpu004"].startswith("drained: now DRAINING by the console")
    assert lab.state("gpu004") == "draining"
    assert lab.wait_state("gpu004", "drained", timeout_s=30) == "drained"
    assert (await svc.node_states(["gpu004"]))["gpu004"].startswith("DRAINED by the console")


class AsUser(TransportRunner):
    """Runs every command through ``runuser -u <user>``, as an operator without Slurm admin rights would."""

    def __init__(self, user: str) -> None:
        super().__init__()
        self.user = user

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = 60.0) -> RunOutput:
        return await super().run(where, ["runuser", "-u", self.user, "--", *argv], timeout_s=timeout_s)


async def test_an_unprivileged_user_gets_a_clear_refusal(lab: SlurmLab, store: Store) -> None:
    svc = service(store, runner=AsUser("nobody"))
    _, result = await act(svc, request(ActionKind.DRAIN, "gpu002", reason="x"))
    assert not result.ok
    assert "slurm_update error: Invalid user id" in result.outcome
    assert "needs root or a Slurm operator" in result.outcome
    assert result.per_target["gpu002"].startswith("failed: slurm_update error: Invalid user id")
    assert lab.state("gpu002") == "idle"
    assert "Invalid user id" in store.audit_log(1)[0]["output"]


HOSTILE = 'it\'s "bad"; $(touch {m}/dollar) `touch {m}/tick` | tee {m}/pipe & rm -rf {m}/keep\nsecond line\r\n\tend'


async def test_hostile_reasons_arrive_literally_and_run_nothing(lab: SlurmLab, store: Store, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    (marks / "keep").write_text("still here")
    reason = HOSTILE.format(m=marks)
    svc = service(store)
    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu005", reason=reason))
    assert result.ok, result.outcome
    expected = f"{TAG} " + reason.replace("\nsecond", " second").replace("\r\n\t", " ")
    assert "\n" not in expected and lab.reason("gpu005") == expected
    assert sorted(p.name for p in marks.iterdir()) == ["keep"]
    assert shlex.split(plan.steps[0].shown().split("$ ", 1)[1])[-1] == f'Reason="{expected}"'


async def test_a_trailing_quote_survives_scontrol_quote_stripping(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    _, result = await act(svc, request(ActionKind.DRAIN, "gpu006", reason='"quoted"'))
    assert result.ok
    assert lab.reason("gpu006") == f'{TAG} "quoted"'


async def test_execute_rechecks_the_state_the_plan_was_made_on(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    plan = svc.plan(request(ActionKind.DRAIN, "gpu001", "gpu002", reason="stale plan"))
    assert plan.acting_on == ("gpu001", "gpu002") and plan.notes  # nothing read yet: says so
    lab.run("scontrol", "update", "NodeName=gpu002", "State=DRAIN", "Reason=someone else first")
    result = await svc.execute(plan)
    assert result.ok and result.outcome == "drained gpu001; skipped gpu002"
    assert lab.reason("gpu002") == "someone else first"
    assert lab.reason("gpu001") == f"{TAG} stale plan"


async def test_unknown_node_is_skipped_with_a_reason(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu999", reason="x"))
    assert plan.refused == "nothing to drain: gpu999: skip: not a node of this Slurm cluster"
    assert not result.ok


async def test_read_only_refuses_every_action(lab: SlurmLab, store: Store) -> None:
    svc = service(store, read_only=True)
    plan, result = await act(svc, request(ActionKind.DRAIN, "gpu001", reason="x"))
    assert plan.refused is not None and "read-only" in plan.refused
    assert not result.ok and lab.state("gpu001") == "idle"


@pytest.mark.parametrize("kind", [ActionKind.DRAIN, ActionKind.CORDON])
def test_a_reason_is_required_to_take_nodes_out(kind: ActionKind, store: Store) -> None:
    plan = service(store).plan(request(kind, "gpu001", reason=" \n "))
    assert plan.refused is not None and "reason is required" in plan.refused
