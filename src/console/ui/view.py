"""Which nodes the grid shows and in what order: the ``/`` filter, the sorts and problems-first.

The filter grammar is the inventory's (``console.inventory.select.node_matches``: text, hostlists,
``key=value`` labels, ``!`` to invert), applied to the node with a few live labels added:
``verdict=FAIL``, ``sched=drained``, ``drift=yes``. Terms are parsed once per text here rather
than once per node (tests check both agree). No Textual here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache, partial
from typing import TypeVar

from console.inventory.hostlist import HostlistError, expand
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


@dataclass(frozen=True, slots=True)
class FilterSubject:
    """What the filter reads of a row: its name, lower-cased once, and its labels with the live ones."""

    name: str
    lower: str
    labels: dict[str, str]


def _in(names: frozenset[str], subject: FilterSubject) -> bool:
    return subject.name in names


def _named(value: str, subject: FilterSubject) -> bool:
    return subject.name == value


def _labelled(key: str, value: str, subject: FilterSubject) -> bool:
    return subject.labels.get(key) == value


def _contains(needle: str, subject: FilterSubject) -> bool:
    return needle in subject.lower


def term_matcher(raw: str) -> Callable[[FilterSubject], bool]:
    """A test for one filter term with the grammar of ``node_matches`` (tests hold the two together).

    Each term is parsed once here rather than once per node, and a hostlist term (``gpu[001-128]``)
    is expanded once: that is what keeps typing into the filter fast at a thousand nodes.
    """
    invert = raw.startswith("!")
    term = raw[1:] if invert else raw
    test: Callable[[FilterSubject], bool]
    if "=" in term:
        key, _, value = term.partition("=")
        key, value = key.strip(), value.strip()
        if key == "verdict":  # verdict=fail means what verdict=FAIL does; "none" is the not-yet-judged
            value = value.lower() if value.lower() == "none" else value.upper()
        test = partial(_named, value) if key == "name" else partial(_labelled, key, value)
    elif "[" in term or "," in term:
        try:
            names = frozenset(expand(term))
        except HostlistError:
            names = frozenset()
        test = partial(_in, names)
    else:
        test = partial(_contains, term.lower())
    if invert:
        return lambda subject: not test(subject)
    return test


LIVE_KEYS = ("verdict", "sched", "drift", "name")
VERDICT_VALUES = ("PASS", "WARN", "FAIL", "UNKNOWN", "SKIP", "none")


def filter_hint(text: str, label_keys: Iterable[str]) -> str:
    """Why a filter may show nothing: a key no node has (``verdikt=``) or a verdict that does not exist.

    A mistyped key matched no node and said nothing, so the grid looked empty for no visible reason.
    """
    known = sorted(set(label_keys)) + [k for k in LIVE_KEYS if k not in label_keys]
    for raw in terms(text):
        key, eq, value = raw.lstrip("!").partition("=")
        key, value = key.strip(), value.strip()
        if not eq:
            continue
        if key not in known:
            return f"no label {key!r} (labels: {', '.join(known)})"
        if key == "verdict" and value and value.upper() not in VERDICT_VALUES and value != "none":
            return f"no verdict {value!r} (verdicts: {', '.join(VERDICT_VALUES)})"
    return ""


def terms(text: str) -> list[str]:
    """The terms of a filter text (a lone ``!`` is no term)."""
    return [t for t in text.split() if t.lstrip("!")]


def _substring_term(term: str) -> bool:
    return not term.startswith("!") and "=" not in term and "[" not in term and "," not in term


def narrows(old: str, new: str) -> bool:
    """True when every row matching ``new`` also matches ``old``: typing on only ever re-checks old matches.

    Terms are ANDed, so it holds when each old term is still there, or is a substring term that a new
    substring term contains (``gpu0`` -> ``gpu01``). Anything else (``!x``, ``key=val``, hostlists,
    backspace) may widen the match and is re-checked in full.
    """
    new_terms = terms(new)
    lowered = [t.lower() for t in new_terms if _substring_term(t)]
    for term in terms(old):
        if term in new_terms:
            continue
        if _substring_term(term) and any(term.lower() in candidate for candidate in lowered):
            continue
        return False
    return True


RESULTS_KEPT = 64
K = TypeVar("K")
V = TypeVar("V")


def _keep(cache: dict[K, V], key: K, value: V) -> None:
    """Remember ``value`` under ``key``, dropping the oldest entry once ``RESULTS_KEPT`` are held."""
    if len(cache) >= RESULTS_KEPT:
        del cache[next(iter(cache))]
    cache[key] = value


class Arranger:
    """Applies a ``ViewSpec`` to rows.

    Remembers the filter form of each row version, and, while no row changes, the rows each filter
    text matched and each order shown: backspace finds its answer kept, typing on checks only the rows
    the shorter text matched.
    """

    def __init__(self) -> None:
        self._subjects: dict[str, tuple[int, FilterSubject]] = {}
        self._matchers: tuple[str, list[Callable[[FilterSubject], bool]]] = ("", [])
        self._signature: tuple[tuple[str, ...], tuple[int, ...]] = ((), ())
        self._matched: dict[str, list[int]] = {}
        self._orders: dict[tuple[str, SortKey, bool], list[str]] = {}

    def _subject(self, row: NodeRow) -> FilterSubject:
        cached = self._subjects.get(row.name)
        if cached is not None and cached[0] == row.version:
            return cached[1]
        node = row.node
        labels = {
            **node.labels,
            "verdict": row.status.value if row.status is not None else "none",
            "sched": row.scheduler_word or "unknown",
            "drift": "yes" if row.drift else "no",
        }
        subject = FilterSubject(node.name, node.name.lower(), labels)
        self._subjects[row.name] = (row.version, subject)
        return subject

    def _tests(self, text: str) -> list[Callable[[FilterSubject], bool]]:
        if self._matchers[0] != text:
            self._matchers = (text, [term_matcher(t) for t in terms(text)])
        return self._matchers[1]

    def matches(self, row: NodeRow, text: str) -> bool:
        """Whether ``row`` passes the filter ``text`` (every space-separated term must match)."""
        subject = self._subject(row)
        return all(test(subject) for test in self._tests(text))

    def _match(self, rows: list[NodeRow], text: str) -> list[int]:
        """Positions in ``rows`` of the rows matching ``text``."""
        kept = self._matched.get(text)
        if kept is not None:
            return kept
        candidates: range | list[int] = range(len(rows))
        for old, matched in self._matched.items():
            if len(matched) < len(candidates) and narrows(old, text):
                candidates = matched
        tests = self._tests(text)
        subject = self._subject
        found = [i for i in candidates if all(test(subject(rows[i])) for test in tests)] if tests else list(candidates)
        _keep(self._matched, text, found)
        return found

    def arrange(self, rows: list[NodeRow], spec: ViewSpec) -> list[str]:
        """Names of the rows to show, in order."""
        signature = (tuple(r.node.name for r in rows), tuple(r.version for r in rows))
        if signature != self._signature:
            self._signature = signature
            self._matched.clear()
            self._orders.clear()
        key = (spec.text, spec.sort, spec.problems_first)
        order = self._orders.get(key)
        if order is None:
            order = self._order([rows[i] for i in self._match(rows, spec.text)], spec)
            _keep(self._orders, key, order)
        return list(order)

    @staticmethod
    def _order(shown: list[NodeRow], spec: ViewSpec) -> list[str]:
        if spec.sort is SortKey.SEVERITY:
            shown.sort(key=lambda r: (severity_rank(r.status), natural_key(r.name)))
        elif spec.sort is SortKey.POOL:
            shown.sort(key=lambda r: (natural_key(r.node.pool), natural_key(r.name)))
        else:
            shown.sort(key=lambda r: natural_key(r.name))
        if spec.problems_first:
            shown.sort(key=lambda r: not r.problem)  # stable: keeps the chosen order inside each group
        return [r.name for r in shown]
