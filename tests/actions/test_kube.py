"""Kubernetes cordon/taint and the reverse: pure patch builders, and the requests checked against a recorded exchange.

No API server can run on these machines (and the ``kubernetes`` package is not installed here), so
the service is given a tiny API object that replays ``tests/fixtures/kube/*_exchange.json``: it fails
unless each request the console sends (method, path, content type and the exact JSON body) is the
recorded one, in order, and answers with the recorded response. Each file's ``about`` says how its
responses follow the API's rules (docs/sources/kubernetes.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from console.actions import ActionKind, ActionRequest, ActionService, CapPolicy, bare_inventory
from console.actions.kube import (
    LEGACY_TAINT_KEY,
    PATCH_CONTENT_TYPE,
    TAINT_KEY,
    KubernetesClientApi,
    cordon_patches,
    decide,
    describe_node,
    taint_value,
    uncordon_patches,
    with_resource_version,
)
from console.store import Store
from tests.actions.kube_replay import RecordedApi

CLOCK = 1767225600.0  # 2026-01-01T00:00:00Z, the time the exchange was recorded with


def kube_service(store: Store, api: RecordedApi) -> ActionService:
    return ActionService(bare_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK)


async def test_cordon_sends_the_recorded_patches_and_leaves_others_alone(store: Store) -> None:
    api = RecordedApi("cordon_exchange.json")
    svc = kube_service(store, api)
    req = ActionRequest(ActionKind.CORDON, ("gpu001", "gpu002", "gpu003"), reason="xgmi link down gpu3", sweep_id=42)
    await svc.refresh(req)
    plan = svc.plan(req)
    assert plan.where == "kubernetes" and plan.acting_on == ("gpu001", "gpu003")
    assert plan.decisions["gpu002"].startswith("skip: cordoned by others")
    assert [c[1] for c in plan.commands] == [
        "/api/v1/nodes/gpu001",
        "/api/v1/nodes/gpu001/status",
        "/api/v1/nodes/gpu003",
        "/api/v1/nodes/gpu003/status",
    ]
    method, path, content_type, body = plan.commands[0]
    assert (method, path, content_type) == ("PATCH", "/api/v1/nodes/gpu001", PATCH_CONTENT_TYPE)
    # No sweep 42 in this store: a maintenance cordon. The taint list is sent whole (it has no merge
    # key), so the node's own taint is in it.
    assert json.loads(body)["spec"]["taints"] == [
        {"key": "dedicated", "value": "training", "effect": "NoSchedule"},
        {"key": TAINT_KEY, "value": "maintenance", "effect": "NoSchedule"},
    ]
    result = await svc.execute(plan)
    assert api.exchanges == [], "every recorded request was made"
    assert result.ok, result.outcome
    assert result.outcome == "cordoned gpu[001,003]; skipped gpu002"
    assert "amd-gpu-unhealthy=AMDGPUXgmi:NoSchedule" in result.per_target["gpu003"]  # the operator's taint stays
    assert result.per_target["gpu001"].startswith("cordoned: now cordoned by the console (alice): xgmi link down gpu3")
    entry = store.audit_log(1)[0]
    assert entry["action"] == "cordon" and entry["user"] == "alice"
    assert "PATCH /api/v1/nodes/gpu001" in entry["commands"]
    assert "PATCH /api/v1/nodes/gpu003/status" in entry["commands"]


async def test_uncordon_undoes_only_the_consoles_cordons(store: Store) -> None:
    api = RecordedApi("uncordon_exchange.json")
    svc = kube_service(store, api)
    req = ActionRequest(ActionKind.UNCORDON, ("gpu001", "gpu002", "gpu003"))
    await svc.refresh(req)
    plan = svc.plan(req)
    assert plan.acting_on == ("gpu001", "gpu003")
    assert "the console uncordons only its own nodes" in plan.decisions["gpu002"]
    result = await svc.execute(plan)
    assert api.exchanges == []
    assert result.ok and result.outcome == "uncordoned gpu[001,003]; skipped gpu002"
    # An older console's cordon (no record of what it set): its legacy taint goes, the others stay;
    # the lifecycle controller drops node.kubernetes.io/unschedulable after the response.
    assert result.per_target["gpu001"] == (
        "uncordoned: now schedulable, taints dedicated=training:NoSchedule,"
        " node.kubernetes.io/unschedulable=:NoSchedule"
    )


async def test_cordon_refused_over_the_cap(store: Store) -> None:
    api = RecordedApi("cordon_exchange.json")
    caps = CapPolicy(minimum=1)  # 3 nodes: cap 1
    svc = ActionService(bare_inventory(), store, kube_api=api, user="alice", clock=lambda: CLOCK, caps=caps)
    req = ActionRequest(ActionKind.CORDON, ("gpu001", "gpu003"), reason="x")
    await svc.refresh(req)
    plan = svc.plan(req)
    # The one that fits is cordoned; the other is named with the pool's count.
    assert plan.refused is None and plan.capped == ("gpu003",) and plan.acting_on == ("gpu001",)
    assert plan.decisions["gpu003"].startswith("skip: cap: cap 1 = max(1, 10% of 3)")
    plan = svc.plan(ActionRequest(ActionKind.CORDON, ("gpu001", "gpu003"), reason="x", force=True))
    assert plan.refused is None and plan.capped == () and "cap overridden (--force)" in plan.notes[-1]


def test_taint_value_is_a_valid_label_value() -> None:
    assert taint_value("xgmi link down gpu3") == "xgmi-link-down-gpu3"
    assert taint_value(" $(id); rm -rf / \n") == "id-rm--rf"
    assert taint_value("-" * 10) == ""
    long = taint_value("ecc " * 40)
    assert len(long) <= 63 and long[-1].isalnum()


def test_cordon_patches_keep_the_full_reason_in_annotations_and_the_others_taints() -> None:
    node = {"metadata": {"name": "gpu005"}, "spec": {"taints": [{"key": "amd-gpu-unhealthy", "effect": "NoSchedule"}]}}
    (path, patch), (status_at, status) = cordon_patches(
        node, reason='ecc "uncorrectable"\nGPU 5', user="bob", when=CLOCK, sweep_id=None, stage="drained", case_id=None
    )
    assert (path, status_at) == ("/api/v1/nodes/gpu005", "/api/v1/nodes/gpu005/status")
    notes = patch["metadata"]["annotations"]
    assert notes["instinct-console/drain-reason"] == 'ecc "uncorrectable" GPU 5'
    assert notes["instinct-console/drained-at"] == "2026-01-01T00:00:00Z"
    assert notes["instinct-console/set"] == "cordon,taint,condition"
    assert "instinct-console/sweep-id" not in notes and "instinct-console/case" not in notes
    assert patch["spec"]["unschedulable"] is True
    assert [t["key"] for t in patch["spec"]["taints"]] == ["amd-gpu-unhealthy", TAINT_KEY]
    (condition,) = status["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("InstinctConsoleRemediation", "True")
    assert condition["reason"] == "Drained"


def test_uncordon_patches_undo_only_what_the_console_set() -> None:
    node = {
        "metadata": {
            "name": "gpu005",
            "annotations": {"instinct-console/drained-by": "bob", "instinct-console/set": "taint,condition"},
        },
        "spec": {
            "unschedulable": True,  # someone else's cordon: the console took over only with a taint
            "taints": [{"key": TAINT_KEY, "value": "drained"}, {"key": "amd-gpu-unhealthy"}],
        },
        "status": {"conditions": [{"type": "InstinctConsoleRemediation"}, {"type": "AMDGPUXgmi"}]},
    }
    (status_at, status), (_, patch) = uncordon_patches(node)
    assert status_at.endswith("/status"), "the condition goes first: a failed Node patch leaves it all the console's"
    assert patch["spec"] == {"taints": [{"key": "amd-gpu-unhealthy"}]}, "their cordon and taint stay"
    assert set(patch["metadata"]["annotations"].values()) == {None}
    assert status == {"status": {"conditions": [{"$patch": "delete", "type": "InstinctConsoleRemediation"}]}}
    *_, (_, forced) = uncordon_patches(node, force=True)
    assert forced["spec"]["unschedulable"] is False


def test_resource_version_is_added_without_changing_the_body() -> None:
    body = {"metadata": {"annotations": {"a": None}}, "spec": {}}
    pinned = with_resource_version(body, {"metadata": {"resourceVersion": "7"}})
    assert pinned["metadata"]["resourceVersion"] == "7" and "resourceVersion" not in body["metadata"]
    assert with_resource_version(body, {"metadata": {}}) is body


@pytest.mark.parametrize(
    ("cordon", "node", "force", "act", "starts"),
    [
        (True, {"spec": {}}, False, True, "cordon, taint"),
        (True, {"spec": {"unschedulable": True}}, False, False, "skip: cordoned by others"),
        (True, {"spec": {"unschedulable": True}}, True, True, "cordon, taint"),
        (False, {"spec": {}}, False, False, "no-op: schedulable"),
        # A taint of the console's key that no annotation says the console set is not the console's.
        (False, {"spec": {"taints": [{"key": TAINT_KEY, "effect": "NoSchedule"}]}}, True, False, "no-op"),
        (False, {"spec": {"unschedulable": True}}, True, True, "uncordon cordoned by others"),
    ],
)
def test_ownership_decisions(cordon: bool, node: dict[str, Any], force: bool, act: bool, starts: str) -> None:
    decision = decide(cordon, node, force)
    assert decision.act is act and decision.note.startswith(starts), decision.note


def test_describe_names_the_consoles_own_cordon() -> None:
    node = {
        "metadata": {"annotations": {"instinct-console/drained-by": "alice", "instinct-console/drain-reason": "ecc"}},
        "spec": {"unschedulable": True, "taints": [{"key": LEGACY_TAINT_KEY, "value": "ecc", "effect": "NoSchedule"}]},
    }
    assert describe_node(node) == "cordoned by the console (alice): ecc, taints amd.com/gpu-unhealthy=ecc:NoSchedule"
    node["spec"]["unschedulable"] = False  # kubectl uncordon
    assert describe_node(node).startswith("schedulable by the console (alice): ecc (released outside the console)")


def test_real_client_needs_the_optional_kubernetes_package(monkeypatch: pytest.MonkeyPatch) -> None:
    # setup installs the kube extra; without it (a None entry makes the import fail) the error says how.
    monkeypatch.setitem(sys.modules, "kubernetes", None)
    with pytest.raises(RuntimeError, match=r"instinct-console\[kube\]"):
        KubernetesClientApi()


def test_real_client_reads_the_kubeconfig_it_is_given(tmp_path: Path) -> None:
    """With the kube extra installed, a kubeconfig that is not there is said, not a traceback later."""
    with pytest.raises(Exception, match="nope"):
        KubernetesClientApi(str(tmp_path / "nope"))


async def test_cordon_from_the_console_plans_through_the_same_catalogue_and_service(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cordon was CLI-only. In the console, c opens the same confirm dialog as drain, and the plan comes
    from the Kubernetes API (the recorded exchange) through the engine's action service."""
    from console.inventory import from_mapping
    from console.ui.screens.confirm import ConfirmScreen
    from tests.ui.helpers import local_console, main_screen, type_text, wait_until

    api = RecordedApi("cordon_exchange.json")
    monkeypatch.setattr("console.actions.kube.KubernetesClientApi", lambda *args, **kwargs: api)
    inventory = from_mapping({"name": "k", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu[001-003]"}]})
    app = local_console(inventory, store, tmp_path, scheduler_poll_s=3600)
    async with app.run_test(size=(160, 48)) as pilot:
        grid = main_screen(pilot).grid
        for name in ("gpu001", "gpu002", "gpu003"):
            grid.toggle_mark(name)
        await pilot.press("c")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen) and dialog.action_spec.id == "cordon"
        assert dialog.action_spec.dangerous
        await type_text(pilot, "xgmi link down gpu3")
        await wait_until(pilot, lambda: dialog.preview is not None and dialog.preview.reason == "xgmi link down gpu3")
        preview = dialog.preview
        assert preview is not None and preview.refused is None, preview
        assert preview.where == "kubernetes"
        decisions = dict(preview.decisions)
        assert decisions["gpu002"].startswith("skip: cordoned by others")
        # A PATCH of each Node and one of its status (the condition), for gpu001 and gpu003.
        assert [line.split()[1] for line in preview.command_lines()] == ["PATCH"] * 4
        await pilot.press("escape")
