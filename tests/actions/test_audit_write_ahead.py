"""The audit log is written ahead: the intent before the action runs, its outcome on the same row after.

What the log holds at the moment an action takes effect is observed, not assumed: a runner that runs
the real ``scontrol`` (Slurm lab) notes the audit rows just before each ``scontrol update``, and
SQLite triggers note them as a baseline or a pin is written. A console killed between the two writes
(SIGKILL while ``scontrol update`` runs) leaves an intent that ``audit`` shows as "outcome unknown".
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from console.actions import ActionKind, ActionRequest, ActionService, RunOutput, TransportRunner, bare_inventory
from console.cli import main
from console.model.findings import NodeVerdict, Status
from console.store import Store
from tests.harness.slurm_lab import SlurmLab
from tests.integration.processes import WAIT_S, start_console


class Witness(TransportRunner):
    """Runs every command for real; just before each ``scontrol update`` notes the newest audit rows."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.seen: list[list[sqlite3.Row]] = []

    async def run(self, where: str, argv: Sequence[str], *, timeout_s: float = 60.0) -> RunOutput:
        if tuple(argv[:2]) == ("scontrol", "update"):
            self.seen.append(self.store.audit_log(5))
        return await super().run(where, argv, timeout_s=timeout_s)


async def test_drain_and_resume_write_their_intent_before_scontrol_runs(lab: SlurmLab, store: Store) -> None:
    runner = Witness(store)
    svc = ActionService(bare_inventory(), store, runner)
    ids = []
    for kind, fields in ((ActionKind.DRAIN, {"reason": "hbm"}), (ActionKind.RESUME, {})):
        request = ActionRequest(kind, ("gpu001",), **fields)
        await svc.refresh(request)
        result = await svc.execute(svc.plan(request))
        assert result.ok, result.outcome
        ids.append(result.audit_id)
    before_drain, before_resume = (seen[0] for seen in runner.seen)
    for row, kind, audit_id in ((before_drain, "drain", ids[0]), (before_resume, "resume", ids[1])):
        assert (row["id"], row["action"], row["finished_at"]) == (audit_id, kind, None)
        assert "scontrol update NodeName=gpu001" in row["commands"]
        assert store.shown_outcome(row).startswith(f"in progress (pid {os.getpid()} on ")
    rows = {row["id"]: row for row in store.audit_log(10)}
    assert sorted(rows) == sorted(ids), "one row per action: the outcome updates the intent"
    assert rows[ids[0]]["outcome"] == "drained gpu001" and rows[ids[1]]["outcome"] == "resumed gpu001"
    assert all(row["finished_at"] >= row["at"] for row in rows.values())


WITNESS = """
CREATE TABLE witness (change TEXT, audit_id INTEGER, action TEXT, finished INTEGER);
CREATE TRIGGER witness_baseline AFTER INSERT ON baselines BEGIN
    INSERT INTO witness SELECT 'baseline', id, action, finished_at IS NOT NULL FROM audit; END;
CREATE TRIGGER witness_pin AFTER INSERT ON pins BEGIN
    INSERT INTO witness SELECT 'pin', id, action, finished_at IS NOT NULL FROM audit; END;
CREATE TRIGGER witness_unpin AFTER DELETE ON pins BEGIN
    INSERT INTO witness SELECT 'unpin', id, action, finished_at IS NOT NULL FROM audit; END;
"""


