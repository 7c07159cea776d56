"""``workload-check``: judge the output of a run of a workload the cluster file declares (docs/workloads.md).

The operator (or a CI job) runs the workload; the console reads its figures and judges them against
the workload's criteria, with the exit code a sweep would give. ``--command`` prints what the console
would run instead (its container and srun wrapping included).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from console.checks.workload import judge_workload
from console.commands.arguments import UsageError, add_inventory, whole
from console.exitcodes import exit_code_for
from console.inert import printable
from console.inventory import expand, load_inventory
from console.model.findings import Status, Subject
from console.probes.workload import workload_argv

EXIT_HELP = """exit codes:
  0  every criterion passed (WARN findings do not change it)
  1  the run exited non-zero, a figure crossed a fail_if line, or a figure is NaN or infinite
  2  usage or configuration error (no such workload, an unreadable file)
  3  none failed, but a figure could not be read from the output"""


def register(sub: Any) -> None:
    """Add the ``workload-check`` subcommand."""
    p = sub.add_parser(
        "workload-check",
        help="judge the output of a declared workload's run against its criteria",
        description="Read a workload run's figures as the cluster file declares them and judge them.",
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_inventory(p, required=True, help="cluster file declaring the workload ([[workloads]])")
    p.add_argument("workload", help="the workload's name")
    p.add_argument("output", nargs="?", default="-", help="what the run printed: a file, or - for standard input")
    p.add_argument("--exit-status", type=whole(0), metavar="N", help="the run's exit status (required to judge)")
    p.add_argument("--node", default="-", help="the node (or job) the run was on, as findings name it")
    p.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    p.add_argument("--command", action="store_true", help="print the argv the console would run, and exit")
    p.add_argument(
        "--hosts",
        metavar="HOSTLIST",
        help="for a workload on more than one node: the group it runs on (srun's --nodelist with --command;"
        " the node of each task when judging)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Judge the output; returns the exit code documented above."""
    inventory = load_inventory(args.inventory)
    spec = inventory.workloads.get(args.workload)
    if spec is None:
        declared = ", ".join(inventory.workloads) or "none"
        raise UsageError(f"no workload {args.workload!r} in {args.inventory} (declared: {declared})")
    hosts = list(expand(args.hosts)) if args.hosts else []
    if args.command:
        print(printable(shlex.join(workload_argv(spec, hosts))))
        if spec.nodes > 1 and not hosts:
            # The console holds srun to the group it placed the run on; without --hosts there is none yet.
            print("note: a sweep adds --nodelist=<the group's nodes> (--hosts HOSTLIST shows it)", file=sys.stderr)
        return 0
    if args.exit_status is None:
        raise UsageError("--exit-status N is required: a run's exit status is one of its criteria")
    try:
        text = sys.stdin.read() if args.output == "-" else Path(args.output).read_text("utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {args.output}: {exc.strerror or exc}") from None
    findings = judge_workload(spec, Subject(node=args.node), text, args.exit_status, hosts)
    if args.json:
        payload = {"workload": spec.name, "findings": [f.model_dump(mode="json") for f in findings]}
        json.dump(payload, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for finding in findings:
            print(f"{finding.status.value:<8} {printable(finding.message)}  [{finding.check_id}]")
    statuses = [f.status for f in findings]
    return int(exit_code_for([max(statuses, key=lambda s: s.severity)] if statuses else [Status.UNKNOWN]))
