"""The node grid's columns and how one ``NodeRow`` becomes its cells."""

from __future__ import annotations

from console.model.family import Family
from console.model.findings import Status
from console.ui.state import FAMILIES, WAITING_SHOWN_AFTER_S, Holdup, NodeRow
from console.ui.text import STATUS_GLYPH, STATUS_STYLE, clock, duration, status_label
from console.ui.widgets.row_grid import Cell, Column

# Each family's short title, from ``Family``: a new family brings its column with it.
FAMILY_TITLES: dict[str, str] = {family.value: family.column or family.value for family in Family.columns()}

COLUMNS: tuple[Column, ...] = (
    Column("mark", "", 1),
    Column("node", "NODE", 16),
    Column("pool", "POOL", 11, drop=4),
    Column("model", "MODEL", 6, drop=2),
    Column("sched", "SCHED", 8),
    Column("verdict", "VERDICT", 9),
    # On a narrow screen the per-family columns go first (the verdict and the reason say the same in
    # short), then the model, probe counts and pool: the reason stays on screen at 80 columns.
    *(Column(family, title, 3, "center", drop=1) for family, title in FAMILY_TITLES.items()),
    Column("drift", "Δ", 1),
    Column("updated", "UPDATED", 8),
    Column("probes", "PROBES", 6, "right", drop=3),
    Column("reason", "REASON", 0),
)


def waiting_text(holdup: Holdup, now: float) -> str:
    """``waiting, 0:24 left: amdsmi.list, ...``; once the deadline has passed, that the probes are being stopped."""
    probes = ", ".join(holdup.probes)
    left = holdup.left_s(now)
    if left >= 0:
        return f"waiting, {duration(left)} left: {probes}"
    return f"timed out {duration(-left)} ago, being stopped: {probes}"


def row_cells(
    row: NodeRow, marked: bool, now: float | None = None, waiting_after_s: float = WAITING_SHOWN_AFTER_S
) -> list[Cell]:
    """Cells of ``row`` in ``COLUMNS`` order; with ``now``, a node stuck on its probes says on what and until when."""
    status = row.status
    if row.running and status is None:
        verdict: Cell = ("… run", "$muted")
    else:
        verdict = (status_label(status), STATUS_STYLE[status])
    sched_style = "bold $drained" if row.out_of_service else "$muted"
    expected = row.probes_expected
    probes = f"{row.probes_done}/{expected}" if expected else ""
    if now is not None and (holdup := row.holdup(now, waiting_after_s)) is not None:
        reason, reason_style = waiting_text(holdup, now), "bold $health-warn"
    else:
        reason = row.verdict.reason if row.verdict is not None else ("probing…" if row.running else "")
        reason_style = STATUS_STYLE[status] if status in (Status.FAIL, Status.UNKNOWN, Status.WARN) else "$muted"
        if row.followed is not None:  # another process stored this verdict: the row says which sweep
            reason = f"{row.followed.where()} · {reason}" if reason else row.followed.where()
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
