"""``watch``: keep idle nodes checked and drive their remediation cases, one round every ``--every``.

The rounds themselves are ``console.actions.watch``; this is the front door: options, the engine and
the action service for the inventory, one printed line per round, and SIGTERM and SIGHUP handled as Ctrl-C
(the round's sweep is cancelled, the engine kills its probes on the nodes, the exit code is 130).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from typing import Any

from console.actions import ActionPlan, ActionService
from console.actions.freshness import freshness
from console.actions.watch import Watch, approve, clear_breaker, reject
from console.checks import load_packs
from console.commands.actions import confirm_on_terminal, print_plan
from console.commands.arguments import UsageError, add_engine_options, add_lease_wait, seconds, text, whole
from console.commands.interrupts import Interruption, run_interruptible
from console.commands.terminal import plain_console
from console.exitcodes import ExitCode
from console.inert import printable
from console.inventory import load_inventory
from console.remediation.lease import taken_lease
from console.service.assembly import EngineSpec, build_engine
from console.store import Store, current_user, default_store_path
from console.store.db import BUSY_WAIT_S, StoreError
from console.sweep import ProbeSet
from console.sweep.periodic import Periodic
from console.timestamps import local

WATCH_EXIT_HELP = """exit codes:
  0    the rounds asked for (--rounds) are done; --approve carried out every proposal; --reject and
       --clear-breaker done
  1    a round could not sweep: its maintenance reservation (--reservation) was refused (the
       rounds go on; the line says why); --approve: a proposal was refused or failed, none is
       open, or the breaker is tripped; --reject: no such open proposal
  2    usage or configuration error; another actor holds the history database's lease (the
       message names it; --wait-lease waits for it)
  5    the history database failed (locked past --store-wait, disk full, corrupt, deleted, read-only):
       the round did nothing more, since no action goes without its audit row; watch stopped
  7    the circuit breaker is tripped as watch ends: automation is paused until an operator
       runs --clear-breaker --reason TEXT
  129  the terminal was closed (SIGHUP): as 130, the reservation released as well
  130  interrupted (Ctrl-C or SIGTERM): the round's sweep was cancelled and its probes killed"""


