"""``acceptance``: each workload's state on each pool (docs/workloads.md, "Acceptance"), for people and CI.

A CI job gates a stack upgrade on it: after ``sweep --probes workload`` on the upgraded pool, exit 1
says a workload regressed (FAILed, or fell beyond tolerance of its accepted figures, on a new stack or
on the accepted one: ``failing since run N``), was unstable or its rerun was blocked by a node not
judged healthy (or, with ``--require-accepted``, is not accepted on the pool's stack).
"""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET
from typing import Any

from rich.markup import escape
from rich.table import Table

from console.actions.acceptance import (
    DUE,
    NOT_ACCEPTABLE,
    NOT_ACCEPTED,
    AcceptanceState,
    acceptance_states,
    figure_trends,
)
from console.commands.arguments import (
    UsageError,
    add_force_overwrite,
    add_inventory,
    add_store,
    existing_store,
)
from console.commands.terminal import plain_console
from console.files import write_file
from console.inert import printable
from console.inventory import load_inventory
from console.inventory.hostlist import fold
from console.timestamps import local

EXIT_HELP = """states: not-accepted, accepted, accepted-again, due (the pool's stack changed since the
workload was accepted, and no rerun judged it yet, or too few of the runs it needs), regressed (the
newest run on the current stack, the accepted one included, failed or fell beyond tolerance of the
accepted figures: "failing since run N"), unstable (its repeat runs on the new stack passed but spread
wider than the tolerance), blocked (a rerun on the current stack ran on a node that sweep judged
FAIL or UNKNOWN: not acceptable, the record names the node and why; repair it and rerun), running (a
run is in progress on the pool: since when and where; the gate judges the state it was in).

exit codes:
  0  nothing regressed, unstable or blocked (and, with --require-accepted, every workload is accepted
     on its pool's stack)
  1  a workload regressed (its newest run failed or fell beyond tolerance), is unstable or is
     blocked; with --require-accepted, also one due or never accepted
  2  usage error (no history database, no such workload or pool)"""


