"""``instinct-console sweep``: the headless sweep for pre-job gating, with reports and exit codes."""

from __future__ import annotations

import argparse
import math
import shlex
import time
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from console.actions.acceptance import record_outcomes
from console.actions.caps import CapPolicy
from console.actions.service import ActionService
from console.actions.workload_caps import as_mapping, pools_of, workload_allowance
from console.checks import load_packs
from console.commands.arguments import (
    UsageError,
    add_baseline_partners,
    add_engine_options,
    add_force_overwrite,
    add_workers,
    check_outputs,
    duration,
    seconds,
    share,
    whole,
)
from console.commands.history_gate import gate_from_history
from console.commands.interrupts import Interruption, run_interruptible
from console.commands.summary import Detail, print_summary
from console.commands.terminal import plain_console, warn_pin_overrides
from console.exitcodes import SWEEP_EXIT_CODE_HELP, ExitCode, exit_code_for
from console.files import OutputRefused, write_file
from console.inert import log_to_stderr, printable
from console.inventory import Inventory, fold, load_inventory, select_exactly
from console.model.findings import Status
from console.report import SweepReport, build_report, junit_xml, prometheus_textfile, write_json
from console.service.assembly import EngineSpec, build_checker, build_engine
from console.service.workers import default_workers
from console.store import Store, default_store_path
from console.store.db import BUSY_WAIT_S, open_for_sweeping
from console.sweep import NodeDone, ProbeSet, SweepEngine, SweepResult, SweepStarted
from console.sweep.cluster_sweep import sweep_cluster
from console.sweep.events import Event, ProbeStarted, StoreFailed
from console.sweep.multinode import MultinodeOptions, borrowable
from console.sweep.pairing import Pairing
from console.sweep.periodic import Periodic
from console.sweep.via_slurm import SlurmJobSettings


def register(sub: Any) -> None:
    """Add the ``sweep`` subcommand."""
    p = sub.add_parser(
        "sweep",
        help="sweep nodes headless: verdicts, reports and an exit code for a scheduler prolog",
        description="Run the probes of a level on every selected node and judge them against the check packs.",
        epilog=SWEEP_EXIT_CODE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=run)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``sweep`` options."""
    add_engine_options(p)
    add_workers(p)
    p.add_argument(
        "--nodes",
        metavar="EXPR",
        help="a union of hostlists, node names, pool=NAME and key=value labels (spaces or commas); "
        "'!term' takes out, 'a&b' needs both",
    )
    p.add_argument("--probes", choices=[s.value for s in ProbeSet], default="quick", help="probe set (default quick)")
    p.add_argument("--json", metavar="FILE", help="write the JSON report to FILE ('-' for stdout)")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    p.add_argument("--prom", metavar="FILE", help="write a Prometheus node_exporter textfile")
    p.add_argument("--exclude-out", metavar="FILE", help="write a hostlist of failed nodes (for sbatch --exclude)")
    p.add_argument(
        "--exclude-unknown", action="store_true", help="with --exclude-out: list nodes that could not be checked too"
    )
    add_force_overwrite(p)
    p.add_argument("--deadline", type=seconds, metavar="SECONDS", help="give up and exit 4 after this long")
    _add_summary_and_gate(p)
    _add_multinode_and_slurm(p)
    _add_workload_and_repeat(p)


def _add_summary_and_gate(p: argparse.ArgumentParser) -> None:
    """How much the summary says, and what the exit code lets through."""
    said = p.add_mutually_exclusive_group()
    said.add_argument(
        "-v",
        "--verbose",
        dest="detail",
        action="store_const",
        const=Detail.FINDINGS.value,
        default=Detail.NODES.value,
        help="list every finding that is not PASS under its node (default: a line per node, its worst finding)",
    )
    said.add_argument(
        "-q",
        "--quiet",
        dest="detail",
        action="store_const",
        const=Detail.QUIET.value,
        default=Detail.NODES.value,
        help="print no summary, only problems: the exit code says the rest",
    )
    p.add_argument(
        "--store-wait",
        type=seconds,
        default=BUSY_WAIT_S,
        metavar="SECONDS",
        help=f"most a write waits for another process's lock on the history database before the sweep stops"
        f" storing and goes on (exit 5; default {BUSY_WAIT_S:g})",
    )
    p.add_argument(
        "--allow-unknown",
        type=float,
        default=0.0,
        metavar="FRACTION",
        help="fraction of nodes that may be UNKNOWN before the exit code is 3 (default 0)",
    )
    p.add_argument(
        "--fail-on-warn",
        action="store_true",
        help="exit 1 when a node has a WARN verdict too (e.g. its stack drifted from the pool pin)",
    )


def _add_multinode_and_slurm(p: argparse.ArgumentParser) -> None:
    """How multi-node runs pair nodes, and the Slurm job mode."""
    p.add_argument(
        "--group-size",
        type=int,
        default=1,
        metavar="N",
        help="multinode: nodes per first run with the pool's reference; failing runs are bisected (default 1: pairs)",
    )
    p.add_argument(
        "--pairing",
        choices=[mode.value for mode in Pairing],
        default=Pairing.REFERENCE.value,
        help="multinode: first pass pairs each node with a known-good one (reference, default), or nodes with "
        "each other: random, within a rack, across racks, within a switch, across switches, rail-aligned "
        "(the cluster file's rack, switch and rail labels); failed pairs get a second pass",
    )
    p.add_argument(
        "--pairing-seed", type=int, default=0, metavar="N", help="multinode: seed of the random pairs (default 0)"
    )
    add_baseline_partners(p)
    p.add_argument(
        "--via-slurm",
        action="store_true",
        help="run every node's probes as one Slurm job (srun ... check-local); the inventory must be on shared storage",
    )
    p.add_argument(
        "--slurm-command",
        default="instinct-console",
        metavar="CMD",
        help="with --via-slurm: the command that runs instinct-console on the nodes (default instinct-console)",
    )
    p.add_argument(
        "--slurm-raw",
        action="store_true",
        help="with --via-slurm: every node sends its raw outputs, judged and stored here (default: not-PASS nodes)",
    )


def _add_workload_and_repeat(p: argparse.ArgumentParser) -> None:
    """The workload cap, periodic sweeps, and the gate from history."""
    p.add_argument(
        "--cap",
        type=whole(0),
        help="workload: most nodes per pool out of service at once, the run's own and those already out"
        " (default: 10%% of the pool or 2, one always stays in); the rest wait their turn",
    )
    p.add_argument(
        "--cap-fraction", type=share, default=0.10, help="workload: cap as a fraction of the pool (default 0.10)"
    )
    p.add_argument("--force", action="store_true", help="workload: run on every node at once, past the cap")
    p.add_argument("--every", type=seconds, metavar="SECONDS", help="sweep again every SECONDS; busy ticks are skipped")
    p.add_argument("--count", type=whole(1), metavar="N", help="with --every: stop after N sweeps")
    p.add_argument(
        "--max-age",
        type=duration,
        metavar="DURATION",
        help="gate from the history, running nothing: a node's last check at --probes or deeper counts if at"
        " most DURATION old (90, 30m, 12h, 1d); older or none is UNKNOWN, never PASS",
    )


class _Slowest(ProgressColumn):
    """The node the sweep has waited on longest, and for how long: at 1,000 nodes the last few hold the
    sweep, and an operator watching the bar wants to know which one to look at."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, float] = {}  # node -> when its first probe was sent (monotonic)

    def render(self, task: Any) -> Text:
        if not self.pending:
            return Text("")
        node, since = min(self.pending.items(), key=lambda item: item[1])
        return Text(f"waiting on {printable(node)} {time.monotonic() - since:.0f} s", style="dim")


