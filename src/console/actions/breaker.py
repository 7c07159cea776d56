"""``watch``'s circuit breaker: how many nodes the console may hold out before all automation stops.

Held out are the nodes the console drained (its open drain records) and the ones it proposes to drain.
A pool may lose ``breaker_pool_fraction`` of its nodes (at least one, so a small pool can still lose
its one bad node) and at most ``breaker_pool_count``; the fleet likewise with the ``breaker_fleet_*``
limits. Going over either limit means more is wrong than hardware fails on its own: a fabric, a
driver, a bad image or the console itself. The breaker then trips and stays tripped until an operator
clears it (``watch --clear-breaker``).

A pool's limits are its own policy's (``[pools.lifecycle]`` over ``[lifecycle]``, see
``Inventory.policy``); the fleet's limits are ``[lifecycle]``'s alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from console.inventory.hostlist import fold
from console.inventory.model import LifecyclePolicy


def _limit(size: int, fraction: float, count: int) -> tuple[int, str]:
    by_share = max(1, math.floor(size * fraction))
    if by_share <= count:
        return by_share, f"{fraction:.0%} of {size}"
    return count, f"at most {count}"


def breach(
    policy: LifecyclePolicy,
    pools: Mapping[str, Sequence[str]],
    held: Iterable[str],
    pool_policies: Mapping[str, LifecyclePolicy] | None = None,
) -> str | None:
    """Why holding ``held`` out passes a pool's or the fleet's limit, or None when it stays within them.

    ``policy`` is the fleet's; ``pool_policies`` a pool's own where it has one (else the fleet's applies).
    """
    out = set(held)
    for pool, members in sorted(pools.items()):
        n = len(out & set(members))
        own = (pool_policies or {}).get(pool, policy)
        limit, how = _limit(len(members), own.breaker_pool_fraction, own.breaker_pool_count)
        if n > limit:
            nodes = fold(sorted(out & set(members)))
            table = "[lifecycle]" if own == policy else f"pool {pool}'s lifecycle over [lifecycle]"
            return (
                f"pool {pool}: {n} nodes held out ({nodes}), over its limit {limit} ({how}; {table}"
                " breaker_pool_fraction, breaker_pool_count)"
            )
    fleet = {m for members in pools.values() for m in members}
    n = len(out & fleet)
    limit, how = _limit(len(fleet), policy.breaker_fleet_fraction, policy.breaker_fleet_count)
    if n > limit:
        nodes = fold(sorted(out & fleet))
        return (
            f"fleet: {n} nodes held out ({nodes}), over its limit {limit} ({how}; [lifecycle]"
            " breaker_fleet_fraction, breaker_fleet_count)"
        )
    return None
