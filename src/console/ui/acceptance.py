"""The acceptance view's text: each workload on each pool, its state, accepted and current stack, figures.

The states and records come from ``console.actions.acceptance`` (the same as ``acceptance`` headless),
so the console and CI read one state machine. A regressed run's figures sit beside the accepted ones.
"""

from __future__ import annotations

from textual.content import Content

from console.actions.acceptance import DUE, NOT_ACCEPTED, AcceptanceState
from console.store.acceptance import ACCEPTED, ACCEPTED_AGAIN, REGRESSED
from console.ui.text import safe

STATE_STYLE = {
    ACCEPTED: "$health-ok",
    ACCEPTED_AGAIN: "$health-ok",
    DUE: "$health-warn",
    REGRESSED: "bold $health-crit",
    NOT_ACCEPTED: "$muted",
}


def _stack(stack: dict[str, str]) -> str:
    shown = [f"{k}={v}" for k, v in stack.items() if not k.startswith("firmware.")]
    firmware = [k for k in stack if k.startswith("firmware.")]
    return " ".join(shown + ([f"firmware: {len(firmware)} blocks"] if firmware else [])) or "-"


def _figures(figures: dict[str, float]) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in figures.items()) or "-"


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
        parts += [(f"  {safe(s.pool):<14}", "bold"), (f"{s.state:<16}", STATE_STYLE.get(s.state, "")), "\n"]
        if s.accepted is not None:
            record = s.accepted
            why = f": {record.reason}" if record.reason else ""
            parts += [("    accepted  ", "$muted"), safe(_stack(record.stack)), "\n"]
            parts += [("    by        ", "$muted"), safe(f"{record.user}, sweep {record.sweep_id}{why}"), "\n"]
            parts += [("    figures   ", "$muted"), safe(_figures(record.figures)), "\n"]
        parts += [("    current   ", "$muted"), safe(_stack(s.current_stack)), "\n"]
        for key, (old, new) in s.changes.items():
            parts += [("    changed   ", "$drift"), safe(f"{key}: {old} -> {new}"), "\n"]
        if s.regressed is not None:
            parts += [("    regressed ", "$health-crit"), safe(_figures(s.regressed.figures)), "\n"]
        if s.state in (DUE, REGRESSED):
            parts += [
                ("    next      ", "$muted"),
                "rerun: sweep --probes workload; or B on a node of the pool rolls it back",
                "\n",
            ]
    return Content.assemble(*parts)