class _Progress:
    """Rich progress on a terminal; silent when stderr is not one."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress: Progress | None = None
        self.task: Any = None
        self.done = 0
        self.slowest = _Slowest()

    def __enter__(self) -> _Progress:
        if self.console.is_terminal:
            self.progress = Progress(
                TextColumn("[bold]sweep[/]"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                self.slowest,
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)

    def __call__(self, event: Event) -> None:
        if self.progress is None:
            return
        if isinstance(event, SweepStarted):
            self.task = self.progress.add_task("sweep", total=len(event.nodes), status="")
        elif isinstance(event, ProbeStarted):
            self.slowest.pending.setdefault(event.node, time.monotonic())
        elif isinstance(event, NodeDone) and self.task is not None:
            self.slowest.pending.pop(event.verdict.node, None)
            self.done += 1
            mark = {Status.FAIL: "red", Status.UNKNOWN: "magenta", Status.WARN: "yellow"}.get(event.verdict.status)
            status = f"[{mark}]{_shown(event.verdict.node)} {event.verdict.status.value}[/]" if mark else ""
            self.progress.update(self.task, completed=min(self.done, self.progress.tasks[0].total or 0), status=status)


def run(args: argparse.Namespace) -> int:
    """Load the cluster and checks, sweep, write reports, return the exit code."""
    log_to_stderr()
    err = plain_console(stderr=True)
    inventory = load_inventory(args.inventory)
    packs = load_packs(list(args.checks))
    nodes = select_exactly(inventory, args.nodes)
    if not 0 <= args.allow_unknown <= 1:
        # Meant as a count, it would let every node go unchecked: say what one node of this selection is.
        one = math.ceil(1000 / len(nodes)) / 1000  # rounded up: 1/3 as 0.333 would not let one through
        raise UsageError(
            f"--allow-unknown {args.allow_unknown:g}: give a fraction of the {len(nodes)} selected"
            f" nodes, from 0 to 1 ({one:g} lets one of them be UNKNOWN)"
        )
    if args.count is not None and args.every is None:
        raise UsageError("--count needs --every")
    if args.probes == ProbeSet.WORKLOAD and not inventory.workloads:
        raise UsageError(f"--probes workload: {args.inventory} declares no [[workloads]] (docs/workloads.md)")
    if args.via_slurm and args.probes == ProbeSet.WORKLOAD:
        raise UsageError("--via-slurm gathers the node probes only: run --probes workload over SSH, without it")
    check_outputs(args, "json", "junit", "prom", "exclude_out")  # refused now, not after an hour's sweep
    if args.max_age is not None:
        return gate_from_history(args, nodes, inventory)
    store_path = Path(args.store or default_store_path(inventory))
    spec = EngineSpec(
        inventory,
        packs,
        store_path,
        accept_new=args.accept_new,
        probe_timeout_cap_s=args.probe_timeout,
        slurm=_slurm_settings(inventory, args),
        workers=default_workers(len(nodes)) if args.workers is None else args.workers,
        origin="sweep",
    )
    try:
        # Before the store: a usage error leaves no database behind. Over SSH the engine builds its own
        # checker, from the spec with the images ``rollback`` set back (its workers get that spec).
        checker = build_checker(spec) if spec.slurm is not None else None
    except ValueError as exc:  # a Slurm controller the inventory does not reach
        raise UsageError(str(exc)) from None
    store, fault = open_for_sweeping(store_path, args.store_wait, inventory)
    interruption = Interruption()
    try:
        engine = build_engine(spec, store, checker)
        engine.subscribe(_store_failure_said(err))
        if fault is not None:
            engine.writes.failed(fault)
        # A pin stored with `pin --from-node` wins over the inventory's, field by field.
        if store is not None:
            warn_pin_overrides(inventory, store)
        if args.probes == ProbeSet.MULTINODE.value and store is not None:
            _say_borrowable(err, inventory, store, nodes, borrow=not args.no_baseline_partners)
        with _Progress(err) as progress:
            engine.subscribe(progress)
            return run_interruptible(_sweeps(engine, nodes, args, err, interruption), interruption)
    except KeyboardInterrupt:
        err.print("interrupted")
        return interruption.exit_code(ExitCode.INTERRUPTED)
    finally:
        if store is not None:
            store.close()


def _store_failure_said(err: Console) -> Any:
    """A subscriber that says on stderr, as it happens, that the sweep stopped storing and why."""

    def said(event: Event) -> None:
        if isinstance(event, StoreFailed):
            err.print(f"history not stored from now on: {_shown(event.fault.describe())}")

    return said


def _say_borrowable(err: Console, inventory: Inventory, store: Store, nodes: list[Any], *, borrow: bool) -> None:
    """Name, before any GPU is taken, the nodes outside the selection a second pass may borrow."""
    swept = [node.name for node in nodes]
    for pool in sorted({node.pool for node in nodes}):
        base, names = borrowable(store, inventory, pool, swept=swept)
        if not names:
            continue
        if borrow:
            err.print(
                f"multinode: pool {pool} may borrow {', '.join(names)} (known-good in baseline sweep #{base}, not "
                "selected) as second-pass partners, taking their GPUs for that run; --no-baseline-partners "
                "keeps them out"
            )
        else:
            err.print(f"multinode: pool {pool}: no baseline partner borrowed ({', '.join(names)} stay untouched)")


def _slurm_settings(inventory: Inventory, args: argparse.Namespace) -> SlurmJobSettings | None:
    """How ``--via-slurm`` submits its one job for all the nodes; None to reach each node over SSH."""
    if not args.via_slurm:
        return None
    return SlurmJobSettings(
        command=tuple(shlex.split(args.slurm_command)),
        partition=inventory.slurm.partition,
        checks=tuple(str(Path(d).resolve()) for d in args.checks),
        raw=args.slurm_raw,
    )


async def _sweeps(
    engine: SweepEngine, nodes: list[Any], args: argparse.Namespace, err: Console, interruption: Interruption
) -> int:
    """One sweep, or one every ``--every`` seconds; the exit code is the last sweep's."""
    try:
        if args.every is None:
            return await _sweep(engine, nodes, args, interruption)

        def skipped(ticks: int) -> None:
            err.print(f"skipped {ticks} tick(s): the sweep before was still running")

        async def once() -> int:
            code = await _sweep(engine, nodes, args, interruption)
            if interruption.signum is not None or code == ExitCode.INTERRUPTED:
                runs.stop()  # Ctrl-C or SIGTERM cancelled this sweep (the engine caught it): no next tick
            return code

        runs = Periodic(once, args.every, args.count, on_skip=skipped)
        return (await runs.run())[-1]
    finally:
        await engine.disconnect()


