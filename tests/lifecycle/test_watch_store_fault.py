"""``watch --auto`` whose history database fails mid-round stops acting and says why (no action without its
audit row), instead of crashing; real SSH to the simulator (sim001 plays Slurm), a real lock held by another
process past the busy wait."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from tests.integration.processes import start_console, stopped, wait_for_running_sweep

ROOT = Path(__file__).resolve().parents[2]


def test_watch_stops_acting_when_its_store_fails_mid_round(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "sim[001-003]"\nrocm = "7.0.2"\n')
    db = tmp_path / "h.sqlite"
    with start_sim_cluster(scenario=scenario) as sim:
        inventory = tmp_path / "cluster.toml"  # room for one node drained out of three: the breaker allows it
        inventory.write_text(
            sim.inventory_path.read_text()
            + "\n[lifecycle]\nbreaker_pool_fraction = 0.5\nbreaker_fleet_fraction = 0.5\n"
        )
        faults = [
            Fault(kind=FaultKind.CPER_RECORD, node="sim002", gpu=1, params={"afid": 30}),  # FAIL: --auto drains it
            Fault(kind=FaultKind.COMMAND_HANG, node="sim003"),  # its verdict comes after the lock is taken
        ]
        write_live_faults(sim.state_dir, faults)
        sim.wait_for_generation(2)
        log = tmp_path / "watch.log"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        argv = ["watch", "-i", inventory, "--store", db, "--every", "3600", "--rounds", "1", "--auto"]
        proc = start_console(*argv, "--probe-timeout", "6", "--store-wait", "1", log=log, env=env)
        holder = sqlite3.connect(db, isolation_level=None, timeout=5)
        try:
            wait_for_running_sweep(proc, db, log)
            holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held past the busy wait
            code = stopped(proc, log)
        finally:
            holder.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out = log.read_text(errors="replace")
        assert "Traceback" not in out, out
        assert code == ExitCode.STORE_FAILED, out
        line = next(line for line in out.splitlines() if line.startswith("round 1:"))
        assert "HISTORY DATABASE FAILED (history database " in line and "locked by another process" in line, line
        assert "no action without its audit row, watch stops" in line and "done:" not in line, line
        store = Store(db)
        try:
            assert store.drains() == [], "a drain was carried out without its audit row"
            assert [row["action"] for row in store.audit_log(limit=10)] == [], "an action was audited"
        finally:
            store.close()


def test_watch_on_a_corrupt_store_runs_no_round_and_names_the_recovery(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.sqlite"
    Store(db).close()
    with db.open("r+b") as f:  # pages past the header overwritten, as a torn write leaves them
        f.seek(4096 * 2)
        f.write(b"\xa5" * 4096 * 3)
    inventory = tmp_path / "cluster.toml"
    inventory.write_text('name = "t"\n[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "n[1-2]"\n')
    code = main(["watch", "-i", str(inventory), "--store", str(db), "--every", "60", "--rounds", "1", "--auto"])
    said = capsys.readouterr().err
    assert code == ExitCode.STORE_FAILED, said
    assert "the history database is corrupt" in said and ".dump" in said and "no round runs" in said, said
