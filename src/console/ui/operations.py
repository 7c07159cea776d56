"""What the console's own actions do, apart from drawing: reports and hostlists. No Textual here.

Catalogued actions (through ``console.actions``, accepting a baseline too) run on the engine side:
``console.service.commands``; what the screens read of the history database is ``console.ui.queries``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

from console.exitcodes import exit_code_for
from console.inventory.hostlist import fold
from console.inventory.model import Inventory
from console.model.multinode import MultinodeResult
from console.report import build_report, write_json
from console.ui.state import NodeRow, SweepProgress


def hostlist(names: Iterable[str]) -> str:
    """The shortest Slurm hostlist of ``names``."""
    return fold(names)


def export_report(
    inventory: Inventory,
    rows: list[NodeRow],
    progress: SweepProgress,
    directory: Path,
    multinode: MultinodeResult | None = None,
) -> Path:
    """Write the JSON report of what the console shows now; returns the file written.

    Like the headless report it lists the findings that are not PASS, which the rows keep, and the
    last multi-node phase's runs, named nodes and racks, and straggler ranking.
    """
    verdicts = {r.name: r.verdict for r in rows if r.verdict is not None}
    stacks = {r.name: r.view.stack for r in rows if r.view is not None}
    started = progress.started_at or time.time()
    finished = progress.finished_at or time.time()
    outcome = progress.outcome if progress.outcome in ("done", "cancelled", "deadline") else "cancelled"
    report = build_report(
        inventory,
        verdicts,
        stacks,
        sweep_id=progress.sweep_id,
        level=progress.level or "none",
        started_at=started,
        duration_s=max(0.0, finished - started),
        outcome=outcome,  # type: ignore[arg-type]
        exit_code=int(exit_code_for(v.status for v in verdicts.values())),
        multinode=multinode,
    )
    directory.mkdir(parents=True, exist_ok=True)
    # A predictable name in a directory others may write: console.files refuses a link planted at it.
    path = directory / f"instinct-console-sweep{progress.sweep_id}.json"
    write_json(report, str(path))
    return path
