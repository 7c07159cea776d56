"""Blast-radius caps: how many nodes of a pool the console may hold out of service at once.

The default lets the console drain at most 10 % of a pool or 2 nodes, whichever is larger; an
operator may set a fixed cap per pool. A request that would go over is refused unless forced.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CapPolicy:
    """``fraction`` of a pool, at least ``minimum`` nodes; ``fixed`` (every pool) and ``per_pool`` override that."""

    fraction: float = 0.10
    minimum: int = 2
    per_pool: Mapping[str, int] = field(default_factory=dict)
    fixed: int | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.fraction <= 1:
            raise ValueError(f"cap fraction must be within 0..1, got {self.fraction}")
        if self.minimum < 0 or (self.fixed or 0) < 0 or any(v < 0 for v in self.per_pool.values()):
            raise ValueError("caps must not be negative")

    def cap(self, pool: str, size: int) -> int:
        """Most nodes of ``pool`` (``size`` nodes) the console may hold out of service."""
        if pool in self.per_pool:
            return self.per_pool[pool]
        if self.fixed is not None:
            return self.fixed
        return max(self.minimum, math.floor(size * self.fraction))

    def describe(self, pool: str, size: int) -> str:
        """How the cap of ``pool`` was reached, for refusal messages."""
        if pool in self.per_pool or self.fixed is not None:
            return f"cap {self.cap(pool, size)} set for pool {pool}"
        return f"cap {self.cap(pool, size)} = max({self.minimum}, {self.fraction:.0%} of {size})"


def cap_violations(
    policy: CapPolicy, pools: Mapping[str, Sequence[str]], held: Iterable[str], adding: Iterable[str]
) -> list[str]:
    """One message per pool where the console's held nodes plus ``adding`` would exceed the cap."""
    held_set, adding_set = set(held), set(adding)
    messages = []
    for pool, members in sorted(pools.items()):
        member_set = set(members)
        new = adding_set & member_set
        if not new:
            continue
        total = len((held_set & member_set) | new)
        cap = policy.cap(pool, len(member_set))
        if total > cap:
            already = len((held_set & member_set) - new)
            messages.append(
                f"pool {pool}: {total} nodes would be out of service by the console ({already} already, "
                f"{len(new)} new), over the {policy.describe(pool, len(member_set))}"
            )
    return messages
