"""The remediation lifecycle on a Kubernetes pool, against recorded API exchanges (``kube_replay``).

A pool whose cluster-file ``scheduler`` is ``kubernetes`` takes the same steps as a Slurm pool through
the same catalogue and service: ``drain`` cordons the Node, adds the console's taint and sets its node
condition; ``repaired`` and ``escalate`` move the taint and condition to the new stage; ``resume``
removes them once the case passed its revalidations. What someone else set is never removed, and an
operator's own uncordon ends the console's record as a resume outside the console does on Slurm.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from console.actions import ActionKind, ActionRequest, ActionService
from console.actions.kube import CONDITION_TYPE, PATCH_CONTENT_TYPE, TAINT_KEY
from console.cli import main
from console.inventory import from_mapping
from console.inventory.model import Inventory, LifecyclePolicy
from console.model.findings import Finding, Status, Subject, roll_up
from console.remediation.cases import record_revalidation
from console.store import Store
from console.store.lifecycle import Stage
from tests.actions.kube_replay import RecordedApi

CLOCK = 1767225600.0  # 2026-01-01T00:00:00Z, the time the exchanges were recorded with
KUBE_POOL = {"name": "k8s", "gpu_model": "MI300X", "nodes": "gpu[001-003]", "scheduler": "kubernetes"}


def kube_inventory() -> Inventory:
    return from_mapping({"name": "k", "pools": [KUBE_POOL]})


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


async def act(svc: ActionService, kind: ActionKind, *targets: str, **fields: Any):  # type: ignore[no-untyped-def]
    request = ActionRequest(kind, targets, **fields)
    await svc.refresh(request)
    plan = svc.plan(request)
    return plan, (None if plan.refused else await svc.execute(plan))


def bodies(plan: Any) -> dict[str, dict[str, Any]]:
    """The plan's PATCH bodies by path."""
    return {argv[1]: json.loads(argv[3]) for argv in plan.commands if argv[0] == "PATCH"}


