"""``watch --reservation`` against a REAL slurmctld with a slurmd per node (tests/harness/slurm_lab.py).

The nodes answer probes as simulated Instinct nodes behind real SSH (named as the lab's Slurm nodes);
Slurm itself is the lab: ``scontrol`` runs on this host with the lab's SLURM_CONF, as it does for a
cluster file without a controller. A round reserves exactly the idle nodes it sweeps (a node running
a job is neither swept nor reserved), and the reservation is gone afterwards: after a finished round,
and after a round stopped by SIGTERM while a probe hung.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.faults import Fault, FaultKind
from console.sim.launcher import SimCluster, start_sim_cluster
from console.sim.scenario import write_live_faults
from console.store import Store
from tests.harness.slurm_lab import SlurmLab
from tests.integration.processes import start_console, stopped, wait_for_running_sweep


@pytest.fixture(scope="module")
def lab() -> Iterator[SlurmLab]:
    """Three real Slurm nodes gpu001..gpu003."""
    with SlurmLab(3) as running:
        yield running


@pytest.fixture
def sim(lab: SlurmLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimCluster]:
    """Simulated nodes gpu001..gpu003 over SSH; every lab node idle again afterwards."""
    monkeypatch.setenv("SLURM_CONF", str(lab.conf))
    scenario = tmp_path / "s.toml"
    scenario.write_text('time_factor = 400\n[[nodes]]\nnames = "gpu[001-003]"\n')
    try:
        with start_sim_cluster(scenario=scenario) as cluster:
            yield cluster
    finally:
        lab.reset()


def _local_slurm(sim: SimCluster, tmp_path: Path) -> str:
    """The sim's cluster file with Slurm on this host (the lab) instead of the sim's rendered scontrol."""
    path = tmp_path / "cluster.toml"
    path.write_text(re.sub(r'(?m)^controller = ".*"$', 'controller = ""', sim.inventory_path.read_text()))
    return str(path)


def _reservations(lab: SlurmLab) -> str:
    return lab.run("scontrol", "show", "reservation").stdout.strip()


def test_a_round_reserves_the_idle_nodes_it_sweeps_and_releases_them(
    lab: SlurmLab, sim: SimCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv, db = _local_slurm(sim, tmp_path), str(tmp_path / "h.sqlite")
    write_live_faults(sim.state_dir, [Fault(kind=FaultKind.CPER_RECORD, node="gpu002", gpu=1, params={"afid": 30})])
    sim.wait_for_generation(2)
    lab.run("sbatch", "-w", "gpu003", "-N", "1", "-o", "/dev/null", "--wrap", "sleep 600")
    lab.wait_state("gpu003", "allocated")  # a job came first: gpu003 is neither swept nor reserved

    watch = ["watch", "-i", inv, "--store", db, "--every", "3600", "--rounds", "1", "--auto"]
    assert main([*watch, "--reservation", "ic-watch"]) == 0
    out = capsys.readouterr().out
    assert "probes at nice 19, ionice idle, swept nodes held in reservation ic-watch" in out, out
    line = next(line for line in out.splitlines() if line.startswith("round 1:"))
    assert "swept gpu[001-002]" in line and "gpu001 PASS" in line and "gpu002 FAIL" in line, line
    assert "(released ic-watch)" in line and "done: drain gpu002" in line, line

    assert _reservations(lab) == "No reservations in the system"
    assert lab.state("gpu002") == "drained" and lab.reason("gpu002").startswith("instinct-console: watch: FAIL")
    assert lab.state("gpu001") == "idle" and lab.state("gpu003") == "allocated"
    store = Store(db)
    audit = store.audit_log(limit=10)[::-1]
    store.close()
    assert [row["action"] for row in audit] == ["reserve", "release", "drain"]
    reserve, release = audit[0], audit[1]
    assert "Flags=MAINT,IGNORE_JOBS Nodes=gpu[001-002]" in reserve["commands"] and "Users=root" in reserve["commands"]
    assert reserve["outcome"].startswith("reserved gpu[001-002] as ic-watch for at most ")
    assert release["outcome"] == "released ic-watch" and "gpu003" not in reserve["targets"]

    # A reservation that cannot be made (the name is taken) means no sweep: the site asked for one.
    lab.run("scontrol", "create", "reservation", "ReservationName=taken", "StartTime=now", "Duration=10",
            "Users=root", "Flags=MAINT,IGNORE_JOBS", "Nodes=gpu003")  # fmt: skip
    assert main([*watch, "--every", "0.001", "--reservation", "taken"]) == 1  # a round that could not sweep
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("round 1:"))
    assert "did not sweep gpu001" in line and "reservation taken not created: " in line, line
    lab.run("scontrol", "delete", "ReservationName=taken")


@pytest.mark.parametrize(
    ("signum", "exit_code"),
    [(signal.SIGTERM, ExitCode.INTERRUPTED), (signal.SIGHUP, ExitCode.HANGUP)],
    ids=["SIGTERM", "SIGHUP"],
)
def test_a_stop_signal_mid_sweep_releases_the_reservation(
    lab: SlurmLab, sim: SimCluster, tmp_path: Path, signum: signal.Signals, exit_code: ExitCode
) -> None:
    """SIGHUP (a closed terminal) left the reservation on every node (issue 34); it releases it as SIGTERM does."""
    inv, db, log = _local_slurm(sim, tmp_path), tmp_path / "h.sqlite", tmp_path / "watch.log"
    write_live_faults(sim.state_dir, [Fault(kind=FaultKind.COMMAND_HANG, node="gpu002")])  # amd-smi hangs there
    sim.wait_for_generation(2)
    proc = start_console(
        "watch", "-i", inv, "--store", db, "--every", "3600", "--reservation", "ic-term", log=log, env=lab.env
    )
    try:
        wait_for_running_sweep(proc, db, log)  # gpu001 judged, gpu002 hanging: mid-sweep
        held = lab.run("scontrol", "show", "reservation", "ic-term").stdout
        assert "Nodes=gpu[001-003]" in held and re.search(r"Flags=\S*MAINT", held), held
        assert "IGNORE_JOBS" in held, held
        proc.send_signal(signum)
        code = stopped(proc, log)
    finally:
        proc.kill()
        proc.wait()
    said = log.read_text(errors="replace")
    assert code == exit_code, said
    assert "[cancelled]" in said and "released ic-term" in said, said
    assert _reservations(lab) == "No reservations in the system"
    store = Store(db)
    audit = store.audit_log(limit=10)[::-1]
    store.close()
    assert [(row["action"], row["outcome"]) for row in audit][1] == ("release", "released ic-term")
    assert [row["action"] for row in audit] == ["reserve", "release"]
