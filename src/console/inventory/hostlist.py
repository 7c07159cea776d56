"""Hostlist expressions (``gpu[001-128]``) through ClusterShell's NodeSet, the form Slurm speaks.

Group syntax (``@rack1``) is not resolved: a cluster file must name its nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException

# More nodes than any cluster has: a typo such as gpu[1-10000000] is refused instead of expanded
# (NodeSet needs minutes and gigabytes for it, and the console would freeze).
MAX_NODES = 100_000
_MAX_DIGITS = 12  # a range bound longer than this cannot name a plausible node
_BRACKET = re.compile(r"\[([^\]]*)\]")
_TOP_LEVEL_SEPARATORS = re.compile(r"[,!&^]")
_RANGE = re.compile(r"^\s*(\d+)(?:-(\d+))?(?:/(\d+))?\s*$")


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded."""


def _outside_brackets(expression: str) -> list[str]:
    """Split at the operators ``, ! & ^`` that are not inside a bracket."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(expression):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0 and _TOP_LEVEL_SEPARATORS.match(char):
            parts.append(expression[start:i])
            start = i + 1
    parts.append(expression[start:])
    return parts


def _range_size(element: str) -> int:
    """Nodes in one bracket element (``7``, ``001-128``, ``0-100/2``); 1 for what NodeSet will judge itself."""
    found = _RANGE.match(element)
    if found is None:
        return 1
    if any(len(g) > _MAX_DIGITS for g in found.groups() if g):
        return MAX_NODES + 1
    low, high, step = int(found.group(1)), int(found.group(2) or found.group(1)), int(found.group(3) or 1)
    return max(0, high - low) // max(step, 1) + 1


def size_bound(expression: str) -> int:
    """An upper bound of the node count of ``expression``, computed without expanding it."""
    total = 0
    for part in _outside_brackets(expression):
        count = 1
        for brackets in _BRACKET.findall(part):
            count *= sum(_range_size(element) for element in brackets.split(","))
            if count > MAX_NODES:
                return count
        total += count
    return total


def expand(expression: str, limit: int = MAX_NODES) -> list[str]:
    """Node names of ``expression`` in order (``gpu[001-003],login1`` -> 4 names); at most ``limit`` of them.

    A file of many lines passes what its earlier lines left of ``MAX_NODES``, so the whole file is
    refused before it costs more than one cluster's worth of expansion.
    """
    if size_bound(expression) > limit:
        raise HostlistError(f"bad hostlist {expression[:80]!r}: more than {MAX_NODES} nodes in all")
    try:
        return list(NodeSet(expression, resolver=RESOLVER_NOGROUP))
    except (NodeSetException, ValueError) as exc:  # ClusterShell lets a ValueError out for '[1-[1--[0-0]'
        raise HostlistError(f"bad hostlist {expression!r}: {' '.join(str(exc).split())}") from None


def fold(names: Iterable[str]) -> str:
    """The shortest hostlist for ``names`` (``gpu001,gpu002`` -> ``gpu[001-002]``); empty for none."""
    items = [n for n in names if n]
    if not items:
        return ""
    return str(NodeSet.fromlist(items, resolver=RESOLVER_NOGROUP))
