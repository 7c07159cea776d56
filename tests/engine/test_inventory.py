"""Inventory: TOML cluster files, hostlists, importers, selection, and errors that name file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.inventory import (
    InventoryError,
    fold,
    from_cvs_cluster_json,
    from_hostfile,
    from_mapping,
    from_sinfo,
    load_inventory,
    select_exactly,
    select_nodes,
    selection_problem,
)

CLUSTER = """
name = "lab"
[ssh]
user = "ops"
port = 2222
identity_file = "~/.ssh/id_ed25519"
[slurm]
controller = "head1"
[[pools]]
name = "mi300x-a"
gpu_model = "mi300x"
nodes = "gpu[001-004]"
labels = { rack = "r01" }
[pools.pin]
rocm = "6.4.1"
firmware = { PSP_SOSDRV = "00.36.02.59" }
[[pools]]
name = "mi355x"
gpu_model = "MI355X"
nodes = "big[01-02]"
labels = { rack = "r02" }
[hosts.gpu002]
address = "10.1.0.2"
port = 22
"""


@pytest.fixture
def cluster_file(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.toml"
    path.write_text(CLUSTER)
    return path


def test_toml_expands_pools_into_nodes(cluster_file: Path) -> None:
    inv = load_inventory(cluster_file)
    assert [n.name for n in inv.nodes] == ["gpu001", "gpu002", "gpu003", "gpu004", "big01", "big02"]
    gpu2 = inv.node("gpu002")
    assert (gpu2.address, gpu2.port, gpu2.user, gpu2.gpu_model) == ("10.1.0.2", 22, "ops", "MI300X")
    assert inv.node("gpu001").port == 2222
    assert inv.node("big01").labels == {"rack": "r02", "pool": "mi355x", "model": "MI355X"}
    assert inv.pool_of("gpu003").pin.pinned_fields() == {"rocm": "6.4.1", "firmware.PSP_SOSDRV": "00.36.02.59"}
    assert inv.slurm.controller == "head1"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (CLUSTER.replace('gpu_model = "mi300x"', 'gpu_model = "MI999"'), "field pools[0].gpu_model"),
        (CLUSTER.replace('nodes = "gpu[001-004]"', 'nodes = "gpu[001-"'), "field pools[0].nodes"),
        (CLUSTER.replace("port = 2222", "port = 99999"), "field ssh.port"),
        (CLUSTER.replace('nodes = "big[01-02]"', 'nodes = "gpu004"'), "already in pool"),
        (CLUSTER + "\n[hosts.ghost]\naddress = '1.2.3.4'\n", "field hosts.ghost"),
        (CLUSTER.replace("[slurm]", "[slurm]\nbogus = 1"), "field slurm.bogus"),
        ("name = [", "not valid TOML"),
    ],
)
def test_bad_file_names_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_missing_file_is_an_inventory_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="cannot read"):
        load_inventory(tmp_path / "nope.toml")


def test_hostfile_with_slots_and_ranges() -> None:
    inv = from_hostfile("# head\nnode[1-3] slots=8\n\nnode9 slots=8  # spare\n", "hosts")
    assert [n.name for n in inv.nodes] == ["node1", "node2", "node3", "node9"]


def test_sinfo_node_partition_lines_make_pools() -> None:
    text = "gpu001 mi300x*\ngpu002 mi300x*\ngpu002 debug\nbig01 mi355x\n"
    inv = from_sinfo(text)
    assert sorted(inv.pools) == ["mi300x", "mi355x"]
    assert [n.name for n in inv.nodes if n.pool == "mi300x"] == ["gpu001", "gpu002"]


def test_sinfo_default_table() -> None:
    text = (
        "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
        "gpu*         up   infinite     14   idle gpu[001-014]\n"
        "gpu*         up   infinite      2  drain gpu[015-016]\n"
    )
    inv = from_sinfo(text)
    assert len(inv.nodes) == 16 and inv.nodes[-1].name == "gpu016"


def test_cvs_cluster_json() -> None:
    text = (
        '{"username": "svc", "priv_key_file": "/k/id", "head_node_dict": {"mgmt_ip": "10.0.0.1"},'
        ' "node_dict": {"10.0.0.10": {"bmc_ip": "NA", "vpc_ip": "10.0.0.10"}, "n2": {"vpc_ip": "10.0.0.11"}}}'
    )
    inv = from_cvs_cluster_json(text)
    assert [n.name for n in inv.nodes] == ["10.0.0.10", "n2"]
    assert inv.node("n2").address == "10.0.0.11"
    assert inv.ssh.user == "svc" and inv.ssh.identity_file == "/k/id"
    with pytest.raises(InventoryError, match="node_dict"):
        from_cvs_cluster_json('{"username": "x"}')


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (None, 6),
        ("gpu[001-002]", 2),
        ("pool=mi355x", 2),
        ("rack=r01", 4),
        ("!rack=r01", 2),
        ("rack=r01 !gpu003", 3),
        ("big", 2),
        ("model=MI300X !gpu[001-003]", 1),
        # A union, as clush's -w: spaces and commas add nodes; & joins terms that must all hold.
        ("gpu001 gpu004", 2),
        ("gpu001,gpu004", 2),
        ("gpu[001-002],pool=mi355x", 4),
        ("pool=mi355x rack=r01", 6),
        ("pool=mi355x&rack=r02", 2),
        ("pool=mi355x&rack=r01", 0),
        ("rack=r01&!gpu003", 3),
        ("gpu[001-002] !gpu001", 1),
    ],
)
def test_select_grammar(cluster_file: Path, expr: str | None, expected: int) -> None:
    assert len(select_nodes(load_inventory(cluster_file), expr)) == expected


@pytest.mark.parametrize(
    ("expr", "problem"),
    [
        (None, None),
        ("gpu[001-002] rack=r01", None),
        ("big !gpu[900-901]", None),  # substrings and inverted terms select what they match
        ("gpu001,gpu0O2", "not in the inventory: gpu0O2"),
        ("gpu001 gpu0O2", "not in the inventory: gpu0O2"),  # each term of the union must select a node
        ("gpu[001-002]&rack=r01,big", None),
        ("gpu[003-005]", "not in the inventory: gpu005"),
        ("gpu[001-004", "malformed hostlist 'gpu[001-004'"),
    ],
)
def test_a_command_line_selection_must_name_real_nodes(
    cluster_file: Path, expr: str | None, problem: str | None
) -> None:
    found = selection_problem(load_inventory(cluster_file), expr)
    assert found == problem if problem is None else (found or "").startswith(problem)


def test_sweep_refuses_a_misspelt_node_instead_of_sweeping_fewer(
    cluster_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from console.cli import main
    from console.exitcodes import ExitCode

    argv = ["sweep", "-i", str(cluster_file), "--nodes", "gpu001,gpu0O2", "--store", str(cluster_file.parent / "h.db")]
    assert main(argv) == ExitCode.USAGE
    assert "not in the inventory: gpu0O2" in capsys.readouterr().err


def test_fold_is_a_slurm_hostlist() -> None:
    assert fold(["gpu001", "gpu002", "gpu004", "login"]) == "gpu[001-002,004],login"
    assert fold([]) == ""


def test_a_whole_node_name_selects_that_node_alone() -> None:
    """``--nodes gpu1`` in a prolog swept gpu1 and gpu10-gpu12 too (a substring of their names)."""
    inventory = from_mapping({"pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu[1-12]"}]})
    assert [n.name for n in select_exactly(inventory, "gpu1")] == ["gpu1"]
    assert [n.name for n in select_exactly(inventory, "pool=p !gpu1")] == [f"gpu{i}" for i in range(2, 13)]
    assert [n.name for n in select_exactly(inventory, "gpu1 gpu1")] == ["gpu1"]
    # A term that is no node's name stays a substring.
    assert [n.name for n in select_exactly(inventory, "pu1")] == ["gpu1", "gpu10", "gpu11", "gpu12"]


def test_the_kill_grace_is_set_in_the_cluster_files_ssh_table() -> None:
    """docs/verdicts.md named [ssh] kill_grace_s, which the loader refused."""
    from console.transport.connect import transport_for

    inventory = from_mapping(
        {"ssh": {"kill_grace_s": 2.5}, "pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "n1"}]}
    )
    assert inventory.ssh.kill_grace_s == 2.5
    assert transport_for(inventory)._settings.kill_grace_s == 2.5  # type: ignore[attr-defined]


def test_an_engine_without_a_store_judges_drift_against_the_inventorys_pins() -> None:
    """No history database (a prolog, `check-local`, a test): the cluster file's pins still hold. Once,
    the engine read its pins through the store alone, and a rocm or driver drift read PASS without one."""
    from console.checks import load_packs
    from console.sweep.engine import SweepEngine
    from console.transport.connect import transport_for

    inventory = from_mapping(
        {"pools": [{"name": "p", "gpu_model": "MI300X", "nodes": "gpu[1-2]", "pin": {"rocm": "6.4.1"}}]}
    )
    engine = SweepEngine(inventory, transport_for(inventory), load_packs())
    assert engine.pins["p"].pinned_fields() == {"rocm": "6.4.1"}
