"""What a headless sweep prints when it ends: one line per node that is not healthy, by default.

At 1,000 nodes a summary of every finding scrolls the one line that matters (the exit code) off the
screen. The default gives each node that is not PASS its verdict, next step, worst finding and how many
more there are; ``--verbose`` lists every finding; ``--quiet`` prints nothing but the problems, and the
exit code says the rest.
"""

from __future__ import annotations

from enum import StrEnum

from rich.console import Console
from rich.markup import escape

from console.exitcodes import ExitCode
from console.inert import printable
from console.model.findings import Finding, Status
from console.report import NodeReport
from console.sweep import SweepResult

_SHOWN = (Status.FAIL, Status.UNKNOWN, Status.WARN)
_COLOUR = {Status.FAIL: "red", Status.UNKNOWN: "magenta", Status.WARN: "yellow"}


class Detail(StrEnum):
    """How much of the sweep the summary says."""

    QUIET = "quiet"  # problems only: the exit code says the rest
    NODES = "nodes"  # a line per node that is not PASS (the default)
    FINDINGS = "findings"  # and under it every finding that is not PASS (--verbose)


def _shown(text: str) -> str:
    """Text from nodes and files as Rich markup that prints it literally: no markup, no escape sequences."""
    return escape(printable(text))


def _said(node: NodeReport, finding: Finding) -> str:
    """The finding as a line of the node's: where on the node, the message, and the step it calls for."""
    where = finding.subject.label()[len(node.node) :].strip()
    prefix = f"{where}: " if where else ""
    then = finding.evidence.action
    if then is None or finding.status is Status.UNKNOWN or f"-> {then.value}" in finding.message:
        return prefix + finding.message
    return f"{prefix}{finding.message} -> {then.value}"


def _ranked(node: NodeReport) -> list[Finding]:
    """The node's findings that are not healthy, gravest first (stable: the engine's order within a status)."""
    found = [f for f in node.findings if f.status in _SHOWN]
    return sorted(found, key=lambda f: -f.status.severity)


def print_summary(
    console: Console,
    nodes: list[NodeReport],
    result: SweepResult,
    code: ExitCode,
    *,
    problems: list[str] | None = None,
    detail: Detail = Detail.NODES,
) -> None:
    """The sweep's counts, its nodes that are not PASS (as ``detail`` says), its problems and its exit."""
    if detail is not Detail.QUIET:
        counts = " ".join(f"{s.value}={n}" for s, n in result.counts.items() if n)
        console.print(f"sweep {result.sweep_id}: {len(result.verdicts)} nodes in {result.duration_s:.1f} s: {counts}")
        for node in nodes:
            if node.status in _SHOWN:
                _print_node(console, node, detail)
    for problem in problems or []:
        console.print(f"[red]{_shown(problem)}[/]")
    if detail is not Detail.QUIET:
        console.print(f"exit {int(code)} ({code.name.lower()})")


def _print_node(console: Console, node: NodeReport, detail: Detail) -> None:
    action = f"  next: {node.action.value}" if node.action else ""
    head = f"  [{_COLOUR[node.status]}]{node.status.value:7}[/] {_shown(node.node)}{action}"
    ranked = _ranked(node)
    if detail is Detail.FINDINGS:
        console.print(head)
        for finding in ranked:
            console.print(f"           {finding.status.value:7} {_shown(_said(node, finding))}")
        return
    if not ranked:  # a node judged without findings (unreachable): its reason is its worst
        console.print(f"{head}  {_shown(node.reason)}" if node.reason else head)
        return
    more = f" (+{len(ranked) - 1} more)" if len(ranked) > 1 else ""
    console.print(f"{head}  {_shown(_said(node, ranked[0]))}{more}")
