"""The remediation view's text: the breaker, nodes per stage, and the open proposals.

The rows come from ``console.actions.remediation`` (the history database as ``cases`` and ``watch``
read it); this only lays them out. Ages are read against the console's clock.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.content import Content

from console.actions.freshness import age_text
from console.actions.remediation import CLEAR_BREAKER, STAGES, SUSPECT, RemediationRow, RemediationView
from console.store.lifecycle import Stage
from console.ui.text import safe

COLUMNS = ("node", "pool", "stage", "in stage", "next step", "who", "action", "strikes", "passes", "last check")
STAGE_STYLE = {
    SUSPECT: "bold $health-warn",
    Stage.PROPOSED.value: "bold $health-warn",
    Stage.DRAINED.value: "bold $drained",
    Stage.AWAITING_REPAIR.value: "bold $health-crit",
    Stage.REVALIDATING.value: "bold $accent",
    Stage.RETURNED.value: "$health-ok",
    Stage.ESCALATED.value: "bold $health-crit",
    Stage.ENDED.value: "$muted",
}


def _age(now: float, since: float) -> str:
    # A clock behind the record (a test's fixed clock, a skewed host) reads as no time at all.
    return age_text(max(0.0, now - since))


def head_content(view: RemediationView, now: float, keys: str) -> Content:
    """The breaker (tripped: why, who clears it and how), the count per stage and the policy."""
    breaker = view.breaker
    parts: list[str | tuple[str, str]] = []
    if breaker.tripped and breaker.tripped_at is not None:
        parts += [("BREAKER TRIPPED", "bold reverse $health-crit"), f"  {_age(now, breaker.tripped_at)} ago: "]
        parts += [(safe(breaker.why), "bold"), "\n"]
        parts += [("  automation paused (drains, revalidations, resumes, approvals); cleared by ", "$muted")]
        parts += [CLEAR_BREAKER, "\n"]
    else:
        parts += [("breaker clear", "$health-ok")]
        parts += [("  watch may drain, revalidate and resume within its limits", "$muted"), "\n"]
    counts = view.counts()
    shown = [(f"{counts[s]} {s}", STAGE_STYLE[s]) for s in STAGES if s in counts]
    if not shown:
        parts += [("no node in the remediation loop", "$muted")]
    for i, item in enumerate(shown):
        parts += [("  " if i else ""), item]
    # One line when every pool has the fleet's policy; else each distinct policy with its pools.
    said: dict[str, list[str]] = {}
    for pool, p in view.policies.items():
        line = f"{p.passes_required} passes at {p.level} to return"
        line += f", {p.max_strikes} strikes within {p.window_h:g} h escalate"
        said.setdefault(line, []).append(pool)
    if len(said) <= 1:
        parts += [("   policy: ", "$muted"), next(iter(said), "-")]
    for line, pools in said.items() if len(said) > 1 else ():
        parts += ["\n", ("  policy of ", "$muted"), (safe(", ".join(pools)), "bold"), ": ", line]
    parts += ["\n", (keys, "$muted")]
    return Content.assemble(*parts)


def row_cells(row: RemediationRow, view: RemediationView, now: float) -> list[Text]:
    """One table row per node: the ``COLUMNS``."""
    policy = row.policy
    action = row.action.value + (" (physical)" if row.physical else "") if row.action else "-"
    strikes = f"{row.strikes}/{policy.max_strikes}"  # within the window of its pool's policy (the head)
    passes = f"{row.passes}/{policy.passes_required}" if row.case_id is not None else "-"
    age = row.checked.age(now)
    checked = f"{row.checked.check.status.value} {age} ago" if row.checked.check is not None else "never"
    next_step = row.next_step
    if row.proposals:
        next_step += "  [proposed: " + ", ".join(f"#{p.id} {p.kind}" for p in row.proposals) + "]"
    cells = [
        Text(safe(row.node), style="bold"),
        Text(safe(row.pool)),
        Text(row.stage),
        Text(_age(now, row.since)),
        Text(safe(next_step)),
        Text(row.who),
        Text(action),
        Text(strikes, style="bold" if row.strikes else ""),
        Text(passes),
        Text(checked),
    ]
    return cells


def proposals_content(view: RemediationView, now: float) -> Content:
    """Every open proposal: what, on which node, from which sweep, why and how long it has waited."""
    parts: list[str | tuple[str, str]] = [("Open proposals (approve-to-run)", "bold $accent"), "\n"]
    if not view.proposals:
        parts += [("  none: watch has proposed nothing that waits for an operator", "$muted"), "\n"]
    for p in view.proposals:
        cited = f" (sweep {p.sweep_id})" if p.sweep_id is not None else ""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(p.at))
        parts += [(f"  #{p.id} {p.kind} {safe(p.node)}", "bold"), f"{cited} proposed {when}, {_age(now, p.at)} ago: "]
        parts += [safe(p.reason), "\n"]
    return Content.assemble(*parts)


def strikes_content(view: RemediationView, now: float) -> Content:
    """Each node's strikes within its pool's window, oldest first: when, which sweep and what failed anew."""
    parts: list[str | tuple[str, str]] = [("Strike history (within each pool's window)", "bold $accent"), "\n"]
    struck = [row for row in view.rows if row.strike_history]
    if not struck:
        parts += [("  none: no node failed anew within its window", "$muted"), "\n"]
    for row in struck:
        limit = f"{row.strikes}/{row.policy.max_strikes}"
        parts += [(f"  {safe(row.node)} {limit}", "bold"), ": "]
        lines = [f"{_age(now, s.at)} ago {safe(s.line())}" for s in row.strike_history]
        parts += ["; ".join(lines), "\n"]
    return Content.assemble(*parts)
