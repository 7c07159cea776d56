"""The console as its own process, and what its history database says while it runs (read-only, from outside)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

WAIT_S = 60.0
EXIT_S = 30.0  # the transport kills the hung amd-smi on the node (bounded) before the process exits


def start_console(*args: str | Path, log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``instinct-console ARGS`` as its own process, stdout and stderr into ``log``."""
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "console", *map(str, args)], stdout=out, stderr=subprocess.STDOUT, env=env
        )


def sweeps(db: Path) -> list[tuple[int, str, float | None, int]]:
    """(id, status, finished_at, verdicts) of every sweep committed so far; [] before the store exists."""
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(
            "SELECT s.id, s.status, s.finished_at, (SELECT count(*) FROM node_verdicts v WHERE v.sweep_id = s.id)"
            " FROM sweeps s ORDER BY s.id"
        ).fetchall()
    except sqlite3.OperationalError:
        return []  # schema not written yet
    finally:
        conn.close()


def wait_for_running_sweep(proc: subprocess.Popen[bytes], db: Path, log: Path) -> int:
    """Wait until a sweep is recorded as running with the healthy node judged; its id."""
    deadline = time.monotonic() + WAIT_S
    while True:
        seen = sweeps(db)
        if seen and seen[-1][1] == "running" and seen[-1][3] >= 1:
            return seen[-1][0]
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, f"no running sweep with a verdict after {WAIT_S} s: {seen}"
        time.sleep(0.02)


def stopped(proc: subprocess.Popen[bytes], log: Path) -> int:
    """The exit status of ``proc``, which must end within ``EXIT_S``."""
    try:
        return proc.wait(EXIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"still running {EXIT_S} s after the signal:\n{log.read_text(errors='replace')}") from None