def register(sub: Any) -> None:
    """Add ``watch``."""
    p = sub.add_parser(
        "watch",
        help="every --every seconds: sweep idle nodes not checked lately, drain FAIL nodes, revalidate and resume",
        description="Every --every seconds: sweep the idle nodes not checked lately, drain FAIL nodes (as\n"
        "proposals, or itself with --auto), revalidate repaired nodes and resume those that pass. A circuit\n"
        "breaker stops its automation when too many of a pool's nodes are out at once.",
        epilog=WATCH_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_engine_options(p)
    p.add_argument(
        "--every",
        type=seconds,
        default=3600.0,
        metavar="SECONDS",
        help="seconds between rounds, and how old a node's last check must be to sweep it again (default 3600)",
    )
    p.add_argument(
        "--level",
        choices=[s.value for s in ProbeSet if s is not ProbeSet.MULTINODE],
        default=ProbeSet.QUICK.value,
        help="probe level of the idle-node sweeps (default quick; revalidations use each pool's lifecycle level)",
    )
    p.add_argument(
        "--store-wait",
        type=seconds,
        default=BUSY_WAIT_S,
        metavar="SECONDS",
        help=f"most a write waits for another process's lock on the history database; past it watch stops"
        f" (exit 5; default {BUSY_WAIT_S:g})",
    )
    p.add_argument("--rounds", type=whole(1), metavar="N", help="stop after N rounds (default: run until stopped)")
    p.add_argument(
        "--auto",
        action="store_true",
        help="carry out drains and resumes itself (default: store them as proposals for --approve)",
    )
    p.add_argument("--dry-run", action="store_true", help="show what each round would sweep and do; change nothing")
    p.add_argument(
        "--reservation",
        type=reservation_name,
        metavar="NAME",
        help="hold each round's swept nodes in a Slurm maintenance reservation NAME (flags MAINT,IGNORE_JOBS),"
        " created before the sweep and deleted after it, also on SIGTERM and SIGHUP",
    )
    p.add_argument(
        "--normal-priority",
        dest="low_priority",
        action="store_false",
        help="run the probes at normal priority (default: nice -n 19 ionice -c 3 on the node, so jobs come first)",
    )
    once = p.add_mutually_exclusive_group()
    once.add_argument(
        "--proposals", action="store_true", help="list the open proposals and the breaker's state, then exit"
    )
    once.add_argument(
        "--freshness", action="store_true", help="each node's last active check: its age and verdict, then exit"
    )
    once.add_argument(
        "--approve", metavar="ID|all", help="carry out an open proposal (or all of them) through the actions, then exit"
    )
    once.add_argument(
        "--reject", metavar="ID", help="reject an open proposal (audited, with --reason): nothing runs, then exit"
    )
    once.add_argument(
        "--clear-breaker", action="store_true", help="clear a tripped circuit breaker (audited): automation resumes"
    )
    add_lease_wait(p)
    p.add_argument("--yes", action="store_true", help="with --approve: do not ask before each plan")
    p.add_argument(
        "--reason",
        type=text,
        metavar="TEXT",
        help="with --reject or --clear-breaker: why (required; it goes to the audit log)",
    )
    p.set_defaults(func=run_watch)


def reservation_name(text: str) -> str:
    """A Slurm reservation name the console may create and delete: letters, digits, '_', '-', '.'."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", text):
        raise argparse.ArgumentTypeError(f"{text!r}: give a name of letters, digits, '_', '-' or '.'")
    return text


def run_watch(args: argparse.Namespace) -> int:
    """Run rounds until ``--rounds`` are done or a signal stops them."""
    inventory = load_inventory(args.inventory)
    try:
        store = Store(args.store or default_store_path(inventory), inventory, busy_wait_s=args.store_wait)
    except StoreError as exc:
        if exc.fault is None:
            raise  # a usage error: no such directory, a plain file as --store, another cluster's database
        said = f"watch: {exc}: no round runs (no action without its audit row)"
        plain_console(stderr=True).print(printable(said), markup=False)
        return int(ExitCode.STORE_FAILED)
    out = plain_console()
    interruption = Interruption()
    try:
        if args.freshness:
            return _freshness(store, [n.name for n in inventory.nodes], out)
        if args.clear_breaker and not (args.reason or "").strip():
            raise UsageError("--clear-breaker needs --reason TEXT: the audit log keeps why automation may act again")
        if args.proposals or args.clear_breaker:
            return _show_or_clear(store, args.clear_breaker, out, (args.reason or "").strip())
        if args.reject:
            return _reject(store, args.reject, args.reason, out)
        if args.approve:
            service = ActionService(inventory, store, holder="watch --approve", lease_wait_s=args.wait_lease)
            return _approve(service, args.approve, out, yes=args.yes)
        packs = load_packs(list(args.checks))
        spec = EngineSpec(
            inventory,
            packs,
            store.path,
            accept_new=args.accept_new,
            probe_timeout_cap_s=args.probe_timeout,
            low_priority=args.low_priority,
            origin="watch",
        )
        engine = build_engine(spec, store)
        service = ActionService(inventory, store, packs=packs, holder="watch", lease_wait_s=args.wait_lease)
        watch = Watch(
            engine,
            service,
            every_s=args.every,
            level=args.level,
            auto=args.auto,
            dry_run=args.dry_run,
            reservation=args.reservation,
        )
        mode = "dry run" if args.dry_run else "auto" if args.auto else "approve-to-run: proposals only"
        how = "probes at nice 19, ionice idle" if args.low_priority else "probes at normal priority"
        held = f", swept nodes held in reservation {args.reservation}" if args.reservation else ""
        said = f"watch {printable(inventory.name)}: every {args.every:g} s at {args.level}, {mode}; {how}{held}"
        out.print(said, markup=False)
        if (breaker := store.breaker()).tripped:
            out.print(f"breaker tripped: {printable(breaker.why)}", markup=False)
        return interruption.exit_code(
            run_interruptible(_rounds(watch, args.every, args.rounds, out, wait_lease=args.wait_lease), interruption)
        )
    except KeyboardInterrupt:
        plain_console(stderr=True).print("interrupted")
        return interruption.exit_code(ExitCode.INTERRUPTED)
    finally:
        store.close()


def _show_or_clear(store: Store, clear: bool, out: Any, reason: str) -> int:
    """``--proposals`` or ``--clear-breaker``: nothing runs on a node or the scheduler."""
    if clear:
        was = clear_breaker(store, current_user(), reason)
        out.print(
            f"breaker cleared (it had tripped: {printable(was)})" if was else "breaker was not tripped", markup=False
        )
        return int(ExitCode.OK)
    breaker = store.breaker()
    out.print(f"breaker: tripped: {printable(breaker.why)}" if breaker.tripped else "breaker: clear", markup=False)
    shown = store.proposals()
    for p in shown:
        cited = f" (sweep {p.sweep_id})" if p.sweep_id is not None else ""
        when = local(p.at, seconds=False)
        out.print(f"#{p.id} {p.kind} {printable(p.node)}{cited} proposed {when}: {printable(p.reason)}", markup=False)
    if not shown:
        out.print("no open proposals")
    return int(ExitCode.OK)


def _freshness(store: Store, nodes: list[str], out: Any) -> int:
    """Each node's last active check and how old it is: what ``watch`` and ``sweep --max-age`` go by."""
    now = time.time()
    for name, fresh in freshness(store, nodes).items():
        out.print(f"{printable(name)}: {fresh.line(now)}", markup=False)
    return int(ExitCode.OK)


def _reject(store: Store, which: str, reason: str | None, out: Any) -> int:
    if not which.isdigit():
        raise UsageError(f"--reject takes a proposal id, not {which!r}")
    if not reason or not reason.strip():
        raise UsageError("--reject needs --reason TEXT: the audit log keeps why a proposal was turned down")
    try:
        proposal = reject(store, which, reason.strip(), current_user())
    except LookupError as exc:
        out.print(printable(str(exc)), markup=False)
        return int(ExitCode.FAILED)
    said = f"rejected #{proposal.id} {proposal.kind} {printable(proposal.node)}: nothing was done"
    out.print(said, markup=False)
    return int(ExitCode.OK)


def _approve(service: ActionService, which: str, out: Any, *, yes: bool) -> int:
    if which != "all" and not which.isdigit():
        raise UsageError(f"--approve takes a proposal id or 'all', not {which!r}")

    def confirm(plan: ActionPlan) -> bool:
        # As every action from the shell: the plan (exact commands, where), then a question or --yes.
        print_plan(out, plan)
        return confirm_on_terminal(out, yes) is None

    async def run() -> tuple[bool, list[str]]:
        try:
            return await approve(service, which, confirm)
        finally:
            await service.close()

    ok, lines = asyncio.run(run())
    for line in lines:
        out.print(printable(line), markup=False)
    return int(ExitCode.OK if ok else ExitCode.FAILED)


async def _rounds(watch: Watch, every_s: float, rounds: int | None, out: Any, *, wait_lease: float) -> int:
    try:
        if watch.dry_run:  # a dry run changes nothing: it needs no lease
            return await _held_rounds(watch, every_s, rounds, out)
        # One actor at a time: watch holds the lease from its first round to its last (renewed meanwhile).
        async with taken_lease(watch.store, "watch", watch.service.user, wait_s=wait_lease):
            return await _held_rounds(watch, every_s, rounds, out)
    finally:
        await watch.engine.disconnect()
        await watch.service.close()


async def _held_rounds(watch: Watch, every_s: float, rounds: int | None, out: Any) -> int:
    code = int(ExitCode.OK)

    async def once() -> None:
        nonlocal code
        report = await watch.round()
        out.print(printable(report.line()), markup=False, highlight=False)
        if report.unswept:  # the site asked for its sweeps under a reservation and got none: say so by exit
            code = max(code, int(ExitCode.FAILED))
        if report.store_failed:  # no action without its audit row: nothing more to do until it is fixed
            code = int(ExitCode.STORE_FAILED)
            runs.stop()
        elif report.outcome == "cancelled":  # a signal (Ctrl-C, SIGTERM, SIGHUP) cancelled the round: no next one
            code = int(ExitCode.INTERRUPTED)
            runs.stop()

    runs = Periodic(once, every_s, rounds, busy=lambda: watch.engine.running)
    await runs.run()
    if code == int(ExitCode.OK) and watch.store.breaker().tripped:
        return int(ExitCode.BREAKER_TRIPPED)  # looking went on; acting did not: say so by exit
    return code
