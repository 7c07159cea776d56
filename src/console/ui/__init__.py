"""The live console (Textual). The only package that imports Textual; the engine runs in its own process."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# Textual paints a changed screen on its next update tick, 60 a second by default: a key then waits up
# to 16.7 ms for its frame on top of its own work. At 120 the wait halves; measured with bench/ui.py on
# 1,024 nodes: cursor keys p50 4.9 -> 3.2 ms, the slowest screen switch 56 -> 41 ms. Only changed
# screens are sent, so an idle console sends no more. Read once, when Textual is first imported.
os.environ.setdefault("TEXTUAL_FPS", "120")

from console.service.assembly import EngineSpec
from console.store import Store
from console.ui.app import ConsoleApp


def run_tui(
    spec: EngineSpec,
    store: Store | None,
    *,
    engine_in_thread: bool = False,
    level: str = "quick",
    theme: str = "dark",
    start_sweep: bool = True,
    export_dir: Path | None = None,
    pairing: str = "reference",
    pairing_seed: int = 0,
    baseline_partners: bool = True,
    keymap: Mapping[str, str] | None = None,
) -> int:
    """Open the console on ``spec``'s inventory and block until the operator quits; returns the exit code.

    The engine ``spec`` describes runs in a process of its own, or with ``engine_in_thread`` on a thread
    of this one (debugging). ``store`` is the UI's own connection to the history database. The console
    never reaches nodes itself: the engine does. ``keymap``: the operator's keys by binding id
    (``console.ui.keymap``).
    """
    app = ConsoleApp(
        spec.inventory,
        spec.packs,
        store=store,
        engine_spec=spec,
        engine_in_thread=engine_in_thread,
        level=level,
        read_only=spec.read_only,
        theme=theme,
        start_sweep=start_sweep,
        export_dir=export_dir,
        pairing=pairing,
        pairing_seed=pairing_seed,
        baseline_partners=baseline_partners,
    )
    if keymap:
        app.use_keymap(keymap)
    try:
        code = app.run()
    finally:
        app.link.stop()
    return int(app.return_code or code or 0)  # a signal's exit code (129, 130) is the app's return code


__all__ = ["ConsoleApp", "run_tui"]
