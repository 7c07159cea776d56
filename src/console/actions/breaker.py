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


def _counted(held: set[str], pending: set[str], members: set[str]) -> str:
    """``3 nodes: 1 held out (n1), 2 to drain (n2-n3)``: only what the console holds is called held out."""
    mine, coming = held & members, (pending - held) & members
    if not coming:
        return f"{len(mine)} nodes held out ({fold(sorted(mine))})"
    parts = [f"{len(mine)} held out ({fold(sorted(mine))})"] if mine else ["none held out"]
    if coming:
        parts.append(f"{len(coming)} to drain ({fold(sorted(coming))}: failing now or proposed)")
    return f"{len(mine | coming)} nodes: " + ", ".join(parts)


def breach(
    policy: LifecyclePolicy,
    pools: Mapping[str, Sequence[str]],
    held: Iterable[str],
    pool_policies: Mapping[str, LifecyclePolicy] | None = None,
    pending: Iterable[str] = (),
) -> str | None:
    """Why holding ``held`` and ``pending`` out passes a pool's or the fleet's limit, or None within them.

    ``held``: what the console holds out (its open drains); ``pending``: what it would add (nodes failing
    now, drains proposed), counted apart in the message. ``policy`` is the fleet's; ``pool_policies`` a
    pool's own where it has one (else the fleet's applies).
    """
    kept, coming = set(held), set(pending)
    out = kept | coming
    for pool, members in sorted(pools.items()):
        n = len(out & set(members))
        own = (pool_policies or {}).get(pool, policy)
        limit, how = _limit(len(members), own.breaker_pool_fraction, own.breaker_pool_count)
        if n > limit:
            table = "[lifecycle]" if own == policy else f"pool {pool}'s lifecycle over [lifecycle]"
            return (
                f"pool {pool}: {_counted(kept, coming, set(members))}, over its limit {limit} ({how}; {table}"
                " breaker_pool_fraction, breaker_pool_count)"
            )
    fleet = {m for members in pools.values() for m in members}
    n = len(out & fleet)
    limit, how = _limit(len(fleet), policy.breaker_fleet_fraction, policy.breaker_fleet_count)
    if n > limit:
        return (
            f"fleet: {_counted(kept, coming, fleet)}, over its limit {limit} ({how}; [lifecycle]"
            " breaker_fleet_fraction, breaker_fleet_count)"
        )
    return None
