"""Selecting nodes from an inventory: hostlists, pools and ``key=value`` labels, with ``!`` to invert.

A term is a hostlist (``gpu[001-004]``), ``pool=NAME``, ``key=value`` on labels, or plain text matched
as a substring of the name; a leading ``!`` inverts it. Terms combine two ways:

- ``/`` in the TUI narrows: every space-separated term must match (``node_matches``), as a k9s filter.
- ``--nodes`` on the command line is a union, as clush's ``-w`` and nodeset are: terms separated by
  spaces or commas add nodes (``--nodes 'gpu001 gpu005'`` is both), ``!term`` takes nodes out of that
  union (of every node when nothing is added), and ``&`` joins terms that must all hold
  (``--nodes 'pool=mi300x&rack=r01'``). A plain term that is a node's whole name selects that node alone.

On the command line a selection must also be exact (``selection_problem``): a hostlist naming a node
the inventory does not have is an error, never a smaller sweep that exits 0 for a prolog.
"""

from __future__ import annotations

from console.inventory.hostlist import HostlistError, expand
from console.inventory.model import Inventory, Node


def _term_matches(node: Node, term: str) -> bool:
    if "=" in term:
        key, _, value = term.partition("=")
        key, value = key.strip(), value.strip()
        if key == "name":
            return node.name == value
        have = node.labels.get(key)
        return have is not None and have == value
    if "[" in term or "," in term:
        try:
            return node.name in expand(term)
        except HostlistError:
            return False
    return term.lower() in node.name.lower()


def node_matches(node: Node, expression: str) -> bool:
    """True when every space-separated term of ``expression`` matches ``node``."""
    for raw in expression.split():
        invert = raw.startswith("!")
        term = raw[1:] if invert else raw
        if not term:
            continue
        if _term_matches(node, term) == invert:
            return False
    return True


def _exact(names: set[str], raw: str) -> str:
    """``raw`` made ``name=`` that node when it is a plain term naming a node (``!`` kept).

    ``--nodes gpu1`` in a prolog means gpu1, not gpu1 and gpu10-gpu19 as a substring would; a term
    naming no node stays a substring (``--nodes mi300`` for every node with it in its name).
    """
    invert, term = ("!", raw[1:]) if raw.startswith("!") else ("", raw)
    plain = "=" not in term and "[" not in term and "," not in term
    return f"{invert}name={term}" if plain and term in names else raw


def command_line_terms(expression: str) -> list[str]:
    """The union's terms of a ``--nodes`` expression: split at spaces and at commas outside brackets.

    ``gpu[1-3,5],login n7`` is three terms: the comma inside the hostlist's brackets stays with it.
    """
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in expression:
        depth += (char == "[") - (char == "]")
        if char.isspace() or (char == "," and depth <= 0):
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [term for term in terms if term.strip("&")]


def _all_hold(node: Node, names: set[str], group: str) -> bool:
    """True when every ``&``-joined term of ``group`` matches ``node`` (each may be inverted)."""
    return all(node_matches(node, _exact(names, part)) for part in group.split("&") if part)


def select_nodes(inventory: Inventory, expression: str | None) -> list[Node]:
    """Nodes of ``inventory`` the command-line ``expression`` selects (all of them for None or empty)."""
    if not expression or not expression.strip():
        return list(inventory.nodes)
    names = {node.name for node in inventory.nodes}
    terms = command_line_terms(expression)
    added = [t for t in terms if not t.startswith("!")]
    removed = [t[1:] for t in terms if t.startswith("!")]
    return [
        node
        for node in inventory.nodes
        if (not added or any(_all_hold(node, names, group) for group in added))
        and not any(_all_hold(node, names, group) for group in removed)
    ]


class SelectionError(ValueError):
    """A ``--nodes`` selection that names unknown nodes, is malformed, or matches nothing."""


def select_exactly(inventory: Inventory, expression: str | None) -> list[Node]:
    """``select_nodes`` for the command line; SelectionError says what is wrong with the selection."""
    problem = selection_problem(inventory, expression)
    if problem is not None:
        raise SelectionError(f"--nodes: {problem}")
    nodes = select_nodes(inventory, expression)
    if not nodes:
        raise SelectionError(f"no node matches {expression or ''!r}")
    return nodes


def selection_problem(inventory: Inventory, expression: str | None) -> str | None:
    """What is wrong with a command-line selection: a malformed hostlist, or names not in the inventory.

    Hostlist terms (``gpu[001-004]``) must name only nodes the inventory has, and a plain term the
    union adds must select some node (``gpu001,gpu0O2`` names a node that is not there); pools and
    labels select what they match, and an inverted term may name anything.
    """
    known = {node.name for node in inventory.nodes}
    unknown: list[str] = []
    for group in command_line_terms(expression or ""):
        if group.startswith("!"):
            continue
        parts = [part for part in group.split("&") if part]
        for raw in parts:
            if raw.startswith("!") or "=" in raw or "[" not in raw:
                continue
            try:
                names = expand(raw)
            except HostlistError as exc:
                return f"malformed hostlist {raw!r}: {exc}"
            unknown += [name for name in names if name not in known]
        plain = len(parts) == 1 and "=" not in group and "[" not in group
        if plain and not any(group.lower() in name.lower() for name in known):
            unknown.append(group)
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        return f"not in the inventory: {shown}"
    return None
