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
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from console.checks import CheckPack, load_packs
from console.commands.arguments import (
    UsageError,
    add_checks,
    add_force_overwrite,
    add_inventory,
    check_outputs,
    duration,
    seconds,
)
from console.commands.terminal import plain_console
from console.exitcodes import EXIT_CODE_HELP, ExitCode, exit_code_for
from console.files import OutputFailed, write_file
from console.inert import printable
from console.inventory import GPU_MODELS, Inventory, InventoryError, from_mapping, load_inventory
from console.inventory.model import StackPin
from console.model.findings import NodeVerdict, Status
from console.service.assembly import EngineSpec, build_engine
from console.store.pins import pin_from_fields
from console.sweep.cached_verdict import DEFAULT_MAX_AGE_S, gpu_list, read_cached, scoped
from console.sweep.catalog import ProbeSet
from console.sweep.checker_local import LocalChecker
from console.sweep.local_check import check_local, recording_transport
from console.sweep.node_report import LocalCheckReport

EPILOG = (
    EXIT_CODE_HELP
    + """

Slurm: as a Prolog the exit code is enough (non-zero drains the node). HealthCheckProgram ignores it, so
drain from the script. Both have seconds: keep a report fresh with a periodic check-local --json FILE and
answer from it with --from-cache FILE (scripts and slurm.conf lines: docs/slurm/ in the repository)."""
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
    p.add_argument(
        "--json", metavar="FILE", help="write the compact report (verdict, findings, digest) as JSON ('-' for stdout)"
    )
    add_force_overwrite(p)
    p.add_argument("--raw", action="store_true", help="put every probe's raw output in the JSON report even on a PASS")
    p.add_argument(
        "--pins",
        type=_pins,
        metavar="JSON",
        help="judge pools against these pins, {pool: {field: value}} (sweep --via-slurm passes the console's)",
    )
    p.add_argument(
        "--images",
        type=_images,
        metavar="JSON",
        help="images over the cluster file's, {pool: {workload: image}}: the framework probe runs in its pool's"
        " (sweep --via-slurm passes the ones rollback set back)",
    )
    add_checks(p)
    p.add_argument(
        "--from-cache",
        type=Path,
        metavar="FILE",
        help="answer at once from the report a periodic 'check-local --json FILE' keeps there (HealthCheckProgram);"
        " it needs -i too (or --model, as the periodic check ran): a report judged in another pool than the"
        " node's is no answer",
    )
    p.add_argument(
        "--max-age",
        type=duration,
        default=DEFAULT_MAX_AGE_S,
        metavar="DURATION",
        help="with --from-cache: an older report is no answer, UNKNOWN (90, 30m, 12h, 1d;"
        f" default {DEFAULT_MAX_AGE_S:g} s)",
    )
    p.add_argument(
        "--gpus",
        type=_gpus,
        metavar="LIST",
        help="judge only these GPUs' findings (a prolog: --gpus \"$SLURM_JOB_GPUS\"); the node's own always count",
    )
    p.add_argument(
        "--no-amdsmi-library",
        dest="amdsmi_library",
        action="store_false",
        help="run the amd-smi command for every probe even where the amdsmi Python library is importable",
    )
    p.add_argument("--deadline", type=seconds, metavar="SECONDS", help="give up and exit 4 after this long")
    p.add_argument("--fail-on-warn", action="store_true", help="exit 1 on a WARN verdict too (e.g. stack drift)")
    p.set_defaults(func=run)


def node_name(given: str | None) -> str:
    """The node this runs on: ``--node``, Slurm's name for it, or the short hostname."""
    return given or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _per_pool(option: str, text: str) -> dict[str, dict[str, str]]:
    """A console's JSON of {pool: {key: value}} (``--pins``, ``--images``), or the usage error naming it."""
    try:
        given = json.loads(text)
        if not isinstance(given, dict) or not all(isinstance(v, dict) for v in given.values()):
            raise ValueError("not an object of objects")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{option} {text[:80]!r}: {exc}") from None
    return {str(pool): {str(k): str(v) for k, v in fields.items()} for pool, fields in given.items()}


def _pins(text: str) -> dict[str, StackPin]:
    """``--pins``: {pool: {field: value}} in ``pinned_fields`` form (``firmware.PM`` for a firmware block)."""
    given = _per_pool("--pins", text)
    try:
        return {pool: pin_from_fields(fields) for pool, fields in given.items()}
    except ValueError as exc:  # a field StackPin refuses
        raise argparse.ArgumentTypeError(f"--pins {text[:80]!r}: {exc}") from None


def _images(text: str) -> dict[tuple[str, str], str]:
    """``--images``: {pool: {workload: image}}, as the store keeps them: (workload, pool) -> image."""
    return {
        (workload, pool): image
        for pool, images in _per_pool("--images", text).items()
        for workload, image in images.items()
    }


def _gpus(text: str) -> set[int] | None:
    """``--gpus``: ``0,1,3`` or ``0-3``; empty for every GPU."""
    try:
        return gpu_list(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--gpus {text!r}: GPU indices such as 0,1,3 or 0-3") from None


def _inventory(args: argparse.Namespace, name: str) -> Inventory:
    if args.inventory:
        return load_inventory(args.inventory)
    if not args.model:
        if args.from_cache is not None:  # the report is read, but the node's pool is needed to trust it
            raise InventoryError(
                "give -i FILE (the cluster file naming this node) with --from-cache: the cached report answers"
                " only if it was judged in the node's pool (or --model, if the periodic check ran with --model)"
            )
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
    check_outputs(args, "json")  # refused before the probes run, and again as it is written
    if args.from_cache is not None:
        return _answer_from_cache(args, inventory, name, packs)
    try:
        spec = EngineSpec(inventory, packs, None, pins=args.pins, images=args.images)
        engine = build_engine(spec, None, LocalChecker(recording_transport(name, use_library=args.amdsmi_library)))
        report, result = asyncio.run(check_local(engine, name, args.probes, args.deadline, raw=args.raw))
    except KeyboardInterrupt:
        return int(ExitCode.INTERRUPTED)
    if args.json == "-":
        # One ASCII line: srun --label cuts long lines into chunks, which must not split a character.
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), separators=(",", ":")) + "\n")
    unwritten = ""
    if args.json and args.json != "-":
        try:
            # Replaced whole (console.files): a HealthCheckProgram reading it meanwhile sees the old report or
            # the new; a link or another user's file is refused (exit 2).
            write_file(args.json, report.model_dump_json(indent=2) + "\n", force=args.force_overwrite)
        except OutputFailed as exc:  # a full disk: the verdict is still printed, and the exit says the file is not
            unwritten = f"report not written: {args.json}: {exc.strerror or exc}"
    verdict = scoped(report, args.gpus, packs.get(report.gpu_model))
    out = plain_console(stderr=args.json == "-")
    _summary(out, report, verdict)
    code = exit_code_for([verdict.status], result.outcome, fail_on_warn=args.fail_on_warn)
    if unwritten and code != ExitCode.INTERRUPTED:
        out.print(printable(unwritten), markup=False)
        return int(ExitCode.OUTPUT_FAILED)
    return int(code)


