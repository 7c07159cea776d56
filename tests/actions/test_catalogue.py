"""One action catalogue: every front end takes its actions, names and read-only rule from it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from console.actions import ActionKind, ActionRequest, ActionService
from console.actions.catalogue import CATALOGUE, DANGEROUS, Reason, entry
from console.actions.model import KUBE_KINDS, SLURM_KINDS
from console.actions.planning import READ_ONLY
from console.commands import actions as action_commands
from console.inventory import from_mapping
from console.store import Store
from console.ui.registry import ACTIONS, visible_actions


def test_every_action_kind_is_catalogued_once() -> None:
    assert sorted(e.kind for e in CATALOGUE) == sorted(ActionKind)
    assert all(entry(kind).id == kind.value for kind in ActionKind)


def test_the_console_names_its_actions_as_the_catalogue_does() -> None:
    # Another screen's key for a catalogued action is named "<screen>-<action>" (ids are unique).
    kinds = {k.value for k in ActionKind}
    catalogued = {a.id: a for a in ACTIONS if a.id in kinds}
    elsewhere = {a.id: a for a in ACTIONS if a.screen != "main" and a.id.removeprefix(f"{a.screen}-") in kinds}
    assert set(elsewhere) == {
        "remediation-repaired",
        "remediation-revalidate",
        "remediation-approve",
        "remediation-escalate",
        "acceptance-rollback",
    }
    assert set(catalogued) == {
        "drain",
        "resume",
        "cordon",
        "uncordon",
        "enforce-pin",
        "pin",
        "accept",
        "repaired",
        "escalate",
        "rollback",
    }
    for ui in [*catalogued.values(), *elsewhere.values()]:
        e = entry(ActionKind(ui.id.removeprefix(f"{ui.screen}-")))
        assert (ui.title, ui.description, ui.dangerous, ui.confirm) == (e.title, e.summary, e.dangerous, True)
    # Read-only hides exactly the dangerous ones, and the heavy test that takes every GPU of its nodes.
    hidden = {a.id for a in visible_actions(False)} - {a.id for a in visible_actions(True)}
    assert hidden == ({k.value for k in DANGEROUS} & set(catalogued)) | {"multinode", "multinode-fleet"}


def test_the_cli_offers_the_scheduler_actions_with_the_catalogues_words() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    action_commands.register(sub)
    for kind in SLURM_KINDS | KUBE_KINDS:
        e = entry(kind)
        p = sub.choices[e.id]
        assert p.description == e.summary
        reason = next(a for a in p._actions if a.dest == "reason")
        assert reason.required is (e.reason is Reason.REQUIRED)


@pytest.mark.parametrize("kind", sorted(ActionKind))
def test_the_action_service_refuses_in_read_only_exactly_the_dangerous_actions(
    kind: ActionKind, tmp_path: Path
) -> None:
    inventory = from_mapping({"name": "c", "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "n[1-2]"}]})
    store = Store(tmp_path / "h.sqlite")
    try:
        service = ActionService(inventory, store, read_only=True)
        plan = service.plan(ActionRequest(kind, ("n1",), reason="test", pool="p", from_node="n1"))
        assert (plan.refused == READ_ONLY) is (kind in DANGEROUS), plan.refused
    finally:
        store.close()


def test_unpin_is_refused_in_read_only_and_audited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was a silent dry run (exit 0), though dropping a pin changes what every sweep judges against."""
    from console.cli import main

    cluster = tmp_path / "cluster.toml"
    cluster.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n[1-2]"\n')
    db = tmp_path / "h.sqlite"
    store = Store(db)
    store.set_pin("p", {"rocm": "6.4.0"}, from_node="n1", user="test")
    store.close()
    code = main(["pin", "-i", str(cluster), "--store", str(db), "--clear", "--pool", "p", "--read-only"])
    assert code == 1 and f"refused: {READ_ONLY}" in capsys.readouterr().out
    store = Store(db)
    try:
        assert store.pin("p") == {"rocm": "6.4.0"}
        entry = store.audit_log(1)[0]
        assert entry["action"] == "unpin" and entry["outcome"] == f"refused: {READ_ONLY}"
    finally:
        store.close()


def test_enforce_pin_says_what_it_does() -> None:
    """Its help said it acts on drifted nodes; it refuses them and holds packages on the nodes that match."""
    summary = entry(ActionKind.ENFORCE_PIN).summary
    assert "nodes that match" in summary and "drifted ones are refused" in summary
