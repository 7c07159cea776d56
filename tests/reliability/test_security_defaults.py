"""Security defaults: strict host keys, no secrets kept or shown, owner-only files, read-only means read-only,
and nothing but the console's own probes runs on a node.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.inventory import InventoryError, load_inventory
from console.store import Store
from console.sweep.catalog import ProbeSet, probes_for
from tests.reliability.conftest import console
from tests.reliability.recording import RecordingFleet, classify
from tests.reliability.simfleet import SimOnSshd

SECRET = "Sup3r-S3cret"


def _recording(sim: SimOnSshd) -> RecordingFleet:
    assert isinstance(sim.fleet, RecordingFleet)
    return sim.fleet


@pytest.mark.root
def test_a_sweep_runs_exactly_the_catalogs_probes_and_nothing_else(recorded: SimOnSshd, tmp_path: Path) -> None:
    done = console("sweep", "-i", recorded.inventory_path, "--store", tmp_path / "h.sqlite")
    assert done.returncode == 0, done.stdout.decode(errors="replace")
    expected = {spec.argv for spec in probes_for(ProbeSet.QUICK)}
    fleet = _recording(recorded)
    for node in fleet.nodes:
        sent: list[tuple[str, ...]] = []
        for command in fleet.commands(node):
            kind, argvs = classify(command)
            assert kind == "bundle", f"{node.name} was asked to run {command[:200]!r}"
            sent.extend(argvs)
        assert sorted(sent) == sorted(expected), f"{node.name}: each catalog probe exactly once"
        # and each probe's cleanup (the CPER record files' folder) before and after it
        cleanups = [spec.cleanup for spec in probes_for(ProbeSet.QUICK) if spec.cleanup] * 2
        ran = sorted(" ".join(argv) for argv in [*expected, *cleanups])
        assert sorted(recorded.exec_log(node.name)) == ran


@pytest.mark.root
def test_changed_host_key_is_refused_even_with_accept_new(recorded: SimOnSshd, tmp_path: Path) -> None:
    fleet = recorded.fleet
    known = fleet.host_key_fingerprint("sim003")
    before = fleet.known_hosts.read_bytes()
    fleet.swap_host_key("sim003")
    shown = fleet.host_key_fingerprint("sim003")
    done = console(
        "sweep", "-i", recorded.inventory_path, "--nodes", "sim003", "--accept-new",
        "--store", tmp_path / "h.sqlite", "--json", tmp_path / "report.json",
    )  # fmt: skip
    assert done.returncode == 3
    (node,) = json.loads((tmp_path / "report.json").read_text())["nodes"]
    assert node["status"] == "UNKNOWN" and "HOST KEY CHANGED for sim003" in node["reason"]
    assert known in node["reason"] and shown in node["reason"]
    assert fleet.known_hosts.read_bytes() == before, "a changed key must never be written to known_hosts"
    assert _recording(recorded).commands("sim003") == []


@pytest.mark.root
def test_unknown_host_key_is_refused_unless_accept_new(recorded: SimOnSshd, tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    fleet = recorded.fleet
    node = fleet.node("sim004")
    known_hosts.write_text(
        "".join(line + "\n" for line in fleet.known_hosts.read_text().splitlines() if node.addr not in line)
    )
    inventory = tmp_path / "inventory.toml"
    inventory.write_text(recorded.inventory_path.read_text().replace(str(fleet.known_hosts), str(known_hosts)))
    args = [
        "sweep",
        "-i",
        inventory,
        "--nodes",
        "sim004",
        "--store",
        tmp_path / "h.sqlite",
        "--json",
        tmp_path / "r.json",
    ]
    refused = console(*args)
    assert refused.returncode == 3
    assert "host-key-unknown" in json.loads((tmp_path / "r.json").read_text())["nodes"][0]["reason"]
    assert node.addr not in known_hosts.read_text()
    accepted = console(*args, "--accept-new")
    assert accepted.returncode == 0, accepted.stdout.decode(errors="replace")
    assert f"[{node.addr}]:{node.port} ssh-ed25519" in known_hosts.read_text()


@pytest.mark.parametrize(
    "extra",
    [
        '[ssh]\npassword = "x"\n',
        '[hosts.gpu1]\npassword = "x"\n',
        'password = "x"\n',
        '[ssh]\nidentity_passphrase = "x"\n',
    ],
)
def test_inventory_has_no_place_for_a_password(tmp_path: Path, extra: str) -> None:
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(f"{extra}[[pools]]\nname = 'p'\ngpu_model = 'mi300x'\nnodes = 'gpu[1-2]'\n")
    with pytest.raises(InventoryError, match="Extra inputs are not permitted"):
        load_inventory(cluster)


@pytest.mark.root
def test_secrets_stay_out_of_output_reports_logs_and_store(recorded: SimOnSshd, tmp_path: Path) -> None:
    """A password in an address or jump host and a key pasted where a path belongs are never shown or kept."""
    fleet = recorded.fleet
    key_body = fleet.client_key.read_text().splitlines()[1]  # a line from inside the private key
    text = recorded.inventory_path.read_text()
    text = text.replace(
        f'address = "{fleet.node("sim001").addr}"', f'address = "ssh://ops:{SECRET}@no-such-host.invalid"'
    )
    text = text.replace(
        f'identity_file = "{fleet.client_key.resolve()}"', f"identity_file = {json.dumps(fleet.client_key.read_text())}"
    )
    inventory = tmp_path / "inventory.toml"
    inventory.write_text(text)
    reports = [tmp_path / "report.json", tmp_path / "junit.xml", tmp_path / "nodes.prom"]
    done = console(
        "sweep", "-i", inventory, "--nodes", "sim[001-002]", "--store", tmp_path / "h.sqlite",
        "--json", reports[0], "--junit", reports[1], "--prom", reports[2],
    )  # fmt: skip
    assert done.returncode == 3
    shown = done.stdout + done.stderr
    assert b"ops:***@" in done.stdout, "the reason still names the address, without the password"
    assert b"identity file [*** private key]" in done.stderr, "the misconfiguration is still reported"
    for blob in [shown, *(path.read_bytes() for path in reports)]:
        assert SECRET.encode() not in blob and key_body.encode() not in blob
    conn = sqlite3.connect(tmp_path / "h.sqlite")
    try:
        rows = conn.execute("SELECT reason FROM node_verdicts UNION ALL SELECT message FROM findings").fetchall()
    finally:
        conn.close()
    assert rows and not [r for (r,) in rows if SECRET in r or key_body in r]


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0)  # the most permissive an operator's shell could have
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("open_umask")
def test_store_and_audit_log_are_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "state" / "instinct-console" / "history.sqlite"
    store = Store(path)
    try:
        store.audit("drain", ["gpu1"], inputs={"reason": "test"}, commands=["scontrol ..."], output="", outcome="ok")
        sweep = store.start_sweep("quick", "inv.toml", "gpu1")
        store.finish_sweep(sweep, "done", {})
        files = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm")]
        assert all(f.exists() for f in files)
        assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}
        assert _mode(path.parent) == 0o700
    finally:
        store.close()
    path.chmod(0o644)  # e.g. copied from elsewhere: tightened again on the next open
    Store(path).close()
    assert _mode(path) == 0o600


ACTIONS = [
    ["drain", "sim001", "--reason", "test"],
    ["resume", "sim001"],
    ["undrain", "sim001"],
    ["cordon", "sim001", "--reason", "test"],
    ["uncordon", "sim001"],
]


@pytest.mark.root
@pytest.mark.parametrize("action", ACTIONS, ids=[a[0] for a in ACTIONS])
def test_read_only_refuses_every_action(recorded: SimOnSshd, tmp_path: Path, action: list[str]) -> None:
    inventory = tmp_path / "inventory.toml"
    inventory.write_text(recorded.inventory_path.read_text().replace('controller = ""', 'controller = "sim001"'))
    done = console(*action, "-i", inventory, "--read-only", "--yes", "--store", tmp_path / "h.sqlite")
    assert done.returncode == 1, done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert b"read-only" in (done.stdout + done.stderr).lower()
    assert all(_recording(recorded).commands(n) == [] for n in recorded.fleet.nodes), "read-only ran a command"
