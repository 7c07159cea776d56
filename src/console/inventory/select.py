"""Selecting nodes from an inventory: hostlists, pools and ``key=value`` labels, with ``!`` to invert.

The same grammar serves ``--nodes`` on the command line and ``/`` in the TUI: terms separated by
spaces must all match; a term is a hostlist (``gpu[001-004]``), ``pool=NAME``, ``key=value`` on labels,
or plain text matched as a substring of the name; a leading ``!`` inverts the term. Selecting on the
command line, a plain term that is a node's whole name selects that node alone.

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


def _names_exactly(inventory: Inventory, expression: str) -> str:
    """``expression`` with each plain term that is a node's whole name made ``name=`` that node.

    ``--nodes gpu1`` in a prolog means gpu1, not gpu1 and gpu10-gpu19 as a substring would; a term
    naming no node stays a substring (``--nodes mi300`` for every node with it in its name).
    """
    names = {node.name for node in inventory.nodes}
    exact = []
    for raw in expression.split():
        invert, term = ("!", raw[1:]) if raw.startswith("!") else ("", raw)
        plain = "=" not in term and "[" not in term and "," not in term
        exact.append(f"{invert}name={term}" if plain and term in names else raw)
    return " ".join(exact)


def select_nodes(inventory: Inventory, expression: str | None) -> list[Node]:
    """Nodes of ``inventory`` matching ``expression`` (all of them for None or empty)."""
    if not expression or not expression.strip():
        return list(inventory.nodes)
    expression = _names_exactly(inventory, expression)
    return [node for node in inventory.nodes if node_matches(node, expression)]


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

    Only hostlist terms are held to this (``gpu[001-004]``, ``a,b``); substrings, pools and labels
    select what they match, and an inverted term may name anything.
    """
    known = {node.name for node in inventory.nodes}
    unknown: list[str] = []
    for raw in (expression or "").split():
        if raw.startswith("!") or "=" in raw or not ("[" in raw or "," in raw):
            continue
        try:
            names = expand(raw)
        except HostlistError as exc:
            return f"malformed hostlist {raw!r}: {exc}"
        unknown += [name for name in names if name not in known]
    if unknown:
        shown = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        return f"not in the inventory: {shown}"
    return None
