"""``sweep --max-age DURATION``: a gate answered from the history database, with nothing run on the nodes.

Each selected node is judged by its last active check at ``--probes`` or deeper
(``console.sweep.freshness``): when that check is at most DURATION old, the node gets its verdict
(made worse by any later sweep of the node that was not PASS); when it is older, or there is none, the
node is UNKNOWN with the age in its reason. A stale result is never taken as PASS. The exit code is a
sweep's (``--allow-unknown``, ``--fail-on-warn``), and ``--json``/``--exclude-out`` write what a sweep's do.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from console.commands.arguments import UsageError, existing_store
from console.commands.terminal import plain_console
from console.exitcodes import exit_code_for
from console.files import write_file
from console.inert import printable
from console.inventory import Inventory, fold
from console.model.findings import Status
from console.sweep import ProbeSet
from console.sweep.freshness import age_text, judged_from_history

# Options that run something on the nodes: a gate from the history has nothing to run them on.
_RUNS_SOMETHING = (
    ("via_slurm", "--via-slurm"),
    ("every", "--every"),
    ("deadline", "--deadline"),
    ("junit", "--junit"),
    ("prom", "--prom"),
)


def refuse_with_max_age(args: argparse.Namespace) -> None:
    """A usage error for the options ``--max-age`` does not take (it sweeps nothing)."""
    for name, option in _RUNS_SOMETHING:
        if getattr(args, name, None):
            raise UsageError(f"--max-age answers from the history and sweeps nothing: {option} does not apply")
    if getattr(args, "checks", None):
        # The stored verdicts were judged with the packs of their own sweeps: a gate that took --checks and
        # still answered from them would pass a node those packs were never applied to.
        raise UsageError(
            "--max-age answers from verdicts already judged: --checks does not apply (sweep without --max-age"
            " to judge with those packs)"
        )
    if args.probes == ProbeSet.MULTINODE:
        raise UsageError("--max-age judges nodes one by one: --probes multinode does not apply")


def gate_from_history(args: argparse.Namespace, nodes: list[Any], inventory: Inventory) -> int:
    """Judge ``nodes`` from their last active checks; print a line per node and return the exit code."""
    refuse_with_max_age(args)
    # Reading must not create an empty database that passes nothing, nor read another cluster's.
    store = existing_store(args.store, inventory)
    now = time.time()
    try:
        judged = [judged_from_history(store, node.name, args.probes, args.max_age, now) for node in nodes]
    finally:
        store.close()
    statuses = [j.status for j in judged]
    code = exit_code_for(statuses, allow_unknown=args.allow_unknown, fail_on_warn=args.fail_on_warn)
    if args.json:
        rows = [
            {
                "node": j.node,
                "status": j.status.value,
                "reason": j.reason,
                "sweep_id": j.check.sweep_id if j.check else None,
                "level": j.check.level if j.check else None,
                "checked_at": j.check.at if j.check else None,
            }
            for j in judged
        ]
        document = {"from_history": True, "level": args.probes, "max_age_s": args.max_age, "exit_code": int(code)}
        text = json.dumps({**document, "nodes": rows}, indent=2) + "\n"
        if args.json == "-":
            print(text, end="")
        else:
            write_file(args.json, text, force=args.force_overwrite)
    if args.exclude_out:
        excluded = [j.node for j in judged if j.status is Status.FAIL]
        excluded += [j.node for j in judged if args.exclude_unknown and j.status is Status.UNKNOWN]
        write_file(args.exclude_out, fold(excluded) + "\n", force=args.force_overwrite)
    out = plain_console(stderr=args.json == "-")
    counts = {s: statuses.count(s) for s in Status if statuses.count(s)}
    said = " ".join(f"{s.value}={n}" for s, n in counts.items())
    head = f"from history: {len(judged)} nodes at {args.probes}, checks at most {age_text(args.max_age)} old: {said}"
    out.print(head, markup=False)
    for j in judged:
        out.print(f"  {j.status.value:7} {printable(j.node)}: {printable(j.reason)}", markup=False, highlight=False)
    out.print(f"exit {int(code)} ({code.name.lower()})", markup=False)
    return int(code)
