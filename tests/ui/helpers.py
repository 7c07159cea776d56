"""Small helpers shared by the UI tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from console.checks import load_packs
from console.inventory.model import Inventory
from console.service.assembly import EngineSpec
from console.store import Store
from console.sweep.events import Event
from console.ui.app import ConsoleApp
from console.ui.screens.acceptance import AcceptanceScreen
from console.ui.screens.main import MainScreen


async def feed(pilot: Pilot[int], events: list[Event]) -> None:
    """Ingest ``events`` and wait until the console has repainted them."""
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    for event in events:
        app.ingest(event)
    await pilot.pause()
    app.flush()
    await pilot.pause()


def main_screen(pilot: Pilot[int]) -> MainScreen:
    """The console's main screen."""
    app = pilot.app
    assert isinstance(app, ConsoleApp)
    return app.main_screen


def cell_text(pilot: Pilot[int], node: str, column: str) -> str:
    """Plain text of one grid cell."""
    return main_screen(pilot).grid.cell(node, column)[0]


async def type_text(pilot: Pilot[int], text: str) -> None:
    """Press each character of ``text``."""
    await pilot.press(*[c if c != " " else "space" for c in text])


async def wait_until(pilot: Pilot[int], check: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Let the app run until ``check`` holds (a worker answered, a timer fired); fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


def acceptance_shown(app: ConsoleApp) -> bool:
    """The acceptance view is on top and built (its details pane sits two containers deep, mounted later)."""
    screen = app.screen
    return isinstance(screen, AcceptanceScreen) and screen.ready


def local_console(inventory: Inventory, store: Store, export_dir: Path, **options: Any) -> ConsoleApp:
    """A console whose engine runs on a thread of the test and reaches 'nodes' on this host (the Slurm lab,
    recorded Kubernetes exchanges), without a sweep at start; ``options`` override the rest."""
    packs = load_packs()
    settings: dict[str, Any] = {
        "store": store,
        "engine_spec": EngineSpec(inventory, packs, store.path, local=True),
        "engine_in_thread": True,
        "start_sweep": False,
        "export_dir": export_dir,
        "refresh_interval_s": 0.0,
        **options,
    }
    return ConsoleApp(inventory, packs, **settings)
