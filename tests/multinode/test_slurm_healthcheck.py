"""The Slurm recipes of docs/operator-guide.md section 7 on a real Slurm lab: a Prolog and a
HealthCheckProgram answering from the reports a periodic ``check-local --json`` keeps."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from console.cli import main
from console.sim.faults import Fault, FaultKind
from tests.harness import slurm_lab
from tests.multinode.localnodes import VENV_BIN, local_cluster, shim_dir

NAMES = ["gpu001", "gpu002", "gpu003"]


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_prolog_and_health_check_answer_from_the_cached_reports(tmp_path: Path) -> None:
    # gpu002 and gpu003 have an uncorrectable ECC error on GPU 3; the periodic check wrote every report.
    faults = [Fault(kind=FaultKind.ECC_UNCORRECTABLE, node=n, gpu=3) for n in ("gpu002", "gpu003")]
    inventory = local_cluster(tmp_path, NAMES, faults)
    reports = tmp_path / "reports"
    reports.mkdir()
    saved = os.environ["PATH"]
    try:
        for node in NAMES:
            os.environ["PATH"] = f"{shim_dir(tmp_path, node)}:{saved}"
            main(["check-local", "-i", str(inventory), "--node", node, "--json", str(reports / f"{node}.json")])
    finally:
        os.environ["PATH"] = saved
    console = VENV_BIN / "instinct-console"
    # The prolog as the guide gives it: scoped to the job's GPUs (none here: every GPU counts).
    prolog = _script(
        tmp_path / "prolog.sh",
        f'#!/bin/sh\nexec {console} check-local -i {inventory} --from-cache {reports}/"$SLURMD_NODENAME".json'
        ' --gpus "$SLURM_JOB_GPUS"\n',
    )
    # The health check drains with the console's tag; it judges gpu003 only, so the prolog has gpu002.
    # The lab's slurm.conf is known once it runs (this file says where); until then the script does
    # nothing: an scontrol without a config goes looking for one and held slurmd's start up for a minute.
    conf = tmp_path / "slurm-conf-path"
    health = _script(
        tmp_path / "health.sh",
        f'#!/bin/sh\nnode="$SLURMD_NODENAME"\n[ "$node" = gpu003 ] && [ -s {conf} ] || exit 0\n'
        f'{console} check-local -i {inventory} --node "$node" --from-cache {reports}/"$node".json >/dev/null\n'
        f'[ $? -eq 0 ] || SLURM_CONF="$(cat {conf})" scontrol update NodeName="$node" State=DRAIN'
        ' Reason="instinct-console: check-local failed"\n',
    )
    extra = f"Prolog={prolog}\nHealthCheckProgram={health}\nHealthCheckInterval=2\n"
    with slurm_lab.SlurmLab(3, conf_lines=extra) as lab:
        conf.write_text(str(lab.conf))
        ok = lab.run("srun", "-N1", "-w", "gpu001", "--immediate=20", "true", check=False)
        assert ok.returncode == 0, ok.stderr
        held = lab.run("srun", "-N1", "-w", "gpu002", "--immediate=20", "true", check=False)
        assert held.returncode != 0
        assert lab.wait_state("gpu002", "drain.*") and "Prolog" in lab.reason("gpu002")
        assert lab.wait_state("gpu003", "drain.*")
        assert lab.reason("gpu003").startswith("instinct-console: check-local failed")
        assert lab.state("gpu001") == "idle"
    assert not subprocess.run(["pgrep", "-f", str(prolog)], check=False).stdout