def witnessed(db: Path) -> list[tuple[str, int, str, int]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT DISTINCT * FROM witness ORDER BY rowid").fetchall()
    finally:
        conn.close()


def test_accept_pin_and_unpin_write_their_intent_before_the_store_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = tmp_path / "c.toml"
    cluster.write_text('[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "gpu[001-002]"\n')
    db = tmp_path / "h.sqlite"
    store = Store(db)
    try:
        store.conn.executescript(WITNESS)
        sweep = store.start_sweep("quick", str(cluster), "gpu001")
        store.record_node(sweep, "p", NodeVerdict(node="gpu001", status=Status.PASS), {"rocm": "7.0.2"})
        store.finish_sweep(sweep, "done", {})
    finally:
        store.close()
    assert main(["accept", "-i", str(cluster), "--store", str(db), "--sweep", str(sweep)]) == 0
    assert main(["pin", "-i", str(cluster), "--store", str(db), "--from-node", "gpu001", "--yes"]) == 0
    assert main(["pin", "-i", str(cluster), "--store", str(db), "--clear", "--pool", "p", "--yes"]) == 0
    capsys.readouterr()
    seen = witnessed(db)
    assert [(change, action, finished) for change, _, action, finished in seen] == [
        ("baseline", "accept", 0),
        ("pin", "accept", 1),
        ("pin", "pin", 0),
        ("unpin", "accept", 1),
        ("unpin", "pin", 1),
        ("unpin", "unpin", 0),
    ]
    store = Store(db)
    try:
        rows = {row["action"]: row for row in store.audit_log(10)}
    finally:
        store.close()
    assert len(rows) == 3 and all(row["finished_at"] is not None for row in rows.values())
    assert rows["accept"]["outcome"] == f"sweep {sweep} is the baseline of p"
    assert rows["unpin"]["outcome"] == "unpinned p"


SCONTROL_PAUSE = """#!/bin/sh
# scontrol, paused before an update until the test says go: the console can be killed while it runs.
if [ "$1" = update ]; then
    : > "$PAUSE_DIR/started"
    while [ ! -e "$PAUSE_DIR/go" ]; do sleep 0.05; done
fi
exec {scontrol} "$@"
"""


def test_a_console_killed_during_a_drain_leaves_an_intent_shown_as_outcome_unknown(
    lab: SlurmLab, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pause, bin_dir = tmp_path / "pause", tmp_path / "bin"
    pause.mkdir()
    bin_dir.mkdir()
    real = next(Path(d) / "scontrol" for d in os.environ["PATH"].split(":") if (Path(d) / "scontrol").exists())
    shim = bin_dir / "scontrol"
    shim.write_text(SCONTROL_PAUSE.format(scontrol=real))
    shim.chmod(stat.S_IRWXU)
    env = {**lab.env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PAUSE_DIR": str(pause)}
    db, log = tmp_path / "h.sqlite", tmp_path / "drain.log"
    proc = start_console("drain", "gpu004", "--reason", "xgmi", "--yes", "--store", db, log=log, env=env)
    try:
        deadline = time.monotonic() + WAIT_S
        while not (pause / "started").exists():
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "scontrol update never ran"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
        (pause / "go").touch()  # the orphaned scontrol goes on: the drain happens, nobody records it
    assert lab.wait_state("gpu004", "drained") == "drained"

    assert main(["audit", "--json", "--store", str(db)]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["action"] == "drain" and entry["targets"] == ["gpu004"] and entry["finished_at"] is None
    assert entry["outcome"].startswith(f"outcome unknown: the console (pid {proc.pid} on ")
    assert "scontrol update NodeName=gpu004 State=DRAIN" in entry["commands"][0]
    monkeypatch.setenv("COLUMNS", "300")  # the table on one line per entry
    assert main(["audit", "--store", str(db)]) == 0
    assert "outcome unknown: the console" in capsys.readouterr().out


def test_an_action_that_raises_mid_way_records_an_unknown_outcome(tmp_path: Path) -> None:
    store = Store(tmp_path / "h.sqlite")
    try:
        with pytest.raises(KeyboardInterrupt), store.audited("drain", ["gpu001"], inputs={}, commands=["x"]):
            raise KeyboardInterrupt
        (row,) = store.audit_log(1)
        assert row["finished_at"] is not None
        assert store.shown_outcome(row) == "outcome unknown: stopped by KeyboardInterrupt while it ran"
        assert store.audit("cordon", ["gpu001"], inputs={}, commands=[], output="", outcome="ok") == row["id"] + 1
    finally:
        store.close()
