"""The command line as data, read from the argparse definitions: what shell completion and the man page show.

``command_tree(build_parser())`` walks every subcommand once; the completion scripts (``console.commands.shells``)
and the man page (``console.commands.manpage``) are written from the tree, so neither can list an option the
parser does not have. What a value is (a file, a node, a pool...) is read from the option's destination,
type and metavar, as the options are declared once in ``console.commands.arguments``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Kind(StrEnum):
    """What an option's value or a positional argument is, and so what completes it."""

    NONE = "none"  # free text or a number: nothing to offer
    FILE = "file"
    DIR = "dir"
    CHOICE = "choice"  # one of ``choices``
    NODE = "node"  # one node of the cluster file
    NODES = "nodes"  # a hostlist of nodes
    SELECTION = "selection"  # a --nodes expression: hostlists, names, pool=NAME
    POOL = "pool"


# Values named by their destination: the same dest means the same thing in every command (arguments.py).
_BY_DEST: dict[str, Kind] = {
    "inventory": Kind.FILE,
    "store": Kind.FILE,
    "json": Kind.FILE,
    "junit": Kind.FILE,
    "prom": Kind.FILE,
    "exclude_out": Kind.FILE,
    "from_cache": Kind.FILE,
    "scenario": Kind.FILE,
    "inventory_out": Kind.FILE,
    "kubeconfig": Kind.FILE,
    "file": Kind.FILE,
    "output": Kind.FILE,
    "checks": Kind.DIR,
    "state_dir": Kind.DIR,
    "node": Kind.NODE,
    "from_node": Kind.NODE,
    "enforce": Kind.NODES,
    "hosts": Kind.NODES,
    "pool": Kind.POOL,
}


@dataclass(frozen=True)
class Option:
    """One ``-x/--xx`` option."""

    flags: tuple[str, ...]
    help: str
    metavar: str
    takes_value: bool
    kind: Kind
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Positional:
    """One positional argument."""

    name: str
    help: str
    kind: Kind
    optional: bool
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    """A command (the program itself at the root) with its options, arguments and subcommands."""

    path: tuple[str, ...]
    help: str
    description: str
    usage: str
    epilog: str
    options: tuple[Option, ...]
    positionals: tuple[Positional, ...]
    subcommands: tuple[Command, ...] = ()

    @property
    def name(self) -> str:
        """The words after the program's name (``sim serve``), empty at the root."""
        return " ".join(self.path)

    def walk(self) -> list[Command]:
        """This command and every command under it, depth first, in --help order."""
        found = [self]
        for sub in self.subcommands:
            found += sub.walk()
        return found


def _kind(action: argparse.Action) -> Kind:
    if action.choices:
        return Kind.CHOICE
    if action.dest == "nodes":  # --nodes EXPR selects; a positional NODES (drain, revalidate) is a hostlist
        return Kind.SELECTION if action.option_strings else Kind.NODES
    if action.dest in _BY_DEST:
        return _BY_DEST[action.dest]
    return Kind.FILE if action.type is Path else Kind.NONE


def _metavar(action: argparse.Action) -> str:
    if isinstance(action.metavar, str):
        return action.metavar
    return action.dest.upper()


def _choices(action: argparse.Action) -> tuple[str, ...]:
    return tuple(str(c) for c in action.choices) if action.choices else ()


def _shown(text: str | None) -> str:
    """Help text as printed (``%(default)s`` and the like filled in is not used here; rST quotes dropped)."""
    return (text or "").replace("``", "").strip()


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage lines without ``usage:``, their continuation indented under the program's name."""
    first, *rest = parser.format_usage().strip().splitlines()
    return "\n".join([first.removeprefix("usage: "), *(line.removeprefix(" " * len("usage: ")) for line in rest)])


def _option(action: argparse.Action) -> Option:
    takes = action.nargs != 0
    return Option(
        flags=tuple(action.option_strings),
        help=_shown(action.help),
        metavar=_metavar(action) if takes else "",
        takes_value=takes,
        kind=_kind(action) if takes else Kind.NONE,
        choices=_choices(action),
    )


def command_tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> Command:
    """The command ``parser`` defines, with every subcommand; options hidden with ``SUPPRESS`` are left out."""
    options: list[Option] = []
    positionals: list[Positional] = []
    subcommands: list[Command] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in action._choices_actions}
            for name, sub in action.choices.items():
                subcommands.append(command_tree(sub, (*path, name), helps.get(name, "")))
        elif action.help == argparse.SUPPRESS:
            continue
        elif action.option_strings:
            options.append(_option(action))
        else:
            positionals.append(
                Positional(
                    _metavar(action), _shown(action.help), _kind(action), action.nargs in ("?", "*"), _choices(action)
                )
            )
    return Command(
        path=path,
        help=_shown(help),
        description=_shown(parser.description),
        usage=_usage(parser),
        epilog=parser.epilog or "",
        options=tuple(options),
        positionals=tuple(positionals),
        subcommands=tuple(subcommands),
    )
