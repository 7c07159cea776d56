"""A node's last active check and how old it is: what ``watch`` goes by and what ``sweep --max-age`` gates on.

The last active check of a node *for a level* is its newest stored verdict of a sweep whose probes
include every probe that level runs (``covers``): a ``full`` sweep is a check at ``standard`` too, a
``quick`` one is not. A node's check that its sweep's deadline or a cancel cut short is no active check
(its probes did not all run), whatever it found: ``watch`` checks the node again. ``watch --freshness``,
``watch`` rounds and ``sweep --max-age`` all read it here, so "fresh" means one thing.

``judged_from_history`` never turns a stale or missing check into PASS: older than the limit, or no
check at all, is UNKNOWN with the age in its reason. A check that is fresh enough is taken with the
verdicts of every later sweep of the node (any level, cut short or not): a later FAIL or UNKNOWN, from a
lighter sweep that does not cover the level or a check cut short, still says the node is not known
healthy now, so the worst one wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.model.findings import Status
from console.store import Store
from console.sweep.catalog import RERUN_PREFIX, ProbeSet, probes_for
from console.sweep.clock import age_text, unusable_time

__all__ = ["HistoryVerdict", "LastCheck", "age_text", "covers", "judged_from_history", "last_active_check"]


def _probe_ids(level: str) -> frozenset[str]:
    return frozenset(p.id for p in probes_for(level))


def covers(stored: str, wanted: str) -> bool:
    """True when a sweep at level ``stored`` ran every probe a sweep at ``wanted`` runs.

    A ``workload`` check is covered only by a workload sweep: no other level runs the site's workloads.
    An unknown stored level (a database of a later release) covers nothing.
    """
    known = {s.value for s in ProbeSet}
    # A rerun of every probe of a level (the console's "rerun" of a node) is a check at that level; one of
    # some families only (``rerun:ecc,xgmi``) is no level's.
    stored = stored.removeprefix(RERUN_PREFIX)
    if wanted == ProbeSet.WORKLOAD or wanted not in known:
        return stored == wanted
    if stored not in known:
        return False
    return _probe_ids(wanted) <= _probe_ids(stored)


def covering_levels(wanted: str) -> list[str]:
    """Every level whose sweeps are checks at ``wanted`` (itself included), and the reruns of those levels."""
    levels = [s.value for s in ProbeSet if covers(s.value, wanted)]
    return levels + [RERUN_PREFIX + level for level in levels]


@dataclass(frozen=True)
class LastCheck:
    """A node's newest stored verdict at a level: which sweep, when it started, what it said."""

    node: str
    sweep_id: int
    level: str
    at: float
    status: Status
    reason: str

    def age_s(self, now: float) -> float:
        """Seconds since the check's sweep started (0 for one dated ahead of ``now``: see ``stale``)."""
        return max(0.0, now - self.at)

    def stale(self, now: float, max_age_s: float) -> str | None:
        """Why this check does not vouch for the node now (older than ``max_age_s``, or dated in the future
        past the clock skew: ``console.sweep.clock``); None when it is fresh. ``watch`` rounds, ``sweep
        --max-age`` and the console all ask this."""
        skewed = unusable_time(self.at, now, f"the last active check ({self.where()})")
        if skewed is not None:
            return skewed
        age = self.age_s(now)
        if age > max_age_s:
            return f"last active check {age_text(age)} ago ({self.where()}), older than {age_text(max_age_s)}"
        return None

    def where(self) -> str:
        """``sweep 12, quick``: which check it was."""
        return f"sweep {self.sweep_id}, {self.level}"


# How many of a node's later sweeps a gate reads for a later non-PASS verdict: a node checked far more
# often than that since its covering check is read as not known healthy (UNKNOWN), never as PASS.
LATER_LIMIT = 200


def last_active_check(store: Store, node: str, level: str | None = None) -> LastCheck | None:
    """The node's newest stored verdict of a sweep covering ``level`` (of any level when None) whose check ran
    to its end: one cut short by the sweep's deadline or a cancel did not run every probe of its level."""
    levels = covering_levels(level) if level is not None else None
    rows = store.node_history(node, limit=1, levels=levels, whole=True)
    if not rows:
        return None
    row = rows[0]
    status = Status(row["status"])
    return LastCheck(
        node, int(row["sweep_id"]), str(row["level"]), float(row["started_at"]), status, str(row["reason"])
    )


@dataclass(frozen=True)
class HistoryVerdict:
    """A node judged from the history database: the status a gate takes, why, and the check it rests on."""

    node: str
    status: Status
    reason: str
    check: LastCheck | None


def judged_from_history(store: Store, node: str, level: str, max_age_s: float, now: float) -> HistoryVerdict:
    """The node's verdict at ``level`` from its last active check when at most ``max_age_s`` old, else UNKNOWN."""
    check = last_active_check(store, node, level)
    if check is None:
        return HistoryVerdict(node, Status.UNKNOWN, f"no active check at {level} or deeper in the history", None)
    stale = check.stale(now, max_age_s)
    if stale is not None:
        return HistoryVerdict(node, Status.UNKNOWN, stale, check)
    age = check.age_s(now)
    status, reason = check.status, check.reason
    later = [r for r in store.node_history(node, limit=LATER_LIMIT) if int(r["sweep_id"]) > check.sweep_id]
    if len(later) >= LATER_LIMIT:
        why = f"{LATER_LIMIT} or more sweeps since its last active check ({check.where()}): not read"
        return HistoryVerdict(node, Status.UNKNOWN, why, check)
    for row in later:  # newest first: the newest of the worst status gives the reason
        seen = Status(row["status"])
        if seen.severity <= status.severity:
            continue
        status = seen
        reason = f"{row['reason'] or seen.value} (a later {row['level']} sweep {row['sweep_id']})"
    said = f"{reason}; " if reason and status is not Status.PASS else ""
    return HistoryVerdict(node, status, f"{said}last active check {age_text(age)} ago ({check.where()})", check)
