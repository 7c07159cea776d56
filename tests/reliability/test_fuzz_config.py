"""Fuzzing the files operators write: any cluster file or check pack loads, or fails with its documented error.

The inventory loaders may raise only ``InventoryError`` and the check loader only ``CheckConfigError``,
each one line naming the file; nothing else (no RecursionError, no pydantic ValidationError, no hang
on an absurd hostlist). CI runs CONFIG_FUZZ_SETTINGS' count per test; ``bench/fuzz_long.py`` runs 10,000.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console.checks import CheckConfigError, builtin_checks_dir, load_pack_file, load_packs
from console.inventory import Inventory, InventoryError, expand, from_sinfo, load_inventory
from console.inventory.hostlist import MAX_NODES, HostlistError
from tests.probes.fuzz import mangled_outputs
from tests.reliability.config_strategies import (
    CONFIG_FUZZ_SETTINGS,
    check_pack_documents,
    hostlists,
    inventory_documents,
    toml_text,
)

SAMPLES = Path(__file__).parent / "fixtures"
INVENTORY_SAMPLES = [SAMPLES / name for name in ("cluster.toml", "hostfile", "cluster.json")]
SINFO_SAMPLES = [SAMPLES / "sinfo-nodes.txt", SAMPLES / "sinfo-table.txt"]
CHECK_SAMPLES = sorted(builtin_checks_dir().glob("*.toml"))
SLOW_S = 12.0  # CPU seconds per file: a full 100,000-node file loads in about 8 s; more means a blow-up


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One directory per module; each example overwrites its file (hypothesis forbids per-example fixtures)."""
    yield tmp_path_factory.mktemp("fuzz-config")


def _load_inventory(path: Path) -> Inventory | None:
    started = time.process_time()
    try:
        inventory = load_inventory(path)
    except InventoryError as exc:
        message = str(exc)
        assert message and "\n" not in message.strip(), message
        assert str(path) in message, message
        inventory = None
    assert time.process_time() - started < SLOW_S, f"{path.name} took {time.process_time() - started:.1f} s"
    if inventory is not None:
        assert len(inventory.nodes) <= MAX_NODES
        assert len({n.name for n in inventory.nodes}) == len(inventory.nodes)
    return inventory


def _load_packs(directory: Path) -> None:
    started = time.process_time()
    try:
        packs = load_packs([directory])
    except CheckConfigError as exc:
        assert str(exc) and "\n" not in str(exc).strip(), str(exc)
    else:
        assert all(pack.checks for pack in packs.values())
    assert time.process_time() - started < SLOW_S


@CONFIG_FUZZ_SETTINGS
@given(data=mangled_outputs(INVENTORY_SAMPLES), suffix=st.sampled_from([".toml", ".json", ".txt", ""]))
def test_mangled_cluster_files_load_or_raise_inventory_error(scratch: Path, data: bytes, suffix: str) -> None:
    path = scratch / f"cluster{suffix}"
    path.write_bytes(data)
    _load_inventory(path)


@CONFIG_FUZZ_SETTINGS
@given(document=inventory_documents())
def test_random_cluster_documents_load_or_raise_inventory_error(scratch: Path, document: dict[str, Any]) -> None:
    path = scratch / "random.toml"
    path.write_text(toml_text(document), encoding="utf-8")
    _load_inventory(path)


@CONFIG_FUZZ_SETTINGS
@given(document=st.one_of(inventory_documents(), st.dictionaries(st.text(max_size=8), hostlists(), max_size=3)))
def test_random_cvs_cluster_json_loads_or_raises_inventory_error(scratch: Path, document: dict[str, Any]) -> None:
    shaped = {"username": "svc", "node_dict": document} if "node_dict" not in document else document
    path = scratch / "cluster.json"
    path.write_text(json.dumps(shaped), encoding="utf-8")
    _load_inventory(path)


