"""``instinct-console`` command line: one subcommand module per job under ``console.commands``.

Each module exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a callable
taking the parsed namespace and returning an exit code. The TUI is imported only by the commands
that open it, so headless commands never load Textual.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from console import __version__
from console.commands.arguments import OneLineParser
from console.exitcodes import EXIT_CODE_HELP, ExitCode
from console.runtime import tune_gc

# Order is the order shown in --help.
COMMAND_MODULES: tuple[str, ...] = ("tui", "demo", "sweep", "local", "parse", "history", "sim", "actions")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered."""
    parser = OneLineParser(
        prog="instinct-console",
        description="Health console for AMD Instinct GPU clusters.",
        epilog=EXIT_CODE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"console.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    tune_gc()
    func = getattr(args, "func", None)
    if func is None:
        # No subcommand: open the console on the default inventory (the TUI), once it exists.
        if "tui" in COMMAND_MODULES:
            tui_args = parser.parse_args(["tui", *(argv or sys.argv[1:])])
            return int(tui_args.func(tui_args))
        parser.print_help()
        return int(ExitCode.USAGE)
    try:
        return int(func(args))
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
