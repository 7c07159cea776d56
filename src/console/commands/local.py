"""``instinct-console check-local``: sweep this node on the node itself, for a Slurm prolog or health check.

The same probes, bundles, timeouts and check packs as an SSH sweep, run through ``LocalTransport``.
``--json -`` prints one line of JSON (the node's verdict and every probe's raw output), which is what
``sweep --via-slurm`` gathers from each task of its Slurm job.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from rich.markup import escape

from console.checks import load_packs
from console.commands.arguments import UsageError, add_checks, add_inventory, seconds
from console.commands.terminal import plain_console
from console.exitcodes import EXIT_CODE_HELP, ExitCode, exit_code_for
from console.inventory import GPU_MODELS, Inventory, InventoryError, from_mapping, load_inventory
from console.model.findings import Status
from console.service.assembly import EngineSpec, build_engine
from console.sweep.catalog import ProbeSet
from console.sweep.local_check import check_local, recording_transport

EPILOG = (
    EXIT_CODE_HELP
    + """

Slurm: as a Prolog the exit code is enough (non-zero drains the node). HealthCheckProgram ignores it, so
drain from the script: instinct-console check-local -i FILE || scontrol update NodeName=$SLURMD_NODENAME \\
State=DRAIN Reason="instinct-console check-local failed\""""
)


def register(sub: Any) -> None:
    """Add the ``check-local`` subcommand."""
    p = sub.add_parser(
        "check-local",
        help="check this node on the node itself (Slurm prolog, HealthCheckProgram, sweep --via-slurm)",
        description="Run the probes of a level on this host and judge them against the check packs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_inventory(p, help="cluster file naming this node (its pool, model and pin)")
    p.add_argument("--model", choices=GPU_MODELS, type=str.upper, help="GPU model, when there is no cluster file")
    p.add_argument("--gpu-count", type=int, default=8, help="expected GPUs with --model (default 8)")
    p.add_argument("--node", help="this node's name (default $SLURMD_NODENAME, else the short hostname)")
    node_levels = [s.value for s in ProbeSet if s not in (ProbeSet.MULTINODE, ProbeSet.WORKLOAD)]
    p.add_argument("--probes", choices=node_levels, default="quick", help="probe set (default quick)")
    p.add_argument("--json", metavar="FILE", help="write the verdict and raw outputs as JSON ('-' for stdout)")
    add_checks(p)
    p.add_argument("--deadline", type=seconds, metavar="SECONDS", help="give up and exit 4 after this long")
    p.add_argument("--fail-on-warn", action="store_true", help="exit 1 on a WARN verdict too (e.g. stack drift)")
    p.set_defaults(func=run)


def node_name(given: str | None) -> str:
    """The node this runs on: ``--node``, Slurm's name for it, or the short hostname."""
    return given or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _inventory(args: argparse.Namespace, name: str) -> Inventory:
    if args.inventory:
        return load_inventory(args.inventory)
    if not args.model:
        raise InventoryError("give -i FILE (a cluster file naming this node) or --model")
    pool = {"name": "local", "gpu_model": args.model, "gpu_count": args.gpu_count, "nodes": name}
    return from_mapping({"name": "local", "pools": [pool]}, source="--model")


def run(args: argparse.Namespace) -> int:
    """Check this node; print the verdict (and JSON); return the documented exit code."""
    name = node_name(args.node)
    inventory = _inventory(args, name)
    if name not in {n.name for n in inventory.nodes}:
        raise UsageError(f"node {name!r} is not in {inventory.source} (use --node)")
    packs = load_packs(list(args.checks))
    try:
        engine = build_engine(EngineSpec(inventory, packs, None), None, recording_transport(name))
        report, result = asyncio.run(check_local(engine, name, args.probes, args.deadline))
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    if args.json == "-":
        # One ASCII line: srun --label cuts long lines into chunks, which must not split a character.
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), separators=(",", ":")) + "\n")
    elif args.json:
        Path(args.json).write_text(report.model_dump_json(indent=2) + "\n")
    out = plain_console(stderr=args.json == "-")
    verdict = report.verdict
    out.print(f"{escape(name)}: {verdict.status.value} {escape(verdict.reason)}".rstrip())
    for finding in verdict.findings:
        if finding.status in (Status.FAIL, Status.UNKNOWN, Status.WARN):
            where = finding.subject.label()[len(name) :].strip()
            out.print(f"  {finding.status.value:7} {escape((where + ': ' if where else '') + finding.message)}")
    return int(exit_code_for([verdict.status], result.outcome, fail_on_warn=args.fail_on_warn))
