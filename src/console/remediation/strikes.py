"""Strikes: every new failure of a node within its pool's window, whoever found it.

A strike is one sweep that struck the node:

- a revalidation whose verdict was FAIL or WARN (the case's ``strike`` step: the repair did not hold);
- any other sweep (``sweep``, ``watch``, the console, a revalidation too) that found a check FAIL on
  the node that did not FAIL there the last time that check was judged on it: a new FAIL. A check that
  stays FAIL from one sweep to the next is the same failure, not a new strike; one that passed (or was
  repaired and passed) and fails again is. So a link that fails one sweep in three strikes each time
  it comes back, as operators mean flapping.

One sweep is one strike however many checks it found failing. The strikes of a node within its
pool's ``window_h`` count against ``max_strikes``: reaching it escalates the node to the vendor
(``console.remediation.cases``). The history is derived from what the history database already holds
(verdicts, findings, case steps), so a sweep that ran while no case was open still counts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from console.store import Store

_STRUCK = ("FAIL", "WARN")  # a revalidation's strike: not healthy yet


@dataclass(frozen=True)
class Strike:
    """One sweep that struck a node."""

    at: float
    sweep_id: int | None
    checks: tuple[str, ...]  # the checks that failed anew (or failed the revalidation)
    origin: str  # "revalidation" (a case's strike), else the command that ran the sweep

    def line(self) -> str:
        """``sweep 12 (watch): xgmi.link_state``."""
        where = f"sweep {self.sweep_id}" if self.sweep_id is not None else "a sweep"
        return f"{where} ({self.origin}): {', '.join(self.checks) or 'its verdict'}"


def _since(window_s: float, now: float | None) -> float:
    return (time.time() if now is None else now) - window_s


def _case_strikes(store: Store, node: str, since: float) -> list[Strike]:
    rows = store.conn.execute(
        "SELECT s.at, s.sweep_id FROM case_steps s JOIN cases c ON c.id = s.case_id"
        " WHERE c.node = ? AND s.step = 'strike' AND s.at >= ? ORDER BY s.id",
        (node, since),
    ).fetchall()
    found = []
    for row in rows:
        checks = _checks(store, row["sweep_id"], node, _STRUCK) if row["sweep_id"] is not None else ()
        found.append(Strike(row["at"], row["sweep_id"], checks, "revalidation"))
    return found


def _checks(store: Store, sweep_id: int, node: str, statuses: Iterable[str]) -> tuple[str, ...]:
    wanted = tuple(statuses)
    marks = ", ".join("?" * len(wanted))
    rows = store.conn.execute(
        f"SELECT DISTINCT check_id FROM findings WHERE sweep_id = ? AND node = ? AND status IN ({marks})"
        " ORDER BY check_id",
        (sweep_id, node, *wanted),
    )
    return tuple(str(r[0]) for r in rows)


def _sweep_strikes(store: Store, node: str, since: float) -> list[Strike]:
    """Sweeps within the window that found a check FAIL on ``node`` that was not FAIL when last judged."""
    rows = store.conn.execute(
        "SELECT v.sweep_id, v.passed, s.started_at, s.origin FROM node_verdicts v JOIN sweeps s ON s.id = v.sweep_id"
        " WHERE v.node = ? AND (s.started_at >= ? OR v.sweep_id = (SELECT max(v2.sweep_id) FROM node_verdicts v2"
        " JOIN sweeps s2 ON s2.id = v2.sweep_id WHERE v2.node = ? AND s2.started_at < ?)) ORDER BY v.sweep_id",
        (node, since, node, since),
    ).fetchall()
    if not rows:
        return []
    # Every finding of the node in those sweeps, in one read (the remediation view asks every second).
    judged: dict[int, dict[str, bool]] = {}
    for r in store.conn.execute(
        "SELECT sweep_id, check_id, max(status = 'FAIL') FROM findings WHERE node = ? AND sweep_id >= ?"
        " GROUP BY sweep_id, check_id",
        (node, rows[0]["sweep_id"]),
    ):
        judged.setdefault(int(r[0]), {})[str(r[1])] = bool(r[2])
    failing: set[str] = set()  # the checks FAIL when last judged, walking the sweeps in order
    found = []
    for row in rows:
        checks = judged.get(int(row["sweep_id"]), {})
        now_failing = {check for check, failed in checks.items() if failed}
        # PASS findings are kept as counts per check (``node_verdicts.passed``), not as rows: judged all the same.
        passed = set(json.loads(row["passed"] or "{}"))
        new = sorted(now_failing - failing)
        failing = (failing - set(checks) - passed) | now_failing
        if new and row["started_at"] >= since:
            found.append(Strike(row["started_at"], row["sweep_id"], tuple(new), row["origin"] or "sweep"))
    return found


def strike_history(store: Store, node: str, window_s: float, now: float | None = None) -> list[Strike]:
    """The node's strikes within the window before ``now`` (default: the time now), oldest first.

    A revalidation that struck and found a new FAIL too is one strike (the revalidation's).
    """
    since = _since(window_s, now)
    by_case = _case_strikes(store, node, since)
    seen = {s.sweep_id for s in by_case if s.sweep_id is not None}
    merged = by_case + [s for s in _sweep_strikes(store, node, since) if s.sweep_id not in seen]
    return sorted(merged, key=lambda s: s.at)


def strikes(store: Store, node: str, window_s: float, now: float | None = None, *, also: int | None = None) -> int:
    """How many strikes the node has within the window; ``also``: a sweep striking it now, counted once."""
    history = strike_history(store, node, window_s, now)
    extra = also is not None and all(s.sweep_id != also for s in history)
    return len(history) + (1 if extra else 0)


def last_strike(store: Store, node: str, window_s: float, now: float | None = None) -> Strike | None:
    """The node's newest strike within the window, if any."""
    history = strike_history(store, node, window_s, now)
    return history[-1] if history else None