async def _sweep(engine: SweepEngine, nodes: list[Any], args: argparse.Namespace, interruption: Interruption) -> int:
    """Sweep once, write the reports and print the summary; returns the exit code."""
    started = time.time()
    multinode = MultinodeOptions(
        group_size=args.group_size,
        pairing=Pairing(args.pairing),
        seed=args.pairing_seed,
        baseline_partners=not args.no_baseline_partners,
    )
    at_once = None
    if args.probes == ProbeSet.WORKLOAD and not args.force:
        # A workload holds its nodes as a drain would: the drains' cap bounds it (docs/workloads.md).
        caps = CapPolicy(fraction=args.cap_fraction, fixed=args.cap)
        actions = ActionService(engine.inventory, engine.store) if engine.store is not None else None
        allowed = await workload_allowance(caps, engine.inventory, pools_of(nodes), actions, engine.store)
        for note in allowed.notes(pools_of(nodes)):
            plain_console(stderr=True).print(f"cap: {_shown(note)}")
        at_once = as_mapping(allowed)
    result, pairs = await sweep_cluster(engine, nodes, args.probes, args.deadline, multinode, at_once=at_once)
    statuses = [v.status for v in result.verdicts.values()]
    code = exit_code_for(statuses, result.outcome, allow_unknown=args.allow_unknown, fail_on_warn=args.fail_on_warn)
    code = ExitCode(interruption.exit_code(code))  # 129 when a closed terminal (SIGHUP) cancelled it
    stopped = code in (ExitCode.INTERRUPTED, ExitCode.HANGUP)
    unstored = engine.writes.problem()
    if unstored is not None and not stopped:
        code = ExitCode.STORE_FAILED
    outcome: Literal["done", "cancelled", "deadline"] = result.outcome  # type: ignore[assignment]
    stacks = {name: facts.stack for name, facts in engine.facts.items()}
    report = build_report(
        engine.inventory,
        result.verdicts,
        stacks,
        sweep_id=result.sweep_id,
        level=args.probes,
        started_at=started,
        duration_s=result.duration_s,
        outcome=outcome,
        exit_code=int(code),
        multinode=pairs,
        store_problem=unstored,
    )
    refused, unwritten = _write_reports(report, result, args)
    if unwritten and not stopped:
        code = ExitCode.OUTPUT_FAILED
        report.exit_code = int(code)
    console = plain_console(stderr=args.json == "-")
    problems = [*([f"history: {unstored}"] if unstored else []), *unwritten]
    print_summary(console, report.nodes, result, code, problems=problems, detail=Detail(args.detail))
    if refused:  # after the summary: the sweep's verdicts are said even when a file may not be written
        raise OutputRefused("; ".join(refused))
    if args.probes in (ProbeSet.WORKLOAD, ProbeSet.FRAMEWORK) and engine.writes.writable and outcome == "done":
        assert engine.store is not None
        # Reruns after a stack change: accepted again or regressed (docs/workloads.md, "Acceptance").
        for record in record_outcomes(engine.store, engine.inventory, result.sweep_id):
            console.print(f"acceptance: {_shown(record.workload)} {record.outcome} on pool {_shown(record.pool)}")
    return int(code)


