"""The console's engine audits the host keys it accepts with ``--accept-new``, as the headless sweep does.

The engine runs in its own process (what the console script starts) or on a thread of the console's
(``--engine thread``); both sweep the simulated cluster with an empty known_hosts file. Every key
written to it must have one audit entry whose fingerprint is that of the line written, tagged with
the sweep it came in; a second sweep accepts nothing new and audits nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from console.checks import CheckPack, load_packs
from console.inventory import load_inventory
from console.service.assembly import EngineSpec
from console.service.client import ProcessBridge
from console.service.commands import StartSweep
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from console.sweep.events import Event
from console.ui.bridge import EngineBridge
from tests.integration.test_host_key_audit import assert_keys_audited
from tests.multinode.simcluster import start_cluster

SWEEP_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    with start_cluster(2, GpuModel.MI300X) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def packs() -> dict[str, CheckPack]:
    return load_packs()


@pytest.mark.parametrize("engine", ["process", "thread"])
def test_the_consoles_engine_audits_every_key_it_accepted(
    sim: SimCluster, packs: dict[str, CheckPack], tmp_path: Path, engine: str
) -> None:
    known_hosts = tmp_path / "known_hosts"
    inventory_path, db = tmp_path / "inventory.toml", tmp_path / "history.sqlite"
    inventory_path.write_text(sim.inventory_path.read_text().replace(str(sim.known_hosts_path), str(known_hosts)))
    inventory = load_inventory(inventory_path)
    events: list[Event] = []
    bridge: ProcessBridge | EngineBridge
    if engine == "process":
        bridge = ProcessBridge(EngineSpec(inventory, packs, db, accept_new=True), events.append)
    else:
        bridge = EngineBridge(EngineSpec(inventory, packs, db, accept_new=True), events.append)
    bridge.start()
    try:
        assert bridge.request(StartSweep("quick")).result(SWEEP_TIMEOUT_S) is None
        written = known_hosts.read_text().splitlines()
        assert bridge.request(StartSweep("quick")).result(SWEEP_TIMEOUT_S) is None
    finally:
        bridge.stop()
    assert known_hosts.read_text().splitlines() == written
    assert_keys_audited(sim, db, known_hosts, written)
