"""``history``, ``accept`` and ``diff``: what was swept, which sweep is a pool's baseline, what changed."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from console.actions.acceptance import accept_workload, workload_names, workload_pools
from console.actions.baseline import accept_baseline, baseline_diffs, pools_of_sweep
from console.commands.arguments import UsageError, add_inventory, add_store, existing_store, text
from console.commands.terminal import plain_console
from console.exitcodes import ExitCode
from console.inert import printable
from console.inventory import Inventory, load_inventory
from console.store import Store
from console.timestamps import local

DIFF_EXIT_HELP = """Only the checks the baseline ran are compared (a quick baseline against a full sweep).

exit codes:
  0    nothing got worse than the baseline
  1    a node's verdict or a finding got worse (regressed), or a new subject FAILs or is UNKNOWN
  2    usage error (no history database, no such pool)"""

HISTORY_EXIT_HELP = """exit codes:
  0    listed (an empty history too)
  2    usage error (no history database at --store, or not one)
  141  stdout was closed by its reader (| head)"""

ACCEPT_EXIT_HELP = """exit codes:
  0    accepted (and audited)
  2    nothing accepted: usage error, no such sweep, or a sweep that cannot be a baseline (interrupted,
       cancelled, cut by its deadline, still running; FAIL or UNKNOWN nodes in its pools without
       --allow-failing), or with --workload no passing run or no --reason; the reason is on stderr"""


def register(sub: Any) -> None:
    """Add ``history``, ``accept`` and ``diff``."""
    said = "list recent sweeps, or one node's verdicts over time"
    h = sub.add_parser(
        "history",
        help=said,
        description=f"{said[0].upper()}{said[1:]}, newest first.",
        epilog=HISTORY_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(h)
    h.add_argument("--node", help="show this node's verdict history")
    h.add_argument("--limit", type=int, default=20, metavar="N", help="show the newest N (default 20)")
    h.add_argument("--json", action="store_true", help="print JSON")
    h.set_defaults(func=run_history)

    a = sub.add_parser(
        "accept",
        help="mark a sweep as the accepted baseline of its pools",
        description="Mark a sweep as the accepted baseline of its pools: diff compares later sweeps with it.",
        epilog=ACCEPT_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(a)
    add_inventory(a, required=True, help="cluster file (to know the pools)")
    a.add_argument("--sweep", type=int, help="sweep id (default: the newest sweep, not a drift check or rerun)")
    a.add_argument("--pool", action="append", help="only these pools (default: every pool in the sweep)")
    a.add_argument(
        "--workload",
        help="accept this workload's run in the sweep on its pools instead ('framework' is the built-in one;"
        " docs/workloads.md, Acceptance)",
    )
    a.add_argument(
        "--reason", type=text, default="", help="why: the upgrade or change this acceptance is for (audited)"
    )
    a.add_argument(
        "--rebaseline",
        action="store_true",
        help="with --workload: make this run's figures the reference though they are beyond tolerance of the"
        " accepted ones (audited with the reason; docs/workloads.md, Re-baselining)",
    )
    a.add_argument(
        "--allow-failing",
        action="store_true",
        help="accept a sweep with FAIL or UNKNOWN nodes in its pools (refused without; the audit lists them)",
    )
    a.set_defaults(func=run_accept)

    d = sub.add_parser(
        "diff",
        help="what changed since a pool's accepted baseline",
        description="Show what changed since a pool's accepted baseline (accept): verdicts and findings that\n"
        "got worse, and new subjects that FAIL or are UNKNOWN.",
        epilog=DIFF_EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store(d)
    add_inventory(d, required=True, help="cluster file (to know the pools)")
    d.add_argument("--pool", help="pool whose baseline to compare with (default: every pool with one)")
    d.add_argument(
        "--sweep", type=int, help="sweep to compare (default: the pool's newest full sweep, not a drift check)"
    )
    d.add_argument("--json", action="store_true", help="print JSON")
    d.set_defaults(func=run_diff)


def _shown(text: str) -> str:
    """Stored text (node names, reasons, messages from tools) as markup that prints literally and inertly."""
    return escape(printable(text))


def _level(store: Store, sweep_id: int) -> str:
    row = store.sweep(sweep_id)
    return str(row["level"]) if row is not None else "?"


def run_history(args: argparse.Namespace) -> int:
    """Print sweeps (or one node's verdicts)."""
    store = existing_store(args.store)
    console = plain_console()
    try:
        if args.node:
            rows = store.node_history(args.node, args.limit)
            if args.json:
                print(
                    json.dumps(
                        [
                            {
                                "sweep": r["sweep_id"],
                                "status": r["status"],
                                "reason": r["reason"],
                                "started_at": r["started_at"],
                            }
                            for r in rows
                        ],
                        indent=2,
                    )
                )
                return 0
            table = Table("sweep", "when", "level", "verdict", "reason")
            for r in rows:
                table.add_row(str(r["sweep_id"]), _when(r["started_at"]), r["level"], r["status"], _shown(r["reason"]))
            console.print(table)
            return 0
        baselines = {sweep: pool for pool, sweep in store.baselines().items()}
        rows = store.sweeps(args.limit)
        if args.json:
            print(
                json.dumps(
                    [
                        {
                            "sweep": r["id"],
                            "started_at": r["started_at"],
                            "level": r["level"],
                            "status": r["status"],
                            "nodes": r["nodes"],
                            "summary": json.loads(r["summary"] or "{}"),
                        }
                        for r in rows
                    ],
                    indent=2,
                )
            )
            return 0
        table = Table("sweep", "when", "level", "nodes", "outcome", "counts", "baseline of")
        for r in rows:
            counts = json.loads(r["summary"] or "{}").get("counts", {})
            shown = " ".join(f"{k}={v}" for k, v in counts.items() if v)
            table.add_row(
                str(r["id"]),
                _when(r["started_at"]),
                r["level"],
                _shown(r["nodes"]),
                r["status"],
                shown,
                baselines.get(r["id"], ""),
            )
        console.print(table)
        return 0
    finally:
        store.close()


def _when(ts: float) -> str:
    return local(ts)


def run_accept(args: argparse.Namespace) -> int:
    """Record the sweep as baseline for its pools, and audit that."""
    inventory = load_inventory(args.inventory)
    store = existing_store(args.store, inventory, write=True)
    try:
        # By default the newest sweep of this inventory's nodes: not a drift check's subset, not a rerun.
        sweep_id = args.sweep or store.latest_full_sweep([n.name for n in inventory.nodes], reruns=False)
        if sweep_id is None or store.sweep(sweep_id) is None:
            raise UsageError("no such sweep")
        pools = set(args.pool or []) or pools_of_sweep(store, sweep_id)
        if args.workload:
            return _accept_workload(store, inventory, args, sweep_id, set(pools))
        # Refused (nothing written) when the sweep was interrupted, cancelled, cut by its deadline or still runs.
        result = accept_baseline(store, sweep_id, pools, reason=args.reason, allow_failing=args.allow_failing)
        if not result.ok:
            raise UsageError(result.outcome)
        print(printable(f"sweep {sweep_id} accepted as baseline of {', '.join(sorted(pools))}"))
        return 0
    finally:
        store.close()


def _accept_workload(
    store: Store, inventory: Inventory, args: argparse.Namespace, sweep_id: int, pools: set[str]
) -> int:
    """``accept --workload``: record the workload's passing run of ``sweep_id`` as accepted on ``pools``."""
    if args.workload not in workload_names(inventory):
        raise UsageError(f"no workload {args.workload!r} in {args.inventory}")
    if not args.reason:
        raise UsageError("accept --workload needs --reason: why this stack is accepted (the upgrade it is for)")
    pools &= set(workload_pools(inventory, args.workload))
    if not pools:
        raise UsageError(f"{args.workload} applies to none of the pools of sweep {sweep_id}")
    result = accept_workload(
        store, inventory, args.workload, pools, sweep_id, reason=args.reason, rebaseline=args.rebaseline
    )
    if not result.ok:
        raise UsageError(result.outcome)
    print(printable(result.outcome))
    return 0


def run_diff(args: argparse.Namespace) -> int:
    """Print what changed since each pool's baseline."""
    inventory = load_inventory(args.inventory)
    store = existing_store(args.store, inventory)
    console = plain_console()
    try:
        if args.pool and args.pool not in inventory.pools:
            raise UsageError(f"no pool {args.pool} in {inventory.source}")
        pools = [args.pool] if args.pool else sorted(store.baselines())
        if not pools:
            console.print("no accepted baseline yet: accept a sweep first (instinct-console accept)")
        out: dict[str, Any] = {}
        regressions = 0
        for pool in baseline_diffs(store, inventory, pools, args.sweep):
            if pool.baseline is None or pool.current is None:
                console.print(
                    f"pool {_shown(pool.pool)}: " + ("no accepted baseline" if pool.baseline is None else "no sweep")
                )
                continue
            diffs, new_id = pool.nodes, pool.current
            regressed = [d.node for d in diffs if d.regressed]
            regressions += len(regressed)
            out[pool.pool] = {
                "baseline": pool.baseline,
                "sweep": new_id,
                "nodes": [{**d.__dict__, "regressed": d.regressed} for d in diffs],
                "regressed": regressed,
            }
            if not args.json:
                levels = tuple(_level(store, sweep) for sweep in (pool.baseline, new_id))
                verdicts = sum(1 for d in diffs if d.verdict_changed)
                missing = len(pool.not_swept)
                console.print(
                    f"[bold]pool {_shown(pool.pool)}[/]: sweep {new_id} ({levels[1]}) vs baseline {pool.baseline}"
                    f" ({levels[0]}): {len(regressed)} regressed, {verdicts} verdict change(s),"
                    f" {len(diffs) - verdicts} node(s) with the same verdict and other changes"
                    + (f", {missing} not in sweep {new_id}" if missing else "")
                )
                if levels[0] != levels[1]:
                    console.print(f"  [dim]only the checks the {levels[0]} baseline ran are compared[/]")
                # Regressions first, then other verdict changes: they are what an operator acts on.
                for d in sorted(diffs, key=lambda d: (not d.regressed, not d.verdict_changed, d.node)):
                    mark = "[red]regressed[/] " if d.regressed else ""
                    if d.verdict_changed:
                        verdict = f"verdict {d.verdict[0] or '(new node)'} -> {d.verdict[1]}"
                    else:
                        verdict = f"verdict {d.verdict[1]} (unchanged)"
                    console.print(f"  {_shown(d.node)}: {mark}{verdict}")
                    for key, (a, b) in d.stack.items():
                        console.print(f"    stack {_shown(key)}: {_shown(a or '(none)')} -> {_shown(b or '(none)')}")
                    for key, a2, b2, message in d.findings:
                        console.print(f"    {_shown(key)}: {a2 or '(new)'} -> {b2}  {_shown(message)}")
                    for key, fa, fb in d.figures:
                        console.print(f"    {_shown(key)}: {fa:g} -> {fb:g}")
                    for key, status, message in d.uncompared:
                        console.print(
                            f"    [dim]not in the baseline's checks:[/] {_shown(key)}: {status}  {_shown(message)}"
                        )
        if args.json:
            print(json.dumps(out, indent=2, default=str))
        # A pipeline gates on it: a node or a finding worse than the baseline fails the step.
        return int(ExitCode.FAILED if regressions else ExitCode.OK)
    finally:
        store.close()
