"""``instinct-console`` command line: one subcommand module per job under ``console.commands``.

Each module exposes ``register(subparsers)``, which adds its parser and sets ``func`` to a callable
taking the parsed namespace and returning an exit code. The TUI is imported only by the commands
that open it, so headless commands never load Textual.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import traceback
from collections.abc import Sequence
from types import TracebackType

from console import __version__
from console.exitcodes import SWEEP_EXIT_CODE_HELP, ExitCode
from console.inert import printable
from console.runtime import tune_gc

# Order is the order shown in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "tui",
    "demo",
    "sweep",
    "local",
    "parse",
    "workload",
    "history",
    "acceptance",
    "sim",
    "actions",
    "lifecycle",
    "watch",
    "evidence",
    "completion",
    "guide",
    "config",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every subcommand registered."""
    from console.commands.arguments import OneLineParser

    parser = OneLineParser(
        prog="instinct-console",
        description="Health console for AMD Instinct GPU clusters.",
        # The sweep's codes, which most gates read; every other command's --help gives its own.
        epilog=SWEEP_EXIT_CODE_HELP.replace(
            "exit codes:",
            "exit codes of sweep, check-local and demo --headless (each command's --help gives its own):",
            1,
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"console.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    sys.excepthook = _inert_traceback
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["__complete"]:
        # A shell's Tab asks for node names: answered without importing every command for the parser
        # (the commands are imported here, not at the top, for the same reason).
        from console.commands.completion import complete

        return complete(given[1:])
    from console.commands.arguments import USAGE_ERRORS, usage_error_line

    parser = build_parser()
    from console.commands.site_config import apply_site_config, load_site_config

    try:  # the site's and the user's defaults (console.commands.site_config); the command line still wins
        apply_site_config(parser, load_site_config())
    except USAGE_ERRORS as exc:
        print(usage_error_line(parser.prog, exc), file=sys.stderr)
        return int(ExitCode.USAGE)
    args = parser.parse_args(argv)
    tune_gc()
    if getattr(args, "func", None) is None:
        if "tui" not in COMMAND_MODULES:
            parser.print_help()
            return int(ExitCode.USAGE)
        # No subcommand: open the console on the default inventory (the TUI), its errors handled as below.
        args = parser.parse_args(["tui", *(argv or sys.argv[1:])])
    func = args.func
    try:
        code = int(func(args))
        # Output still buffered for a reader that left (`| head -1`) fails here, not in the interpreter's exit.
        sys.stdout.flush()
        return code
    except USAGE_ERRORS as exc:  # the one place usage and configuration errors become exit 2
        print(usage_error_line(f"{parser.prog} {args.command}", exc), file=sys.stderr)
        return int(ExitCode.USAGE)
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)


def _inert_traceback(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """A crash's traceback, made inert: its message may quote a node, a file or a scheduler (console.inert)."""
    text = "".join(traceback.format_exception(kind, exc, tb))
    sys.stderr.write(printable(text, keep_newlines=True))


def _reader_gone() -> int:
    """Stop quietly, as a tool killed by SIGPIPE does, when the reader of stdout went away."""
    # What is left in stdout's buffer goes nowhere, or the interpreter's own flush at exit would fail again.
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 128 + signal.SIGPIPE
