"""A node's freshness as the console and ``watch --freshness`` show it: "PASS, last active check 3 d ago".

The reading itself (which stored verdict is a node's last active check, and how old it is) is
``console.sweep.freshness``, the one that ``watch`` rounds and ``sweep --max-age`` gate on; this module
only words it for the node's detail head, the remediation view and ``watch --freshness``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from console.store import Store
from console.sweep.freshness import LastCheck, age_text, last_active_check

__all__ = ["Freshness", "age_text", "freshness"]


@dataclass(frozen=True)
class Freshness:
    """A node's last active check of any level, or none (``check`` None: never checked)."""

    node: str
    check: LastCheck | None = None

    @property
    def checked_at(self) -> float | None:
        return None if self.check is None else self.check.at

    @property
    def sweep_id(self) -> int | None:
        return None if self.check is None else self.check.sweep_id

    def age(self, now: float) -> str | None:
        """How old the check is, as an operator reads it; a clock behind the check reads as 0 s."""
        return None if self.check is None else age_text(self.check.age_s(now))

    def line(self, now: float) -> str:
        """``PASS, last active check 3 d ago (sweep 12, quick)``, or ``never checked``."""
        if self.check is None:
            return "never checked"
        return f"{self.check.status.value}, last active check {self.age(now)} ago ({self.check.where()})"


def freshness(store: Store, nodes: Iterable[str]) -> dict[str, Freshness]:
    """Each node's last active check (its newest stored verdict, at any level)."""
    return {name: Freshness(name, last_active_check(store, name)) for name in nodes}
