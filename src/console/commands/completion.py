"""``instinct-console completion bash|zsh|fish``: print the shell's completion script; and the words it asks for.

The scripts (``console.commands.shells``) complete commands, options and choices from their own tables;
for node names, pools and hostlists they run ``instinct-console __complete KIND [--inventory FILE]``,
which ``console.cli`` answers before building the parser, so a Tab costs the cluster file's reading alone.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.exitcodes import ExitCode

EPILOG = """turn it on (again after an upgrade):
  bash  instinct-console completion bash > ~/.local/share/bash-completion/completions/instinct-console
  zsh   instinct-console completion zsh > ~/.zfunc/_instinct-console   (fpath=(~/.zfunc $fpath) before compinit)
  fish  instinct-console completion fish > ~/.config/fish/completions/instinct-console.fish

Node names, pools and hostlists come from the cluster file given with -i on the line, else the default one.

exit codes:
  0    printed"""

KINDS = ("node", "nodes", "selection", "pool")


def register(sub: Any) -> None:
    """Add the ``completion`` subcommand."""
    p = sub.add_parser(
        "completion",
        help="print the shell completion script for bash, zsh or fish",
        description="Print the completion script for a shell: commands, options, choices, and node names,"
        " pools and hostlists from the cluster file.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell``, written from this version's own argument definitions."""
    from console.cli import build_parser
    from console.commands.cli_tree import command_tree
    from console.commands.shells import SCRIPTS

    sys.stdout.write(SCRIPTS[args.shell](command_tree(build_parser())))
    return int(ExitCode.OK)


def words(kind: str, inventory: str | None) -> list[str]:
    """What completes a value of ``kind`` from the cluster file (``-i``, else the default one); [] without one.

    ``node`` gives node names, ``pool`` pool names, ``nodes`` names and each pool's hostlist, ``selection``
    those and ``pool=NAME`` terms.
    """
    from pathlib import Path

    from console.inventory import InventoryError, default_inventory_paths, fold, load_inventory

    path = Path(inventory) if inventory else next((p for p in default_inventory_paths() if p.is_file()), None)
    if path is None or not path.is_file():
        return []
    try:
        cluster = load_inventory(path)
    except (InventoryError, OSError, ValueError):
        return []  # a Tab offers nothing rather than print an error into the command line
    pools = list(cluster.pools)
    names = [node.name for node in cluster.nodes]
    hostlists = [fold(n.name for n in cluster.nodes if n.pool == pool) for pool in pools]
    return {
        "node": names,
        "pool": pools,
        "nodes": [*hostlists, *names],
        "selection": [*(f"pool={pool}" for pool in pools), *hostlists, *names],
    }.get(kind, [])


def complete(argv: list[str]) -> int:
    """``__complete KIND [--inventory FILE]``: one word a line on stdout; always exit 0."""
    inventory = argv[argv.index("--inventory") + 1] if "--inventory" in argv[:-1] else None
    for word in dict.fromkeys(words(argv[0] if argv else "", inventory)):
        print(word)
    return int(ExitCode.OK)
