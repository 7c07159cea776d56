"""The acceptance view's text: each workload on each pool, its state, accepted and current stack, figures.

The states and records come from ``console.actions.acceptance`` (the same as ``acceptance`` headless),
so the console and CI read one state machine. A regressed run's figures sit beside the accepted ones.
A run in progress comes from the engine's events (``console.ui.workload_runs``) as it starts and ends.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

from textual.content import Content

from console.actions.acceptance import (
    DUE,
    NOT_ACCEPTED,
    RUNNING,
    AcceptanceState,
    FigureTrend,
    RunInProgress,
)
from console.inventory.hostlist import fold
from console.store.acceptance import ACCEPTED, ACCEPTED_AGAIN, BLOCKED, REGRESSED, UNSTABLE
from console.ui.text import safe
from console.ui.workload_runs import LiveRun

STATE_STYLE = {
    ACCEPTED: "$health-ok",
    ACCEPTED_AGAIN: "$health-ok",
    DUE: "$health-warn",
    REGRESSED: "bold $health-crit",
    BLOCKED: "bold $health-crit",
    UNSTABLE: "bold $health-crit",
    NOT_ACCEPTED: "$muted",
    RUNNING: "bold $accent",
}
COLUMNS = ("workload", "pool", "state", "running / accepted", "changed since", "trend")


def with_live_runs(states: list[AcceptanceState], live: dict[tuple[str, str], LiveRun]) -> list[AcceptanceState]:
    """``states`` with the runs this console's engine reports in progress (its events are newer than the
    audit log the states were read from, and say which nodes still run)."""
    merged = []
    for s in states:
        run = live.get((s.workload, s.pool))
        if run is None:
            merged.append(s)
            continue
        progress = RunInProgress(run.started_at, list(run.nodes), run.sweep_id, s.settled, "this console")
        merged.append(replace(s, state=RUNNING, running=progress))
    return merged


def short_number(value: float) -> str:
    """A figure in three or four characters' worth of precision (trends are read at a glance)."""
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    return f"{value:.0f}" if size >= 100 else f"{value:.1f}" if size >= 10 else f"{value:.2f}"


def trend_text(name: str, trend: FigureTrend) -> str:
    """``request_throughput 13.1 13.0 10.8 ↓``: the values oldest first and the newest one's move."""
    return " ".join([name, *(short_number(v) for v in trend.values), trend.arrow]).rstrip()


def headline_trend(s: AcceptanceState, preferred: list[str] | None = None) -> str:
    """The trend of the figure the table shows: the first the workload's criteria judge, else the first."""
    trends = s.figure_trends()
    if not trends:
        return "-"
    name = next((f for f in preferred or [] if f in trends), next(iter(trends)))
    return trend_text(name, trends[name])


def clock(at: float) -> str:
    """Local wall-clock time of ``at``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def where_text(s: AcceptanceState) -> str:
    """Running: since when and on which nodes; else who accepted it on which sweep."""
    if s.running is not None:
        return f"since {clock(s.running.started_at)} on {fold(s.running.nodes)}"
    if s.accepted is not None:
        return f"sweep #{s.accepted.sweep_id} by {s.accepted.user}"
    return "-"


def row_cells(s: AcceptanceState, preferred: list[str] | None = None) -> list[tuple[str, str]]:
    """The table's cells of one workload x pool, each with its style."""
    changed = " ".join(f"{k} {a}->{c}" for k, (a, c) in s.changes.items())
    changed = changed or " ".join(f"{node} not covered" for node in s.uncovered) or "-"
    state = s.state if s.running is None else f"{RUNNING} (was {s.running.settled})"
    return [
        (s.workload, "bold"),
        (s.pool, ""),
        (state, STATE_STYLE.get(s.state, "")),
        (where_text(s), "$muted"),
        (changed, "$drift" if s.changes or s.uncovered else "$muted"),
        (headline_trend(s, preferred), ""),
    ]


def _stack(stack: dict[str, str]) -> str:
    shown = [f"{k}={v}" for k, v in stack.items() if not k.startswith("firmware.")]
    firmware = [k for k in stack if k.startswith("firmware.")]
    return " ".join(shown + ([f"firmware: {len(firmware)} blocks"] if firmware else [])) or "-"


def _figures(figures: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in figures.items()) or "-"


