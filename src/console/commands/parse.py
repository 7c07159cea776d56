"""``instinct-console parse``: read a pasted or saved tool output and say what it shows."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.markup import escape
from rich.table import Table

from console.commands.terminal import plain_console
from console.probes import ParsedOutput, ParseError, Tool, parse_output
from console.report.text import printable

EXIT_HELP = """exit codes:
  0  parsed and the tool reported success
  1  parsed and the tool reported a failure, did not finish, or declined to test (nothing measured)
  2  not recognised or unreadable (one-line reason on stderr)"""


def register(sub: Any) -> None:
    """Add the ``parse`` subcommand."""
    p = sub.add_parser(
        "parse",
        help="parse output of amd-smi, rocm-smi, rocminfo, rvs, rccl-tests or TransferBench",
        description="Detect the tool and kind of an output from its text alone and summarise it.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", nargs="?", default="-", help="file to read, or - for standard input")
    p.add_argument(
        "--as",
        dest="as_",
        metavar="TOOL[:KIND]",
        help=f"skip detection; TOOL is one of {', '.join(t.value for t in Tool)}",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.set_defaults(func=run)


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as fh:
        return fh.read()


def _override(value: str | None) -> tuple[Tool | None, str | None]:
    if not value:
        return None, None
    tool_name, _, kind = value.partition(":")
    try:
        return Tool(tool_name.strip().lower()), (kind.strip() or None)
    except ValueError:
        raise ParseError(f"unknown tool {tool_name!r}; expected one of {', '.join(t.value for t in Tool)}") from None


def to_json_object(result: ParsedOutput) -> dict[str, Any]:
    """The ``--json`` object: tool, kind, ok, errors, summary, data (plus warnings and version)."""
    return result.model_dump(mode="json")


def run(args: argparse.Namespace) -> int:
    """Parse the input and print a summary; returns the exit code documented above."""
    try:
        raw = _read(args.file)
        tool, kind = _override(args.as_)
        result = parse_output(raw, tool=tool, kind=kind)
    except OSError as exc:
        print(f"instinct-console parse: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ParseError as exc:
        print(f"instinct-console parse: {printable(exc.reason)}", file=sys.stderr)
        return 2
    if args.json:
        json.dump(to_json_object(result), sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    else:
        _print_summary(result)
    return 0 if result.ok and not _declined(result) else 1


def _declined(result: ParsedOutput) -> bool:
    """The tool refused to test this hardware (TransferBench's healthcheck off MI300): nothing was measured."""
    return bool(result.summary.get("unsupported"))


def _print_summary(result: ParsedOutput) -> None:
    console = plain_console()
    verdict = "[green]OK[/]" if result.ok else "[red]NOT OK[/]"
    if _declined(result):
        verdict = "[yellow]DECLINED: nothing measured[/]"

    # Everything below comes from the pasted output: escape Rich markup and make control characters visible,
    # so a paste can neither restyle nor drive the operator's terminal.
    def safe(value: object) -> str:
        return escape(printable(str(value)))

    version = f" {safe(result.tool_version)}" if result.tool_version else ""
    console.print(f"[bold]{result.tool.value}[/]{version}  kind=[bold]{safe(result.kind)}[/]  {verdict}")
    if result.summary:
        table = Table(show_header=False, box=None, pad_edge=False)
        for key, value in result.summary.items():
            table.add_row(f"  {safe(key)}", safe(value))
        console.print(table)
    for error in result.errors:
        console.print(f"  [red]error:[/] {safe(error)}")
    for warning in result.warnings[:20]:
        console.print(f"  [yellow]warning:[/] {safe(warning)}")
