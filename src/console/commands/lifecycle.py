"""``cases`` and ``revalidate``: the remediation lifecycle of drained nodes, from the shell.

``cases`` lists each open case (a node the console drained for what a sweep found): its stage, the
action it calls for, its passes and strikes, and the next step. ``revalidate NODES`` sweeps the nodes
whose repair was acknowledged (``repaired``) at the policy's level and records each node's outcome: a
pass, a strike (FAIL or WARN: not healthy yet), or nothing (UNKNOWN: not judged). After enough passes
in a row (two by default, the "accepted twice" rule), ``resume`` returns the node; before that it is
held unless forced. The cluster file's ``[lifecycle]`` sets the policy, and a pool's
``[pools.lifecycle]`` its own values over it; ``cases --policy`` shows which value applies to which
pool and where it comes from. ``repaired`` and ``escalate`` are actions of the catalogue
(``console.commands.actions``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from console.actions import ActionService
from console.actions.model import ActionKind, ActionPlan, ActionRequest, ActionResult
from console.checks import load_packs
from console.commands.actions import confirm_on_terminal, print_plan
from console.commands.arguments import UsageError, add_engine_options, add_lease_wait, add_store, existing_store
from console.commands.interrupts import Interruption, run_interruptible
from console.commands.terminal import plain_console
from console.exitcodes import ExitCode, exit_code_for
from console.inert import printable
from console.inventory import expand, load_inventory
from console.inventory.model import FLEET_ONLY, Inventory, LifecyclePolicy, PoolLifecycle
from console.model.findings import Status
from console.service.assembly import EngineSpec, build_engine
from console.store import Store, default_store_path
from console.store.lifecycle import Case, Stage
from console.sweep import ProbeSet, SweepEngine
from console.sweep.revalidation import Revalidation
from console.timestamps import local

CASES_EXIT_HELP = """exit codes:
  0    listed (no open case too), or --policy printed
  2    usage or configuration error (no history database at --store, a bad cluster file)
  141  stdout was closed by its reader (| head)"""

REVALIDATE_EXIT_HELP = """exit codes:
  0    every revalidated node passed
  1    a node failed its revalidation (FAIL or WARN: a strike), or none was ready to revalidate
  2    usage error
  3    no strike, but a node could not be judged (UNKNOWN: neither a pass nor a strike)
  4    the deadline ended the sweep
  130  interrupted (Ctrl-C or SIGTERM)"""


def register(sub: Any) -> None:
    """Add ``cases`` and ``revalidate``."""
    said = "list drained nodes' remediation cases: stage, action, passes, strikes, next step"
    c = sub.add_parser(
        "cases",
        help=said,
        description=said,
        epilog=CASES_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(c)
    c.add_argument("-i", "--inventory", help="cluster file (its [lifecycle] policy; default policy without one)")
    c.add_argument("--node", help="only this node's cases, with their steps")
    c.add_argument("--all", action="store_true", help="closed cases too")
    c.add_argument("--json", action="store_true", help="print JSON")
    c.add_argument(
        "--policy",
        action="store_true",
        help="print the lifecycle policy of each pool, each value with where it comes from, then exit",
    )
    c.set_defaults(func=run_cases)

    r = sub.add_parser(
        "revalidate",
        help="sweep repaired nodes and record a pass or a strike on their cases",
        description="sweep repaired nodes and record a pass or a strike on their cases",
        epilog=REVALIDATE_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("nodes", metavar="NODES", help="hostlist of nodes whose repair was acknowledged")
    add_engine_options(r)
    r.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    r.add_argument("--dry-run", action="store_true", help="show the plan only: which nodes, at which level")
    r.add_argument(
        "--level",
        choices=[p.value for p in ProbeSet],
        help="probe level (default: each node's pool's lifecycle level: [pools.lifecycle] over [lifecycle], standard);"
        " multinode: standard, then one pair run with a known-good node of the pool",
    )
    r.add_argument("--json", action="store_true", help="print each node's outcome and case as JSON")
    r.add_argument("--kubeconfig", help="Kubernetes pools: kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    add_lease_wait(r)
    r.set_defaults(func=run_revalidate)


def _case_json(case: Case, policy: LifecyclePolicy) -> dict[str, Any]:
    return {
        "id": case.id,
        "node": case.node,
        "stage": case.stage.value,
        "action": case.action.value if case.action else None,
        "passes": case.passes,
        "passes_required": policy.passes_required,
        "strikes": case.strikes,
        "max_strikes": policy.max_strikes,
        "opened_at": case.opened_at,
        "opened_by": case.opened_by,
        "sweep_id": case.sweep_id,
        "findings": case.findings,
        "closed_at": case.closed_at,
        "next": case.next_step(policy),
    }


def run_policy(inventory: Inventory | None, as_json: bool) -> int:
    """``cases --policy``: each pool's values (fleet-wide limits once), and which table set each one."""
    fleet = inventory.lifecycle if inventory is not None else LifecyclePolicy()
    pools = inventory.pools if inventory is not None else {}
    per_pool = {
        name: (inventory.policy(name) if inventory is not None else fleet, fleet.origins(pool.lifecycle, name))
        for name, pool in pools.items()
    }
    if not per_pool:  # no cluster file, or no pool in it: the fleet's policy is all there is
        per_pool[""] = (fleet, fleet.origins(PoolLifecycle(), ""))
    if as_json:
        print(
            json.dumps(
                {
                    name or "(fleet)": {
                        key: {"value": value, "from": origins[key]} for key, value in policy.model_dump().items()
                    }
                    for name, (policy, origins) in per_pool.items()
                },
                indent=2,
            )
        )
        return int(ExitCode.OK)
    console = plain_console()
    where = f"cluster file {inventory.source}" if inventory is not None and inventory.source else "no cluster file"
    said = f"lifecycle policy ({printable(where)}): a pool's [pools.lifecycle] over [lifecycle] over the defaults"
    console.print(said, markup=False)
    table = Table("pool", "setting", "value", "from")
    fleet_rows = []
    for name, (policy, origins) in per_pool.items():
        for key, value in policy.model_dump().items():
            text = f"{value:g}" if isinstance(value, float) else str(value)
            row = (key, escape(printable(text)), escape(origins[key]))
            if key not in FLEET_ONLY:
                table.add_row(escape(printable(name) or "(fleet)"), *row)
            elif name == next(iter(per_pool)):
                fleet_rows.append(row)  # the fleet's limits are one pair for every pool: shown once, last
    for row in fleet_rows:
        table.add_row("(fleet)", *row)
    console.print(table)
    return int(ExitCode.OK)