def _shown(text: str) -> str:
    """Text from nodes and files as Rich markup that prints it literally: no markup, no escape sequences."""
    return escape(printable(text))


def _write_reports(report: SweepReport, result: SweepResult, args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Write every report file asked for (console.files), each whatever became of the others.

    Returns the reasons of those refused (a link or another user's file planted since the sweep began:
    exit 2) and of those that failed (a full disk, a read-only filesystem: exit 6), one line each.
    """
    force = args.force_overwrite
    excluded = [n.node for n in report.nodes if n.status is Status.FAIL]
    if args.exclude_unknown:
        excluded += [n.node for n in report.nodes if n.status is Status.UNKNOWN]
    writes = [
        (args.json, lambda: write_json(report, args.json, force=force)),
        (args.junit, lambda: write_file(args.junit, junit_xml(report, result.verdicts), force=force)),
        (args.prom, lambda: write_file(args.prom, prometheus_textfile(report), force=force)),
        (args.exclude_out, lambda: write_file(args.exclude_out, fold(excluded) + "\n", force=force)),
    ]
    refused: list[str] = []
    unwritten: list[str] = []
    for path, write in writes:
        if not path:
            continue
        try:
            write()
        except OutputRefused as exc:
            refused.append(str(exc))
        except BrokenPipeError:
            raise  # stdout's reader went away (``--json -``): the front door's 141, not a report unwritten
        except OSError as exc:
            unwritten.append(f"report not written: {path}: {exc.strerror or exc}")
    return refused, unwritten
