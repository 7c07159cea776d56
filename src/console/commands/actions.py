"""Operator actions from the shell: drain, resume, undrain, cordon, uncordon, pin, drift and audit.

Each action shows its plan (exact commands, where they run, what happens to each node), asks for
confirmation on a terminal, and runs through the same ``ActionService`` the TUI uses. Without a
terminal it needs ``--yes``; ``--dry-run`` only shows the plan; ``--read-only`` refuses every action.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from console.actions import (
    ActionKind,
    ActionPlan,
    ActionRequest,
    ActionResult,
    ActionService,
    CapPolicy,
    DriftRow,
    bare_inventory,
    drift_report,
    effective_pins,
)
from console.actions.catalogue import CATALOGUE, Reason, Targets, entry
from console.actions.model import CASE_KINDS, HOLD_KINDS, KUBE_KINDS, SLURM_KINDS
from console.actions.planning import READ_ONLY
from console.checks import load_packs
from console.commands.arguments import (
    UsageError,
    add_accept_new,
    add_checks,
    add_inventory,
    add_lease_wait,
    add_probe_timeout,
    add_store,
    share,
    text,
    whole,
)
from console.commands.interrupts import Interruption, run_interruptible
from console.commands.terminal import plain_console, warn_pin_overrides
from console.exitcodes import ExitCode, exit_code_for
from console.inventory import (
    Inventory,
    expand,
    fold,
    load_inventory,
    select_exactly,
)
from console.model.family import DRIFT_FAMILIES
from console.model.findings import Status
from console.service.assembly import EngineSpec, build_engine
from console.store import Store, default_store_path
from console.sweep import ProbeSet, SweepEngine
from console.timestamps import local

ACTION_EXIT_HELP = """exit codes:
  0    done (or nothing to do, or a dry run)
  1    refused (ownership, cap, read-only) or a command failed
  2    usage error, or no terminal to confirm on and no --yes"""
DRIFT_EXIT_HELP = """exit codes:
  0    every pinned field matches its pool's pin
  1    drift: a field differs from the pin (WARN) or breaks a rule (FAIL)
  2    usage or configuration error
  3    no drift seen, but some fields could not be checked (UNKNOWN)
  130  interrupted (Ctrl-C or SIGTERM)"""
AUDIT_EXIT_HELP = """exit codes:
  0    listed (an empty log too)
  2    usage error (no history database at --store, or not one)
  141  stdout was closed by its reader (| head)"""
_COLOURS = {Status.FAIL: "red", Status.WARN: "yellow", Status.UNKNOWN: "magenta", Status.PASS: "green"}


def register(sub: Any) -> None:
    """Add the action subcommands."""
    # The scheduler actions are subcommands of their own; pins are `pin`, baselines `accept` (history).
    for action in (a for a in CATALOGUE if a.kind in SLURM_KINDS | KUBE_KINDS):
        kind = action.kind
        p = _parser(sub, action.id, action.summary, ACTION_EXIT_HELP)
        p.add_argument("nodes", metavar="NODES", help="hostlist, e.g. gpu[001-004],gpu010")
        p.add_argument(
            "--reason",
            type=text,
            required=action.reason is Reason.REQUIRED,
            default="",
            help="why (kept in Slurm/annotations and the audit log)",
        )
        p.add_argument("--sweep", type=int, help="sweep id the decision comes from (added to the reason)")
        p.add_argument("--force", action="store_true", help="act on nodes held by others and past the cap")
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        p.add_argument("--dry-run", action="store_true", help="show the plan only")
        p.add_argument(
            "--cap",
            type=whole(0),
            help="most nodes per pool out of service at once, whoever took them out; one always stays in",
        )
        p.add_argument("--cap-fraction", type=share, default=0.10, help="cap as a fraction of the pool (default 0.10)")
        # Every scheduler action can reach Kubernetes: drain/resume/undrain on a pool the cluster file
        # runs under Kubernetes are carried out as cordon/uncordon.
        _add_kubeconfig(p)
        add_lease_wait(p)
        p.set_defaults(func=run_action, kind=kind)

    # The steps of a drained node's remediation case (`cases` and `revalidate` are in console.commands.lifecycle).
    for action in (a for a in CATALOGUE if a.kind in CASE_KINDS):
        p = _parser(sub, action.id, action.summary, ACTION_EXIT_HELP)
        p.add_argument("nodes", metavar="NODES", help="hostlist, e.g. gpu[001-004],gpu010")
        p.add_argument(
            "--reason", type=text, required=True, help="what was done, or why (kept in the case and the audit log)"
        )
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        p.add_argument("--dry-run", action="store_true", help="show the plan only")
        _add_kubeconfig(p)  # on a Kubernetes pool the step also moves the console's taint and condition
        add_lease_wait(p)
        p.set_defaults(func=run_action, kind=action.kind, sweep=None, force=False, cap=None, cap_fraction=0.10)

    p = _parser(sub, "pin", "show, set (--from-node) or enforce (--enforce) a pool's stack pin", ACTION_EXIT_HELP)
    p.add_argument("--pool", help="pool to pin (default: the pool of --from-node)")
    p.add_argument("--from-node", help="known-good node whose stack becomes the pool's pin")
    p.add_argument("--image-digest", help="container image digest to pin with the stack")
    p.add_argument("--enforce", nargs="?", const="", metavar="NODES", help="package holds for the pool (or NODES)")
    p.add_argument("--apply", action="store_true", help="with --enforce: run the holds (default: dry run)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="show the plan only")
    p.add_argument("--clear", action="store_true", help="drop the pin stored for --pool: the inventory's applies")
    p.set_defaults(func=run_pin)

    rollback = entry(ActionKind.ROLLBACK)
    p = _parser(sub, rollback.id, rollback.summary, ACTION_EXIT_HELP)
    p.add_argument("--pool", required=True, help="the pool to roll back")
    p.add_argument("--reason", type=text, required=True, help="why (kept in the audit log)")
    p.add_argument("--workload", help="back to this workload's accepted stack (default: the pool's newest accepted)")
    p.add_argument("--apply", action="store_true", help="set the pin and images and run the holds (default: dry run)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="show the plan only")
    p.set_defaults(func=run_rollback)

    p = _parser(sub, "drift", "sweep the stack and firmware, judge each pinned field against its pool", DRIFT_EXIT_HELP)
    p.add_argument(
        "--nodes", metavar="EXPR", help="as sweep's: a union of hostlists, names, pool=NAME, key=value; '!' takes out"
    )
    add_checks(p)
    p.add_argument("--all", action="store_true", help="list matching fields too, not only drift")
    add_accept_new(p)
    add_probe_timeout(p)
    p.set_defaults(func=run_drift)

    p = sub.add_parser(
        "audit",
        help="list the audit log of operator actions",
        description="List the audit log of operator actions, newest first: who, what, on which targets, the\n"
        "commands run and their outcome (an action still running, or that never recorded one, says so).",
        epilog=AUDIT_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(p)
    p.add_argument("--limit", type=int, default=50, metavar="N", help="show the newest N entries (default 50)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run_audit)


def _add_kubeconfig(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")


def _parser(sub: Any, name: str, help_text: str, epilog: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help_text, description=help_text, epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_inventory(p, help="cluster file; without one, Slurm commands run here with SLURM_CONF")
    add_store(p)
    p.add_argument("--read-only", action="store_true", help="refuse every action (plans may still be shown)")
    p.add_argument("--json", action="store_true", help="print the plan and result as JSON")
    return p


def _inventory(args: argparse.Namespace) -> Inventory:
    return load_inventory(args.inventory) if args.inventory else bare_inventory()


def run_action(args: argparse.Namespace) -> int:
    """drain/resume/undrain/cordon/uncordon NODES."""
    inventory = _inventory(args)
    targets = tuple(expand(args.nodes))
    request = ActionRequest(args.kind, targets, reason=args.reason, sweep_id=args.sweep, force=args.force)
    cluster = inventory if args.inventory else None  # a bare inventory is no cluster to give a database to
    store = Store(args.store or default_store_path(cluster), cluster)
    service = ActionService(
        inventory,
        store,
        caps=CapPolicy(fraction=args.cap_fraction, fixed=args.cap),
        kubeconfig=getattr(args, "kubeconfig", None),
        read_only=args.read_only,
        holder=args.kind.value,
        lease_wait_s=getattr(args, "wait_lease", 0.0),
    )
    try:
        return asyncio.run(_act(service, request, args))
    finally:
        store.close()


async def _act(service: ActionService, request: ActionRequest, args: argparse.Namespace) -> int:
    console = plain_console()
    try:
        if not service.read_only:
            await service.refresh(request)
        plan = service.plan(request)
        if not args.json:
            print_plan(console, plan)
        if args.dry_run or (request.kind in HOLD_KINDS and not args.apply):
            if args.json:
                print(json.dumps({"plan": _plan_json(plan)}, indent=2))
            elif plan.refused is None and plan.steps:
                console.print("[dim]dry run: nothing was changed[/]")
            return int(ExitCode.FAILED if plan.refused else ExitCode.OK)
        if plan.refused is None and (plan.steps or request.kind in (ActionKind.PIN, ActionKind.ROLLBACK)):
            answer = confirm_on_terminal(console, args.yes)
            if answer is not None:
                return answer
        result = await service.execute(plan)
        if args.json:
            print(json.dumps({"plan": _plan_json(plan), "result": asdict(result)}, indent=2))
        else:
            _print_result(console, result, refusal_shown=plan.refused)
        return int(ExitCode.OK if result.ok else ExitCode.FAILED)
    finally:
        await service.close()


def confirm_on_terminal(console: Console, yes: bool) -> int | None:
    """None to go ahead; an exit code when the operator said no or cannot be asked."""
    if yes:
        return None
    if not sys.stdin.isatty():
        raise UsageError("no terminal to confirm on: add --yes to act without asking")
    reply = console.input(escape("Proceed? [y/N] ")).strip().lower()
    if reply in ("y", "yes"):
        return None
    console.print("cancelled: nothing was changed")
    return int(ExitCode.OK)


def _plan_json(plan: ActionPlan) -> dict[str, Any]:
    return {
        "kind": plan.request.kind.value,
        "targets": list(plan.request.targets),
        "where": plan.where,
        "commands": [list(c) for c in plan.commands],
        "decisions": plan.decisions,
        "notes": list(plan.notes),
        "refused": plan.refused,
        "capped": list(plan.capped),
    }


def print_plan(console: Console, plan: ActionPlan) -> None:
    """The plan as the operator reads it: per target, the commands, the notes and any refusal."""
    request = plan.request
    console.print(f"[bold]{request.kind.value}[/] {escape(fold(request.targets) or request.from_node or '')}")
    for target, decision in plan.decisions.items():
        style = (
            "green"
            if not decision.startswith(("skip", "no-op"))
            else "yellow"
            if decision.startswith("skip")
            else "dim"
        )
        console.print(f"  [{style}]{escape(target)}[/]: {escape(decision)}")
    for step in plan.steps:
        console.print(f"  [cyan]{escape(step.shown())}[/]")
    for note in plan.notes:
        console.print(f"  [dim]note: {escape(note)}[/]")
    if plan.refused:
        console.print(f"[red]refused:[/] {escape(plan.refused)}")


def _print_result(console: Console, result: ActionResult, *, refusal_shown: str | None = None) -> None:
    if refusal_shown and not result.ok and refusal_shown in result.outcome:
        # The plan printed just above said it all: the refusal once, then only where it was recorded.
        console.print(f"[dim]nothing was changed (refusal recorded: audit #{result.audit_id})[/]")
        return
    colour = "green" if result.ok else "red"
    console.print(
        f"[{colour}]{escape(result.outcome)}[/]" + (f" [dim](audit #{result.audit_id})[/]" if result.audit_id else "")
    )
    for target, line in result.per_target.items():
        console.print(f"  {escape(target)}: {escape(line)}")


def run_pin(args: argparse.Namespace) -> int:
    """Show a pool's pin, set it from a node, or show/apply the package holds that keep nodes on it."""
    if not args.inventory:
        raise UsageError("needs -i CLUSTER_FILE (pins belong to pools)")
    inventory = load_inventory(args.inventory)
    enforce_targets = tuple(expand(args.enforce)) if args.enforce else ()
    store = Store(args.store or default_store_path(inventory), inventory)
    try:
        if args.clear:
            return _clear_pin(inventory, store, args)
        if args.enforce is None and not args.from_node:
            return _show_pins(inventory, store, args.pool, args.json)
        if args.enforce is not None:
            if not args.pool and not enforce_targets:
                raise UsageError("--enforce needs --pool or NODES")
            request = ActionRequest(ActionKind.ENFORCE_PIN, enforce_targets, pool=args.pool)
        else:
            request = ActionRequest(ActionKind.PIN, (), pool=args.pool, from_node=args.from_node,
                                    image_digest=args.image_digest)  # fmt: skip
        service = ActionService(inventory, store, read_only=args.read_only)
        return asyncio.run(_act(service, request, args))
    finally:
        store.close()


