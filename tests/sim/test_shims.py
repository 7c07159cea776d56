"""PATH shims: a real shell, and a real OpenSSH sshd, answering like a simulated node."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from console.probes import Tool, parse_output
from console.sim.faults import Fault, FaultKind
from console.sim.models import ClusterSpec
from console.sim.serve import ServeOptions, plan_cluster
from console.sim.shims import install_shims
from tests.harness.sshd_fleet import SshdFleet

from .console_lines import console_wrapper

PGID = re.compile(r"@@ic-pgid (\d+)")


def make_cluster(tmp_path: Path, faults: list[Fault]) -> Path:
    """A two-node cluster file: sim001 healthy, sim002 with ``faults``."""
    cluster = plan_cluster(ServeOptions(nodes=2, faults="none", time_factor=1000, state_dir=tmp_path)).cluster
    cluster.faults = faults
    path = tmp_path / "cluster.json"
    cluster.save(path)
    return path


def shimmed_env(bin_dir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin"}


def run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run and capture, never raising on the exit status (the tests assert it)."""
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def amdsmi_parser():  # type: ignore[no-untyped-def]
    return lambda text: parse_output(text, tool=Tool.AMD_SMI)


def group_members(pgid: int) -> list[str]:
    """``ps`` lines of every process still in process group ``pgid``."""
    out = subprocess.run(["ps", "-e", "-o", "pgid=,pid=,args="], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.split()[0] == str(pgid)]


def test_install_writes_one_executable_per_program(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, [])
    written = install_shims(tmp_path / "bin", cluster, "sim001", tmp_path / "state")
    names = {path.name for path in written}
    assert {"amd-smi", "rocm-smi", "rocminfo", "rvs", "all_reduce_perf", "TransferBench", "cat", "sinfo"} <= names
    assert all(os.access(path, os.X_OK) for path in written)
    assert f"{cluster} sim001 --state-dir" in (tmp_path / "bin" / "amd-smi").read_text()


def test_shim_output_parses_and_statuses_are_the_tools(tmp_path: Path) -> None:
    parse = amdsmi_parser()
    cluster = make_cluster(tmp_path, [Fault(kind=FaultKind.TOOL_MISSING, node="sim002")])
    for node in ("sim001", "sim002"):
        install_shims(tmp_path / node, cluster, node, tmp_path / "state")
    healthy = run(["amd-smi", "static", "--json"], shimmed_env(tmp_path / "sim001"))
    assert healthy.returncode == 0 and parse(healthy.stdout).summary["gpu_count"] == 8
    missing = run(["sh", "-c", "amd-smi list"], shimmed_env(tmp_path / "sim002"))
    assert (missing.returncode, missing.stderr) == (127, "sh: 1: amd-smi: not found\n")


def test_cat_shim_serves_simulated_files_and_real_ones(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, [])
    install_shims(tmp_path / "bin", cluster, "sim001", tmp_path / "state")
    real = tmp_path / "notes.txt"
    real.write_text("a real file\n")
    env = shimmed_env(tmp_path / "bin")
    stack = ClusterSpec.load(cluster).node("sim001").stack
    assert f'PRETTY_NAME="{stack.os_pretty}"' in run(["cat", "/etc/os-release"], env).stdout
    assert run(["cat", "/opt/rocm/.info/version"], env).stdout == stack.rocm_build + "\n"
    assert run(["cat", str(real)], env).stdout == "a real file\n"


def test_hung_shim_under_the_console_wrapper_dies_with_its_group(tmp_path: Path) -> None:
    """Like sshd: a new session runs the wrapper; the group kill takes timeout and the hung tool with it."""
    cluster = make_cluster(tmp_path, [Fault(kind=FaultKind.COMMAND_HANG, node="sim002")])
    install_shims(tmp_path / "bin", cluster, "sim002", tmp_path / "state")
    proc = subprocess.Popen(
        ["/bin/sh", "-c", console_wrapper(["amd-smi", "static", "--json"], timeout_s=120)],
        env=shimmed_env(tmp_path / "bin"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stderr is not None
    pgid = int(PGID.fullmatch(proc.stderr.readline().strip()).group(1))  # type: ignore[union-attr]
    try:
        time.sleep(1.0)
        # dash forks the wrapper's sh, so $$ is not the session leader; timeout's setpgid makes it the group.
        members = group_members(pgid)
        assert any("console.sim.commands" in line for line in members) and str(pgid) in members[0].split()[1]
        # bash, as on a node whose login shell is bash: dash's kill builtin rejects "--" ("Illegal number: -").
        subprocess.run(["bash", "-c", f"kill -TERM -- -{pgid}"], check=True)
        # dash (the session leader) outlives its killed child and exits 128+15; bash would die of the signal.
        assert proc.wait(timeout=10) in (128 + signal.SIGTERM, -signal.SIGTERM)
        assert group_members(pgid) == []
    finally:
        for group in (pgid, proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        proc.wait()


@pytest.fixture
def sshd_pair(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Two real sshd nodes logging in root (the project's interpreter lives under /root)."""
    fleet = SshdFleet(2, prefix="shim", login_user="root")
    fleet.start()
    try:
        yield fleet
    finally:
        fleet.stop()


@pytest.mark.root
def test_openssh_client_runs_shims_on_a_real_sshd(tmp_path: Path, sshd_pair) -> None:  # type: ignore[no-untyped-def]
    parse = amdsmi_parser()
    fleet = sshd_pair
    cluster = make_cluster(tmp_path, [Fault(kind=FaultKind.COMMAND_HANG, node="sim002")])
    for fleet_node, sim_node in zip(fleet.nodes, ("sim001", "sim002"), strict=True):
        install_shims(fleet_node.bin_dir, cluster, sim_node, tmp_path / "state")
    healthy, hung_node = fleet.nodes

    def ssh(node: object, command: str) -> list[str]:
        return ["ssh", "-F", str(fleet.ssh_config), node.name, command]  # type: ignore[attr-defined]

    def remote_group(node: object, pgid: int) -> list[str]:
        listing = run(ssh(node, "ps -e -o pgid=,args="))
        return [line for line in listing.stdout.splitlines() if line.split()[0] == str(pgid)]

    static = run(ssh(healthy, "amd-smi static --json"))
    assert static.returncode == 0, static.stderr
    assert parse(static.stdout).summary["gpu_count"] == 8
    assert run(ssh(healthy, "hostname")).stdout == "sim001\n"

    hung = subprocess.Popen(
        ssh(hung_node, console_wrapper(["amd-smi", "metric", "--json"], timeout_s=120)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert hung.stderr is not None
        pgid = int(PGID.fullmatch(hung.stderr.readline().strip()).group(1))  # type: ignore[union-attr]
        time.sleep(1.0)
        before = "\n".join(remote_group(hung_node, pgid))
        assert "console.sim.commands" in before and "timeout" in before
        killed = run(ssh(hung_node, f"kill -TERM -- -{pgid}"))
        assert killed.returncode == 0, killed.stderr
        # 255: bash (root's shell) ran the wrapper in place and died of the signal; 143: a dash login shell.
        assert hung.wait(timeout=15) in (255, 128 + signal.SIGTERM)
        assert remote_group(hung_node, pgid) == []
    finally:
        if hung.poll() is None:
            hung.kill()
            hung.wait()
