"""Running one contender as a child process and measuring it: wall time, CPU of its whole tree, peak RSS."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Fleet:
    """What the peers need to reach a fleet: addresses, port, user, key, known_hosts, the console's inventory."""

    addresses: list[str]
    port: int
    user: str
    key: Path
    known_hosts: Path
    inventory: Path


@dataclass(frozen=True)
class Measured:
    """One run of one contender."""

    wall_s: float
    cpu_s: float  # user + system of the child and every descendant it waited for
    max_rss_mib: float  # the largest single process of that tree
    returncode: int
    stdout: bytes


def run_measured(argv: list[str], *, env: dict[str, str] | None = None, timeout_s: float = 900.0) -> Measured:
    """Run ``argv`` to completion (killed after ``timeout_s``) and measure it with ``wait4``."""
    out_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"ic-bench-{os.getpid()}.out"
    with out_path.open("w+b") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
        deadline = t0 + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
            time.sleep(0.01)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        data = out.read()
    out_path.unlink(missing_ok=True)
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, data)


def raise_nofile() -> None:
    """Lift the open-files limit to the hard limit: 1,024 connections need more than the usual 1,024 fds."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
