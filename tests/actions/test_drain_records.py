"""The console's own drains, kept in the store, decide what it may resume (real slurmctld/slurmd lab).

A drain the console makes is recorded (node, reason, who, when, and the sweep and findings behind it).
``resume`` without ``--force`` acts on those nodes only: a reason that merely starts with the console's
tag, set by someone else, is not the console's. A node resumed outside the console ends its record
the next time the console reads Slurm.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from console.actions import ActionKind, ActionRequest, ActionService, bare_inventory
from console.cli import main
from console.model.findings import Finding, Status, Subject, roll_up
from console.store import Store
from console.store.lifecycle import Stage
from tests.harness.slurm_lab import SlurmLab

TAG = "instinct-console:"


def service(store: Store) -> ActionService:
    return ActionService(bare_inventory(), store, user="alice")


async def act(svc: ActionService, kind: ActionKind, *targets: str, **fields: object):  # type: ignore[no-untyped-def]
    request = ActionRequest(kind, targets, **fields)
    await svc.refresh(request)
    plan = svc.plan(request)
    return plan, await svc.execute(plan)


def failing_sweep(store: Store, node: str) -> int:
    """A finished sweep in which ``node`` failed its XGMI link check, as the engine records one."""
    sweep = store.start_sweep("quick", "inventory", node)
    link = Finding(
        check_id="xgmi.link_up",
        family="xgmi",
        status=Status.FAIL,
        subject=Subject(node=node, gpu=3, peer=5),
        message="link gpu3-gpu5 is down",
    )
    store.record_node(sweep, "cluster", roll_up(node, [link]), {})
    store.finish_sweep(sweep, "done", {})
    return sweep


async def test_a_console_drain_is_recorded_with_who_why_when_and_the_sweep_behind_it(
    lab: SlurmLab, store: Store
) -> None:
    sweep = failing_sweep(store, "gpu002")
    svc = service(store)
    before = time.time()
    _, drained = await act(svc, ActionKind.DRAIN, "gpu002", reason="xgmi link down", sweep_id=sweep)
    assert drained.ok, drained.outcome
    (record,) = store.drains()
    assert (record.node, record.reason, record.user) == ("gpu002", f"{TAG} xgmi link down [sweep {sweep}]", "alice")
    assert before <= record.at <= time.time()
    assert (record.sweep_id, record.findings, record.audit_id) == (sweep, ["xgmi.link_up"], drained.audit_id)
    assert record.ended_at is None and lab.reason("gpu002") == record.reason

    # A drain for what a sweep found opens the node's remediation case: it returns only once revalidated.
    case = store.case("gpu002")
    assert case is not None and case.stage is Stage.DRAINED and case.findings == ["xgmi.link_up"]
    _, held = await act(svc, ActionKind.RESUME, "gpu002")
    assert not held.ok and f"case #{case.id} is drained" in held.outcome and "--force" in held.outcome
    assert lab.state("gpu002") == "drained"

    # Forced past its case, a resume says why (issue 33): without a reason it is refused.
    _, blind = await act(svc, ActionKind.RESUME, "gpu002", force=True)
    assert not blind.ok and "--force needs --reason" in blind.outcome
    _, resumed = await act(svc, ActionKind.RESUME, "gpu002", force=True, reason="link reseated, vendor sign-off")
    assert resumed.ok, resumed.outcome
    (record,) = store.drains()
    assert record.ended_at is not None and record.ended_by == f"resumed by the console (audit #{resumed.audit_id})"
    assert store.case("gpu002") is None
    (ended,) = store.cases("gpu002")
    assert (
        ended.stage is Stage.ENDED
        and "before its revalidation passed: link reseated" in store.case_steps(ended.id)[-1].note
    )


async def test_resume_acts_only_on_drains_the_console_recorded(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    await act(svc, ActionKind.DRAIN, "gpu001", reason="ecc")
    lab.run("scontrol", "update", "NodeName=gpu003", "State=DRAIN", f"Reason={TAG} looks like ours")
    plan, result = await act(svc, ActionKind.RESUME, "gpu001", "gpu003")
    assert plan.acting_on == ("gpu001",), plan.decisions
    assert plan.decisions["gpu003"].startswith("skip: DRAINED with the console's tag, but not drained by this console")
    assert "--force" in plan.decisions["gpu003"]
    assert result.ok and result.outcome == "resumed gpu001; skipped gpu003"
    assert lab.wait_state("gpu001", "idle") == "idle" and lab.state("gpu003") == "drained"

    _, forced = await act(svc, ActionKind.RESUME, "gpu003", force=True)
    assert forced.ok and lab.wait_state("gpu003", "idle") == "idle"


async def test_a_resume_outside_the_console_ends_its_record_at_the_next_read(lab: SlurmLab, store: Store) -> None:
    svc = service(store)
    await act(svc, ActionKind.DRAIN, "gpu005", reason="hbm")
    (record,) = store.drains(open_only=True)
    lab.run("scontrol", "update", "NodeName=gpu005", "State=RESUME")
    lab.wait_state("gpu005", "idle")
    assert store.drains(open_only=True) == [record], "nothing ends it before the console reads Slurm"

    states = await svc.node_states(["gpu005"])
    assert states["gpu005"] == "IDLE"
    assert store.drains(open_only=True) == []
    (ended,) = store.drains()
    assert ended.ended_by == "no longer drained in Slurm (resumed outside the console), seen IDLE"

    # Drained again by hand with the very same text: the record stays ended, so it is not the console's.
    lab.run("scontrol", "update", "NodeName=gpu005", "State=DRAIN", f"Reason={record.reason}")
    plan, _ = await act(svc, ActionKind.RESUME, "gpu005")
    assert plan.refused is not None and "not drained by this console" in plan.refused
    assert lab.state("gpu005") == "drained"


def test_resume_from_the_command_line_refuses_a_drain_it_did_not_make(
    lab: SlurmLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lab.run("scontrol", "update", "NodeName=gpu006", "State=DRAIN", f"Reason={TAG} hand-made")
    assert main(["resume", "gpu006", "--yes", "--store", str(tmp_path / "h.sqlite")]) == 1
    assert "not drained by this console" in capsys.readouterr().out
    assert lab.state("gpu006") == "drained"


async def test_a_cordon_record_is_not_ended_by_reading_slurm(lab: SlurmLab, store: Store) -> None:
    """Without a cluster file, Slurm and Kubernetes can name the same hosts: Slurm showing gpu001 idle says
    nothing about the console's cordon of the Kubernetes Node gpu001 (recorded exchange, kube_replay)."""
    from tests.actions.kube_replay import RecordedApi

    api = RecordedApi("cordon_exchange.json")
    svc = ActionService(bare_inventory(), store, kube_api=api, user="alice", clock=lambda: 1767225600.0)
    _, cordoned = await act(
        svc, ActionKind.CORDON, "gpu001", "gpu002", "gpu003", reason="xgmi link down gpu3", sweep_id=42
    )
    assert cordoned.ok, cordoned.outcome
    assert [r.node for r in store.drains(open_only=True)] == ["gpu001", "gpu003"]
    states = await svc.node_states(["gpu001", "gpu003"])
    assert states == {"gpu001": "IDLE", "gpu003": "IDLE"}
    assert [r.node for r in store.drains(open_only=True)] == ["gpu001", "gpu003"], "Slurm does not judge a cordon"