def run_cases(args: argparse.Namespace) -> int:
    """Print the open cases (or all, or one node's with their steps)."""
    inventory = load_inventory(args.inventory) if args.inventory else None
    if args.policy:
        return run_policy(inventory, args.json)

    def policy_of(node: str) -> LifecyclePolicy:
        return inventory.policy_of(node) if inventory is not None else LifecyclePolicy()

    store = existing_store(args.store, inventory)
    try:
        cases = store.cases(args.node, open_only=not args.all)
        steps = {case.id: store.case_steps(case.id) for case in cases} if args.node else {}
    finally:
        store.close()
    if args.json:
        rows = [_case_json(case, policy_of(case.node)) for case in cases]
        for row in rows:
            if row["id"] in steps:
                row["steps"] = [
                    {k: (v.value if isinstance(v, Stage) else v) for k, v in vars(s).items()} for s in steps[row["id"]]
                ]
        print(json.dumps(rows, indent=2))
        return int(ExitCode.OK)
    console = plain_console()
    if not cases:
        console.print("no open cases" if not args.all else "no cases")
        return int(ExitCode.OK)
    table = Table("case", "node", "stage", "action", "passes", "strikes", "opened", "next")
    for case in cases:
        opened = local(case.opened_at, seconds=False)
        policy = policy_of(case.node)
        table.add_row(
            f"#{case.id}",
            printable(case.node),
            case.stage.value,
            case.action.value if case.action else "-",
            f"{case.passes}/{policy.passes_required}",
            f"{case.strikes}/{policy.max_strikes}",
            f"{opened} by {printable(case.opened_by)}",
            case.next_step(policy),
        )
    console.print(table)
    for case_id, shown in steps.items():
        console.print(f"case #{case_id}:")
        for step in shown:
            when = local(step.at)
            sweep = f" (sweep {step.sweep_id})" if step.sweep_id else ""
            console.print(
                f"  {when} {printable(step.user)} {step.step} -> {step.stage.value}{sweep}: {printable(step.note)}"
            )
    return int(ExitCode.OK)


