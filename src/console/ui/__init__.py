"""The live console (Textual). The only package that imports Textual; the engine runs in its own process."""

from __future__ import annotations

import os
from pathlib import Path

# Textual paints a changed screen on its next update tick, 60 a second by default: a key then waits up
# to 16.7 ms for its frame on top of its own work. At 120 the wait halves; measured with bench/ui.py on
# 1,024 nodes: cursor keys p50 4.9 -> 3.2 ms, the slowest screen switch 56 -> 41 ms. Only changed
# screens are sent, so an idle console sends no more. Read once, when Textual is first imported.
os.environ.setdefault("TEXTUAL_FPS", "120")

from console.checks import CheckPack
from console.inventory.model import Inventory
from console.service.wire import EngineSpec
from console.store import Store
from console.ui.app import ConsoleApp
from console.ui.bridge import EngineFactory


def run_tui(
    inventory: Inventory,
    packs: dict[str, CheckPack],
    store: Store | None,
    *,
    engine_factory: EngineFactory | None = None,
    engine_spec: EngineSpec | None = None,
    level: str = "quick",
    read_only: bool = False,
    theme: str = "dark",
    start_sweep: bool = True,
    export_dir: Path | None = None,
) -> int:
    """Open the console on ``inventory`` and block until the operator quits; returns the exit code.

    With ``engine_spec`` the engine runs in a process of its own (what the console script does).
    Otherwise it runs on a thread of this process: ``engine_factory``'s engine (it receives the engine
    thread's store connection; ``console.service.context.engine_factory_for`` builds one). ``store`` is
    the UI's own connection. The console never reaches nodes itself: the engine does.
    """
    if engine_spec is None and engine_factory is None:
        raise ValueError("run_tui needs an engine spec or an engine factory")
    app = ConsoleApp(
        inventory,
        packs,
        store=store,
        engine_factory=engine_factory,
        engine_spec=engine_spec,
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


__all__ = ["ConsoleApp", "EngineFactory", "run_tui"]
