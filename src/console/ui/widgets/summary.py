"""The two summary lines above the grid: sweep progress with ETA, then counts per verdict and view state."""

from __future__ import annotations

from dataclasses import dataclass

from textual.content import Content
from textual.widgets import Static

from console.model.findings import Status
from console.ui.state import Holdup, SweepProgress
from console.ui.text import SEVERITY_ORDER, STATUS_GLYPH, STATUS_STYLE, age, duration, safe
from console.ui.view import ViewSpec

BAR_WIDTH = 24
HELD_NAMES_SHOWN = 3


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
    holdups: tuple[Holdup, ...] = ()
    give_up_key: str = ""
    filter_hint: str = ""  # why the filter may show nothing (a key no node has)


def progress_bar(done: int, total: int, width: int = BAR_WIDTH) -> str:
    """``█████░░░░`` for ``done`` of ``total``."""
    if total <= 0:
        return "░" * width
    filled = round(width * min(done, total) / total)
    return "█" * filled + "░" * (width - filled)


def sweep_pace(facts: SummaryFacts) -> list[str | tuple[str, str]]:
    """The ETA at the pace so far, and the nodes stuck on their probes with the most they may still hold.

    When every node not done yet is stuck, the pace says nothing (``31/32 ETA 0:00`` for half a minute):
    the stuck nodes and their countdown take its place.
    """
    progress, holdups = facts.progress, facts.holdups
    parts: list[str | tuple[str, str]] = []
    pending = set(progress.nodes) - progress.done
    held = {h.node for h in holdups}
    if holdups and pending and pending <= held:
        parts += [("held by ", "$muted")]
    else:
        parts += [("ETA ", "$muted"), duration(progress.eta_s(facts.now))]
        if not holdups:
            return parts
        parts += ["  ", ("waiting on ", "$muted")]
    names = ", ".join(safe(h.node) for h in holdups[:HELD_NAMES_SHOWN])
    if len(holdups) > HELD_NAMES_SHOWN:
        names += f" +{len(holdups) - HELD_NAMES_SHOWN}"
    longest = max(h.left_s(facts.now) for h in holdups)
    parts += [(names, "bold $health-warn"), f": {duration(max(0.0, longest))} left at most"]
    if facts.give_up_key:
        parts += [(f" ({facts.give_up_key} gives up on a node)", "$muted")]
    return parts


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
            parts += sweep_pace(facts)
        else:
            end = progress.finished_at or facts.now
            took = duration(end - progress.started_at) if progress.started_at is not None else "--:--"
            parts += [(f"{progress.outcome or 'done'} in ", "$muted"), took]
            if progress.from_history and progress.finished_at is not None:
                ago = age(facts.now - progress.finished_at)
                parts += [
                    ("  from history, ", "$muted"),
                    (f"{ago} old", "bold $health-warn"),
                    (" (S sweeps now)", "$muted"),
                ]
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
        if facts.filter_hint:
            parts += ["  ", (safe(facts.filter_hint), "bold $health-warn")]
    return Content.assemble(*parts)


class SummaryBar(Static):
    """Sweep progress and counts; repainted without a layout pass (its size never changes)."""

    def show(self, facts: SummaryFacts) -> None:
        """Repaint with ``facts``."""
        self.update(summary_content(facts), layout=False)
