"""A console killed (SIGKILL) in the middle of a drain or a resume loses nothing: the next start
reconciles the intent it left with what Slurm really shows, keeps or ends the case, and audits it.

Real slurmctld/slurmd (tests/harness/slurm_lab.py); the console runs as its own process, killed
inside its ``scontrol update`` by a shim (``crashing.py``), before or after Slurm acted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.cli import main
from console.store import Store
from console.store.lifecycle import Stage
from tests.harness.slurm_lab import SlurmLab
from tests.remediation.crashing import failing_sweep, killed_during


def _audit(db: Path) -> list[dict[str, object]]:
    store = Store(db)
    try:
        return [dict(row) for row in store.audit_log(50)[::-1]]
    finally:
        store.close()


def test_killed_after_scontrol_drained_the_node_the_case_is_kept_and_resume_refused(
    lab: SlurmLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    sweep = failing_sweep(db, "gpu004")
    drain = ["drain", "gpu004", "--sweep", str(sweep), "--reason", "fatal CPER", "--yes", "--store", str(db)]
    killed = killed_during(drain, lab, tmp_path, "after")
    assert lab.wait_state("gpu004", "drained") == "drained"

    # The operator tries what the issue saw succeed: a resume of a node with a fatal CPER.
    assert main(["resume", "gpu004", "--yes", "--store", str(db)]) != 0
    said = capsys.readouterr().out
    assert "case #1" in said, said
    assert lab.state("gpu004") == "drained", "a node with an unrevalidated case went back to service"

    assert main(["cases", "--store", str(db)]) == 0
    listed = capsys.readouterr().out
    assert "gpu004" in listed and "awaiting-repair" in listed, listed

    rows = _audit(db)
    drain_row = next(r for r in rows if r["action"] == "drain")
    assert drain_row["finished_at"] is not None, "the orphaned intent was reconciled"
    assert str(drain_row["outcome"]).startswith(f"outcome unknown: the console (pid {killed.pid} on ")
    assert "reconciled" in str(drain_row["outcome"])
    (reconcile,) = [r for r in rows if r["action"] == "reconcile"]
    assert int(str(reconcile["id"])) < max(int(str(r["id"])) for r in rows if r["action"] == "resume")
    assert "Slurm shows DRAIN" in str(reconcile["outcome"]) and "case #1 kept" in str(reconcile["outcome"])
    assert json.loads(str(reconcile["inputs"]))["intent"] == drain_row["id"]


def test_forcing_the_resume_of_a_held_case_needs_a_reason_and_is_audited(
    lab: SlurmLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    sweep = failing_sweep(db, "gpu003")
    assert main(["drain", "gpu003", "--sweep", str(sweep), "--reason", "fatal CPER", "--yes", "--store", str(db)]) == 0
    assert main(["resume", "gpu003", "--force", "--yes", "--store", str(db)]) != 0
    assert "--force needs --reason" in capsys.readouterr().out
    assert lab.state("gpu003") == "drained"
    forced = ["resume", "gpu003", "--force", "--reason", "vendor swapped the board", "--yes", "--store", str(db)]
    assert main(forced) == 0
    capsys.readouterr()
    assert lab.wait_state("gpu003", "idle") == "idle"
    resume = next(r for r in _audit(db)[::-1] if r["action"] == "resume")
    inputs = json.loads(str(resume["inputs"]))
    assert inputs["force"] is True and inputs["reason"] == "vendor swapped the board"
    store = Store(db)
    try:
        (case,) = store.cases("gpu003")
        assert case.stage is Stage.ENDED
        assert "vendor swapped the board" in store.case_steps(case.id)[-1].note
    finally:
        store.close()


def test_killed_before_scontrol_acted_the_next_start_ends_the_case_it_never_drained(
    lab: SlurmLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    sweep = failing_sweep(db, "gpu002")
    drain = ["drain", "gpu002", "--sweep", str(sweep), "--reason", "fatal CPER", "--yes", "--store", str(db)]
    killed_during(drain, lab, tmp_path, "before", then="give-up")
    assert lab.state("gpu002") == "idle"

    # The next action starts by reconciling: the node is in service, the drain never took effect.
    assert main(["drain", "gpu001", "--reason", "maintenance", "--yes", "--store", str(db)]) == 0
    capsys.readouterr()
    rows = _audit(db)
    (reconcile,) = [r for r in rows if r["action"] == "reconcile"]
    assert "Slurm shows IDLE" in str(reconcile["outcome"]) and "did not take effect" in str(reconcile["outcome"])
    store = Store(db)
    try:
        assert store.drains("gpu002", open_only=True) == []
        assert store.case("gpu002") is None
        (case,) = store.cases("gpu002")
        assert case.stage is Stage.ENDED
    finally:
        store.close()
    order = [r["action"] for r in rows]
    assert order.index("reconcile") < len(order) - 1 and order[-1] == "drain"
