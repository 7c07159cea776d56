"""Host keys accepted on first contact (``--accept-new``) are in the audit log: node, key type, fingerprint.

A real sweep (or drift check) of the simulated cluster with an empty known_hosts file: every node's key is written to
it, and each must have an audit entry whose fingerprint is the one ``ssh-keygen -l`` gives for the
line written. A second sweep accepts nothing new and audits nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from console.cli import main
from console.exitcodes import ExitCode
from console.sim.launcher import SimCluster
from console.sim.specs import GpuModel
from console.store import Store
from tests.multinode.simcluster import start_cluster


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    with start_cluster(2, GpuModel.MI300X) as cluster:
        yield cluster


@pytest.mark.parametrize("command", ["sweep", "drift"])
def test_accept_new_audits_every_key_it_accepted(sim: SimCluster, tmp_path: Path, command: str) -> None:
    known_hosts = tmp_path / "known_hosts"
    inventory, db = tmp_path / "inventory.toml", tmp_path / "h.sqlite"
    inventory.write_text(sim.inventory_path.read_text().replace(str(sim.known_hosts_path), str(known_hosts)))
    argv = [command, "-i", str(inventory), "--store", str(db), "--accept-new"]
    assert main(argv) == ExitCode.OK
    written = known_hosts.read_text().splitlines()
    assert main(argv) == ExitCode.OK
    assert known_hosts.read_text().splitlines() == written
    assert_keys_audited(sim, db, known_hosts, written)


def assert_keys_audited(sim: SimCluster, db: Path, known_hosts: Path, written: list[str]) -> None:
    """Exactly one audit row per key written to ``known_hosts`` (the first sweep's), with its fingerprint."""
    addresses = {f"[{node.address}]:{node.port}": node.name for node in sim.cluster().nodes}
    expected = {}
    for line in written:
        pattern, key_type, data = line.split()
        key = asyncssh.import_public_key(f"{key_type} {data}")
        expected[addresses[pattern]] = (pattern, key_type, key.get_fingerprint("sha256"))
    store = Store(db)
    try:
        rows = [row for row in store.audit_log(20) if row["action"] == "accept-host-key"]
    finally:
        store.close()
    audited = {}
    for row in rows:
        (node,) = json.loads(row["targets"])
        inputs = json.loads(row["inputs"])
        audited[node] = (inputs["known_hosts_entry"], inputs["key_type"], inputs["fingerprint"])
        assert inputs["known_hosts"] == str(known_hosts) and inputs["sweep_id"] == 1
        assert row["finished_at"] is not None and row["outcome"].startswith(f"accepted {inputs['key_type']} key")
    assert len(rows) == 2 and audited == expected
