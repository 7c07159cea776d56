"""The live console (Textual). The only package that imports Textual; the engine runs in its own thread."""

from __future__ import annotations

from pathlib import Path

from console.checks import CheckPack
from console.inventory.model import Inventory
from console.store import Store
from console.sweep.engine import SweepEngine
from console.transport import Transport
from console.ui.app import ConsoleApp
from console.ui.bridge import EngineFactory


def engine_factory_for(inventory: Inventory, packs: dict[str, CheckPack], transport: Transport) -> EngineFactory:
    """Build the engine on its own thread, with that thread's connection to the history database."""

    def build(store: Store | None) -> SweepEngine:
        return SweepEngine(inventory, transport, packs, store)

    return build


def run_tui(
    inventory: Inventory,
    packs: dict[str, CheckPack],
    store: Store | None,
    transport: Transport | None = None,
    *,
    engine_factory: EngineFactory | None = None,
    level: str = "quick",
    read_only: bool = False,
    theme: str = "dark",
    start_sweep: bool = True,
    export_dir: Path | None = None,
) -> int:
    """Open the console on ``inventory`` and block until the operator quits; returns the exit code.

    The engine comes from ``engine_factory`` when given (it receives the engine thread's store
    connection), else it is built over ``transport``. ``store`` is used by the UI thread only.
    """
    if engine_factory is None:
        if transport is None:
            raise ValueError("run_tui needs a transport or an engine factory")
        engine_factory = engine_factory_for(inventory, packs, transport)
    app = ConsoleApp(
        inventory,
        packs,
        store=store,
        engine_factory=engine_factory,
        level=level,
        read_only=read_only,
        theme=theme,
        start_sweep=start_sweep,
        export_dir=export_dir,
    )
    try:
        code = app.run()
    finally:
        app.stop_engine()
    return int(code or 0)


__all__ = ["ConsoleApp", "EngineFactory", "engine_factory_for", "run_tui"]