def run_rollback(args: argparse.Namespace) -> int:
    """Plan (and with --apply, after confirming, carry out) a pool's rollback to its last accepted stack."""
    if not args.inventory:
        raise UsageError("needs -i CLUSTER_FILE (rollback is per pool)")
    inventory = load_inventory(args.inventory)
    if args.pool not in inventory.pools:
        raise UsageError(f"no pool {args.pool} in {args.inventory}")
    store = Store(args.store or default_store_path(inventory), inventory)
    try:
        request = ActionRequest(ActionKind.ROLLBACK, (), reason=args.reason, pool=args.pool, workload=args.workload)
        service = ActionService(inventory, store, read_only=args.read_only)
        return asyncio.run(_act(service, request, args))
    finally:
        store.close()


def _clear_pin(inventory: Inventory, store: Store, args: argparse.Namespace) -> int:
    if not args.pool or args.pool not in inventory.pools:
        raise UsageError(f"--clear needs --pool, one of: {', '.join(inventory.pools)}")
    stored = store.pin(args.pool)
    console = plain_console()
    if not stored:
        console.print(f"pool {escape(args.pool)}: no stored pin; the inventory's applies already")
        return int(ExitCode.OK)
    console.print(f"[bold]unpin[/] pool {escape(args.pool)}: drop the stored pin, the inventory's applies again")
    listed = inventory.pools[args.pool].pin.pinned_fields()
    for field, value in sorted(stored.items()):
        console.print(f"  {escape(field)}: {escape(value)} -> {escape(listed.get(field, '(unpinned)'))}")
    if args.read_only:  # dangerous, as every pin change (console.actions.catalogue): refused and audited
        with store.audited(ActionKind.UNPIN.value, [args.pool], inputs={"dropped": stored}) as entry:
            entry.finish(f"refused: {READ_ONLY}")
        console.print(f"[red]refused:[/] {READ_ONLY} [dim](audit #{entry.id})[/]")
        return int(ExitCode.FAILED)
    if args.dry_run:
        console.print("dry run: nothing was changed")
        return int(ExitCode.OK)
    stop = confirm_on_terminal(console, args.yes)
    if stop is not None:
        return stop
    with store.audited(ActionKind.UNPIN.value, [args.pool], inputs={"dropped": stored}) as entry:
        store.clear_pin(args.pool)
        entry.finish(f"unpinned {args.pool}")
    console.print(f"[green]unpinned pool {escape(args.pool)}[/] [dim](audit #{entry.id})[/]")
    return int(ExitCode.OK)


