"""A console killed (SIGKILL) at a chosen point of a scheduler transition, against the real Slurm lab.

``scontrol`` is replaced on the console's PATH by a shim that stops at one point of an ``update``:
``before`` (the intent is written, ``scontrol`` has not acted) or ``after`` (Slurm acted, the console
has not read the answer). The test kills the console there and then lets the shim go on or give up.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

from console.model.findings import Evidence, Finding, NodeVerdict, Remedy, Status, Subject
from console.store import Store
from tests.harness.slurm_lab import SlurmLab
from tests.integration.processes import WAIT_S, start_console

SHIM = """#!/bin/sh
# scontrol, stopped {where} an update until the test says go (or give up): the console is killed there.
if [ "$1" = update ]; then
    if [ "{where}" = after ]; then {scontrol} "$@"; fi
    : > "$PAUSE_DIR/started"
    while [ ! -e "$PAUSE_DIR/go" ] && [ ! -e "$PAUSE_DIR/give-up" ]; do sleep 0.05; done
    if [ -e "$PAUSE_DIR/give-up" ]; then exit 1; fi
    if [ "{where}" = after ]; then exit 0; fi
fi
exec {scontrol} "$@"
"""


def real_scontrol() -> Path:
    return next(Path(d) / "scontrol" for d in os.environ["PATH"].split(":") if (Path(d) / "scontrol").exists())


def shim_env(lab: SlurmLab, tmp_path: Path, where: str) -> tuple[dict[str, str], Path]:
    """The console's environment with the shim first on PATH, and the directory the shim waits on."""
    pause, bin_dir = tmp_path / f"pause-{where}", tmp_path / f"bin-{where}"
    pause.mkdir()
    bin_dir.mkdir()
    shim = bin_dir / "scontrol"
    shim.write_text(SHIM.format(where=where, scontrol=real_scontrol()))
    shim.chmod(stat.S_IRWXU)
    return {**lab.env, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PAUSE_DIR": str(pause)}, pause


def failing_sweep(db: Path, node: str, *, check: str = "ras.cper_fatal") -> int:
    """A stored sweep in which ``node`` FAILed ``check`` (calling for an RMA); its id."""
    store = Store(db)
    try:
        sweep = store.start_sweep("quick", "lab", node)
        finding = Finding(
            check_id=check,
            family=check.split(".", maxsplit=1)[0],
            status=Status.FAIL,
            subject=Subject(node=node),
            message="fatal CPER record (AFID 30), 132 retired pages",
            evidence=Evidence(action=Remedy.RMA),
        )
        verdict = NodeVerdict(node=node, status=Status.FAIL, findings=[finding], reason=finding.message)
        store.record_node(sweep, "cluster", verdict, {})
        store.finish_sweep(sweep, "done", {})
        return sweep
    finally:
        store.close()


def kill_at_pause(proc: subprocess.Popen[bytes], pause: Path, log: Path) -> None:
    """SIGKILL ``proc`` once the shim stopped inside ``scontrol update``."""
    deadline = time.monotonic() + WAIT_S
    while not (pause / "started").exists():
        assert proc.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < deadline, "scontrol update never ran:\n" + log.read_text(errors="replace")
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def killed_during(
    args: list[str], lab: SlurmLab, tmp_path: Path, where: str, *, then: str = "go"
) -> subprocess.Popen[bytes]:
    """Run ``instinct-console ARGS``, kill it inside its ``scontrol update`` (``where``), then let the
    orphaned shim ``go`` on or ``give-up``; the killed process."""
    env, pause = shim_env(lab, tmp_path, where)
    log = tmp_path / f"{args[0]}-{where}.log"
    proc = start_console(*args, log=log, env=env)
    try:
        kill_at_pause(proc, pause, log)
    finally:
        proc.kill()
        proc.wait()
        (pause / then).touch()
    return proc
