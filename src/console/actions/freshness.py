"""A node's freshness: its last active check (the newest verdict the history database holds) and its age.

``watch`` sweeps a node again once this is older than ``--every``; ``watch --freshness`` lists it and
the console shows it in a node's detail head and the remediation view ("last active check 3 d ago").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from console.store import Store


def age_text(seconds: float) -> str:
    """``42 s``, ``7 min``, ``5 h``, ``3 d``: how an operator reads an age."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


@dataclass(frozen=True)
class Freshness:
    """A node's last active check, or none (``checked_at`` None: never checked)."""

    node: str
    checked_at: float | None = None
    status: str | None = None
    sweep_id: int | None = None
    level: str | None = None

    def age(self, now: float) -> str | None:
        """How old the check is, as an operator reads it; a clock behind the check reads as 0 s."""
        return None if self.checked_at is None else age_text(max(0.0, now - self.checked_at))

    def line(self, now: float) -> str:
        """``PASS, last active check 3 d ago (sweep 12, quick)``, or ``never checked``."""
        if self.checked_at is None:
            return "never checked"
        return f"{self.status}, last active check {self.age(now)} ago (sweep {self.sweep_id}, {self.level})"


def freshness(store: Store, nodes: Iterable[str]) -> dict[str, Freshness]:
    """Each node's last active check, from its newest stored verdict (its sweep's start)."""
    found = {}
    for name in nodes:
        rows = store.node_history(name, limit=1)
        if not rows:
            found[name] = Freshness(name)
            continue
        row = rows[0]
        found[name] = Freshness(name, float(row["started_at"]), row["status"], row["sweep_id"], row["level"])
    return found
