"""The node grid's columns and how one ``NodeRow`` becomes its cells."""

from __future__ import annotations

from console.model.findings import Status
from console.ui.state import FAMILIES, NodeRow
from console.ui.text import STATUS_GLYPH, STATUS_STYLE, clock, status_label
from console.ui.widgets.row_grid import Cell, Column

FAMILY_TITLES = {
    "inventory": "inv",
    "memory": "mem",
    "pcie": "pci",
    "ecc": "ecc",
    "ras": "ras",
    "thermal": "thm",
    "power": "pwr",
    "xgmi": "xgm",
    "nic": "nic",
    "stack": "stk",
    "firmware": "fw",
    "rccl": "rcl",
    "transferbench": "tb",
    "rvs": "rvs",
}

COLUMNS: tuple[Column, ...] = (
    Column("mark", "", 1),
    Column("node", "NODE", 16),
    Column("pool", "POOL", 11),
    Column("model", "MODEL", 6),
    Column("sched", "SCHED", 8),
    Column("verdict", "VERDICT", 9),
    *(Column(family, FAMILY_TITLES[family], 3, "center") for family in FAMILIES),
    Column("drift", "Δ", 1),
    Column("updated", "UPDATED", 8),
    Column("probes", "PROBES", 6, "right"),
    Column("reason", "REASON", 0),
)


def row_cells(row: NodeRow, marked: bool) -> list[Cell]:
    """Cells of ``row`` in ``COLUMNS`` order."""
    status = row.status
    if row.running and status is None:
        verdict: Cell = ("… run", "$muted")
    else:
        verdict = (status_label(status), STATUS_STYLE[status])
    sched_style = "bold $drained" if row.out_of_service else "$muted"
    expected = row.probes_expected
    probes = f"{row.probes_done}/{expected}" if expected else ""
    reason = row.verdict.reason if row.verdict is not None else ("probing…" if row.running else "")
    reason_style = STATUS_STYLE[status] if status in (Status.FAIL, Status.UNKNOWN, Status.WARN) else "$muted"
    return [
        ("◆", "bold $marked") if marked else (" ", ""),
        (row.name, "bold" if row.problem else ""),
        (row.node.pool, ""),
        (row.node.gpu_model, "$muted"),
        (row.scheduler_word, sched_style),
        verdict,
        *((STATUS_GLYPH[row.family(f)], STATUS_STYLE[row.family(f)]) for f in FAMILIES),
        ("Δ", "bold $drift") if row.drift else (" ", ""),
        (clock(row.updated_at), "$muted"),
        (probes, "$muted" if not row.running else ""),
        (reason.replace("\n", " "), reason_style),
    ]