@CONFIG_FUZZ_SETTINGS
@given(lines=st.lists(st.one_of(hostlists(), st.text(max_size=30)), max_size=6))
def test_random_hostfiles_load_or_raise_inventory_error(scratch: Path, lines: list[str]) -> None:
    path = scratch / "hosts"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    _load_inventory(path)


@CONFIG_FUZZ_SETTINGS
@given(
    data=st.one_of(
        mangled_outputs(SINFO_SAMPLES).map(lambda b: b.decode("utf-8", "replace")),
        st.lists(st.tuples(hostlists(), st.text(max_size=8)).map(" ".join), max_size=5).map("\n".join),
    )
)
def test_sinfo_text_loads_or_raises_inventory_error(data: str) -> None:
    started = time.process_time()
    try:
        inventory = from_sinfo(data)
    except InventoryError as exc:
        assert str(exc)
    else:
        assert 0 < len(inventory.nodes) <= MAX_NODES
    assert time.process_time() - started < SLOW_S


@CONFIG_FUZZ_SETTINGS
@given(expression=hostlists())
def test_hostlists_expand_or_raise_hostlist_error(expression: str) -> None:
    started = time.process_time()
    try:
        names = expand(expression)
    except HostlistError:
        pass
    else:
        assert len(names) <= MAX_NODES
    assert time.process_time() - started < SLOW_S


@CONFIG_FUZZ_SETTINGS
@given(data=mangled_outputs(CHECK_SAMPLES))
def test_mangled_check_packs_load_or_raise_check_config_error(scratch: Path, data: bytes) -> None:
    directory = scratch / "mangled-checks"
    directory.mkdir(exist_ok=True)
    (directory / "mine.toml").write_bytes(data)
    _load_packs(directory)


@CONFIG_FUZZ_SETTINGS
@given(document=check_pack_documents())
def test_random_check_packs_load_or_raise_check_config_error(scratch: Path, document: dict[str, Any]) -> None:
    directory = scratch / "random-checks"
    directory.mkdir(exist_ok=True)
    path = directory / "mine.toml"
    path.write_text(toml_text(document), encoding="utf-8")
    _load_packs(directory)
    try:
        load_pack_file(path)
    except CheckConfigError as exc:
        assert str(path) in str(exc)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.json", "[" * 100_000),
        ("deep-node-dict.json", '{"node_dict": ' + "[" * 5000 + "]" * 5000 + "}"),
        ("empty-host.json", '{"node_dict": {"": {}}}'),
        ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000),
        ("huge.toml", '[[pools]]\nname = "p"\ngpu_model = "mi300x"\nnodes = "g[0-99999999]"\n'),
        ("huge-product.toml", '[[pools]]\nname = "p"\ngpu_model = "mi300x"\nnodes = "a[0-999]b[0-999]c[0-999]"\n'),
        ("huge-hostfile", "g[1-99999999] slots=8\n"),
        ("long-number.toml", '[[pools]]\nname = "p"\ngpu_model = "mi300x"\nnodes = "g[1-' + "9" * 5000 + ']"\n'),
    ],
)
def test_hostile_cluster_files_are_refused_quickly(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InventoryError):
        _load_inventory(path)
        raise InventoryError("loaded")  # must not load: every one of these is unusable


@pytest.mark.parametrize("text", ["a = " + "[" * 100_000 + "]" * 100_000, "[pack]\nmodel = " + "{x=" * 5000])
def test_hostile_check_packs_are_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "bad.toml").write_text(text)
    with pytest.raises(CheckConfigError, match=r"bad\.toml"):
        load_packs([tmp_path])


@pytest.mark.parametrize("expression", ["[1-[1--[0-0]", "[1---[0-0] 0"])
def test_hostlists_clustershell_chokes_on_are_refused(expression: str) -> None:
    """Found by the long mode: ClusterShell raises ValueError, not NodeSetException, for these."""
    with pytest.raises(HostlistError):
        expand(expression)