def register(sub: Any) -> None:
    """Add the ``acceptance`` subcommand."""
    p = sub.add_parser(
        "acceptance",
        help="each workload's acceptance state on each pool (accepted, due, regressed)",
        description="List each workload's acceptance state per pool, against the pool's current stack.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(p)
    add_inventory(p, required=True, help="cluster file declaring the pools and workloads")
    p.add_argument("--workload", action="append", help="only these workloads ('framework' is the built-in one)")
    p.add_argument("--pool", action="append", help="only these pools")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--junit", metavar="PATH", help="write a JUnit XML file: one test case per workload and pool")
    add_force_overwrite(p)
    p.add_argument(
        "--require-accepted", action="store_true", help="exit 1 when a workload is due or was never accepted"
    )
    p.set_defaults(func=run)


def failing(state: AcceptanceState, require_accepted: bool) -> bool:
    """Whether ``state`` fails the gate (a run in progress judges nothing yet: its settled state counts)."""
    return state.settled in NOT_ACCEPTABLE or (require_accepted and state.settled in (DUE, NOT_ACCEPTED))


def run(args: argparse.Namespace) -> int:
    """Print the states; returns the exit code documented above."""
    inventory = load_inventory(args.inventory)
    store = existing_store(args.store, inventory)
    try:
        states = acceptance_states(store, inventory)
    finally:
        store.close()
    for wanted, known, what in (
        (args.workload, {s.workload for s in states}, "workload"),
        (args.pool, set(inventory.pools), "pool"),
    ):
        unknown = sorted(set(wanted or []) - known)
        if unknown:
            raise UsageError(f"no {what} {', '.join(unknown)} in {args.inventory}")
    states = [s for s in states if s.workload in (args.workload or [s.workload]) and s.pool in (args.pool or [s.pool])]
    failed = [s for s in states if failing(s, args.require_accepted)]
    if args.junit:
        write_file(args.junit, _junit(states, args.require_accepted), force=args.force_overwrite)
    if args.json:
        print(json.dumps({"states": [s.as_json() for s in states], "failed": len(failed)}, indent=2))
    else:
        _print(states)
    return 1 if failed else 0


def _stack(stack: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in stack.items()) or "-"


def _figures(figures: dict[str, float]) -> str:
    return " ".join(f"{k}={v:g}" for k, v in figures.items()) or "-"


def _trend(state: AcceptanceState) -> str:
    """Each figure's last values, oldest first, and the newest one's move: ``tok_s 51234 50980 44100 ↓``."""
    lines = []
    for name, trend in figure_trends(state.trend).items():
        lines.append(" ".join([name, *(f"{v:g}" for v in trend.values), trend.arrow]).rstrip())
    return "\n".join(lines) or "-"


def failing_line(state: AcceptanceState) -> str:
    """``failing since run #12`` (the sweep of the first of the not acceptable runs in a row), or ''."""
    return f"failing since run #{state.failing_since}" if state.failing_since is not None else ""


def _state(state: AcceptanceState) -> str:
    run = state.running
    if run is None:
        return " ".join(filter(None, (state.state, failing_line(state))))
    since = local(run.started_at)
    return f"running since {since} on {fold(run.nodes)} (was {run.settled})"


def _blocked_why(reason: str) -> str:
    """A blocked record's reason without the stack change the row shows already."""
    return reason.partition("; ")[2] or reason


def _print(states: list[AcceptanceState]) -> None:
    table = Table(title="workload acceptance")
    for column in ("workload", "pool", "state", "accepted on", "changed since", "figures", "trend"):
        table.add_column(column)
    for s in states:
        accepted = s.accepted
        since = " ".join(f"{k} {a}->{c}" for k, (a, c) in s.changes.items())
        since = "\n".join([since, *(f"not covered: {line}" for line in s.uncovered_lines())]).strip() or "-"
        figures = _figures(accepted.figures) if accepted else "-"
        if s.regressed is not None:
            figures += f"  regressed: {_figures(s.regressed.figures)}\n{s.regressed.reason}"
        if s.unstable is not None:
            figures += f"  unstable: {s.unstable.reason}"
        if s.newest is not None and s.newest.compared:
            figures += f"\nnewest run #{s.newest.sweep_id}: " + "; ".join(c.line() for c in s.newest.compared)
        if s.repeat is not None:
            figures += f"\naccepted on {s.repeat.line()}"
        if s.blocked is not None:
            figures += f"  blocked (sweep {s.blocked.sweep_id}): {_blocked_why(s.blocked.reason)}"
        when = local(accepted.at, seconds=False) if accepted else ""
        on = f"{_stack(accepted.stack)} ({when}, {accepted.user}: {accepted.reason})" if accepted else "-"
        if accepted is not None and accepted.nodes:
            on += f"\nran on {fold(accepted.nodes)}"
        row = (s.workload, s.pool, _state(s), on, since, figures, _trend(s))
        table.add_row(*(escape(printable(x, keep_newlines=True)) for x in row))
    console = plain_console()
    console.print(table)
    # One line per workload failing on its newest runs, whole: what a CI log is searched for.
    for s in states:
        if s.failing_since is not None:
            console.print(escape(printable(f"{s.workload} on {s.pool}: {s.settled}, {failing_line(s)}")))


def _junit(states: list[AcceptanceState], require_accepted: bool) -> str:
    suite = ET.Element("testsuite", name="acceptance", tests=str(len(states)))
    failures = 0
    for s in states:
        case = ET.SubElement(suite, "testcase", classname=f"acceptance.{s.pool}", name=s.workload)
        if failing(s, require_accepted):
            failures += 1
            changed = ", ".join(f"{k} {a} -> {c}" for k, (a, c) in s.changes.items())
            changed = "\n".join([changed, *(f"not covered: {line}" for line in s.uncovered_lines())]).strip()
            if s.blocked is not None:
                changed += f"\n{_blocked_why(s.blocked.reason)}"
            for record in (s.regressed, s.unstable):
                if record is not None:
                    changed += f"\n{record.reason}"
            said = " ".join(filter(None, (s.settled, failing_line(s))))
            ET.SubElement(case, "failure", message=f"{s.workload} on {s.pool}: {said}").text = changed.strip()
    suite.set("failures", str(failures))
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode") + "\n"