def _answer_from_cache(args: argparse.Namespace, inventory: Inventory, name: str, packs: dict[str, CheckPack]) -> int:
    """The cached report's verdict (scoped to ``--gpus``), or UNKNOWN when there is none to trust."""
    out = plain_console()
    found = read_cached(args.from_cache, name, args.max_age)
    if isinstance(found, str):
        out.print(f"{escape(name)}: UNKNOWN {escape(found)}")
        return int(exit_code_for([Status.UNKNOWN], "done", fail_on_warn=args.fail_on_warn))
    if found.pool != inventory.node(name).pool:
        out.print(f"{escape(name)}: UNKNOWN the cached report was judged in pool {escape(found.pool)}")
        return int(exit_code_for([Status.UNKNOWN], "done", fail_on_warn=args.fail_on_warn))
    verdict = scoped(found, args.gpus, packs.get(found.gpu_model))
    _summary(out, found, verdict)
    return int(exit_code_for([verdict.status], found.outcome, fail_on_warn=args.fail_on_warn))


def _summary(out: Console, report: LocalCheckReport, verdict: NodeVerdict) -> None:
    """``verdict`` (the report's, maybe scoped to some GPUs) for a person: the verdict, counts per status,
    each finding not PASS with its evidence."""
    name = report.node
    out.print(f"{escape(name)}: {verdict.status.value} {escape(verdict.reason)}".rstrip())
    counts = Counter(f.status for f in verdict.findings)
    counts[Status.PASS] += sum(verdict.passed.values())
    shown = ", ".join(f"{counts[s]} {s.value}" for s in Status if counts[s])
    out.print(f"  findings: {shown or 'none'}; {len(report.probes)} probes, {sum(p.size for p in report.probes)} bytes")
    if report.collector:
        out.print(f"  collected by: {escape(report.collector)}")
    for finding in verdict.findings:
        if finding.status in (Status.FAIL, Status.UNKNOWN, Status.WARN):
            where = finding.subject.label()[len(name) :].strip()
            out.print(f"  {finding.status.value:7} {escape((where + ': ' if where else '') + finding.message)}")
            if finding.evidence.source:
                out.print(f"          [dim]source: {escape(finding.evidence.source)}[/]")
