"""Fixtures for the console UI tests: a deterministic judged fleet with its raw outputs in a store."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.checks import CheckPack, load_packs
from console.store import Store
from console.ui.app import ConsoleApp
from tests.ui.synthetic import SyntheticFleet, synthetic_fleet

FIXED_NOW = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC: every "updated" column reads 00:00:00


@pytest.fixture(scope="session")
def packs() -> dict[str, CheckPack]:
    """The built-in check packs."""
    return load_packs()


@pytest.fixture(scope="session")
def fleet_store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the synthetic fleet keeps its raw outputs."""
    return tmp_path_factory.mktemp("fleet") / "history.sqlite"


@pytest.fixture(scope="session")
def fleet(fleet_store_path: Path) -> SyntheticFleet:
    """16 nodes in two pools (MI300X, MI355X) with the demo faults, judged at the standard level."""
    store = Store(fleet_store_path)
    try:
        return synthetic_fleet(16, "mi300x,mi355x", 2, store=store)
    finally:
        store.close()


@pytest.fixture
def utc() -> Iterator[None]:
    """Local time is UTC while the test runs (clock columns in snapshots)."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.fixture
def store(fleet: SyntheticFleet, fleet_store_path: Path) -> Iterator[Store]:
    """A UI-thread connection to the fleet's history."""
    opened = Store(fleet_store_path)
    yield opened
    opened.close()


@pytest.fixture
def make_app(fleet: SyntheticFleet, packs: dict[str, CheckPack], store: Store, tmp_path: Path) -> Iterator[object]:
    """Build a console over the fleet without an engine (events are fed with ``app.ingest``)."""

    def build(**options: object) -> ConsoleApp:
        settings: dict[str, object] = {
            "store": store,
            "clock": lambda: FIXED_NOW,
            "export_dir": tmp_path,
            "refresh_interval_s": 0.0,
        }
        settings.update(options)
        return ConsoleApp(fleet.inventory, packs, **settings)  # type: ignore[arg-type]

    yield build
