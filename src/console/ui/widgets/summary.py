"""The two summary lines above the grid: sweep progress with ETA, then counts per verdict and view state."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from console.model.findings import Status
from console.ui.state import SweepProgress
from console.ui.text import SEVERITY_ORDER, STATUS_GLYPH, STATUS_STYLE, duration, safe
from console.ui.view import ViewSpec

BAR_WIDTH = 24


@dataclass(frozen=True)
class SummaryFacts:
    """Everything the summary shows, gathered by the main screen."""

    cluster: str
    progress: SweepProgress
    counts: dict[Status | None, int]
    nodes: int
    shown: int
    marked: int
    spec: ViewSpec
    paused: bool
    read_only: bool
    now: float


def progress_bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """``█████░░░░`` for ``done`` of ``total``."""
    if total <= 0:
        return "░" * width
    filled = round(width * min(done, total) / total)
    return "█" * filled + "░" * (width - filled)


def summary_content(facts: SummaryFacts) -> Content:
    """Both lines as styled content (untrusted text is passed as plain text, never as markup)."""
    progress = facts.progress
    parts: list[str | tuple[str, str]] = [(safe(facts.cluster), "bold"), "  "]
    if progress.sweep_id:
        kind = "rerun" if progress.rerun else "sweep"
        parts += [f"{kind} #{progress.sweep_id} {safe(progress.level)}  "]
        done, total = len(progress.done), len(progress.nodes)
        parts += [(progress_bar(done, total), "$accent"), f" {done}/{total} nodes  "]
        if progress.running:
            parts += [("ETA ", "$muted"), duration(progress.eta_s(facts.now))]
        else:
            end = progress.finished_at or facts.now
            took = duration(end - progress.started_at) if progress.started_at is not None else "--:--"
            parts += [(f"{progress.outcome or 'done'} in ", "$muted"), took]
    else:
        parts += [("no sweep yet (S starts one)", "$muted")]
    if facts.paused:
        parts += ["  ", (" PAUSED (p) ", "reverse bold $health-warn")]
    if facts.read_only:
        parts += ["  ", (" READ-ONLY ", "reverse bold $accent")]
    parts.append("\n")
    for status in SEVERITY_ORDER:
        count = facts.counts.get(status, 0)
        label = status.value if status is not None else "pending"
        parts += [(f"{STATUS_GLYPH[status]} {label} {count}", STATUS_STYLE[status] if count else "$muted"), "  "]
    parts += [("│ ", "$muted"), f"shown {facts.shown}/{facts.nodes}"]
    if facts.marked:
        parts += ["  ", (f"◆ marked {facts.marked}", "bold $marked")]
    spec = facts.spec
    parts += ["  ", ("sort ", "$muted"), spec.sort.value]
    if spec.problems_first:
        parts += [" + problems first"]
    if spec.text:
        parts += ["  ", ("filter ", "$muted"), (safe(spec.text), "bold")]
    return Content.assemble(*parts)


class SummaryBar(Static):
    """Sweep progress and counts; repainted without a layout pass (its size never changes)."""

    def show(self, facts: SummaryFacts) -> None:
        """Repaint with ``facts``."""
        self.update(summary_content(facts), layout=False)
