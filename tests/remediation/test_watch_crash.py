"""The issue's first bullet, end to end: ``kill -9`` of ``watch --auto`` while its ``scontrol update
State=DRAIN`` hangs. The case was lost (``cases`` said none, ``resume --yes`` returned a node with a
fatal CPER to service). Now the case is written with the drain's intent, the next start reconciles
the intent with Slurm and audits it, and the resume is refused until the node is revalidated.

Real slurmctld/slurmd (the session lab) and simulated Instinct nodes behind real SSH.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from tests.harness.slurm_lab import SlurmLab
from tests.integration.processes import WAIT_S, start_console
from tests.remediation.crashing import killed_during


@pytest.fixture
def sim(lab: SlurmLab, tmp_path: Path) -> Iterator[SimCluster]:
    """Simulated nodes gpu001..gpu003 over SSH, named as the lab's Slurm nodes."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "gpu[001-003]"\n')
    with start_sim_cluster(scenario=scenario) as cluster:
        yield cluster


def _local_slurm(sim: SimCluster, tmp_path: Path) -> str:
    """The sim's cluster file with Slurm on this host (the lab) instead of the sim's rendered scontrol."""
    path = tmp_path / "cluster.toml"
    path.write_text(re.sub(r'(?m)^controller = ".*"$', 'controller = ""', sim.inventory_path.read_text()))
    return str(path)


def test_kill_9_of_watch_auto_mid_drain_keeps_the_case_and_the_node_out(
    lab: SlurmLab, sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv, db = _local_slurm(sim, tmp_path), tmp_path / "h.sqlite"
    write_live_faults(sim.state_dir, [Fault(kind=FaultKind.CPER_RECORD, node="gpu002", gpu=1, params={"afid": 30})])
    sim.wait_for_generation(2)
    watch = ["watch", "-i", inv, "--store", str(db), "--every", "3600", "--auto"]
    killed_during(watch, lab, tmp_path, "after")  # killed inside its scontrol update, after Slurm drained
    assert lab.wait_state("gpu002", "drained") == "drained"

    assert main(["cases", "--store", str(db)]) == 0
    listed = capsys.readouterr().out
    assert "gpu002" in listed and "no open cases" not in listed, listed

    assert main(["resume", "gpu002", "-i", inv, "--yes", "--store", str(db)]) != 0
    said = capsys.readouterr().out
    assert "case #1" in said and "--force" in said, said
    assert lab.state("gpu002") == "drained"

    # The next watch leaves the node to its case (no second drain, no resume) and goes on.
    assert main([*watch, "--rounds", "1"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("round 1:"))
    assert "drain gpu002" not in line and "resume" not in line, line
    store = Store(db)
    try:
        rows = store.audit_log(50)[::-1]
        shown = [(r["id"], r["action"], r["targets"], store.shown_outcome(r)) for r in rows]
    finally:
        store.close()
    report = "\n".join(f"#{i} {a} {t}: {o}" for i, a, t, o in shown)
    (tmp_path.parent / "kill9-audit.txt").write_text(report + "\n")
    actions = [a for _, a, _, _ in shown]
    assert actions.count("drain") == 1 and actions.count("reconcile") == 1, report
    drain = next(o for _, a, _, o in shown if a == "drain")
    assert drain.startswith("outcome unknown: the console (pid ") and "reconciled by audit #" in drain, report
    reconcile = next(o for _, a, _, o in shown if a == "reconcile")
    assert "gpu002: the drain took effect (Slurm shows DRAIN" in reconcile and "case #1 kept" in reconcile, report


def _lease_pid(db: Path) -> int | None:
    import sqlite3

    if not db.exists():
        return None
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute("SELECT owner FROM leases WHERE name = 'act'").fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()
    return int(json.loads(row[0])["pid"]) if row else None


def test_two_watch_processes_at_once_the_second_exits_2_naming_the_first(
    lab: SlurmLab, sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv, db, log = _local_slurm(sim, tmp_path), tmp_path / "h.sqlite", tmp_path / "first.log"
    first = start_console("watch", "-i", inv, "--store", db, "--every", "3600", "--auto", log=log, env=lab.env)
    try:
        deadline = time.monotonic() + WAIT_S
        while _lease_pid(db) != first.pid:
            assert first.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "the first watch never took the lease"
            time.sleep(0.05)
        assert main(["watch", "-i", inv, "--store", str(db), "--every", "3600", "--rounds", "1", "--auto"]) == 2
        said = capsys.readouterr().err
        assert "another actor holds this history database's lease: watch by " in said, said
        assert f"(pid {first.pid} on " in said, said
        assert main(["resume", "gpu003", "-i", inv, "--yes", "--store", str(db)]) == 2
        assert f"(pid {first.pid} on " in capsys.readouterr().err
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        first.kill()
        first.wait()
    # Its holder is gone: the next actor takes the lease over, audited.
    assert main(["drain", "gpu003", "-i", inv, "--reason", "maintenance", "--yes", "--store", str(db)]) == 0
    capsys.readouterr()
    store = Store(db)
    try:
        takeover = next(r for r in store.audit_log(50) if r["action"] == "lease-takeover")
        assert (
            "took over the lease of watch by " in takeover["outcome"] and f"(pid {first.pid} on " in takeover["outcome"]
        )
        assert json.loads(takeover["inputs"])["why"] == "its process is gone"
    finally:
        store.close()