def run_revalidate(args: argparse.Namespace) -> int:
    """Sweep the repaired nodes and record each node's pass or strike (the catalogue's ``revalidate``)."""
    inventory = load_inventory(args.inventory)
    wanted = list(expand(args.nodes))
    known = {n.name for n in inventory.nodes}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise UsageError(f"not in the inventory: {', '.join(unknown)}")
    store = Store(args.store or default_store_path(inventory), inventory)
    console = plain_console(stderr=args.json)  # with --json, standard output is the JSON alone
    interruption = Interruption()  # a closed terminal (SIGHUP) exits 129, as sweep does
    try:
        packs = load_packs(list(args.checks))
        spec = EngineSpec(
            inventory,
            packs,
            store.path,
            accept_new=args.accept_new,
            probe_timeout_cap_s=args.probe_timeout,
            origin="revalidate",
        )
        engine = build_engine(spec, store)
        # The console's remediation view plans and runs the same action through the same service.
        service = ActionService(
            inventory,
            store,
            packs=packs,
            engine=engine,
            kubeconfig=args.kubeconfig,
            holder="revalidate",
            lease_wait_s=args.wait_lease,
        )
        plan = service.plan(ActionRequest(ActionKind.REVALIDATE, tuple(wanted), level=args.level))
        for name, note in plan.decisions.items():
            if note.startswith("skip: "):
                console.print(f"skip {printable(name)}: {printable(note.removeprefix('skip: '))}")
        if plan.refused:
            console.print("nothing to revalidate")
            asyncio.run(_close(service, engine))
            return int(ExitCode.FAILED)
        # As every action: the plan first, then --dry-run stops, and a terminal is asked (--yes without one).
        print_plan(console, plan)
        answer = int(ExitCode.OK) if args.dry_run else confirm_on_terminal(console, args.yes)
        if answer is not None:
            if args.dry_run:
                console.print("[dim]dry run: nothing was changed[/]")
            asyncio.run(_close(service, engine))
            return answer
        result, done = run_interruptible(_revalidate(service, engine, plan), interruption)
    except KeyboardInterrupt:
        plain_console(stderr=True).print("[red]error:[/] interrupted")
        return interruption.exit_code(ExitCode.INTERRUPTED)
    finally:
        store.close()
    if done is None:
        console.print(printable(result.outcome), markup=False)
        return int(ExitCode.FAILED)
    if args.json:
        print(
            json.dumps(
                {
                    n: {"outcome": line, "case": _case_json(case, inventory.policy_of(n))}
                    for n, (line, case) in done.results.items()
                }
            )
        )
    else:
        for name, (line, case) in done.results.items():
            where = f"case #{case.id} {case.stage.value}, next: {case.next_step(inventory.policy_of(name))}"
            console.print(f"{printable(name)}: {printable(line)}; {where}")
    # The sweep's number is what `history` and `bundle` take to show its evidence.
    console.print(f"sweep {done.sweep_id}: {printable(result.outcome)}", markup=False)
    statuses = [done.verdicts[n].status if n in done.verdicts else Status.UNKNOWN for n in plan.acting_on]
    # A WARN is no pass either: the node is not healthy yet.
    return interruption.exit_code(exit_code_for(statuses, done.outcome, fail_on_warn=True))


async def _revalidate(
    service: ActionService, engine: SweepEngine, plan: ActionPlan
) -> tuple[ActionResult, Revalidation | None]:
    try:
        return await service.revalidate(plan)
    finally:
        await _close(service, engine)


async def _close(service: ActionService, engine: SweepEngine) -> None:
    await engine.disconnect()
    await service.close()
