"""The sweep's exit codes as a scheduler prolog reads them, from real sweeps of the simulated cluster.

0 all passed, 1 a node failed, 3 more nodes UNKNOWN than ``--allow-unknown`` lets through, 4 the
``--deadline`` passed, 130 interrupted. The JSON report must carry the same code.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from tests.integration.processes import start_console, wait_for_running_sweep
from tests.multinode.simcluster import start_cluster

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def one_refused() -> Iterator[SimCluster]:
    """Four nodes, one refusing SSH: a quarter of the fleet cannot be checked."""
    with start_cluster(4, GpuModel.MI300X, FaultKind.SSH_REFUSED) as sim:
        yield sim


@pytest.fixture(scope="module")
def one_hung() -> Iterator[SimCluster]:
    """Two nodes, amd-smi hanging on one of them."""
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        yield sim


def _sweep(sim: SimCluster, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    report = tmp_path / "report.json"
    code = main(
        ["sweep", "-i", str(sim.inventory_path), "--store", str(tmp_path / "h.db"), "--json", str(report), *extra]
    )
    return code, json.loads(report.read_text())


@pytest.mark.parametrize(
    ("allowance", "expected"),
    [("0", ExitCode.UNKNOWN_EXCEEDED), ("0.24", ExitCode.UNKNOWN_EXCEEDED), ("0.25", ExitCode.OK)],
)
def test_unknown_nodes_beyond_the_allowance_exit_3(
    one_refused: SimCluster, tmp_path: Path, allowance: str, expected: ExitCode
) -> None:
    code, report = _sweep(one_refused, tmp_path, "--allow-unknown", allowance)
    assert report["counts"] == {"PASS": 3, "WARN": 0, "FAIL": 0, "UNKNOWN": 1, "SKIP": 0}
    assert code == expected and report["exit_code"] == expected
    assert report["unknown_nodes"] == one_refused.cluster().faults[0].node


def test_a_passed_deadline_exits_4_and_keeps_the_verdicts_it_has(one_hung: SimCluster, tmp_path: Path) -> None:
    started = time.monotonic()
    code, report = _sweep(one_hung, tmp_path, "--deadline", "4")
    assert code == ExitCode.DEADLINE and report["exit_code"] == ExitCode.DEADLINE
    assert time.monotonic() - started < 20, "the deadline did not end the sweep"
    assert report["outcome"] == "deadline"
    hung = one_hung.cluster().faults[0].node
    statuses = {n["node"]: n["status"] for n in report["nodes"]}
    assert statuses == {"sim001": "PASS", hung: "UNKNOWN"}


def test_sigint_ends_the_sweep_with_130_and_a_report(one_hung: SimCluster, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    report, db, log = tmp_path / "report.json", tmp_path / "h.db", tmp_path / "console.log"
    proc = start_console("sweep", "-i", one_hung.inventory_path, "--store", db, "--json", report, log=log, env=env)
    try:
        # Started, connected, the healthy node judged: what is left waits on the hung amd-smi.
        wait_for_running_sweep(proc, db, log)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
    finally:
        proc.kill()
        proc.wait()
    assert code == ExitCode.INTERRUPTED, log.read_text(errors="replace")
    written = json.loads(report.read_text())
    assert written["outcome"] == "cancelled" and written["exit_code"] == ExitCode.INTERRUPTED
    hung = one_hung.cluster().faults[0].node
    nodes = {n["node"]: n for n in written["nodes"]}
    assert nodes["sim001"]["status"] == "PASS"
    assert nodes[hung]["status"] == "UNKNOWN" and "cancelled" in nodes[hung]["reason"]


def test_warn_passes_the_gate_unless_asked_to_fail_it(one_refused: SimCluster, tmp_path: Path) -> None:
    # Pin the pool to a ROCm release its nodes do not run: every reachable node drifts (WARN).
    assert 'rocm = "' in one_refused.inventory_path.read_text()
    inventory = _drifted(one_refused, tmp_path)
    swept = [tmp_path / "a.json", tmp_path / "b.json"]
    base = ["sweep", "-i", str(inventory), "--store", str(tmp_path / "h.db"), "--allow-unknown", "0.25"]
    assert main([*base, "--json", str(swept[0])]) == ExitCode.OK
    assert main([*base, "--json", str(swept[1]), "--fail-on-warn"]) == ExitCode.FAILED
    for path in swept:
        assert json.loads(path.read_text())["counts"]["WARN"] == 3


def _drifted(sim: SimCluster, tmp_path: Path) -> Path:
    """The cluster's inventory with its pool pinned to a ROCm release no node runs: reachable nodes WARN."""
    inventory = tmp_path / "drifted.toml"
    inventory.write_text(re.sub(r'rocm = "[^"]*"', 'rocm = "9.9.9"', sim.inventory_path.read_text()))
    return inventory


@pytest.mark.parametrize("output", [[], ["--json", "-"]], ids=["summary", "json"])
def test_a_reader_that_went_away_ends_the_sweep_with_141_not_1(
    one_refused: SimCluster, tmp_path: Path, output: list[str]
) -> None:
    """`sweep | true` on WARN nodes: a gate must not read the closed pipe as 1, "a node failed"."""
    argv = ["sweep", "-i", str(_drifted(one_refused, tmp_path)), "--store", str(tmp_path / "h.db")]
    argv += ["--allow-unknown", "0.25", *output]  # exit 0 when the summary is read
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_STATE_HOME": str(tmp_path / "state")}
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the sweep prints anything
    try:
        done = subprocess.run(
            [sys.executable, "-m", "console", *argv],
            stdout=write, stderr=subprocess.PIPE, env=env, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 128 + signal.SIGPIPE, done.stderr
    assert "Traceback" not in done.stderr
