"""A sweep whose process died (SIGKILL, power loss) is marked interrupted; accept takes only finished sweeps.

The sweep runs as its own process against the simulated cluster (one node's amd-smi hangs, so it is
still running once the other node is judged). While that process lives, other commands open the store
and must leave its sweep alone; once it is killed, the next command that opens the store marks the
sweep "interrupted". ``accept`` refuses every sweep that did not finish, in one line, with exit 2.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from console.store import Store
from tests.integration.processes import start_console, sweeps, wait_for_running_sweep
from tests.multinode.simcluster import start_cluster


@pytest.fixture(scope="module")
def one_hung() -> Iterator[SimCluster]:
    """Two nodes, amd-smi hanging on one of them."""
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        yield sim


def status_of(db: Path, sweep_id: int) -> str:
    return {s[0]: s[1] for s in sweeps(db)}[sweep_id]


def accept(inventory: Path, db: Path, sweep_id: int, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``accept --sweep``: its exit code and everything it printed."""
    capsys.readouterr()
    code = main(["accept", "-i", str(inventory), "--store", str(db), "--sweep", str(sweep_id)])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_killed_sweep_is_left_alone_while_its_process_lives_then_marked_interrupted(
    one_hung: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, log = tmp_path / "h.db", tmp_path / "sweep.log"
    proc = start_console("sweep", "-i", one_hung.inventory_path, "--store", db, log=log)
    try:
        sweep_id = wait_for_running_sweep(proc, db, log)
        # Another command opens the store for writing while the sweep's process runs it.
        code, said = accept(one_hung.inventory_path, db, sweep_id, capsys)
        assert code == ExitCode.USAGE and said.count("\n") == 1, said
        assert f"sweep {sweep_id} is still running" in said
        assert status_of(db, sweep_id) == "running", "a live process's sweep must not be marked"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
    assert status_of(db, sweep_id) == "running", "nothing marks it before a command opens the store"

    code, said = accept(one_hung.inventory_path, db, sweep_id, capsys)
    assert code == ExitCode.USAGE and said.count("\n") == 1, said
    assert f"sweep {sweep_id} was interrupted" in said and "not a baseline" in said
    ((_, status, finished_at, verdicts),) = sweeps(db)
    assert status == "interrupted" and finished_at is not None and verdicts == 1
    capsys.readouterr()
    assert main(["history", "--store", str(db), "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["status"] == "interrupted" and listed["summary"]["counts"]["PASS"] == 1
    store = Store(db)
    try:
        assert store.baselines() == {}
    finally:
        store.close()


def test_accept_refuses_a_deadline_cut_or_cancelled_sweep_and_takes_a_finished_one(
    one_hung: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    inventory = one_hung.inventory_path
    assert main(["sweep", "-i", str(inventory), "--store", str(db), "--deadline", "2"]) == ExitCode.DEADLINE
    code, said = accept(inventory, db, 1, capsys)
    assert code == ExitCode.USAGE and said.count("\n") == 1 and "sweep 1 ran out of its deadline" in said, said

    healthy = one_hung.cluster().nodes[0].name
    assert main(["sweep", "-i", str(inventory), "--store", str(db), "--nodes", healthy]) == ExitCode.OK
    store = Store(db)
    try:
        cancelled = store.start_sweep("quick", str(inventory), healthy)
        store.finish_sweep(cancelled, "cancelled", {})
    finally:
        store.close()
    code, said = accept(inventory, db, cancelled, capsys)
    assert code == ExitCode.USAGE and said.count("\n") == 1 and f"sweep {cancelled} was cancelled" in said, said

    code, said = accept(inventory, db, 2, capsys)
    assert code == ExitCode.OK and "sweep 2 accepted as baseline" in said
    store = Store(db)
    try:
        assert set(store.baselines().values()) == {2}
    finally:
        store.close()


def _owned_by(db: Path, sweep_id: int, **change: str) -> None:
    store = Store(db)
    try:
        owner = json.loads(store.sweep(sweep_id)["owner"])
        store.conn.execute("UPDATE sweeps SET owner = ? WHERE id = ?", (json.dumps({**owner, **change}), sweep_id))
    finally:
        store.close()


def test_a_sweep_of_an_earlier_boot_is_interrupted_one_of_another_host_is_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    store = Store(db)
    try:
        ids = [store.start_sweep("quick", "inv", f"gpu00{i}") for i in (1, 2, 3)]
        mine = json.loads(store.sweep(ids[2])["owner"])
    finally:
        store.close()
    assert mine["pid"] == os.getpid() and mine["host"] == socket.gethostname()
    _owned_by(db, ids[0], boot="an-earlier-boot")  # power loss: the machine came back
    _owned_by(db, ids[1], host="another-host")  # on shared storage: nothing here can tell
    store = Store(db)
    try:
        assert [store.sweep(i)["status"] for i in ids] == ["interrupted", "running", "running"]
    finally:
        store.close()
