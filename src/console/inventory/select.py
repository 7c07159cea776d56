"""Selecting nodes from an inventory: hostlists, pools and ``key=value`` labels, with ``!`` to invert.

The same grammar serves ``--nodes`` on the command line and ``/`` in the TUI: terms separated by
spaces must all match; a term is a hostlist (``gpu[001-004]``), ``pool=NAME``, ``key=value`` on labels,
or plain text matched as a substring of the name; a leading ``!`` inverts the term.
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


def select_nodes(inventory: Inventory, expression: str | None) -> list[Node]:
    """Nodes of ``inventory`` matching ``expression`` (all of them for None or empty)."""
    if not expression or not expression.strip():
        return list(inventory.nodes)
    return [node for node in inventory.nodes if node_matches(node, expression)]
