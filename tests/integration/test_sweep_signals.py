"""SIGTERM ends a headless command the way Ctrl-C does: the sweep cancelled, recorded so, exit 130.

systemd, Kubernetes, a Slurm job's time limit and ``timeout(1)`` all stop a process with SIGTERM. The
CLI runs as its own process against the simulated cluster; one node's amd-smi hangs, so the sweep is
still running once the healthy node's verdict is in the store, which is the state the test waits for
before it sends the signal.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
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


@pytest.mark.parametrize(
    ("signum", "expected"), [(signal.SIGTERM, ExitCode.INTERRUPTED), (signal.SIGHUP, ExitCode.HANGUP)]
)
def test_a_signal_ends_drift_with_its_exit_code_and_the_sweep_cancelled(
    one_hung: SimCluster, tmp_path: Path, signum: signal.Signals, expected: ExitCode
) -> None:
    """SIGTERM is 130; a closed terminal is 129, as for sweep (drift exited 130 on both)."""
    db, log = tmp_path / "h.db", tmp_path / "drift.log"
    proc = start_console("drift", "-i", one_hung.inventory_path, "--store", db, log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        proc.send_signal(signum)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    assert code == expected, log.read_text(errors="replace")
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


def test_sighup_cancels_the_sweep_writes_its_report_and_exits_129(one_hung: SimCluster, tmp_path: Path) -> None:
    """A closed terminal is no reason to lose the sweep: cancelled, recorded, reported, exit 129 (issue 34)."""
    db, report, log = tmp_path / "h.db", tmp_path / "report.json", tmp_path / "sweep.log"
    proc = start_console("sweep", "-i", one_hung.inventory_path, "--store", db, "--json", report, log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        proc.send_signal(signal.SIGHUP)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    assert code == ExitCode.HANGUP == 129, log.read_text(errors="replace")
    ((recorded, status, finished_at, _),) = sweeps(db)
    assert (recorded, status) == (sweep_id, "cancelled") and finished_at is not None
    written = json.loads(report.read_text())
    assert written["outcome"] == "cancelled" and written["exit_code"] == 129


def _tmux(socket: str, *args: str) -> str:
    argv = ["tmux", "-L", socket, *args]
    return subprocess.run(argv, check=False, capture_output=True, text=True, timeout=30).stdout


@pytest.fixture
def tmux_socket() -> Iterator[str]:
    socket = f"ic-hup-{uuid.uuid4().hex[:10]}"
    yield socket
    _tmux(socket, "kill-server")
    (Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}" / socket).unlink(missing_ok=True)


def _in_tmux(socket: str, cwd: Path, *args: str | Path) -> list[psutil.Process]:
    """``instinct-console ARGS`` in a new tmux session; the processes it runs as (the console and its children)."""
    command = shlex.join([sys.executable, "-m", "console", *map(str, args)])
    env = {**{k: v for k, v in os.environ.items() if k not in ("LINES", "COLUMNS")}, "TERM": "xterm-256color"}
    session = ["new-session", "-d", "-s", "hup", "-x", "160", "-y", "40", command]
    subprocess.run(["tmux", "-L", socket, *session], check=True, env=env, cwd=cwd)
    pane = psutil.Process(int(_tmux(socket, "display-message", "-p", "-t", "hup", "#{pane_pid}").strip()))
    return [pane, *pane.children(recursive=True)]


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_sweep_in_a_killed_tmux_session_still_reports_with_129(
    one_hung: SimCluster, tmp_path: Path, tmux_socket: str
) -> None:
    db, report = tmp_path / "h.db", tmp_path / "report.json"
    started = _in_tmux(tmux_socket, tmp_path, "sweep", "-i", one_hung.inventory_path, "--store", db, "--json", report)
    _wait_for(lambda: any(s[1] == "running" and s[3] >= 1 for s in sweeps(db)), "a running sweep")
    _tmux(tmux_socket, "kill-session", "-t", "hup")
    _gone, alive = psutil.wait_procs(started, timeout=30)
    assert not alive, [p.cmdline() for p in alive]
    assert [s[1] for s in sweeps(db)] == ["cancelled"]
    written = json.loads(report.read_text())
    assert written["outcome"] == "cancelled" and written["exit_code"] == 129


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_the_console_in_a_killed_tmux_session_stops_its_engine_and_records_the_sweep(
    one_hung: SimCluster, tmp_path: Path, tmux_socket: str
) -> None:
    """SIGHUP ends the TUI as q does: the terminal restored, the engine stopped, its sweep cancelled."""
    db = tmp_path / "h.db"
    _in_tmux(tmux_socket, tmp_path, "tui", "-i", one_hung.inventory_path, "--store", db)
    _wait_for(lambda: any(s[1] == "running" and s[3] >= 1 for s in sweeps(db)), "the console's running sweep")
    pane = psutil.Process(int(_tmux(tmux_socket, "display-message", "-p", "-t", "hup", "#{pane_pid}").strip()))
    started = [pane, *pane.children(recursive=True)]
    assert any("console.service.host" in " ".join(p.cmdline()) for p in started), "the engine runs"
    _tmux(tmux_socket, "kill-session", "-t", "hup")
    # The engine kills the hung probe on its node before it ends (bounded), then the console ends.
    _gone, alive = psutil.wait_procs(started, timeout=60)
    assert not alive, [p.cmdline() for p in alive]
    assert [s[1] for s in sweeps(db)] == ["cancelled"], "the engine recorded its sweep as cancelled"


def _wait_for(check: Callable[[], bool], what: str, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_sighup_ends_the_console_with_the_terminal_restored(
    one_hung: SimCluster, tmp_path: Path, tmux_socket: str
) -> None:
    """SIGHUP killed the TUI on the spot: raw mode and the alternate screen stayed on the terminal (issue 34)."""
    db = tmp_path / "h.db"
    tui = shlex.join([sys.executable, "-m", "console", "tui", "-i", str(one_hung.inventory_path), "--store", str(db)])
    env = {**{k: v for k, v in os.environ.items() if k not in ("LINES", "COLUMNS")}, "TERM": "xterm-256color"}
    session = ["new-session", "-d", "-s", "hup", "-x", "160", "-y", "40", f"{tui}; echo EXITED:$?; sleep 60"]
    subprocess.run(["tmux", "-L", tmux_socket, *session], check=True, env=env, cwd=tmp_path)
    _wait_for(lambda: any(s[1] == "running" and s[3] >= 1 for s in sweeps(db)), "the console's running sweep")
    assert _tmux(tmux_socket, "display-message", "-p", "-t", "hup", "#{alternate_on}").strip() == "1"
    pane = psutil.Process(int(_tmux(tmux_socket, "display-message", "-p", "-t", "hup", "#{pane_pid}").strip()))
    console = next(p for p in pane.children() if "console" in " ".join(p.cmdline()))
    console.send_signal(signal.SIGHUP)
    _wait_for(lambda: "EXITED:" in _tmux(tmux_socket, "capture-pane", "-p", "-t", "hup"), "the console to end", 60)
    assert "EXITED:129" in _tmux(tmux_socket, "capture-pane", "-p", "-t", "hup")
    assert _tmux(tmux_socket, "display-message", "-p", "-t", "hup", "#{alternate_on}").strip() == "0"
    assert [s[1] for s in sweeps(db)] == ["cancelled"]