def _show_pins(inventory: Inventory, store: Store, pool: str | None, as_json: bool) -> int:
    pins = effective_pins(inventory, store)
    if pool is not None and pool not in pins:
        raise UsageError(f"no such pool: {pool}")
    shown = {name: pin.pinned_fields() for name, pin in pins.items() if pool in (None, name)}
    if as_json:
        print(json.dumps(shown, indent=2))
        return 0
    table = Table("pool", "field", "pinned", "source")
    for name, fields in shown.items():
        stored = store.pin(name)
        for field, value in sorted(fields.items()):
            table.add_row(name, field, escape(value), "store" if field in stored else "inventory")
    plain_console().print(table)
    warn_pin_overrides(inventory, store)
    return 0


def run_drift(args: argparse.Namespace) -> int:
    """Sweep stack and firmware probes, then judge every pinned field of every node."""
    if not args.inventory:
        raise UsageError("needs -i CLUSTER_FILE (pins belong to pools)")
    inventory = load_inventory(args.inventory)
    packs = load_packs(list(args.checks))
    nodes = select_exactly(inventory, args.nodes)
    store = Store(args.store or default_store_path(inventory), inventory)
    interruption = Interruption()  # a closed terminal (SIGHUP) exits 129, as sweep does
    try:
        warn_pin_overrides(inventory, store)
        spec = EngineSpec(
            inventory,
            packs,
            store.path,
            accept_new=args.accept_new,
            probe_timeout_cap_s=args.probe_timeout,
            origin="drift",
        )
        engine = build_engine(spec, store)
        rows, outcome = run_interruptible(_drift(engine, nodes), interruption)
        unreachable = {n.name: engine.verdicts[n.name].reason for n in nodes if n.name not in engine.facts}
    except KeyboardInterrupt:
        plain_console(stderr=True).print("[red]error:[/] interrupted")
        return interruption.exit_code(ExitCode.INTERRUPTED)
    finally:
        store.close()
    rows += [DriftRow(node=n, field="node", status=Status.UNKNOWN, message=why) for n, why in unreachable.items()]
    if args.json:
        print(json.dumps([row.model_dump(mode="json") for row in rows], indent=2))
    else:
        _print_drift(rows, show_all=args.all)
    # Drift is a WARN: it fails the check. Ctrl-C or SIGTERM: what was judged is shown, the exit says it
    # is partial.
    return interruption.exit_code(exit_code_for([row.status for row in rows], outcome, fail_on_warn=True))


