"""Blast-radius caps: how many nodes of a pool may be out of service at once when the console takes more out.

The default allows 10 % of a pool or 2 nodes, whichever is larger; an operator may set a fixed cap
per pool. Every cap leaves at least one node of the pool in service (a pool of two loses one node at
most). Nodes already out count against it whoever took them out: a drain by an operator or another
tool, a node down. A request that would go over acts on the targets that fit, in the order given, and
says which it left and why; forced, it acts on all of them.
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

    def _asked(self, pool: str, size: int) -> int:
        if pool in self.per_pool:
            return self.per_pool[pool]
        if self.fixed is not None:
            return self.fixed
        return max(self.minimum, math.floor(size * self.fraction))

    def cap(self, pool: str, size: int) -> int:
        """Most nodes of ``pool`` (``size`` nodes) that may be out of service: one always stays in."""
        return min(self._asked(pool, size), max(size - 1, 0))

    def describe(self, pool: str, size: int) -> str:
        """How the cap of ``pool`` was reached, for refusal messages."""
        asked, cap = self._asked(pool, size), self.cap(pool, size)
        if pool in self.per_pool or self.fixed is not None:
            text = f"cap {cap} set for pool {pool}" if asked == cap else f"cap {cap} ({asked} set for pool {pool})"
        else:
            text = f"cap {cap} = max({self.minimum}, {self.fraction:.0%} of {size})"
        return text if asked == cap else f"{text}, leaving 1 of {size} in service"


def cap_violations(
    policy: CapPolicy,
    pools: Mapping[str, Sequence[str]],
    held: Iterable[str],
    adding: Iterable[str],
    *,
    by_console: Iterable[str] = (),
) -> list[str]:
    """One message per pool where the nodes already out (``held``) plus ``adding`` would exceed the cap.

    ``by_console``: which of ``held`` the console took out itself (the rest are others').
    """
    held_set, adding_set, console_set = set(held), set(adding), set(by_console)
    messages = []
    for pool, members in sorted(pools.items()):
        member_set = set(members)
        new = adding_set & member_set
        if not new:
            continue
        total = len((held_set & member_set) | new)
        cap = policy.cap(pool, len(member_set))
        if total > cap:
            already = (held_set & member_set) - new
            mine = len(already & console_set)
            messages.append(
                f"pool {pool}: {total} nodes would be out of service ({len(already)} already: {mine} by the console, "
                f"{len(already) - mine} by others; {len(new)} new), over the {policy.describe(pool, len(member_set))}"
            )
    return messages


def within_cap(
    policy: CapPolicy,
    pools: Mapping[str, Sequence[str]],
    held: Iterable[str],
    adding: Sequence[str],
    *,
    by_console: Iterable[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """Which of ``adding`` fit under their pool's cap, in the order given, and why each other one does not.

    Nine failing nodes over four pools are not refused as a whole: each pool takes what its cap still
    allows, and the rest are named with what the pool already has out.
    """
    held_set, console_set = set(held), set(by_console)
    pool_of = {name: pool for pool, members in pools.items() for name in members}
    taken: dict[str, int] = {}  # pool -> targets of this action that fit
    fit: list[str] = []
    left: dict[str, str] = {}
    for name in adding:
        pool = pool_of.get(name)
        if pool is None or name in held_set:  # not in a capped pool, or already out: costs nothing
            fit.append(name)
            continue
        members = set(pools[pool])
        out = held_set & members
        if len(out) + taken.get(pool, 0) < policy.cap(pool, len(members)):
            taken[pool] = taken.get(pool, 0) + 1
            fit.append(name)
            continue
        mine = len(out & console_set)
        left[name] = (
            f"{policy.describe(pool, len(members))}; {len(out)} already out ({mine} by the console,"
            f" {len(out) - mine} by others), {taken.get(pool, 0)} more by this action"
        )
    return fit, left
