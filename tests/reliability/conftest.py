"""Shared fixtures: four real sshd nodes that record every command line, serving a simulated cluster."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.recording import RecordingFleet
from tests.reliability.simfleet import NAME_PREFIX, SimOnSshd, install_node_tools, start_sim_on_sshd

RECORDING_NODES = 4


@pytest.fixture(scope="session")
def recording_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimOnSshd]:
    sim = start_sim_on_sshd(
        RECORDING_NODES,
        [],
        tmp_path_factory.mktemp("recording"),
        fleet=RecordingFleet(RECORDING_NODES, prefix=NAME_PREFIX),
    )
    try:
        yield sim
    finally:
        sim.fleet.stop()


@pytest.fixture
def recorded(recording_sim: SimOnSshd) -> Iterator[SimOnSshd]:
    """The recording cluster with empty logs; faults and tool changes are undone afterwards."""
    fleet = recording_sim.fleet
    assert isinstance(fleet, RecordingFleet)
    fleet.forget_commands()
    recording_sim.clear_exec_logs()
    yield recording_sim
    fleet.reset()
    install_node_tools(fleet, recording_sim.cluster)


def console(
    *args: str | Path, env: dict[str, str] | None = None, timeout_s: float = 180
) -> subprocess.CompletedProcess[bytes]:
    """Run ``instinct-console`` as its own process; output as raw bytes, exactly what a terminal would get."""
    return subprocess.run(
        [sys.executable, "-m", "console", *map(str, args)], capture_output=True, env=env, timeout=timeout_s, check=False
    )
