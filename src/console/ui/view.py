"""Which nodes the grid shows and in what order: the ``/`` filter, the sorts and problems-first.

The filter grammar is the inventory's (``console.inventory.select.node_matches``: text, hostlists,
``key=value`` labels, ``!`` to invert), applied to the node with a few live labels added:
``verdict=FAIL``, ``sched=drained``, ``drift=yes``. No Textual here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache, partial

from console.inventory.hostlist import HostlistError, expand
from console.inventory.model import Node
from console.inventory.select import node_matches
from console.ui.state import NodeRow
from console.ui.text import severity_rank


class SortKey(StrEnum):
    """How the grid is ordered."""

    NAME = "name"
    SEVERITY = "severity"
    POOL = "pool"


@dataclass(frozen=True)
class ViewSpec:
    """Filter text, sort and problems-first: everything that decides the grid's rows."""

    text: str = ""
    sort: SortKey = SortKey.NAME
    problems_first: bool = False

    @property
    def depends_on_verdicts(self) -> bool:
        """True when a new verdict can move or hide a row (so a live update must re-arrange)."""
        live_terms = ("verdict=", "sched=", "drift=")
        return self.sort is SortKey.SEVERITY or self.problems_first or any(t in self.text for t in live_terms)


_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def natural_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """``gpu2`` before ``gpu10``: digit runs compare as numbers (cached: sorts run on every keystroke)."""
    return tuple((1, int(part)) if part.isdigit() else (0, part.lower()) for part in _DIGITS.split(name) if part)


def _in(names: frozenset[str], node: Node) -> bool:
    return node.name in names


def term_matcher(raw: str) -> Callable[[Node], bool]:
    """A test for one filter term with the grammar of ``node_matches``.

    A hostlist term (``gpu[001-128]``) is expanded once here rather than once per node, which is what
    keeps typing into the filter fast at a thousand nodes; every other term goes to ``node_matches``.
    """
    invert = raw.startswith("!")
    term = raw[1:] if invert else raw
    test: Callable[[Node], bool]
    if "=" not in term and ("[" in term or "," in term):
        try:
            names = frozenset(expand(term))
        except HostlistError:
            names = frozenset()
        test = partial(_in, names)
    else:
        test = partial(node_matches, expression=term)
    if invert:
        return lambda node: not test(node)
    return test


class Arranger:
    """Applies a ``ViewSpec`` to rows, remembering the filter form of each row version."""

    def __init__(self) -> None:
        self._filter_nodes: dict[str, tuple[int, Node]] = {}
        self._matchers: tuple[str, list[Callable[[Node], bool]]] = ("", [])

    def _filter_node(self, row: NodeRow) -> Node:
        cached = self._filter_nodes.get(row.name)
        if cached is not None and cached[0] == row.version:
            return cached[1]
        labels = {
            **row.node.labels,
            "verdict": row.status.value if row.status is not None else "none",
            "sched": row.scheduler_word or "unknown",
            "drift": "yes" if row.drift else "no",
        }
        node = row.node.model_copy(update={"labels": labels})
        self._filter_nodes[row.name] = (row.version, node)
        return node

    def matches(self, row: NodeRow, text: str) -> bool:
        """Whether ``row`` passes the filter ``text`` (every space-separated term must match)."""
        if not text.strip():
            return True
        if self._matchers[0] != text:
            self._matchers = (text, [term_matcher(t) for t in text.split() if t.lstrip("!")])
        node = self._filter_node(row)
        return all(test(node) for test in self._matchers[1])

    def arrange(self, rows: list[NodeRow], spec: ViewSpec) -> list[str]:
        """Names of the rows to show, in order."""
        shown = [r for r in rows if self.matches(r, spec.text)]
        if spec.sort is SortKey.SEVERITY:
            shown.sort(key=lambda r: (severity_rank(r.status), natural_key(r.name)))
        elif spec.sort is SortKey.POOL:
            shown.sort(key=lambda r: (natural_key(r.node.pool), natural_key(r.name)))
        else:
            shown.sort(key=lambda r: natural_key(r.name))
        if spec.problems_first:
            shown.sort(key=lambda r: not r.problem)  # stable: keeps the chosen order inside each group
        return [r.name for r in shown]
