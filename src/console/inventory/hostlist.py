"""Hostlist expressions (``gpu[001-128]``) through ClusterShell's NodeSet, the form Slurm speaks.

Group syntax (``@rack1``) is not resolved: a cluster file must name its nodes.
"""

from __future__ import annotations

from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded."""


def expand(expression: str) -> list[str]:
    """Node names of ``expression`` in order (``gpu[001-003],login1`` -> 4 names)."""
    try:
        return list(NodeSet(expression, resolver=RESOLVER_NOGROUP))
    except NodeSetException as exc:
        raise HostlistError(f"bad hostlist {expression!r}: {exc}") from None


def fold(names: Iterable[str]) -> str:
    """The shortest hostlist for ``names`` (``gpu001,gpu002`` -> ``gpu[001-002]``); empty for none."""
    items = [n for n in names if n]
    if not items:
        return ""
    return str(NodeSet.fromlist(items, resolver=RESOLVER_NOGROUP))
