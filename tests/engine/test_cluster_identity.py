"""One history database per cluster: two cluster files never read each other's pins, breaker, cases,
proposals, baselines or acceptance records (console.store.cluster).

The reproduction (issue 33): two cluster files with a pool of the same name shared the default
database, and a pin taken in one made a node of the other WARN.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from console.inventory import InventoryError, load_inventory
from console.store import Store, default_store_path
from console.store.cluster import cluster_store_path, legacy_store_path
from console.store.db import StoreError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "store-v7"
POOL = '[[pools]]\nname = "p"\ngpu_model = "MI300X"\nnodes = "{nodes}"\n'


def cluster_file(path: Path, nodes: str, header: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + POOL.format(nodes=nodes))
    return path


def console(*argv: str, state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    command = [sys.executable, "-m", "console", *argv]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_a_pin_taken_in_one_cluster_is_not_seen_by_another(tmp_path: Path) -> None:
    a = cluster_file(tmp_path / "a" / "cluster.toml", "a[1-2]")
    b = cluster_file(tmp_path / "b" / "cluster.toml", "b[1-2]")
    state = tmp_path / "state"
    assert console("pin", "-i", str(a), "--pool", "p", state=state).returncode == 0
    [a_db] = state.rglob("*.sqlite")  # the database cluster A's commands use by default
    store = Store(a_db)
    store.set_pin("p", {"rocm": "7.0.1"}, None, "alice")
    store.close()
    assert "7.0.1" in console("pin", "-i", str(a), "--pool", "p", state=state).stdout
    seen_by_b = console("pin", "-i", str(b), "--pool", "p", state=state)
    assert seen_by_b.returncode == 0, seen_by_b.stderr
    assert "7.0.1" not in seen_by_b.stdout
    assert len(list(state.rglob("*.sqlite"))) == 2


def test_a_command_pointed_at_another_clusters_database_is_refused(tmp_path: Path) -> None:
    a = cluster_file(tmp_path / "a.toml", "a[1-2]", '[cluster]\nname = "east"\n')
    b = cluster_file(tmp_path / "b.toml", "b[1-2]", '[cluster]\nname = "west"\n')
    shared = tmp_path / "shared.sqlite"
    state = tmp_path / "state"
    assert console("pin", "-i", str(a), "--pool", "p", "--store", str(shared), state=state).returncode == 0
    refused = console("pin", "-i", str(b), "--pool", "p", "--store", str(shared), state=state)
    assert refused.returncode == 2
    assert "the history database of cluster 'east', not of 'west'" in refused.stderr
    assert str(state / "instinct-console" / "clusters" / "west" / "history.sqlite") in refused.stderr


def test_the_cluster_name_and_its_stable_default(tmp_path: Path) -> None:
    named = load_inventory(cluster_file(tmp_path / "n.toml", "a1", '[cluster]\nname = "east"\n'))
    assert named.name == "east"
    assert load_inventory(cluster_file(tmp_path / "old.toml", "a1", 'name = "lab"\n')).name == "lab"
    with pytest.raises(InventoryError, match=r"cluster\.name"):
        load_inventory(cluster_file(tmp_path / "both.toml", "a1", 'name = "lab"\n[cluster]\nname = "east"\n'))
    one = cluster_file(tmp_path / "x" / "cluster.toml", "a1")
    two = cluster_file(tmp_path / "y" / "cluster.toml", "a1")
    assert load_inventory(one).name == load_inventory(one).name  # stable
    assert load_inventory(one).name.startswith("cluster-")
    assert load_inventory(one).name != load_inventory(two).name  # two unnamed files never share it


def version_7(path: Path, fixture: str) -> Path:
    """A database of schema version 7 as main bc32883 wrote it (tests/fixtures/store-v7)."""
    conn = sqlite3.connect(path)
    conn.executescript((FIXTURES / fixture).read_text())
    conn.close()
    return path


def test_a_version_7_database_is_upgraded_in_place_and_given_to_its_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # its sweeps recorded the cluster file as "cluster.toml"
    mine = load_inventory(cluster_file(tmp_path / "cluster.toml", "gpu[1-2]"))
    other = load_inventory(cluster_file(tmp_path / "other.toml", "gpu[1-2]"))
    db = version_7(tmp_path / "h.sqlite", "one-cluster.sql")
    with pytest.raises(StoreError, match="holds sweeps of other cluster files"):
        Store(db, other)  # not given to a cluster that did not write it...
    store = Store(db, mine)  # ...but to the one that did, with every row kept
    meta = dict(store.conn.execute("SELECT key, value FROM meta").fetchall())
    assert meta == {"schema_version": "9", "cluster": mine.name}
    assert store.pin("p") == {"rocm": "7.0.1"}
    assert store.baseline("p") == 1
    assert [p.node for p in store.proposals()] == ["gpu2"]
    assert store.conn.execute("SELECT count(*) FROM acceptances").fetchone()[0] == 1
    assert store.conn.execute("SELECT count(*) FROM node_verdicts").fetchone()[0] == 2
    store.close()
    with pytest.raises(StoreError, match=f"the history database of cluster '{mine.name}'"):
        Store(db, other)


def test_a_version_7_database_two_clusters_shared_is_given_to_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    one = load_inventory(cluster_file(tmp_path / "cluster.toml", "gpu[1-2]"))
    two = load_inventory(cluster_file(tmp_path / "other.toml", "gpu[1-2]"))
    db = version_7(tmp_path / "h.sqlite", "two-clusters.sql")
    for inventory in (one, two):
        with pytest.raises(StoreError, match=r"other cluster files \((cluster|other)\.toml\)"):
            Store(db, inventory)
    store = Store(db)  # still readable (history --store), and upgraded
    assert store.conn.execute("SELECT value FROM meta WHERE key = 'cluster'").fetchone() is None
    assert store.pin("p") == {"rocm": "7.0.1"}


def test_the_shared_default_database_of_an_older_console_stays_with_its_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    mine = load_inventory(cluster_file(tmp_path / "cluster.toml", "gpu[1-2]"))
    other = load_inventory(cluster_file(tmp_path / "other.toml", "gpu[1-2]"))
    legacy = legacy_store_path()
    legacy.parent.mkdir(parents=True)
    version_7(legacy, "one-cluster.sql")
    assert default_store_path(mine) == legacy  # its history stays where it is
    assert default_store_path(other) == cluster_store_path(other.name)
    store = Store(default_store_path(other), other)
    assert store.pin("p") == {}  # the other cluster's pin is not this one's
    store.close()
    assert sqlite3.connect(legacy).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("7",)


def test_sweeps_of_a_cluster_file_that_is_gone_do_not_hand_the_shared_default_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    mine = load_inventory(cluster_file(tmp_path / "cluster.toml", "gpu[1-2]"))  # other.toml is gone
    legacy = legacy_store_path()
    legacy.parent.mkdir(parents=True)
    version_7(legacy, "two-clusters.sql")
    assert default_store_path(mine) == cluster_store_path(mine.name)  # not taken without being asked...
    store = Store(legacy, mine)  # ...but given with --store, as the operator asked
    assert store.conn.execute("SELECT value FROM meta WHERE key = 'cluster'").fetchone()[0] == mine.name
    store.close()


def test_a_command_without_a_cluster_file_reads_the_one_database_or_asks_which(tmp_path: Path) -> None:
    state = tmp_path / "state"
    a = cluster_file(tmp_path / "a.toml", "a[1-2]", '[cluster]\nname = "east"\n')
    b = cluster_file(tmp_path / "b.toml", "b[1-2]", '[cluster]\nname = "west"\n')
    assert console("pin", "-i", str(a), "--pool", "p", state=state).returncode == 0
    assert console("history", state=state).returncode == 0  # east's, the only one
    assert console("pin", "-i", str(b), "--pool", "p", state=state).returncode == 0
    which = console("history", state=state)
    assert which.returncode == 2 and "several clusters (east, west)" in which.stderr and "--store" in which.stderr
    # diff, accept, acceptance and cases know their cluster: another's database is refused to them too.
    refused = console("diff", "-i", str(b), "--store", str(cluster_store_path_in(state, "east")), state=state)
    assert refused.returncode == 2 and "the history database of cluster 'east', not of 'west'" in refused.stderr


def cluster_store_path_in(state: Path, cluster: str) -> Path:
    return state / "instinct-console" / "clusters" / cluster / "history.sqlite"
