"""The store never costs a report: a history database that fails under a sweep, for real.

Each fault is made for real while ``sweep`` runs as its own process: another process holds the write lock
past the busy wait, a small tmpfs the store lives on fills up (ENOSPC, SQLITE_FULL), the file is deleted,
the filesystem is remounted read-only. Two nodes: the healthy one is judged and stored first; amd-smi
hangs on the other, so its verdict and the sweep's end come after the fault. The sweep must finish,
write its report, exit 5 and say what was not stored. A corrupt store (a page overwritten) is named at
its opening with the way to recover it. The filesystem faults need root (mount); they skip without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import FaultKind
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from console.store import Store
from console.store.db import StoreError
from tests.integration.processes import start_console, stopped, wait_for_running_sweep
from tests.multinode.localnodes import local_cluster, shim_dir
from tests.multinode.simcluster import start_cluster

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


@pytest.fixture(scope="module")
def one_hung() -> Iterator[SimCluster]:
    """Two nodes, amd-smi hanging on the second: its verdict comes after the probe timeout."""
    with start_cluster(2, GpuModel.MI300X, FaultKind.COMMAND_HANG) as sim:
        yield sim


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    where.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]
    made = subprocess.run(mount, capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> None:
    """Write to ``where`` until its filesystem says ENOSPC."""
    with contextlib.suppress(OSError), (where / "filler").open("wb", buffering=0) as out:
        while True:
            out.write(b"\0" * 65536)


def swept_through(sim: SimCluster, db: Path, tmp_path: Path, fault: Callable[[], object]) -> tuple[int, dict, str]:
    """Run ``sweep`` as a process, make ``fault`` once the healthy node is stored, return (exit, report, output)."""
    log, report = tmp_path / "sweep.log", tmp_path / "report.json"
    args = ["sweep", "-i", sim.inventory_path, "--store", db, "--json", report, "--probe-timeout", "6"]
    proc = start_console(*args, "--store-wait", "1", log=log, env=ENV)
    try:
        wait_for_running_sweep(proc, db, log)
        fault()
        code = stopped(proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text(errors="replace")
    assert "Traceback" not in output, output
    assert report.exists(), output
    return code, json.loads(report.read_text()), output


def _judged_both(report: dict) -> None:
    statuses = {n["node"]: n["status"] for n in report["nodes"]}
    assert statuses["sim001"] == "PASS" and len(statuses) == 2 and "UNKNOWN" in statuses.values(), statuses


def test_a_store_locked_past_the_busy_wait_costs_the_history_not_the_sweep(
    one_hung: SimCluster, tmp_path: Path
) -> None:
    db = tmp_path / "h.db"
    holder = sqlite3.connect(db, isolation_level=None, timeout=5)

    def lock() -> None:
        holder.execute("BEGIN IMMEDIATE")  # another process's write lock, held until the sweep ends

    try:
        code, report, output = swept_through(one_hung, db, tmp_path, lock)
    finally:
        holder.close()
    assert code == ExitCode.STORE_FAILED and report["exit_code"] == ExitCode.STORE_FAILED, output
    _judged_both(report)
    assert "locked by another process" in report["store_problem"]
    assert "node verdict: 1" in report["store_problem"] and "sweep end: 1" in report["store_problem"]
    assert "history not stored from now on" in output and "exit 5 (store_failed)" in output


def test_a_full_disk_costs_the_history_not_the_sweep(one_hung: SimCluster, tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small") as small:
        code, report, output = swept_through(one_hung, small / "h.db", tmp_path, lambda: fill(small))
    assert code == ExitCode.STORE_FAILED, output
    _judged_both(report)
    assert "the disk is full" in report["store_problem"], report["store_problem"]


def test_a_store_deleted_mid_sweep_is_said_not_lost_silently(one_hung: SimCluster, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    code, report, output = swept_through(one_hung, db, tmp_path, db.unlink)
    assert code == ExitCode.STORE_FAILED, output
    _judged_both(report)
    assert "deleted or replaced" in report["store_problem"] and "node verdict: 1" in report["store_problem"]


def test_a_store_on_a_read_only_filesystem_is_read_and_the_sweep_reports(one_hung: SimCluster, tmp_path: Path) -> None:
    # A filesystem with files open for writing cannot be remounted read-only: the store goes read-only
    # between two commands (a full /var remounted by the kernel, a snapshot mounted for inspection).
    with small_filesystem(tmp_path / "small", "64m") as small:
        db = small / "h.db"
        inventory = str(one_hung.inventory_path)
        assert main(["sweep", "-i", inventory, "--store", str(db), "--nodes", "sim001"]) == ExitCode.OK
        subprocess.run(["mount", "-o", "remount,ro", str(small)], check=True)
        # What was stored stays readable, by a read-only opening.
        assert main(["history", "--store", str(db)]) == ExitCode.OK
        report = tmp_path / "report.json"
        code = main(["sweep", "-i", inventory, "--store", str(db), "--json", str(report), "--nodes", "sim001"])
        assert code == ExitCode.STORE_FAILED
        written = json.loads(report.read_text())
        assert [n["status"] for n in written["nodes"]] == ["PASS"]
        assert "read-only" in written["store_problem"], written["store_problem"]


def _corrupt(db: Path) -> None:
    """Overwrite the pages after the schema with garbage, as a torn write or a bad disk would."""
    conn = sqlite3.connect(db)
    page = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with db.open("r+b") as f:
        f.seek(page * 2)
        f.write(b"\xa5" * page * 3)


def test_a_corrupt_store_is_named_with_its_recovery_and_the_sweep_still_reports(
    one_hung: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "h.db"
    report = tmp_path / "first.json"
    main(["sweep", "-i", str(one_hung.inventory_path), "--store", str(db), "--json", str(report), "--nodes", "sim001"])
    _corrupt(db)
    second = tmp_path / "second.json"
    code = main(
        ["sweep", "-i", str(one_hung.inventory_path), "--store", str(db), "--json", str(second), "--nodes", "sim001"]
    )
    assert code == ExitCode.STORE_FAILED
    problem = json.loads(second.read_text())["store_problem"]
    assert "corrupt" in problem and str(db) in problem and f"sqlite3 {db} .dump" in problem
    # History commands refuse it in one line that names the way to recover it; bundle warns and reads on.
    capsys.readouterr()
    assert main(["history", "--store", str(db)]) == ExitCode.USAGE
    refused = capsys.readouterr().err
    assert "the history database is corrupt" in refused and f"sqlite3 {db} .dump" in refused, refused
    bundled = main(["bundle", "sim001", "--store", str(db), "--sweep", "1", "-o", str(tmp_path / "b.tar.gz")])
    warned = capsys.readouterr().err
    assert warned.startswith("warning: ") and "corrupt" in warned and ".dump" in warned, warned
    assert bundled in (ExitCode.OK, ExitCode.USAGE), "bundle read on, and said what it could not read"


def test_history_commands_open_the_store_read_only(one_hung: SimCluster, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    main(["sweep", "-i", str(one_hung.inventory_path), "--store", str(db), "--nodes", "sim001"])
    before = db.read_bytes(), db.stat().st_mtime_ns
    assert main(["history", "--store", str(db)]) == ExitCode.OK
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before, "reading the history wrote to it"
    wal = Path(f"{db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "reading the history wrote to its log"


def test_check_local_on_a_full_disk_prints_its_verdict_and_leaves_no_partial_file(tmp_path: Path) -> None:
    (tmp_path / "node").mkdir()
    inventory = local_cluster(tmp_path / "node", ["gpu001"])
    with small_filesystem(tmp_path / "small", "64k") as small:
        fill(small)
        env = {**ENV, "PATH": f"{shim_dir(tmp_path / 'node', 'gpu001')}:{os.environ['PATH']}"}
        argv = ["check-local", "-i", str(inventory), "--node", "gpu001", "--json", str(small / "report.json")]
        done = subprocess.run(
            [sys.executable, "-m", "console", *argv], capture_output=True, text=True, env=env, check=False
        )
        left = sorted(p.name for p in small.iterdir())
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    assert done.returncode == ExitCode.OUTPUT_FAILED, said
    assert "gpu001" in said and "report not written: " in said and "No space left on device" in said, said
    assert left == ["filler"], f"a partial report was left: {left}"


def test_a_report_on_a_disk_that_filled_is_said_and_no_partial_file_is_left(
    one_hung: SimCluster, tmp_path: Path
) -> None:
    with small_filesystem(tmp_path / "small") as small:
        log, report = tmp_path / "sweep.log", small / "report.json"
        args = ["sweep", "-i", one_hung.inventory_path, "--store", small / "h.db", "--json", report]
        proc = start_console(*args, "--probe-timeout", "6", "--store-wait", "1", log=log, env=ENV)
        try:
            wait_for_running_sweep(proc, small / "h.db", log)
            fill(small)
            code = stopped(proc, log)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        left = sorted(p.name for p in small.iterdir() if not p.name.startswith("h.db"))
    output = log.read_text(errors="replace")
    assert "Traceback" not in output and code == ExitCode.OUTPUT_FAILED, output
    assert f"report not written: {report}: No space left on device" in output, output
    assert "history: history database " in output and "the disk is full" in output, output
    assert left == ["filler"], f"a partial report was left: {left}"


def test_every_exit_code_is_in_the_help_of_the_commands_that_return_it() -> None:
    from console.commands.watch import WATCH_EXIT_HELP
    from console.exitcodes import EXIT_CODE_HELP, SWEEP_EXIT_CODE_HELP

    # Only watch trips the circuit breaker; every other code is sweep's to return.
    watch_only = {ExitCode.BREAKER_TRIPPED}
    for code in ExitCode:
        returned_by = WATCH_EXIT_HELP if code in watch_only else SWEEP_EXIT_CODE_HELP
        assert f"\n  {int(code)} " in returned_by, code
    assert "\n  7 " not in SWEEP_EXIT_CODE_HELP, "sweep has no circuit breaker"
    assert "\n  5 " not in EXIT_CODE_HELP, "check-local writes no history database"
    assert "\n  5    the history database failed" in WATCH_EXIT_HELP
    for command in ("sweep", "demo"):
        assert "the history database failed" in _help(command), command


def _help(command: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "console", command, "--help"], capture_output=True, text=True, env=ENV, check=True
    )
    return done.stdout


def test_the_named_recovery_brings_back_the_write_ahead_intents(tmp_path: Path) -> None:
    """The recovery a corrupt store is named with, run as written: an action's intent written before its
    effect (no outcome yet) survives it, for the next start to reconcile."""
    if shutil.which("sqlite3") is None:
        pytest.skip("the sqlite3 command-line tool is not installed")
    db = tmp_path / "h.sqlite"
    store = Store(db)
    intent = store.audit_intent("drain", ["sim002"], inputs={"reason": "ECC"}, commands=["scontrol ..."], user="op")
    sweep = store.start_sweep("quick", "cluster.toml", "sim[001-064]")
    for node in range(64):  # raw outputs: most of the file, after the audit log's pages
        store.add_probe_run(
            sweep, f"sim{node:03}", "amdsmi.static", command="amd-smi static --json", exit_status=0,
            started_at=0.0, duration_s=1.0, stdout=os.urandom(20000), stderr=b"", problem=None,
        )  # fmt: skip
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    size = db.stat().st_size
    with db.open("r+b") as f:  # a torn write in the raw outputs' pages
        f.seek(size // 2)
        f.write(b"\xa5" * 4096 * 4)
    with pytest.raises(StoreError) as refused:
        Store(db)
    said = str(refused.value)
    commands = said[said.index("recover what is readable: ") + len("recover what is readable: ") : said.index(" (the")]
    subprocess.run(commands, shell=True, check=True, capture_output=True)
    recovered = Store(db)
    try:
        rows = [dict(r) for r in recovered.audit_log(limit=10)]
        assert [(r["id"], r["action"], r["outcome"]) for r in rows] == [(intent, "drain", "")], rows
    finally:
        recovered.close()
    assert Path(f"{db}.corrupt").exists(), "the corrupt file is kept"
