"""The Slurm recipe shipped in docs/slurm/ on a real Slurm lab: the periodic check writes each node's
report, the Prolog holds a job off a failing node, the HealthCheckProgram drains one with the tag.

The HealthCheckProgram behaves like NHC: it never replaces another operator's reason, and when it cannot
act (slurm.conf not found, slurmctld down) it fails closed, with a line slurmd logs naming why."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

from console.sim.faults import Fault, FaultKind
from tests.harness import slurm_lab
from tests.multinode.localnodes import VENV_BIN, local_cluster, shim_dir

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "slurm"
NAMES = ["gpu001", "gpu002", "gpu003"]


def installed(
    script: str, where: Path, cluster: Path, reports: Path, *, slurm_conf: Path | None = None, name: str | None = None
) -> Path:
    """The shipped script with its site settings pointed at this test's console, cluster file and reports
    (and slurm.conf, for a script that calls scontrol)."""
    text = (RECIPE / script).read_text()
    settings: dict[str, object] = {"CONSOLE": VENV_BIN / "instinct-console", "CLUSTER": cluster, "REPORTS": reports}
    if slurm_conf is not None:
        settings["SLURM_CONF"] = slurm_conf
    for setting, value in settings.items():
        text, found = re.subn(rf"^{setting}=.*$", f"{setting}={value}", text, count=1, flags=re.MULTILINE)
        assert found == 1, f"{script} has no {setting}= setting"
    path = where / (name or script)
    path.write_text(text)
    path.chmod(0o755)
    return path


def gated_health_check(root: Path) -> Path:
    """The lab's HealthCheckProgram: runs ``<root>/health-<node>.sh`` once the test put it there.

    slurmd runs its health check at start too: the lab's nodes must come up idle first. slurmd's own
    environment (which names the lab's slurm.conf) is dropped, as a node's slurmd started with ``-f``
    gives none: the shipped script must find slurm.conf from its own settings.
    """
    gate = root / "health-gate.sh"
    # One check per node at a time (flock): on a busy machine slurmd would start the next while one runs;
    # a check that waited its turn still runs (a restarted slurmd runs one only as it starts).
    gate.write_text(
        f'#!/bin/sh\nscript="{root}/health-$SLURMD_NODENAME.sh"\n[ -x "$script" ] || exit 0\n'
        f'exec flock -w 30 "{root}/health-$SLURMD_NODENAME.lock" env -u SLURM_CONF "$script"\n'
    )
    gate.chmod(0o755)
    return gate


def wait_logged(lab: slurm_lab.SlurmLab, node: str, pattern: str, after: int = 0, timeout_s: float = 120.0) -> str:
    """The first line of ``node``'s slurmd log past offset ``after`` matching ``pattern`` (waited for)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for line in lab.slurmd_log(node)[after:].splitlines():
            if re.search(pattern, line):
                return line
        if time.monotonic() > deadline:
            raise TimeoutError(f"{node}'s slurmd never logged {pattern!r}: {lab.slurmd_log(node)[after:][:3000]}")
        time.sleep(0.2)


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
    lab_root = tmp_path / "lab"
    health = gated_health_check(tmp_path)
    snippet = (RECIPE / "slurm.conf.snippet").read_text()
    snippet = snippet.replace("/opt/instinct-console/slurm/check-local-health.sh", str(health))
    snippet = snippet.replace("/opt/instinct-console/slurm/check-local-prolog.sh", str(prolog))
    snippet = snippet.replace("HealthCheckInterval=300", "HealthCheckInterval=2")
    assert str(health) in snippet and str(prolog) in snippet
    # The Prolog starts instinct-console (a Python program): srun must wait for it even on a busy machine.
    with slurm_lab.SlurmLab(3, conf_lines=snippet, message_timeout=60, root=lab_root) as lab:
        for node in NAMES:
            installed(
                "check-local-health.sh",
                tmp_path,
                cluster,
                health_reports,
                slurm_conf=lab.conf,
                name=f"health-{node}.sh",
            )
        ok = lab.run("srun", "-N1", "-w", "gpu001", "--immediate=20", "true", check=False)
        assert ok.returncode == 0, ok.stderr
        held = lab.run("srun", "-N1", "-w", "gpu002", "--immediate=20", "true", check=False)
        assert held.returncode != 0 and "prolog failed" in held.stderr.lower()
        assert lab.wait_state("gpu002", "drain.*") and "Prolog" in lab.reason("gpu002")
        assert lab.wait_state("gpu003", "drain.*")
        assert lab.reason("gpu003").startswith("instinct-console: check-local: a check failed")
        assert lab.state("gpu001") == "idle"


def test_the_health_check_keeps_other_reasons_and_fails_closed(tmp_path: Path) -> None:
    # No periodic check ran: every node's report is missing, so every node "could not be checked".
    cluster = local_cluster(tmp_path, ["gpu001", "gpu002"])
    reports = tmp_path / "reports"
    reports.mkdir()
    snippet = f"HealthCheckProgram={gated_health_check(tmp_path)}\nHealthCheckInterval=5\nHealthCheckNodeState=ANY\n"
    # The lab's slurm.conf is not at the default path: only the script's SLURM_CONF setting finds it.
    with slurm_lab.SlurmLab(2, conf_lines=snippet, root=tmp_path / "lab") as lab:
        assert not str(lab.conf).startswith("/etc/")
        # Another operator's drain: the check fails on gpu001, but its reason is kept, and the log says so.
        lab.run("scontrol", "update", "NodeName=gpu001", "State=DRAIN", 'Reason="hw ticket 42"')
        installed("check-local-health.sh", tmp_path, cluster, reports, slurm_conf=lab.conf, name="health-gpu001.sh")
        kept = wait_logged(lab, "gpu001", r"health_check failed: rc:1 .*held by another reason")
        assert "could not be checked" in kept and "hw ticket 42" in kept
        assert lab.reason("gpu001").startswith("hw ticket 42")
        # A slurm.conf the script cannot find: it fails closed, with a line in slurmd's log naming why.
        missing = tmp_path / "nowhere" / "slurm.conf"
        installed("check-local-health.sh", tmp_path, cluster, reports, slurm_conf=missing, name="health-gpu002.sh")
        line = wait_logged(lab, "gpu002", r"health_check failed: rc:2 .*instinct-console health check on gpu002")
        assert f"SLURM_CONF={missing} is not readable" in line
        # Its setting pointing at the lab's slurm.conf: the node is drained with the console's tag.
        installed("check-local-health.sh", tmp_path, cluster, reports, slurm_conf=lab.conf, name="health-gpu002.sh")
        assert lab.wait_state("gpu002", "drain.*", timeout_s=120)
        assert lab.reason("gpu002").startswith("instinct-console: check-local: could not be checked")
        assert lab.reason("gpu001").startswith("hw ticket 42")
        # slurmctld down (slurmctld asks for each check: slurmd runs one by itself only as it starts): the
        # script cannot read the node and says so, non-zero.
        seen = len(lab.slurmd_log("gpu002"))
        lab.kill_controller()
        lab.restart_slurmd("gpu002")
        down = wait_logged(lab, "gpu002", r"health_check failed: rc:2 ", after=seen)
        assert "it cannot drain: scontrol show node" in down, down