async def test_drain_repair_escalate_and_resume_on_a_kubernetes_pool(store: Store) -> None:
    api = RecordedApi("lifecycle_exchange.json")
    svc = ActionService(kube_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK)
    first, third = failing_sweep(store, "gpu001"), failing_sweep(store, "gpu003")

    # drain on a Kubernetes pool is a cordon: the Node, its taint and its condition.
    plan, result = await act(svc, ActionKind.DRAIN, "gpu001", reason="xgmi link down gpu3", sweep_id=first)
    assert plan.request.kind is ActionKind.CORDON and plan.where == "kubernetes"
    assert plan.notes[0] == "drain on a Kubernetes pool is carried out as cordon"
    sent = bodies(plan)
    node, status = sent["/api/v1/nodes/gpu001"], sent["/api/v1/nodes/gpu001/status"]
    assert node["spec"]["unschedulable"] is True
    assert {"key": TAINT_KEY, "value": "drained", "effect": "NoSchedule"} in node["spec"]["taints"]
    assert node["metadata"]["annotations"]["instinct-console/set"] == "cordon,taint,condition"
    assert node["metadata"]["annotations"]["instinct-console/sweep-id"] == str(first)
    (condition,) = status["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (CONDITION_TYPE, "True", "Drained")
    assert condition["message"].startswith("xgmi link down gpu3")
    assert result is not None and result.ok, result
    assert result.per_target["gpu001"].endswith(f"condition {CONDITION_TYPE}=True (Drained)")
    case = store.case("gpu001")
    assert case is not None and case.stage is Stage.DRAINED and case.findings == ["xgmi.link_up"]
    assert store.drains("gpu001", open_only=True)[0].reason == "xgmi link down gpu3"

    # The AMD GPU operator's taint and condition on gpu003 are kept (the taint list is sent whole).
    plan, result = await act(svc, ActionKind.DRAIN, "gpu003", reason="xgmi link down", sweep_id=third)
    assert [t["key"] for t in bodies(plan)["/api/v1/nodes/gpu003"]["spec"]["taints"]] == [
        "amd-gpu-unhealthy",
        TAINT_KEY,
    ]
    assert result is not None and result.ok
    assert "amd-gpu-unhealthy=AMDGPUXgmi:NoSchedule" in result.per_target["gpu003"]

    # repaired: the case and the node both say revalidating.
    plan, result = await act(svc, ActionKind.REPAIRED, "gpu001", reason="reseated OAM 3")
    sent = bodies(plan)
    assert sent["/api/v1/nodes/gpu001"]["metadata"]["annotations"] == {
        "instinct-console/case": str(case.id),
        "instinct-console/stage": "revalidating",
    }
    assert sent["/api/v1/nodes/gpu001/status"]["status"]["conditions"][0]["reason"] == "Revalidating"
    assert result is not None and result.ok, result
    assert result.per_target["gpu001"].startswith(f"case #{case.id}: revalidating; repaired: now cordoned")

    # escalate: the node stays out, the taint and condition say so.
    plan, result = await act(svc, ActionKind.ESCALATE, "gpu003", reason="RMA 12345")
    assert result is not None and result.ok and "(Escalated)" in result.per_target["gpu003"]
    assert store.case("gpu003") is None, "an escalated case is closed"

    # resume before the revalidation passed: held by the case.
    plan, result = await act(svc, ActionKind.RESUME, "gpu001")
    assert plan.refused is not None and "case #1 is revalidating" in plan.refused and result is None

    for sweep in (first + 10, first + 11):
        record_revalidation(
            store,
            "gpu001",
            passed=True,
            sweep_id=sweep,
            action=None,
            user="alice",
            policy=LifecyclePolicy(),
            note="pass",
        )
    plan, result = await act(svc, ActionKind.RESUME, "gpu001")
    sent = bodies(plan)
    assert sent["/api/v1/nodes/gpu001"]["spec"]["unschedulable"] is False
    assert TAINT_KEY not in {t["key"] for t in sent["/api/v1/nodes/gpu001"]["spec"]["taints"]}
    assert sent["/api/v1/nodes/gpu001/status"] == {
        "status": {"conditions": [{"$patch": "delete", "type": CONDITION_TYPE}]}
    }
    assert result is not None and result.ok, result
    assert CONDITION_TYPE not in result.per_target["gpu001"] and "dedicated=training" in result.per_target["gpu001"]
    assert api.exchanges == [], "every recorded request was made"
    (returned,) = store.cases("gpu001")
    assert returned.stage is Stage.RETURNED
    assert store.drains("gpu001", open_only=True) == []
    assert store.drains("gpu003", open_only=True), "the escalated node is still held out"
    actions = [entry["action"] for entry in reversed(store.audit_log(10))]
    assert actions == ["cordon", "cordon", "repaired", "escalate", "uncordon"]


async def test_a_manual_uncordon_ends_the_record_and_resume_removes_only_what_the_console_left(store: Store) -> None:
    api = RecordedApi("manual_uncordon_exchange.json")
    svc = ActionService(kube_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK)
    sweep = failing_sweep(store, "gpu001")
    _, result = await act(svc, ActionKind.DRAIN, "gpu001", reason="xgmi link down gpu3", sweep_id=sweep)
    assert result is not None and result.ok and store.case("gpu001") is not None

    # The operator ran `kubectl uncordon gpu001`; the console reads the nodes for the resume.
    request = ActionRequest(ActionKind.RESUME, ("gpu001",))
    await svc.refresh(request)
    (record,) = store.drains("gpu001")
    assert record.ended_at is not None and record.ended_by is not None
    assert record.ended_by.startswith("no longer held out in Kubernetes (uncordoned or untainted outside the console)")
    (case,) = store.cases("gpu001")
    assert case.stage is Stage.ENDED and store.case("gpu001") is None

    # What the console set and the operator left (its taint, condition, annotations) is still its own.
    plan = svc.plan(request)
    assert plan.decisions["gpu001"].startswith("remove what the console left")
    node = bodies(plan)["/api/v1/nodes/gpu001"]
    assert "unschedulable" not in node["spec"], "the operator's uncordon is not repeated"
    assert [t["key"] for t in node["spec"]["taints"]] == ["dedicated"]
    result = await svc.execute(plan)
    assert result.ok and api.exchanges == []
    assert result.per_target["gpu001"] == "uncordoned: now schedulable, taints dedicated=training:NoSchedule"


async def test_a_taint_or_condition_the_console_did_not_set_is_never_removed(store: Store) -> None:
    """gpu002 carries a cordon, a taint of the console's own key and its condition type, all set by others."""
    api = RecordedApi("foreign_exchange.json")
    svc = ActionService(kube_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK)
    plan, result = await act(svc, ActionKind.RESUME, "gpu002")
    assert plan.refused is not None and "the console uncordons only its own nodes without --force" in plan.refused

    plan, result = await act(svc, ActionKind.RESUME, "gpu002", force=True)
    assert plan.decisions["gpu002"].endswith("(forced; their taints and conditions stay)")
    assert plan.commands == (
        ("PATCH", "/api/v1/nodes/gpu002", PATCH_CONTENT_TYPE, '{"spec": {"unschedulable": false}}'),
    ), "only the cordon is lifted: no taint list, no status patch"
    assert result is not None and result.ok
    assert "instinct-console/remediation=by-hand:NoSchedule" in result.per_target["gpu002"]
    assert f"condition {CONDITION_TYPE}=True (ByHand)" in result.per_target["gpu002"]
    assert api.exchanges == []


async def test_a_request_across_slurm_and_kubernetes_pools_is_refused(store: Store) -> None:
    mixed = from_mapping(
        {
            "name": "m",
            "pools": [
                {"name": "k8s", "gpu_model": "MI300X", "nodes": "gpu[001-002]", "scheduler": "kubernetes"},
                {"name": "hpc", "gpu_model": "MI300X", "nodes": "gpu[003-004]"},
            ],
        }
    )
    svc = ActionService(mixed, store, kube_api=RecordedApi("foreign_exchange.json"), user="alice")
    plan, _ = await act(svc, ActionKind.DRAIN, "gpu002", "gpu003", reason="x")
    assert plan.refused == "gpu002 are in Kubernetes pools and gpu003 are not: act on each backend's nodes apart"


def test_dry_run_prints_the_exact_patches_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    api = RecordedApi("lifecycle_exchange.json")
    api.exchanges = api.exchanges[:1]  # the nodes as read; a dry run sends nothing else
    monkeypatch.setattr("console.actions.kube.KubernetesClientApi", lambda *args, **kwargs: api)
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(
        '[[pools]]\nname = "k8s"\ngpu_model = "MI300X"\nnodes = "gpu[001-003]"\nscheduler = "kubernetes"\n'
    )
    history = tmp_path / "history.sqlite"
    store = Store(history)
    sweep = failing_sweep(store, "gpu001")
    store.close()
    argv = ["drain", "gpu001", "-i", str(cluster), "--store", str(history), "--reason", "xgmi link down gpu3"]
    assert main([*argv, "--sweep", str(sweep), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: nothing was changed" in out
    text = " ".join(out.split())  # the plan wraps long lines
    assert "kubernetes$ PATCH /api/v1/nodes/gpu001 application/strategic-merge-patch+json" in text
    assert "kubernetes$ PATCH /api/v1/nodes/gpu001/status application/strategic-merge-patch+json" in text
    assert '"key": "instinct-console/remediation", "value": "drained"' in text
    assert f'"reason": "Drained", "status": "True", "type": "{CONDITION_TYPE}"' in text
    assert api.exchanges == []
    reopened = Store(history)
    try:
        assert reopened.drains() == [] and reopened.cases() == [] and reopened.audit_log(5) == []
    finally:
        reopened.close()


async def test_a_refused_condition_fails_the_result_but_the_node_is_held_out_and_its_case_opens(store: Store) -> None:
    """Without ``nodes/status: patch`` the cordon and taint are made: the node is held, the result says what failed."""
    api = RecordedApi("forbidden_status_exchange.json")
    svc = ActionService(kube_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK)
    sweep = failing_sweep(store, "gpu001")
    _, result = await act(svc, ActionKind.DRAIN, "gpu001", reason="xgmi link down gpu3", sweep_id=sweep)
    assert result is not None and not result.ok and api.exchanges == []
    assert result.outcome.startswith("failed: ForbiddenException: (403)"), result.outcome
    assert result.per_target["gpu001"].startswith("failed: ForbiddenException: (403)")
    (record,) = store.drains("gpu001", open_only=True)
    assert record.reason == "xgmi link down gpu3"
    case = store.case("gpu001")
    assert case is not None and case.stage is Stage.DRAINED
    # The API server's own words reach the operator and the audit log.
    denied = 'User "alice" cannot patch resource "nodes/status"'
    assert denied in result.outcome and denied in store.audit_log(1)[0]["output"]


async def test_a_revalidation_strike_is_shown_on_the_node(store: Store) -> None:
    """The strike moves the case in the store; ``show_stages`` (run by ``revalidate``) writes it on the node."""
    api = RecordedApi("strike_exchange.json")
    svc = ActionService(kube_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK)
    sweep = failing_sweep(store, "gpu001")
    await act(svc, ActionKind.DRAIN, "gpu001", reason="xgmi link down gpu3", sweep_id=sweep)
    await act(svc, ActionKind.REPAIRED, "gpu001", reason="reseated OAM 3")
    case = record_revalidation(
        store,
        "gpu001",
        passed=False,
        sweep_id=sweep + 5,
        action=None,
        user="alice",
        policy=LifecyclePolicy(),
        note="FAIL",
    )
    assert case.stage is Stage.DRAINED
    shown = await svc.show_stages(["gpu001"])
    assert shown is not None and shown.ok, shown
    assert "instinct-console/remediation=drained:NoSchedule" in shown.per_target["gpu001"]
    assert shown.per_target["gpu001"].endswith(f"condition {CONDITION_TYPE}=True (Drained)")
    entry = store.audit_log(1)[0]
    assert entry["action"] == "stage" and "PATCH /api/v1/nodes/gpu001/status" in entry["commands"]
    assert await svc.show_stages(["gpu001"]) is None, "nothing left to change"
    assert api.exchanges == []


async def test_the_real_kubernetes_client_sends_the_recorded_requests_over_http(store: Store, tmp_path: Path) -> None:
    """The ``kubernetes`` client itself, over loopback HTTP: a cordon whose condition is refused (403)."""
    from console.actions.kube import KubernetesClientApi
    from tests.actions.kube_http import replay_server

    sweep = failing_sweep(store, "gpu001")
    with replay_server("forbidden_status_exchange.json", tmp_path) as (kubeconfig, server):
        client = KubernetesClientApi(str(kubeconfig))
        svc = ActionService(kube_inventory(), store, kube_api=client, user="alice", clock=lambda: CLOCK)
        _, result = await act(svc, ActionKind.DRAIN, "gpu001", reason="xgmi link down gpu3", sweep_id=sweep)
        assert server.mismatches == [] and server.exchanges == []
    assert result is not None and not result.ok
    assert 'User "alice" cannot patch resource "nodes/status"' in result.outcome, result.outcome
    assert result.per_target["gpu001"].startswith("failed: ForbiddenException: (403)")
    assert store.drains("gpu001", open_only=True), "the Node patch went through: the console holds the node"


async def test_the_whole_lifecycle_through_the_real_client(store: Store, tmp_path: Path) -> None:
    """The steps of the first test, with the ``kubernetes`` client over loopback HTTP instead of the replay object."""
    from console.actions.kube import KubernetesClientApi
    from tests.actions.kube_http import replay_server

    first, third = failing_sweep(store, "gpu001"), failing_sweep(store, "gpu003")
    with replay_server("lifecycle_exchange.json", tmp_path) as (kubeconfig, server):
        client = KubernetesClientApi(str(kubeconfig))
        svc = ActionService(kube_inventory(), store, kube_api=client, user="alice", clock=lambda: CLOCK)
        steps = [
            (ActionKind.DRAIN, "gpu001", {"reason": "xgmi link down gpu3", "sweep_id": first}),
            (ActionKind.DRAIN, "gpu003", {"reason": "xgmi link down", "sweep_id": third}),
            (ActionKind.REPAIRED, "gpu001", {"reason": "reseated OAM 3"}),
            (ActionKind.ESCALATE, "gpu003", {"reason": "RMA 12345"}),
            (ActionKind.RESUME, "gpu001", {}),  # held by its case: refused after one read
        ]
        for kind, node, fields in steps:
            _, result = await act(svc, kind, node, **fields)
            assert result is None or result.ok, (kind, result)
        for sweep in (first + 10, first + 11):
            record_revalidation(
                store,
                "gpu001",
                passed=True,
                sweep_id=sweep,
                action=None,
                user="alice",
                policy=LifecyclePolicy(),
                note="pass",
            )
        _, result = await act(svc, ActionKind.RESUME, "gpu001")
        assert server.mismatches == [] and server.exchanges == []
    assert result is not None and result.ok, result
    assert [c.stage for c in store.cases()] == [Stage.RETURNED, Stage.ESCALATED]
