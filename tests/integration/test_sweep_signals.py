"""SIGTERM ends a headless command the way Ctrl-C does: the sweep cancelled, recorded so, exit 130.

systemd, Kubernetes, a Slurm job's time limit and ``timeout(1)`` all stop a process with SIGTERM. The
CLI runs as its own process against the simulated cluster; one node's amd-smi hangs, so the sweep is
still running once the healthy node's verdict is in the store, which is the state the test waits for
before it sends the signal.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.exitcodes import ExitCode
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from tests.integration.processes import start_console, stopped, sweeps, wait_for_running_sweep
from tests.multinode.simcluster import start_cluster


@pytest.fixture(scope="module")
def one_hung() -> Iterator[SimCluster]:
    """Two nodes, amd-smi hanging on one of them."""
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        yield sim


def test_sigterm_cancels_the_sweep_records_it_and_exits_130(one_hung: SimCluster, tmp_path: Path) -> None:
    db, report, log = tmp_path / "h.db", tmp_path / "report.json", tmp_path / "sweep.log"
    proc = start_console("sweep", "-i", one_hung.inventory_path, "--store", db, "--json", report, log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        proc.send_signal(signal.SIGTERM)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    assert code == ExitCode.INTERRUPTED, log.read_text(errors="replace")
    ((recorded, status, finished_at, verdicts),) = sweeps(db)
    assert (recorded, status, verdicts) == (sweep_id, "cancelled", 2) and finished_at is not None
    written = json.loads(report.read_text())
    assert written["outcome"] == "cancelled" and written["exit_code"] == ExitCode.INTERRUPTED
    hung = one_hung.cluster().faults[0].node
    nodes = {n["node"]: n for n in written["nodes"]}
    assert nodes["sim001"]["status"] == "PASS"
    assert nodes[hung]["status"] == "UNKNOWN" and "cancelled" in nodes[hung]["reason"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_ends_a_periodic_sweep_instead_of_its_next_tick(
    one_hung: SimCluster, tmp_path: Path, signum: signal.Signals
) -> None:
    db, log = tmp_path / "h.db", tmp_path / "sweep.log"
    proc = start_console("sweep", "-i", one_hung.inventory_path, "--store", db, "--every", "0.5", log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        proc.send_signal(signum)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    assert code == ExitCode.INTERRUPTED, log.read_text(errors="replace")
    assert [(s[0], s[1]) for s in sweeps(db)] == [(sweep_id, "cancelled")], "no sweep may start after the signal"


def test_sigterm_ends_drift_with_130_and_the_sweep_cancelled(one_hung: SimCluster, tmp_path: Path) -> None:
    db, log = tmp_path / "h.db", tmp_path / "drift.log"
    proc = start_console("drift", "-i", one_hung.inventory_path, "--store", db, log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        proc.send_signal(signal.SIGTERM)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    assert code == ExitCode.INTERRUPTED, log.read_text(errors="replace")
    assert [(s[0], s[1]) for s in sweeps(db)] == [(sweep_id, "cancelled")]


def test_sigterm_ends_watch_mid_round_with_130_and_no_next_round(one_hung: SimCluster, tmp_path: Path) -> None:
    db, log = tmp_path / "h.db", tmp_path / "watch.log"
    # --every 0.5: without the signal a next round would start at once (the nodes are stale again by then).
    proc = start_console("watch", "-i", one_hung.inventory_path, "--store", db, "--every", "0.5", "--auto", log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        proc.send_signal(signal.SIGTERM)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    said = log.read_text(errors="replace")
    assert code == ExitCode.INTERRUPTED, said
    assert [(s[0], s[1]) for s in sweeps(db)] == [(sweep_id, "cancelled")], "no round may start after the signal"
    assert "round 1: swept sim[001-002]" in said and "[cancelled]" in said and "round 2" not in said, said
    assert "drain" not in said, "a cancelled round acts on nothing"