def _held_lines(s: AcceptanceState) -> list[str | tuple[str, str]]:
    """The reference figures (when not the accepted record's own), the newest run beside them with each
    ratio, and the runs the accepted stack's acceptance rests on with their spread."""
    parts: list[str | tuple[str, str]] = []
    reference = s.reference
    if reference is not None and (s.accepted is None or reference.id != s.accepted.id):
        said = f"{_figures(reference.figures)} (sweep {reference.sweep_id}, record #{reference.id})"
        parts += [("    reference ", "$muted"), safe(said), "\n"]
    newest = s.newest
    if newest is not None and newest.compared:
        beyond = any(c.beyond for c in newest.compared)
        said = f"#{newest.sweep_id} {newest.status.value}: " + "; ".join(c.line() for c in newest.compared)
        parts += [("    newest    ", "$health-crit" if beyond else "$muted"), safe(said), "\n"]
    if s.repeat is not None:
        parts += [("    repeat    ", "$health-crit" if s.repeat.wider else "$muted"), safe(s.repeat.line()), "\n"]
    return parts


def acceptance_content(states: list[AcceptanceState]) -> Content:
    """Per workload, one block per pool: state, stacks, what changed, figures (and the regressed run's)."""
    parts: list[str | tuple[str, str]] = []
    if not states:
        parts.append(("no pool to judge workloads on", "$muted"))
    workload = None
    for s in states:
        if s.workload != workload:
            workload = s.workload
            parts += [(f"{safe(workload)}", "bold $accent"), "\n"]
        parts += [(f"  {safe(s.pool):<14}", "bold"), (f"{s.state:<16}", STATE_STYLE.get(s.state, ""))]
        if s.failing_since is not None:
            parts.append((f"failing since run #{s.failing_since}", STATE_STYLE.get(s.state, "")))
        parts.append("\n")
        if s.running is not None:
            run = s.running
            since = f"since {clock(run.started_at)} on {fold(run.nodes)} (sweep #{run.sweep_id}), was {run.settled}"
            parts += [("    running   ", "$accent"), safe(since), "\n"]
        if s.accepted is not None:
            record = s.accepted
            why = f": {record.reason}" if record.reason else ""
            parts += [("    accepted  ", "$muted"), safe(_stack(record.stack)), "\n"]
            parts += [("    by        ", "$muted"), safe(f"{record.user}, sweep {record.sweep_id}{why}"), "\n"]
            if record.nodes:
                parts += [("    ran on    ", "$muted"), safe(fold(record.nodes)), "\n"]
            parts += [("    figures   ", "$muted"), safe(_figures(record.figures)), "\n"]
        parts += [("    current   ", "$muted"), safe(_stack(s.current_stack)), "\n"]
        for key, (old, new) in s.changes.items():
            parts += [("    changed   ", "$drift"), safe(f"{key}: {old} -> {new}"), "\n"]
        for line in s.uncovered_lines():
            parts += [("    uncovered ", "$drift"), safe(line), "\n"]
        parts += _held_lines(s)
        if s.regressed is not None:
            parts += [("    regressed ", "$health-crit"), safe(_figures(s.regressed.figures)), "\n"]
        if s.unstable is not None:
            why = s.unstable.reason.partition("; ")[2] or s.unstable.reason
            parts += [("    unstable  ", "$health-crit"), safe(f"sweep {s.unstable.sweep_id}: {why}"), "\n"]
        if s.blocked is not None:
            why = s.blocked.reason.partition("; ")[2] or s.blocked.reason
            parts += [("    blocked   ", "$health-crit"), safe(f"sweep {s.blocked.sweep_id}: {why}"), "\n"]
        for name, figure in s.figure_trends().items():
            parts += [("    trend     ", "$muted"), safe(trend_text(name, figure)), "\n"]
        if s.trend:
            runs = " ".join(f"#{t.sweep_id} {t.status.value}" for t in s.trend)
            parts += [("    runs      ", "$muted"), safe(runs), "\n"]
        if s.settled in (DUE, REGRESSED, BLOCKED, UNSTABLE, NOT_ACCEPTED) and s.running is None:
            parts += [
                ("    next      ", "$muted"),
                "r runs it on the pool now; a accepts its last passed run; B rolls the pool back",
                "\n",
            ]
    return Content.assemble(*parts)
