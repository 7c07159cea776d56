"""The Slurm recipe shipped in docs/slurm/ on a real Slurm lab: the periodic check writes each node's
report, the Prolog holds a job off a failing node, the HealthCheckProgram drains one with the tag."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from console.sim.faults import Fault, FaultKind
from tests.harness import slurm_lab
from tests.multinode.localnodes import VENV_BIN, local_cluster, shim_dir

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "slurm"
NAMES = ["gpu001", "gpu002", "gpu003"]


def installed(script: str, where: Path, cluster: Path, reports: Path) -> Path:
    """The shipped script with its site settings pointed at this test's console, cluster file and reports."""
    text = (RECIPE / script).read_text()
    settings = {"CONSOLE": VENV_BIN / "instinct-console", "CLUSTER": cluster, "REPORTS": reports}
    for name, value in settings.items():
        text, found = re.subn(rf"^{name}=.*$", f"{name}={value}", text, count=1, flags=re.MULTILINE)
        assert found == 1, f"{script} has no {name}= setting"
    path = where / script
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_shipped_prolog_and_health_check_on_a_slurm_lab(tmp_path: Path) -> None:
    # gpu002 and gpu003 have an uncorrectable ECC error on GPU 3.
    faults = [Fault(kind=FaultKind.ECC_UNCORRECTABLE, node=n, gpu=3) for n in ("gpu002", "gpu003")]
    cluster = local_cluster(tmp_path, NAMES, faults)
    # The periodic check, run once per node (each node's tools are the sim's shims).
    reports = tmp_path / "reports"
    periodic = installed("check-local-periodic.sh", tmp_path, cluster, reports)
    for node in NAMES:
        env = {**os.environ, "SLURMD_NODENAME": node, "PATH": f"{shim_dir(tmp_path, node)}:{os.environ['PATH']}"}
        subprocess.run([str(periodic)], env=env, check=False, timeout=120)
        assert (reports / f"{node}.json").exists(), node
    # The health check reads its own copy, in which gpu002 passes: the prolog needs gpu002 in service.
    health_reports = tmp_path / "health-reports"
    health_reports.mkdir()
    for node in ("gpu001", "gpu003"):
        (health_reports / f"{node}.json").write_text((reports / f"{node}.json").read_text())
    (health_reports / "gpu002.json").write_text((reports / "gpu001.json").read_text().replace("gpu001", "gpu002"))
    prolog = installed("check-local-prolog.sh", tmp_path, cluster, reports)
    shipped = installed("check-local-health.sh", tmp_path, cluster, health_reports)
    # A real node's scontrol finds /etc/slurm/slurm.conf; the lab's is known once it runs (this file
    # says where), and until then the check waits: an scontrol without one stalls slurmd's start.
    conf = tmp_path / "slurm-conf-path"
    health = tmp_path / "health-in-lab.sh"
    health.write_text(f'#!/bin/sh\n[ -s {conf} ] || exit 0\nSLURM_CONF="$(cat {conf})" exec {shipped}\n')
    health.chmod(0o755)
    snippet = (RECIPE / "slurm.conf.snippet").read_text()
    snippet = snippet.replace("/opt/instinct-console/slurm/check-local-health.sh", str(health))
    snippet = snippet.replace("/opt/instinct-console/slurm/check-local-prolog.sh", str(prolog))
    snippet = snippet.replace("HealthCheckInterval=300", "HealthCheckInterval=2")
    assert str(health) in snippet and str(prolog) in snippet
    # The Prolog starts instinct-console (a Python program): srun must wait for it even on a busy machine.
    with slurm_lab.SlurmLab(3, conf_lines=snippet, message_timeout=60) as lab:
        conf.write_text(str(lab.conf))
        ok = lab.run("srun", "-N1", "-w", "gpu001", "--immediate=20", "true", check=False)
        assert ok.returncode == 0, ok.stderr
        held = lab.run("srun", "-N1", "-w", "gpu002", "--immediate=20", "true", check=False)
        assert held.returncode != 0 and "prolog failed" in held.stderr.lower()
        assert lab.wait_state("gpu002", "drain.*") and "Prolog" in lab.reason("gpu002")
        assert lab.wait_state("gpu003", "drain.*")
        assert lab.reason("gpu003").startswith("instinct-console: check-local: a check failed")
        assert lab.state("gpu001") == "idle"
