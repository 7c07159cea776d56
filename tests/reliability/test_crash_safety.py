"""``kill -9`` of a real ``instinct-console sweep`` in the middle of a sweep loses no finished verdict.

The sweep runs as its own process against the simulated cluster (a hung node keeps it busy long after
the others are judged). A second process reads the store while the sweep writes it, the way an
operator's ``history`` would, and snapshots what is committed; then the sweep is SIGKILLed. After
that, the store must pass ``PRAGMA integrity_check``, hold every snapshotted verdict, finding and raw
probe output unchanged, and serve the next sweep and ``history`` as if nothing happened.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.sim.launcher import SimCluster, start_sim_cluster
from console.store import Store

NODES = 24  # the demo fault set then includes a hung command, which holds the sweep for 40 s
WAIT_S = 60.0


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    with start_sim_cluster(nodes=NODES, models="mi300x,mi355x", pools=2, faults="demo", time_factor=20) as cluster:
        yield cluster


def _console(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "console", *args], stdout=out, stderr=subprocess.STDOUT)


def _snapshot(db: Path) -> tuple[str, dict[str, tuple[str, str, int]], dict[int, bytes]] | None:
    """(sweep status, node -> (verdict, reason, findings), probe run id -> compressed stdout), as committed."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    except sqlite3.OperationalError:
        return None  # not created yet
    try:
        with conn:  # one read transaction: a consistent view
            sweep = conn.execute("SELECT id, status FROM sweeps ORDER BY id DESC LIMIT 1").fetchone()
            if sweep is None:
                return None
            verdicts = {
                node: (status, reason, count)
                for node, status, reason, count in conn.execute(
                    "SELECT v.node, v.status, v.reason, (SELECT count(*) FROM findings f WHERE f.sweep_id = v.sweep_id"
                    " AND f.node = v.node) FROM node_verdicts v WHERE v.sweep_id = ?",
                    (sweep[0],),
                )
            }
            runs = dict(conn.execute("SELECT id, stdout FROM probe_runs WHERE sweep_id = ?", (sweep[0],)).fetchall())
        return sweep[1], verdicts, runs
    except sqlite3.OperationalError:
        return None  # schema not written yet
    finally:
        conn.close()


@pytest.mark.parametrize("kill_after", [1, NODES // 2])
def test_kill_9_mid_sweep_keeps_every_finished_verdict(sim: SimCluster, tmp_path: Path, kill_after: int) -> None:
    db = tmp_path / "state" / "history.sqlite"
    sweep = _console(
        "sweep", "-i", str(sim.inventory_path), "--probes", "standard", "--store", str(db), log=tmp_path / "sweep.log"
    )
    deadline = time.monotonic() + WAIT_S
    try:
        while True:
            seen = _snapshot(db)
            if seen is not None and len(seen[1]) >= kill_after:
                break
            assert sweep.poll() is None, (tmp_path / "sweep.log").read_text()
            assert time.monotonic() < deadline, f"fewer than {kill_after} verdicts after {WAIT_S} s"
            time.sleep(0.02)
        os.kill(sweep.pid, signal.SIGKILL)
    finally:
        sweep.kill()
        sweep.wait()
    assert sweep.returncode == -signal.SIGKILL
    status, before, runs_before = seen
    assert status == "running" and 0 < len(before) < NODES, "the kill must land mid-sweep"

    store = Store(db)
    try:
        assert store.integrity_ok()
        sweep_id = store.latest_sweep_id()
        assert sweep_id is not None
        after = {r["node"]: r for r in store.node_verdicts(sweep_id)}
        for node, (verdict, reason, findings) in before.items():
            assert node in after, f"{node}: verdict {verdict} was committed before the kill and is gone"
            assert (after[node]["status"], after[node]["reason"]) == (verdict, reason)
            assert len(store.findings(sweep_id, node)) == findings
        for run_id, blob in runs_before.items():
            kept = store.conn.execute("SELECT stdout FROM probe_runs WHERE id = ?", (run_id,)).fetchone()
            assert kept is not None and kept["stdout"] == blob, f"probe run {run_id} changed or vanished"
    finally:
        store.close()

    # The console comes back on the same store: a new sweep and the history both work.
    again = _console(
        "sweep",
        "-i",
        str(sim.inventory_path),
        "--nodes",
        "sim001",
        "--store",
        str(db),
        "--json",
        str(tmp_path / "again.json"),
        log=tmp_path / "again.log",
    )
    assert again.wait(WAIT_S) in (0, 1, 3), (tmp_path / "again.log").read_text()
    assert json.loads((tmp_path / "again.json").read_text())["sweep_id"] == sweep_id + 1
    history = subprocess.run(
        [sys.executable, "-m", "console", "history", "--store", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=True,
    )
    listed = {entry["sweep"]: entry["status"] for entry in json.loads(history.stdout)}
    assert listed[sweep_id + 1] == "done" and sweep_id in listed
    check = sqlite3.connect(db)
    try:
        assert check.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        check.close()