async def _drift(engine: SweepEngine, nodes: list[Any]) -> tuple[list[DriftRow], str]:
    try:
        result = await engine.run(nodes, level=ProbeSet.QUICK, families=set(DRIFT_FAMILIES))
    finally:
        await engine.disconnect()
    return drift_report(engine.facts.values(), engine.pins, engine.packs), result.outcome


def _print_drift(rows: list[DriftRow], *, show_all: bool) -> None:
    console = plain_console()
    table = Table("node", "field", "verdict", "pinned", "observed", "where / why")
    for row in rows:
        if row.status is Status.PASS and not show_all:
            continue
        colour = _COLOURS.get(row.status, "white")
        detail = ", ".join(row.subjects) if row.subjects and row.status is not Status.PASS else row.message
        table.add_row(row.node, row.field, f"[{colour}]{row.status.value}[/]", escape(row.pinned or ""),
                      escape("/".join(row.observed)), escape(detail))  # fmt: skip
    console.print(table)
    counts = {s: sum(1 for r in rows if r.status is s) for s in Status}
    console.print(" ".join(f"{s.value}={n}" for s, n in counts.items() if n) or "no pinned fields")


def _targets(action: str, targets: list[str]) -> str:
    """An audited action's targets as the operator reads them: nodes as a hostlist, pools as names.

    Folding pools as hostlists read ``mi[300,355]x-a``.
    """
    kinds = {kind.value: kind for kind in ActionKind}
    on_pools = action in kinds and entry(kinds[action]).targets in (Targets.POOL, Targets.POOLS)
    return ", ".join(targets) if on_pools else fold(targets)


def run_audit(args: argparse.Namespace) -> int:
    """Print the audit log, newest first; an intent without an outcome shows as in progress or unknown."""
    path = Path(args.store or default_store_path())
    if not path.exists():
        raise UsageError(f"no history database at {path} (nothing was audited there; or --store)")
    store = Store(path)
    try:
        entries = [
            {
                "id": r["id"],
                "at": r["at"],
                "finished_at": r["finished_at"],
                "user": r["user"],
                "action": r["action"],
                "targets": json.loads(r["targets"]),
                "inputs": json.loads(r["inputs"]),
                "commands": json.loads(r["commands"]),
                "output": r["output"],
                "outcome": store.shown_outcome(r),
            }
            for r in store.audit_log(args.limit)
        ]
    finally:
        store.close()
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    table = Table("#", "when", "who", "action", "targets", "outcome", "commands")
    for e in entries:
        when = local(e["at"])
        table.add_row(str(e["id"]), when, escape(e["user"]), e["action"], escape(_targets(e["action"], e["targets"])),
                      escape(e["outcome"]), escape("\n".join(e["commands"])))  # fmt: skip
    plain_console().print(table)
    return 0
